"""Dual-cone projection family: UPGrad and DualProj (Jacobian Descent, Quinton & Rey, arXiv
2406.16232; TorchJD 0.18 ``UPGradWeighting`` / ``DualProjWeighting``).

Projection onto the dual cone ``C(J) = {y : J y >= 0}`` (paper eq. 3) in weight space
(Proposition 1): ``pi_J(J^T u) = J^T v`` with ``v = argmin_{v >= u} v^T G v``.

    UPGrad:    weights = (1/K) sum_i v(e_i)          (project every gradient, average; eq. 5)
    DualProj:  weights = v(1/K * 1)                   (project the mean gradient; GEM, Lopez-Paz &
                                                       Ranzato 2017, eq. 11)

Both are non-conflicting (``J d >= 0``); UPGrad is also linear under scaling (its direction is a
sum of positively homogeneous projections). The QPs are solved exactly (vectorized closed form /
enumeration for K <= 5, Cholesky + non-negative least squares beyond). ``reg_eps`` reproduces TorchJD's
projector, which solves on ``G / trace(G) + reg_eps I`` (its default is 1e-4; ours is 0, i.e. the
exact projection, with the ridge ``1e-13 trace(G)`` only to pick unique weights when G is singular).
"""
from __future__ import annotations

from typing import Any

import numpy as np

from pcd.methods._solvers import Support, WarmStarted, project_dual_cone, ridge2, support_of
from pcd.methods.base import Param, Step, register

_REG = Param("reg_eps", 0.0, 0.0, 1e-2, help="Tikhonov term added to G / trace(G) (TorchJD's default: 1e-4)")


@register("upgrad", "UPGrad", "gradient aggregation")
class UPGrad(WarmStarted):
    claims = frozenset({"non_conflicting", "linear_under_scaling", "weighted"})
    description = "Projects each gradient onto the cone of non-conflicting directions and averages."
    paper = "Quinton & Rey, Jacobian Descent for Multi-Objective Optimization, arXiv 2406.16232"
    params = (_REG,)

    def update(self, gram: np.ndarray, state: Any = None, *, losses: Any = None, jacobian: Any = None,
               rng: Any = None) -> Step:
        B, K = gram.shape[0], gram.shape[-1]
        if K == 2:  # closed form: v(e_1) = (1, max(0, -G12 / G22)), v(e_2) = (max(0, -G12 / G11), 1)
            a, b, c = ridge2(gram, self.hparams["reg_eps"])
            w = np.empty((B, 2))
            w[:, 0] = 0.5 * (1.0 + np.maximum(-b / a, 0.0))
            w[:, 1] = 0.5 * (1.0 + np.maximum(-b / c, 0.0))
            return Step(weights=w, state=Support())
        U = np.broadcast_to(np.eye(K) / K, (B, K, K))
        V = project_dual_cone(gram, U, self.hparams["reg_eps"], support_of(state))
        # state (K > 5): where each projection moved, the solver's first guess at the next call
        return Step(weights=V.sum(axis=1), state=Support(V > U if K > 5 else None))


@register("dualproj", "DualProj", "gradient aggregation")
class DualProj(WarmStarted):
    claims = frozenset({"non_conflicting", "weighted"})
    description = "Projects the mean gradient onto the cone of non-conflicting directions."
    paper = "Lopez-Paz & Ranzato, GEM, NeurIPS 2017 (eq. 11); as DualProj in arXiv 2406.16232"
    params = (_REG,)

    def update(self, gram: np.ndarray, state: Any = None, *, losses: Any = None, jacobian: Any = None,
               rng: Any = None) -> Step:
        B, K = gram.shape[0], gram.shape[-1]
        if K == 2:  # closed form: the mean conflicts with at most one gradient; project off it
            a, b, c = ridge2(gram, self.hparams["reg_eps"])
            w = np.empty((B, 2))
            w[:, 0] = 0.5 + np.maximum(-0.5 * (a + b) / a, 0.0)
            w[:, 1] = 0.5 + np.maximum(-0.5 * (b + c) / c, 0.0)
            return Step(weights=w, state=Support())
        U = np.full((B, 1, K), 1.0 / K)
        V = project_dual_cone(gram, U, self.hparams["reg_eps"], support_of(state))
        return Step(weights=V[:, 0], state=Support(V > U if K > 5 else None))
