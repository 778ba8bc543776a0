"""PCD: Priority-Constrained Descent (arXiv 2606.29521), batched, as a registry method.

    d~ = argmin_d ||d - g~_1||^2  s.t.  g~_j . d >= tau_j ||g~_j||^2  (j >= 2),   g~_i = s_i g_i,
    d  = d~ ||g_1|| / ||d~||.

The EMA normalizer's state (``v`` ``[B, K]`` and the step count) is the method's state. The
returned weights are already in raw-gradient space and rescaled to ``||g_1||``, so
``weights @ J`` is the deployed update. ``info`` carries ``mu`` ``[B, K-1]``, ``feasible`` ``[B]``,
``active`` ``[B, K]`` and the normalization ``scales`` ``[B, K]``.
"""
from __future__ import annotations

import math
from typing import Any

import numpy as np

from pcd.direction import _pcd_weights_k2_scalar, pcd_weights
from pcd.methods.base import Method, MethodOutput, Param, register
from pcd.normalize import EMANormalizer
from pcd.qp import check_tau


@register
class PCDMethod(Method):
    name = "pcd"
    display_name = "PCD"
    description = ("Follows the primary gradient and bends it just enough that every secondary "
                   "gets a tau share of its own progress (normalized).")
    paper = "Priority-Constrained Descent, arXiv 2606.29521"
    params = (
        Param("tau", 0.02, 0.0, 1.0, help="share of each secondary's normalized progress required per step",
              per_objective=True),
        Param("beta", 0.999, 0.0, 0.999999, help="EMA factor of the gradient-norm normalizer"),
        Param("eps", 1e-8, 0.0, 1.0, log=True, help="added to the EMA before the square root"),
    )
    hierarchical = True

    def _tau(self, K: int) -> np.ndarray:
        cache = self.__dict__.setdefault("_tau_cache", {})
        if K not in cache:
            cache[K] = check_tau(self.hparams["tau"], K)
        return cache[K]

    def init_state(self, batch: int, K: int) -> EMANormalizer:
        return EMANormalizer(self.hparams["beta"], self.hparams["eps"])

    def weights(self, gram: np.ndarray, *, losses: Any = None, jacobian: Any = None,
                state: EMANormalizer | None = None, rng: Any = None) -> MethodOutput:
        if state is None:
            state = self.init_state(gram.shape[0], gram.shape[-1])
        B, K = gram.shape[0], gram.shape[-1]
        if K == 2 and B <= 16 and state.v is not None and state.v.shape == (B, 2):
            return self._weights_k2_small(gram, state)
        # The Gram matrix was validated by Method.__call__ (finite, [B, K, K]); the diagonal of a
        # Gram matrix is >= 0, so the normalizer need not check again on this hot path.
        scales = state.update(np.diagonal(gram, axis1=-2, axis2=-1), check=False)
        out = pcd_weights(gram, scales, self._tau(gram.shape[-1]), trusted=True)
        info = {"mu": out.qp.mu, "feasible": np.asarray(out.qp.feasible), "active": out.qp.active_mask,
                "scales": scales}
        return MethodOutput(weights=out.weights, state=state, info=info)

    def _weights_k2_small(self, gram: np.ndarray, state: EMANormalizer) -> MethodOutput:
        """The toy engine's hot path (K = 2, a few start points): the EMA update and the closed
        form in Python floats -- the same operations in the same order as
        :meth:`EMANormalizer.update` and :func:`pcd.direction._pcd_weights_k2`, so the result is
        bit-identical (tested) at a fraction of the tiny-array NumPy overhead."""
        beta, eps = state.beta, state.eps
        state.t += 1
        bc = 1.0 - beta ** state.t
        one_m = 1.0 - beta
        gl = gram.tolist()
        v_new, s_new = [], []
        assert state.v is not None  # _weights_k2_small runs after the first (vectorized) update
        for ((g00, _), (_, g11)), (v0, v1) in zip(gl, state.v.tolist()):
            v0 = beta * v0 + one_m * g00
            v1 = beta * v1 + one_m * g11
            d0, d1 = v0 / bc + eps, v1 / bc + eps
            v_new.append((v0, v1))
            s_new.append((1.0 / math.sqrt(d0) if d0 > 0 else 0.0, 1.0 / math.sqrt(d1) if d1 > 0 else 0.0))
        state.v = np.array(v_new)
        scales = np.array(s_new)
        out = _pcd_weights_k2_scalar(gram, scales, float(self._tau(2)[0]), lists=(gl, s_new))
        info = {"mu": out.qp.mu, "feasible": out.qp.feasible, "active": out.qp.active_mask, "scales": scales}
        return MethodOutput(weights=out.weights, state=state, info=info)
