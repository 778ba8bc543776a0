"""``double_well``: the PCD paper's K-objective double well (conflict-equilibrium residual law).

Dimension ``n = K - 1`` (one coordinate per secondary)::

    f_1(x)     = sum_j (x_j^2 - 1)^2               primary: minima at x_j = +-1 (barrier at 0)
    f_{j+1}(x) = 1/2 (x_j - 1)^2,  j = 1..K-1      secondary j pulls coordinate j to +1
    grad f_1   = (4 x_j (x_j^2 - 1))_j,   grad f_{j+1} = (x_j - 1) e_j

The only point where every objective is optimal (the CMS point) is x = (1, ..., 1). All methods
start at ``x_j = -0.6``, the wrong basin. Derivation of the residual law: there
``d/dx_j (x_j^2-1)^2 = 4 (-0.6)(0.36 - 1) = 1.536`` so ``||grad f_1|| = 1.536 sqrt(K-1)``, while
each secondary gradient is ``-1.6 e_j``. With ``lambda_0 = 1/(1 + (K-1)/0.96)`` and
``lambda_j = 0.96 lambda_0`` the convex combination ``lambda_0 grad f_1 + sum_j lambda_j grad f_{j+1}
= lambda_0 (1.536 - 1.6 * 0.96) 1 = 0``: the start is Pareto-stationary. Convex-combination
methods (MGDA: the min-norm element of the hull) therefore have a zero direction and never
leave it, with the primary-gradient residual ``1.536 sqrt(K-1)`` -- a conflict equilibrium.
PCD's constraint ``g~_j . d >= tau ||g~_j||^2`` forces every coordinate across the barrier to
the CMS point. Source: PCD paper (arXiv 2606.29521), K-objective synthetic experiment.

2-D slices for the page: ``K = 3`` (n = 2, two secondaries), or ``K = 2, dim = 2`` (one merged
secondary ``1/2 ||x - 1||^2``; the same law holds with ``sqrt(dim)``: at x = (-0.6, -0.6) the two
gradients are anti-parallel).
"""
from __future__ import annotations

import math
from typing import Any

import numpy as np

from pcd.problems.base import Problem, check_float, check_int, check_points, register

MAX_K = 257
START = -0.6


def residual_law(K: int) -> float:
    """``||grad f_1(-0.6 * 1)|| = 4 * 0.6 * 0.64 * sqrt(K - 1) = 1.536 sqrt(K - 1)``."""
    K = check_int(K, "K", 2, MAX_K, "double_well")
    return 4 * 0.6 * 0.64 * math.sqrt(K - 1)


@register
class DoubleWell(Problem):
    name = "double_well"
    display_name = "K-objective double well"
    description = "A double well per coordinate; each secondary pulls one coordinate to +1 across the barrier."
    paper = "Priority-Constrained Descent, arXiv 2606.29521 (K-objective synthetic)"

    def __init__(self, K: int = 3, dim: int | None = None, start: float = START) -> None:
        self.K = check_int(K, "K", 2, MAX_K, self.name)
        if dim is None:
            dim = self.K - 1
        self.dim = check_int(dim, "dim", 1, MAX_K, self.name)
        if self.dim != self.K - 1 and self.K != 2:
            raise ValueError(f"double_well: dim must be K - 1 = {self.K - 1} (one secondary per coordinate), "
                             f"or K = 2 with any dim (one merged secondary); got K = {self.K}, dim = {self.dim}")
        self.merged = self.K == 2
        self.display_name = f"Double well, K = {self.K}"
        self.start = check_float(start, "start", -10.0, 10.0, self.name)
        self.bounds = tuple((-2.0, 2.0) for _ in range(self.dim))
        if self.merged:
            self.objective_names = ("sum_j (x_j^2-1)^2 (primary)", "1/2 ||x-1||^2")
        else:
            self.objective_names = tuple(["sum_j (x_j^2-1)^2 (primary)"] +
                                         [f"1/2 (x_{j + 1}-1)^2" for j in range(self.dim)])

    def losses_and_jacobian(self, x):
        X = check_points(x, self.dim, self.name)
        B = X.shape[0]
        L = np.empty((B, self.K))
        J = np.zeros((B, self.K, self.dim))
        sq = X * X - 1.0
        L[:, 0] = (sq * sq).sum(axis=1)
        J[:, 0, :] = 4.0 * X * sq
        dev = X - 1.0
        if self.merged:
            L[:, 1] = 0.5 * (dev * dev).sum(axis=1)
            J[:, 1, :] = dev
        else:
            L[:, 1:] = 0.5 * dev * dev
            idx = np.arange(self.dim)
            J[:, idx + 1, idx] = dev
        return L, J

    def default_starts(self) -> np.ndarray:
        return np.full((1, self.dim), self.start)

    def optima(self) -> np.ndarray:
        return np.ones((1, self.dim))

    def pareto_set(self, n: int = 200) -> np.ndarray:
        return np.ones((1, self.dim))  # the ideal point is attained: x = 1

    def residual_law(self) -> float:
        """The conflict-equilibrium residual ``4|s||s^2-1| sqrt(dim)`` at the start s (1.536 sqrt(K-1) for s = -0.6)."""
        s = self.start
        return 4 * abs(s) * abs(s * s - 1) * math.sqrt(self.dim)

    def params(self) -> dict[str, Any]:
        return {"K": self.K, "dim": self.dim, "start": self.start}
