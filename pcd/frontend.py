"""PyTorch front end of PCD: per-loss gradients -> Gram -> QP -> ``p.grad`` for any optimizer.

    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    pcd = PCD(model.parameters(), tau=0.02)
    info = pcd.backward([ce_loss, group_lasso])   # primary first; writes p.grad
    opt.step()

One gradient per loss (primary first), the Gram matrix ``G = J J^T`` in float64, the EMA
normalization, PCD's QP on the normalized Gram matrix, and the direction rescaled to ``||g_1||``
(zero when the primary gradient is zero) -- see :mod:`pcd.direction`. ``p.grad`` is *set*, not
accumulated. Parameters that no loss depends on get ``grad = None`` (a stale gradient from an
earlier step is cleared, so the optimizer skips them). ``pcd.tau`` is settable; when ``g_1 = 0``
the step is zero and ``info.mu`` is 0 (the multipliers of the step actually taken).
"""
from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import numpy as np
import torch

from pcd.direction import pcd_weights
from pcd.normalize import EMANormalizer, check_beta_eps
from pcd.qp import check_tau

__all__ = ["PCD", "PCDInfo"]


@dataclass
class PCDInfo:
    """Diagnostics of one PCD step (plain NumPy / Python values)."""

    mu: np.ndarray            # [K-1] multipliers of the secondaries (normalized space)
    active: tuple             # indices >= 1 of the binding secondaries
    feasible: bool            # False: constraints incompatible, the primary was used
    cosine: np.ndarray        # [K-1] cos(g_1, g_j) of the raw gradients (nan where a norm is 0)
    update_cosine: np.ndarray  # [K] cos(d, g_i) of the deployed update with each raw gradient
    grad_norm: np.ndarray     # [K] raw ||g_i||
    scale: np.ndarray         # [K] normalization scales s_i
    weights: np.ndarray       # [K] raw-space weights a, d = sum_i a_i g_i
    update_norm: float        # ||d|| (= ||g_1|| unless d~ = 0)


