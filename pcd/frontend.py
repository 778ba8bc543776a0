"""PyTorch front end of PCD: per-loss gradients -> Gram -> QP -> ``p.grad`` for any optimizer.

    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    pcd = PCD(model.parameters(), tau=0.02)
    info = pcd.backward([ce_loss, group_lasso])   # primary first; writes p.grad
    opt.step()

A thin wrapper over the one torch integration, :func:`pcd.train.step.gram_update` (the training
loop's :class:`~pcd.train.step.GramStep` runs the same code for every method). PCD here only
collects one gradient per loss (primary first, ``torch.autograd.grad``) as per-objective
``(parameter index, gradient)`` lists, validates the input, keeps the method's state and turns the
step into :class:`PCDInfo`. What the core does with PCD (arXiv 2606.29521, Alg. 1;
:mod:`pcd.methods.pcd`):

    G = J J^T (float64),   v_i <- beta v_i + (1 - beta) G_ii,   s_i = 1/sqrt(v_i / (1 - beta^t) + eps),
    d~ = argmin_d ||d - g~_1||^2  s.t.  g~_j . d >= tau_j ||g~_j||^2 (j >= 2),   g~_i = s_i g_i,
    p.grad = d = d~ ||g_1|| / ||d~||   (zero when d~ = 0 or g_1 = 0).

``p.grad`` is *set*, not accumulated. Parameters that no loss depends on get ``grad = None`` (a
stale gradient from an earlier step is cleared, so the optimizer skips them). ``pcd.tau`` is
settable; when ``g_1 = 0`` the step is zero and ``info.mu`` is 0 (the multipliers of the step
actually taken). The state is PCD's :class:`~pcd.methods.pcd.PCDState` ``(v, t)``;
:meth:`PCD.state_dict` keeps the format it always had, ``{"tau", "normalizer": {beta, eps, t, v}}``.
"""
from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch

