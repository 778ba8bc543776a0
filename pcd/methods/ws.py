"""Weighted sum / Mean: fixed, user-given weights (linear scalarization).

    d = sum_i w_i g_i,      weights = w                  (Sum: w_i = 1; Mean: w_i = 1/K)

With ``normalize=True`` the weights are divided by their sum, so the default (all ones) is
TorchJD's ``MeanWeighting`` (``1/K`` each, Jacobian Descent, arXiv 2406.16232, Sec. 2) and
``normalize=False`` with all ones is ``SumWeighting``. The PCD paper's "WS" baseline.
"""
from __future__ import annotations

from typing import Any

import numpy as np

from pcd._kernels import STEP_SIG, jit
from pcd.methods.base import Kernel, Method, Param, Step, register


def user_weights(w: Any, K: int, who: str) -> np.ndarray:
    """Expand a weight spec to ``[K]``: a scalar (every secondary; primary 1), ``K-1`` values
    (secondaries; primary 1) or ``K`` values (every objective)."""
    arr = np.atleast_1d(np.asarray(w, dtype=np.float64))
    if arr.size == 1:
        out = np.full(K, float(arr[0]))
        out[0] = 1.0
    elif arr.size == K - 1:
        out = np.concatenate([[1.0], arr])
    elif arr.size == K:
        out = arr.copy()
    else:
        raise ValueError(f"{who}: weights must be one number, {K - 1} values (one per secondary) or "
                         f"{K} values (one per objective), got {arr.size}")
    return out


@register("ws", "Weighted sum", "loss weighting")
class WeightedSum(Method):
    claims = frozenset({"linear_under_scaling", "weighted"})
    description = "Adds the gradients with fixed weights (Mean by default): the classic scalarization."
    paper = "Linear scalarization; Mean/Sum weightings of Jacobian Descent, arXiv 2406.16232"
    params = (
        Param("w", 1.0, 0.0, 1e6, per_objective=True,
              help="weight of each secondary (primary 1), or one weight per objective"),
        Param("normalize", True, kind="bool", help="divide the weights by their sum (Mean)"),
    )

    def _weights_for(self, K: int) -> np.ndarray:
        """The (normalized) weight vector for K objectives, computed once per K."""
        cache = self.__dict__.setdefault("_w_cache", {})
        if K not in cache:
            w = user_weights(self.hparams["w"], K, self.name)
            if self.hparams["normalize"]:
                s = w.sum()
                if s <= 0:
                    raise ValueError(f"{self.name}: the weights sum to 0; give at least one positive weight")
                w = w / s
            cache[K] = w
        return cache[K]

    def update(self, gram: np.ndarray, state: Any = None, *, losses: Any = None, jacobian: Any = None,
               rng: Any = None) -> Step:
        B, K = gram.shape[0], gram.shape[-1]
        w = self._weights_for(K)
        return Step(weights=np.repeat(w[None].astype(gram.dtype), B, axis=0))

    def kernel(self) -> Kernel:
        """Fixed weights: the step only writes them (a ``ValueError`` here, e.g. weights that sum to
        0, sends the run to the NumPy loop, which reports it)."""
        w = np.array([[float(v) for v in self._weights_for(2)]])
        return Kernel(rows=_ws_k2_step, params=lambda steps: w)


@jit(sig=STEP_SIG)
def _ws_k2_step(t: Any, L: Any, G: Any, W: Any, S: Any, p: Any) -> None:
    """The fast path's step (fixed weights ``p = (w0, w1)``), compiled for :func:`pcd._kernels.trajectory`."""
    for i in range(W.shape[1]):
        W[0, i], W[1, i] = p[0], p[1]
