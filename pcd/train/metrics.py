"""Run metrics: accuracy, native group / parameter sparsity, effective rank, numerical rank.

* Native group sparsity (PCD paper, pruning tables): % of penalized conv filters whose L2 norm is
  below ``1e-4`` (``group_sparsity``), and the same over the run's lasso groups when they differ.
* Parameter sparsity: % of penalized conv weights with ``|w| < 1e-8``.
* Effective rank (Roy & Vetterli 2007, as in the PCD paper's K = 3 table): per penalized conv
  ``W = [C_out, C_in*k*k]``, ``exp(H(p))`` with ``p_i = s_i / sum s``; averaged over layers.
* Numerical-rank reduction: ``1 - mean_l rank_l / min(m_l, n_l)`` where ``rank_l`` counts singular
  values above ``rtol * s_max`` (``rtol = 1e-3`` by default).
"""
from __future__ import annotations

import math

import torch
from torch import nn

from pcd.train.models import penalized_convs

GROUP_ZERO = 1e-4
PARAM_ZERO = 1e-8


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


@torch.no_grad()
def param_sparsity(model: nn.Module, threshold: float = PARAM_ZERO) -> float:
    """% of penalized conv weights with ``|w| < threshold``."""
    n = z = 0
    for _, m in penalized_convs(model):
        z += int((m.weight.abs() < threshold).sum())
        n += m.weight.numel()
    return 100.0 * z / max(n, 1)


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
        p = s / s.sum()
        p = p[p > 0]
        eff.append(math.exp(float(-(p * p.log()).sum())))
        red.append(1.0 - int((s > rtol * s.max()).sum()) / full)
    if not eff:
        return float("nan"), float("nan")
    return sum(eff) / len(eff), sum(red) / len(red)
