"""PCD: Priority-Constrained Descent (arXiv 2606.29521), batched, as a registry method.

    d~ = argmin_d ||d - g~_1||^2  s.t.  g~_j . d >= tau_j ||g~_j||^2  (j >= 2),   g~_i = s_i g_i,
    d  = d~ ||g_1|| / ||d~||.

The EMA normalizer's state (``v`` ``[B, K]`` and the step count, :class:`PCDState`) is the
method's state, updated purely (:func:`pcd.normalize.ema_step`). The
returned weights are already in raw-gradient space and rescaled to ``||g_1||``, so
``weights @ J`` is the deployed update. ``info`` carries ``mu`` ``[B, K-1]``, ``feasible`` ``[B]``,
``active`` ``[B, K]`` and the normalization ``scales`` ``[B, K]``.
"""
from __future__ import annotations

from typing import Any, NamedTuple

import numpy as np

from pcd._fast import small_batch
from pcd._kernels import AVAILABLE, STEP_SIG, formula, jit
from pcd.direction import pcd_weights, rescale_k2
from pcd.methods.base import Kernel, Method, Param, Step, register
from pcd.normalize import ema_scale, ema_step
from pcd.qp import check_tau, k2_mu


class PCDState(NamedTuple):
    """The EMA normalizer's state: ``v`` ``[B, K]`` (zeros before the first step) and step count ``t``."""

    v: np.ndarray
    t: int


@register("pcd", "PCD", "hierarchical")
class PCDMethod(Method):
    halts_where_primary_vanishes = True  # d = d~ ||g_1|| / ||d~|| is zero wherever g_1 = 0
    moves_at_cancellation = True  # it keeps a tau share of the secondary's progress
    claims = frozenset({"linear_under_scaling", "weighted", "primary_anchored", "per_secondary_progress",
                        "hierarchical"})
    description = ("Follows the primary gradient and bends it just enough that every secondary "
                   "gets a tau share of its own progress (normalized).")
    paper = "Priority-Constrained Descent, arXiv 2606.29521"
    params = (
        Param("tau", 0.02, 0.0, 1.0, help="share of each secondary's normalized progress required per step",
              per_objective=True),
        Param("beta", 0.999, 0.0, 0.999999, help="EMA factor of the gradient-norm normalizer"),
        Param("eps", 1e-8, 0.0, 1.0, log=True, help="added to the EMA before the square root"),
    )
    primary_knob = "tau"

    def _tau(self, K: int) -> np.ndarray:
        cache = self.__dict__.setdefault("_tau_cache", {})
        if K not in cache:
            cache[K] = check_tau(self.hparams["tau"], K)
        return cache[K]

    def init(self, batch: int, K: int) -> PCDState:
        return PCDState(v=np.zeros((batch, K)), t=0)

    def update(self, gram: np.ndarray, state: PCDState | None = None, *, losses: Any = None,
               jacobian: Any = None, rng: Any = None) -> Step:
        B, K = gram.shape[0], gram.shape[-1]
        state = self.state_for(state, B, K)
        beta, eps = self.hparams["beta"], self.hparams["eps"]
        if K == 2 and AVAILABLE and small_batch(B):
            return self._update_k2_compiled(gram, state, np.array([beta, 1.0 - beta ** (state.t + 1), eps,
                                                                   float(self._tau(2)[0])]))
        # The Gram matrix was validated by the caller (finite, [B, K, K]); the diagonal of a Gram
        # matrix is >= 0, so the normalizer need not check again on this hot path.
        v, t, scales = ema_step(state.v, state.t, np.diagonal(gram, axis1=-2, axis2=-1), beta, eps)
        out = pcd_weights(gram, scales, self._tau(K), trusted=True)
        info = {"mu": out.qp.mu, "feasible": np.asarray(out.qp.feasible), "active": out.qp.active_mask,
                "scales": scales}
        return Step(weights=out.weights, state=PCDState(v, t), info=info)

    def _update_k2_compiled(self, gram: np.ndarray, state: PCDState, p: np.ndarray) -> Step:
        """A few K = 2 problems: :func:`pcd_k2` compiled, row by row (bit-identical to the NumPy
        path at ordinary scales: it skips :func:`pcd.qp._solve_k2`'s power-of-two rescaling, which
        changes nothing there)."""
        B = gram.shape[0]
        v = state.v.copy()
        W, S = np.empty((B, 2)), np.empty((B, 3))  # S: mu and the two scales
        _pcd_k2_rows(gram[:, 0, 0], gram[:, 0, 1], gram[:, 1, 1], p, W.T, v.T, S.T)
        mu = S[:, :1].copy()
        active = np.zeros((B, 2), dtype=bool)
        active[:, 1] = mu[:, 0] > 0
        info = {"mu": mu, "feasible": np.ones(B, dtype=bool), "active": active, "scales": S[:, 1:].copy()}
        return Step(weights=W, state=PCDState(v, state.t + 1), info=info)

    def kernel(self) -> Kernel:
        """The K = 2 step, compiled (:func:`pcd_k2`); state rows: the EMA ``v``, then ``mu`` and the
        two scales of the last step (``mu`` is recorded)."""
        beta, eps, tau = self.hparams["beta"], self.hparams["eps"], float(self._tau(2)[0])

        # pcd_k2's p at each step t (the bias correction of step t + 1)
        return Kernel(state=5, mu_row=2, rows=_pcd_k2_step,
                      params=lambda steps: np.array([[beta, 1.0 - beta ** (t + 1), eps, tau] for t in range(steps + 1)]))


