"""Run metrics: accuracy, native group / parameter sparsity, effective rank, numerical rank.

* Native group sparsity (PCD paper, pruning tables): % of penalized conv filters whose L2 norm is
  below ``1e-4`` (``group_sparsity``), and the same over the run's lasso groups when they differ.
* Parameter sparsity (the K = 3 table's "参数稀疏度", parameter sparsity): % of penalized conv weights
  with ``|w| < PARAM_ZERO * max|W_l|``, ``PARAM_ZERO = 1e-3`` relative to the largest weight of the same
  layer ``l``. The paper's summaries (seeds 000, 001) give the figure (92.6 % for PCD on
  ResNet-34/CIFAR-100) but not its threshold. Why a threshold at all: under Adam an ℓ1-penalized weight
  is almost never exactly zero; it oscillates around zero by about one Adam step until the cosine
  schedule freezes it (a digits-k3 PCD run: 0.9 % of weights below 1e-8, 82.7 % below 1e-3). Why
  relative to the layer: every penalized conv feeds a BatchNorm, so the scale of a layer's weights does
  not change what the network computes, and ℓ1 shrinks that scale for free; an *absolute* threshold
  then counts weights that still carry the function. Measured on the digits-k3 study (40 epochs, 3
  seeds): with ``|w| < 1e-3`` absolute, PCD τ = 0.5, WS w ≥ 0.1, PCGrad and CAGrad read 96-100 % sparse,
  yet setting those weights to zero drops their test accuracy from 82-98 % to 8-32 %; with the
  per-layer relative threshold, zeroing the counted weights changes no run's accuracy by more than
  one test image (0.28 point; ``benchmarks/results/digits_k3_study.md``). Every run records that check (:func:`zeroed_accuracy`) and the share at each of
  :data:`SPARSITY_SWEEP` (relative) and of the same thresholds absolute (the optimizer's floor).
* Effective rank (the K = 3 table's "有效秩"; Roy & Vetterli 2007): per penalized conv viewed as
  ``W = [C_out, C_in*k*k]``, ``erank(W) = exp(H(p))`` with ``p_i = s_i / sum_j s_j`` over its singular
  values and ``H(p) = -sum_i p_i log p_i`` (``0 log 0 = 0``); averaged over layers. It needs no threshold:
  a singular value at the optimizer's noise floor carries a share ``p_i`` near 0 and adds almost nothing;
  a zero matrix has erank 0. The summaries do not name the formula either; this is the standard one.
* Numerical-rank reduction: ``1 - mean_l rank_l / min(m_l, n_l)`` where ``rank_l`` counts singular
  values above ``rtol * s_max`` (``rtol = 1e-3`` by default).
"""
from __future__ import annotations

import math

import torch
from torch import nn

from pcd.train.models import penalized_convs

GROUP_ZERO = 1e-4
# One home for the K = 3 study's measures (see the module docstring for why these values).
PARAM_ZERO = 1e-3  # relative to the largest |w| of the same layer
SPARSITY_SWEEP: tuple[float, ...] = (1e-8, 1e-6, 1e-4, 1e-3, 1e-2)
PARAM_SPARSITY_TEXT = (f"parameter sparsity: % of penalized conv weights with |w| < {PARAM_ZERO:g} × the largest |w| "
                       "of their layer (the paper's summaries state no threshold; under Adam an ℓ1 weight is never "
                       "exactly 0, and each conv feeds a BatchNorm, so only a layer-relative size is meaningful)")
EFFECTIVE_RANK_TEXT = ("effective rank: exp(entropy of the normalized singular values) of each conv weight "
                       "[C_out, C_in·k·k] (Roy & Vetterli 2007), averaged over layers; no threshold")
K3_MEASURES = f"{PARAM_SPARSITY_TEXT}; {EFFECTIVE_RANK_TEXT}"