class PCD:
    """Priority-Constrained Descent for PyTorch parameters (arXiv 2606.29521, Alg. 1).

    Args:
      params: the parameters (an iterable of tensors, as for ``torch.optim``).
      tau: scalar or one value per secondary, each in [0, 1].
      beta, eps: the EMA normalizer's factor (in [0, 1)) and epsilon (>= 0).
    """

    def __init__(self, params: Iterable[torch.Tensor], tau: float | Sequence[float] = 0.02,
                 beta: float = 0.999, eps: float = 1e-8) -> None:
        self.params = [p for p in params]
        if not self.params:
            raise ValueError("PCD got an empty parameter list")
        if not all(isinstance(p, torch.Tensor) for p in self.params):
            raise ValueError("PCD expects tensors (e.g. model.parameters())")
        self.params = [p for p in self.params if p.requires_grad]
        if not self.params:
            raise ValueError("none of the parameters requires grad")
        self._tau_raw: float | list[float] = 0.02
        self.tau = tau  # validated by the setter
        beta, eps = check_beta_eps(beta, eps)
        self.normalizer = EMANormalizer(beta, eps)

    # -- public API ----------------------------------------------------------------------------
    @property
    def tau(self) -> float | list[float]:
        """PCD's tolerance: a number in [0, 1], or one per secondary. Settable between steps
        (e.g. a schedule: ``pcd.tau = 0.05``); saved by :meth:`state_dict`."""
        return self._tau_raw

    @tau.setter
    def tau(self, value: float | Sequence[float]) -> None:
        if np.ndim(value) == 0:
            check_tau(value, 2)
            self._tau_raw = float(value)  # type: ignore[arg-type]  # a 0-d array or a number
        else:
            vals = list(value)  # type: ignore[arg-type]
            check_tau(vals, len(vals) + 1)
            self._tau_raw = [float(v) for v in vals]

    def backward(self, losses: Sequence[torch.Tensor]) -> PCDInfo:
        """Gradients of each scalar loss (primary first), then :meth:`apply_gradients`."""
        losses = list(losses)
        if not losses:
            raise ValueError("backward needs at least one loss (the primary)")
        for i, loss in enumerate(losses):
            if not isinstance(loss, torch.Tensor) or loss.numel() != 1:
                raise ValueError(f"loss {i} must be a scalar tensor")
            if not torch.isfinite(loss.detach()).all():
                raise ValueError(f"loss {i} is {loss.item()}: the run diverged (NaN/inf loss)")
        grads = []
        for i, loss in enumerate(losses):
            if loss.requires_grad:
                g = torch.autograd.grad(loss, self.params, retain_graph=i < len(losses) - 1,
                                        allow_unused=True)
            else:
                g = (None,) * len(self.params)  # type: ignore[assignment]
            grads.append(list(g))
        return self.apply_gradients(grads)

    def apply_gradients(self, grads: Sequence[Sequence[torch.Tensor | None]]) -> PCDInfo:
        """PCD from precomputed per-loss gradients ``grads[i][p]`` (None = does not depend).

        Use it for data-parallel training (all-reduce each loss's gradient first) or gradient
        accumulation (sum each loss's gradients over micro-batches first).
        """
        K = len(grads)
        if K == 0:
            raise ValueError("apply_gradients needs the gradients of at least one loss")
        if any(len(g) != len(self.params) for g in grads):
            raise ValueError(f"each loss needs one gradient entry per parameter ({len(self.params)})")
        tau = check_tau(self._tau_raw, K)
        used = [any(grads[i][j] is not None for i in range(K)) for j in range(len(self.params))]
        idx = [j for j, u in enumerate(used) if u]
        for j, u in enumerate(used):
            if not u:  # no loss depends on it: no stale gradient for the optimizer to step on
                self.params[j].grad = None
        if not idx:
            return self._empty_info(K)
        rows = []
        for i in range(K):
            parts = []
            for j in idx:
                g = grads[i][j]
                p = self.params[j]
                if g is None:
                    parts.append(torch.zeros(p.numel(), dtype=p.dtype, device=p.device))
                else:
                    if g.shape != p.shape:
                        raise ValueError(f"gradient {i} for parameter {j} has shape {tuple(g.shape)}, expected {tuple(p.shape)}")
                    parts.append(g.detach().reshape(-1))
            rows.append(torch.cat(parts))
        J = torch.stack(rows)  # [K, n]
        if not torch.isfinite(J).all():
            raise ValueError("a gradient contains NaN or inf: the run diverged")
        J64 = J.to(torch.float64)
        G = (J64 @ J64.T).cpu().numpy()
        sq = np.diagonal(G).copy()
        scales = self.normalizer.update(sq)
        out = pcd_weights(G, scales, tau)
        a = out.weights
        d = torch.as_tensor(a, dtype=J.dtype, device=J.device) @ J
        offset = 0
        for j in idx:
            p = self.params[j]
            n = p.numel()
            p.grad = d[offset:offset + n].view_as(p).clone()
            offset += n
        norms = np.sqrt(np.maximum(sq, 0.0))
        with np.errstate(divide="ignore", invalid="ignore"):
            cos = G[0, 1:] / (norms[0] * norms[1:])
            dn = float(np.sqrt(max(a @ G @ a, 0.0)))
            ucos = (G @ a) / (norms * dn)
        mu, active = out.qp.mu.copy(), out.qp.active
        if not np.any(a):  # g_1 = 0 (or d~ = 0): the step taken is zero, so are its multipliers
            mu, active = np.zeros_like(mu), ()
        return PCDInfo(mu=mu, active=active, feasible=bool(out.qp.feasible),
                       cosine=cos, update_cosine=ucos, grad_norm=norms, scale=scales, weights=a,
                       update_norm=dn)

    def _empty_info(self, K: int) -> PCDInfo:
        nan = np.full(K, np.nan)
        return PCDInfo(mu=np.zeros(K - 1), active=(), feasible=True, cosine=nan[1:], update_cosine=nan,
                       grad_norm=np.zeros(K), scale=np.zeros(K), weights=np.zeros(K), update_norm=0.0)

    def state_dict(self) -> dict:
        return {"tau": self._tau_raw, "normalizer": self.normalizer.state_dict()}

    def load_state_dict(self, state: dict) -> None:
        if not isinstance(state, dict) or "tau" not in state or "normalizer" not in state:
            raise ValueError("PCD state must be a dict with 'tau' and 'normalizer' (from state_dict())")
        self.tau = state["tau"]
        self.normalizer.load_state_dict(state["normalizer"])

    def __repr__(self) -> str:
        return f"PCD(tau={self._tau_raw}, {self.normalizer})"