@formula
def pcd_k2(g00: Any, g01: Any, g11: Any, v0: Any, v1: Any, p: Any) -> Any:
    """PCD's whole K = 2 step, written once (the NumPy path runs the same pieces on arrays), for
    ``p = (beta, 1 - beta^t, eps, tau)``: the EMA of the squared norms and the scales
    (:func:`pcd.normalize.ema_scale`), the normalized Gram entries ``(G_ij s_i) s_j``, the closed
    form :func:`pcd.qp.k2_mu` and the rescaling to ``||g_1||`` (:func:`pcd.direction.rescale_k2`).
    Returns ``(w0, w1, mu, v0, v1, s1, s2)``."""
    beta, bc, eps, tau = p[0], p[1], p[2], p[3]
    v0 = beta * v0 + (1.0 - beta) * g00
    v1 = beta * v1 + (1.0 - beta) * g11
    s1, s2 = ema_scale(v0, bc, eps), ema_scale(v1, bc, eps)
    a, c, e = g00 * s1 * s1, g01 * s1 * s2, g11 * s2 * s2
    mu = k2_mu(a, c, e, tau, np.maximum(a, e))
    f = rescale_k2(a, c, e, mu, g00)
    return s1 * f, mu * s2 * f, mu, v0, v1, s1, s2


_pcd_k2_c = jit(pcd_k2, inline=True)  # the formula, compiled into the row loop below


@jit(sig=STEP_SIG)
def _pcd_k2_step(t: Any, L: Any, G: Any, W: Any, S: Any, p: Any) -> None:
    """The fast path's step (:class:`pcd.methods.base.Kernel`), compiled for :func:`pcd._kernels.trajectory`."""
    _pcd_k2_rows(G[0], G[1], G[2], p, W, S[:2], S[2:])


@jit
def _pcd_k2_rows(a: Any, b: Any, c: Any, p: Any, W: Any, V: Any, S: Any) -> Any:
    """:func:`pcd_k2` for every row: ``W [2, B]`` weights; ``V [2, B]`` the EMA (in place);
    ``S [3, B]`` mu and the two scales."""
    for i in range(a.shape[0]):
        W[0, i], W[1, i], S[0, i], V[0, i], V[1, i], S[1, i], S[2, i] = _pcd_k2_c(a[i], b[i], c[i], V[0, i], V[1, i], p)