@torch.no_grad()
def accuracy(model: nn.Module, batches) -> tuple[float, float]:
    """(accuracy in %, mean cross-entropy) of ``model`` in eval mode over ``(x, y)`` batches."""
    was = model.training
    model.eval()
    correct, total, loss = 0, 0, 0.0
    for x, y in batches:
        out = model(x).float()
        loss += float(nn.functional.cross_entropy(out, y, reduction="sum"))
        correct += int((out.argmax(1) == y).sum())
        total += int(y.numel())
    model.train(was)
    if total == 0:
        raise ValueError("accuracy needs at least one test sample")
    return 100.0 * correct / total, loss / total


@torch.no_grad()
def group_sparsity(model: nn.Module, threshold: float = GROUP_ZERO) -> float:
    """% of penalized conv output filters with L2 norm < ``threshold``."""
    n = z = 0
    for _, m in penalized_convs(model):
        norms = m.weight.reshape(m.out_channels, -1).norm(dim=1)
        z += int((norms < threshold).sum())
        n += norms.numel()
    return 100.0 * z / max(n, 1)


def _zero_mask(w: torch.Tensor, threshold: float, relative: bool) -> torch.Tensor:
    """``|w| < threshold`` (absolute) or ``|w| < threshold * max|w|`` (relative to the tensor)."""
    a = w.detach().abs()
    return a < (threshold * float(a.max()) if relative and a.numel() else threshold)


@torch.no_grad()
def param_sparsity(model: nn.Module, threshold: float = PARAM_ZERO, *, relative: bool = True) -> float:
    """% of penalized conv weights with ``|w| < threshold * max|W_l|`` over their layer ``W_l``
    (``relative=False``: ``|w| < threshold``)."""
    n = z = 0
    for _, m in penalized_convs(model):
        z += int(_zero_mask(m.weight, threshold, relative).sum())
        n += m.weight.numel()
    return 100.0 * z / max(n, 1)


@torch.no_grad()
def param_sparsity_sweep(model: nn.Module, thresholds=SPARSITY_SWEEP, *, relative: bool = True) -> dict[str, float]:
    """``{f"{t:g}": param_sparsity(model, t, relative=relative)}`` for each threshold (the measure's
    sensitivity to its threshold)."""
    return {f"{float(t):g}": param_sparsity(model, float(t), relative=relative) for t in thresholds}


@torch.no_grad()
def zeroed_accuracy(model: nn.Module, batches, threshold: float = PARAM_ZERO, *, relative: bool = True) -> float:
    """Test accuracy (%) of ``model`` with the weights :func:`param_sparsity` counts as zero set to 0
    (the check that they are removable); the model itself is left unchanged (weights restored)."""
    saved = []
    for _, m in penalized_convs(model):
        saved.append((m, m.weight.detach().clone()))
        m.weight.masked_fill_(_zero_mask(m.weight, threshold, relative), 0.0)
    try:
        return accuracy(model, batches)[0]
    finally:
        for m, w in saved:
            m.weight.copy_(w)


def effective_rank(W: torch.Tensor) -> float:
    """Roy & Vetterli's effective rank of a 2-D matrix: ``exp(-sum p_i log p_i)``, ``p = s / sum s``
    over its singular values (0 for a zero matrix)."""
    if W.dim() != 2:
        raise ValueError(f"effective_rank needs a 2-D matrix, got shape {tuple(W.shape)}")
    s = torch.linalg.svdvals(W.detach().double().cpu())
    if float(s.sum()) <= 0:
        return 0.0
    p = s / s.sum()
    p = p[p > 0]
    return math.exp(float(-(p * p.log()).sum()))


@torch.no_grad()
def rank_metrics(model: nn.Module, rtol: float = 1e-3) -> tuple[float, float]:
    """(mean effective rank, numerical-rank reduction in [0, 1]) over penalized convs."""
    eff, red = [], []
    for _, m in penalized_convs(model):
        W = m.weight.detach().reshape(m.out_channels, -1).double().cpu()
        s = torch.linalg.svdvals(W)
        full = min(W.shape)
        if float(s.sum()) <= 0:
            eff.append(0.0)
            red.append(1.0)
            continue
        eff.append(effective_rank(W))
        red.append(1.0 - int((s > rtol * s.max()).sum()) / full)
    if not eff:
        return float("nan"), float("nan")
    return sum(eff) / len(eff), sum(red) / len(red)
