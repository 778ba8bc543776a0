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

import math
from typing import Any, NamedTuple

import numpy as np

from pcd._fast import small_batch
from pcd.direction import _pcd_weights_k2_scalar, pcd_weights
from pcd.methods.base import Method, Param, Step, register
from pcd.normalize import ema_step
from pcd.qp import check_tau


class PCDState(NamedTuple):
    """The EMA normalizer's state: ``v`` ``[B, K]`` (zeros before the first step) and step count ``t``."""

    v: np.ndarray
    t: int


@register
class PCDMethod(Method):
    name = "pcd"
    family = "hierarchical"
    display_name = "PCD"
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
        if state is None:
            state = self.init(B, K)
        elif state.v.shape != (B, K):
            raise ValueError(f"pcd: state is for shape {state.v.shape}, got a batch of [{B}, {K}]")
        beta, eps = self.hparams["beta"], self.hparams["eps"]
        if K == 2 and small_batch(B):
            return self._update_k2_small(gram, state, beta, eps)
        # The Gram matrix was validated by the caller (finite, [B, K, K]); the diagonal of a Gram
        # matrix is >= 0, so the normalizer need not check again on this hot path.
        v, t, scales = ema_step(state.v, state.t, np.diagonal(gram, axis1=-2, axis2=-1), beta, eps)
        out = pcd_weights(gram, scales, self._tau(K), trusted=True)
        info = {"mu": out.qp.mu, "feasible": np.asarray(out.qp.feasible), "active": out.qp.active_mask,
                "scales": scales}
        return Step(weights=out.weights, state=PCDState(v, t), info=info)

    def _update_k2_small(self, gram: np.ndarray, state: PCDState, beta: float, eps: float) -> Step:
        """The toy engine's hot path (K = 2, a few start points): the EMA update and the closed
        form in Python floats -- the same operations in the same order as
        :func:`pcd.normalize.ema_step` and :func:`pcd.direction.pcd_weights` (K = 2), so the result is
        bit-identical (tested) at a fraction of the tiny-array NumPy overhead."""
        t = state.t + 1
        bc = 1.0 - beta ** t
        one_m = 1.0 - beta
        gl = gram.tolist()
        v_new, s_new = [], []
        for ((g00, _), (_, g11)), (v0, v1) in zip(gl, state.v.tolist()):
            v0 = beta * v0 + one_m * g00
            v1 = beta * v1 + one_m * g11
            d0, d1 = v0 / bc + eps, v1 / bc + eps
            v_new.append((v0, v1))
            s_new.append((1.0 / math.sqrt(d0) if d0 > 0 else 0.0, 1.0 / math.sqrt(d1) if d1 > 0 else 0.0))
        scales = np.array(s_new)
        out = _pcd_weights_k2_scalar(gram, scales, float(self._tau(2)[0]), lists=(gl, s_new))
        info = {"mu": out.qp.mu, "feasible": out.qp.feasible, "active": out.qp.active_mask, "scales": scales}
        return Step(weights=out.weights, state=PCDState(np.array(v_new), t), info=info)
