"""MGDA: the min-norm element of the convex hull of the gradients (Desideri, "Multiple-gradient
descent algorithm (MGDA) for multiobjective optimization", C. R. Math. 2012; Sener & Koltun,
"Multi-Task Learning as Multi-Objective Optimization", NeurIPS 2018, Algorithm 2).

    weights = argmin_{a >= 0, sum_i a_i = 1}  a^T G a,        d = sum_i a_i g_i

``solver="exact"`` (default) solves this QP exactly: K = 2 in closed form
``a_1 = clip((G22 - G12) / (G11 + G22 - 2 G12), 0, 1)``, larger K as a non-negative QP
(see :func:`pcd.methods._solvers.simplex_min_norm`). ``solver="frank-wolfe"`` reproduces
TorchJD's ``MGDAWeighting`` (Frank-Wolfe, Sener & Koltun Alg. 2; stops when the step size
``gamma < epsilon`` or after ``max_iters``), vectorized over the batch.

Failure mode named by the PCD paper: when the primary gradient is exactly zero, ``a = e_1`` and the
direction is zero, although the secondaries may not be stationary. Not linear under scaling.
"""
from __future__ import annotations

from typing import Any

import numpy as np

from pcd.methods._solvers import min_norm_k2_step, simplex_min_norm
from pcd.methods.base import Kernel, Method, Param, Step, register


def frank_wolfe(G: np.ndarray, epsilon: float = 1e-3, max_iters: int = 100) -> np.ndarray:
    """TorchJD 0.18 ``MGDAWeighting.forward`` for a batch ``[B, K, K]`` (same arithmetic)."""
    B, K = G.shape[0], G.shape[-1]
    alpha = np.full((B, K), 1.0 / K)
    running = np.ones(B, dtype=bool)
    rows = np.arange(B)
    for _ in range(max_iters):
        Ga = np.einsum("bij,bj->bi", G, alpha)
        t = np.argmin(Ga, axis=1)
        a = Ga[rows, t]                      # alpha . G e_t
        b = np.einsum("bi,bi->b", alpha, Ga)  # alpha . G alpha
        c = G[rows, t, t]                    # e_t . G e_t
        with np.errstate(divide="ignore", invalid="ignore"):
            gamma = np.where(c <= a, 1.0, np.where(b <= a, 0.0, (b - a) / (b + c - 2.0 * a)))
        gamma = np.where(running, gamma, 0.0)
        e_t = np.zeros((B, K))
        e_t[rows, t] = 1.0
        alpha = np.where(running[:, None], (1.0 - gamma[:, None]) * alpha + gamma[:, None] * e_t, alpha)
        running &= ~(gamma < epsilon)
        if not running.any():
            break
    return alpha


@register("mgda", "MGDA", "gradient aggregation")
class MGDA(Method):
    claims = frozenset({"non_conflicting", "weighted"})
    zero_where_primary_vanishes = True  # the min-norm point of {0, g_2, ...} is 0
    description = "Min-norm point of the convex hull of the gradients: a common descent direction."
    paper = "Desideri 2012 (C. R. Math.); Sener & Koltun, NeurIPS 2018"
    params = (
        Param("solver", "exact", kind="choice", choices=("exact", "frank-wolfe"),
              help="exact QP, or TorchJD's Frank-Wolfe iterations"),
        Param("epsilon", 1e-3, 1e-12, 1.0, log=True, help="Frank-Wolfe: stop when the step is below this"),
        Param("max_iters", 100, 1, 100000, kind="int", help="Frank-Wolfe: maximum iterations"),
    )

    def update(self, gram: np.ndarray, state: Any = None, *, losses: Any = None, jacobian: Any = None,
               rng: Any = None) -> Step:
        if self.hparams["solver"] == "exact":
            w = simplex_min_norm(gram)
        else:
            w = frank_wolfe(gram, self.hparams["epsilon"], self.hparams["max_iters"])
        return Step(weights=w, state=state)

    def kernel(self) -> Kernel | None:
        """The exact solver's K = 2 closed form, compiled (:func:`pcd.methods._solvers.min_norm_k2`)."""
        return Kernel(rows=min_norm_k2_step) if self.hparams["solver"] == "exact" else None