import pcd._validate as V
from pcd.methods.pcd import PCDMethod, PCDState
from pcd.normalize import check_beta_eps
from pcd.qp import check_tau
from pcd.train.step import gram_update

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

    _method: PCDMethod  # the registry's PCD with these hyper-parameters (rebuilt when tau is set)

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
        self._beta, self._eps = check_beta_eps(beta, eps)
        self._tau_raw: float | list[float] = 0.02
        self.tau = tau  # validated by the setter; builds the method
        self._state: PCDState | None = None  # None before the first step (K is not known yet)

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
        self._method = self._make_method()

    def _make_method(self) -> PCDMethod:
        """The registry's PCD with this wrapper's hyper-parameters, already validated by the front
        end's own rules (``check_tau``; ``check_beta_eps``: beta in [0, 1), eps >= 0 -- wider than
        the method's slider bounds, which are for the pages), so they are set, not re-validated."""
        m = PCDMethod()
        m.hparams = {"tau": self._tau_raw, "beta": self._beta, "eps": self._eps}
        return m

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
        check_tau(self._tau_raw, K)
        if self._state is not None and self._state.v.shape[-1] != K:
            raise ValueError(f"PCD was stepped with {self._state.v.shape[-1]} losses, got {K}")
        lists: list[list[tuple[int, torch.Tensor]]] = []
        for i, gs in enumerate(grads):
            entries = []
            for j, g in enumerate(gs):
                if g is None:
                    continue
                p = self.params[j]
                if not isinstance(g, torch.Tensor):
                    raise ValueError(f"gradient {i} for parameter {j} must be a tensor or None, got {type(g).__name__}")
                if g.shape != p.shape:
                    raise ValueError(f"gradient {i} for parameter {j} has shape {tuple(g.shape)}, expected {tuple(p.shape)}")
                entries.append((j, g.detach()))
            lists.append(entries)
        for p in self.params:  # set, not accumulated: a passed-in p.grad is only read
            p.grad = None
        # float64 Gram (see pcd.train.step.gram_matrix): PCD's numbers do not depend on the model's dtype
        res = gram_update(self.params, lists, self._method, self._state, dtype=torch.float64)
        if res.diverged:
            raise ValueError("a gradient contains NaN or inf: the run diverged")
        if res.step is None:  # no loss depends on any parameter: nothing stepped, state unchanged
            return self._empty_info(K)
        self._state = res.step.state
        return self._info(res.gram, res.step.weights[0], res.step.info)

    def _info(self, G: np.ndarray, a: np.ndarray, info: dict[str, Any]) -> PCDInfo:
        sq = np.diagonal(G).copy()
        norms = np.sqrt(np.maximum(sq, 0.0))
        with np.errstate(divide="ignore", invalid="ignore"):
            cos = G[0, 1:] / (norms[0] * norms[1:])
            dn = float(np.sqrt(max(a @ G @ a, 0.0)))
            ucos = (G @ a) / (norms * dn)
        mu = np.array(info["mu"][0], dtype=np.float64)
        active = tuple(int(i) for i in np.flatnonzero(info["active"][0]))
        if not np.any(a):  # g_1 = 0 (or d~ = 0): the step taken is zero, so are its multipliers
            mu, active = np.zeros_like(mu), ()
        return PCDInfo(mu=mu, active=active, feasible=bool(np.asarray(info["feasible"]).reshape(-1)[0]),
                       cosine=cos, update_cosine=ucos, grad_norm=norms, scale=np.array(info["scales"][0]),
                       weights=np.array(a, dtype=np.float64), update_norm=dn)

    def _empty_info(self, K: int) -> PCDInfo:
        nan = np.full(K, np.nan)
        return PCDInfo(mu=np.zeros(K - 1), active=(), feasible=True, cosine=nan[1:], update_cosine=nan,
                       grad_norm=np.zeros(K), scale=np.zeros(K), weights=np.zeros(K), update_norm=0.0)

    def state_dict(self) -> dict:
        """``{"tau", "normalizer": {"beta", "eps", "t", "v"}}`` -- the format of every earlier
        version (``v``: ``[K]`` float64 EMA of ``||g_i||^2``, None before the first step)."""
        st = self._state
        return {"tau": self._tau_raw,
                "normalizer": {"beta": self._beta, "eps": self._eps, "t": 0 if st is None else int(st.t),
                               "v": None if st is None else np.array(st.v[0], dtype=np.float64)}}

    def load_state_dict(self, state: dict) -> None:
        """Restore :meth:`state_dict` (of this or any earlier version); a bad dict changes nothing."""
        if not isinstance(state, dict) or "tau" not in state or "normalizer" not in state:
            raise ValueError("PCD state must be a dict with 'tau' and 'normalizer' (from state_dict())")
        norm = state["normalizer"]
        if not isinstance(norm, dict) or not {"beta", "eps", "t", "v"} <= set(norm):
            raise ValueError("PCD state's 'normalizer' must be a dict with 'beta', 'eps', 't' and 'v' (from state_dict())")
        beta, eps = check_beta_eps(norm["beta"], norm["eps"])
        t = V.integer(norm["t"], "PCD state's normalizer 't'", low=0, strict=False)
        st: PCDState | None = None
        if norm["v"] is None or t == 0:
            if norm["v"] is not None or t != 0:
                raise ValueError(f"PCD state's normalizer has t = {t} but v = {V.show(norm['v'])}: "
                                 "v is None exactly when t = 0 (no step yet)")
        else:
            try:
                v = np.array(norm["v"], dtype=np.float64)
            except (TypeError, ValueError):
                raise ValueError(f"PCD state's normalizer 'v' must be a list of numbers, got {V.show(norm['v'])}") from None
            if v.ndim != 1 or v.size == 0 or not np.isfinite(v).all() or (v < 0).any():
                raise ValueError(f"PCD state's normalizer 'v' must be one finite number >= 0 per loss, got {V.show(norm['v'])}")
            st = PCDState(v=v[None], t=t)
        old = (self._tau_raw, self._beta, self._eps)
        self._beta, self._eps = beta, eps
        try:
            self.tau = state["tau"]  # validates, rebuilds the method with beta, eps
        except ValueError:
            self._tau_raw, self._beta, self._eps = old
            self._method = self._make_method()
            raise
        self._state = st

    def __repr__(self) -> str:
        t = 0 if self._state is None else self._state.t
        return f"PCD(tau={self._tau_raw}, beta={self._beta}, eps={self._eps}, t={t})"
