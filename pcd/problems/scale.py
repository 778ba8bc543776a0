"""``scale``: the PCD paper's scale-invariance experiment -- the secondary multiplied by ``10^k``.

::

    f_1(x) = 1/2 ||x - a||^2,                       a = (-1, -0.5)          (primary)
    f_2(x) = 10^k [relu(|x_1 - 1| - 0.5) + relu(|x_2 - 0.5| - 0.5)]          (secondary: l1
             distance to the box [0.5, 1.5] x [0, 1], a constraint-like regularizer)

Known Pareto set (weighted-sum minimizers ``x*(s)`` of ``f_1 + s f_2/10^k``, exact since both
are convex): the polyline ``a -> (-0.5, 0) -> p = (0.5, 0)``::

    x*(s) = a + s (1, 1)          for 0 <= s <= 0.5
    x*(s) = (-1 + s, 0)           for 0.5 <= s <= 1.5
    x*(s) = p = (0.5, 0)          for s >= 1.5          (p = argmin f_1 subject to f_2 = 0)

Equal-weight weighted sum ends at ``x*(10^k)``: it slides along the whole front as k goes from
-5 to 5. PCD's normalized direction is invariant to the scale of f_2 (``g~_2 = s g_2 /
sqrt(EMA(s^2 ||g_2||^2) + eps)``) as long as ``s^2 ||g_2||^2 >> eps``; its operating point is ``p``.
Gradients are min-norm subgradients at the kinks (see :mod:`pcd.problems.base`).
Source: PCD paper (arXiv 2606.29521), scale-invariance synthetic (drift 0.0075 over 10 orders).
The paper does not give its exact problem in our seed; this one is ours and documented here.
"""
from __future__ import annotations

from typing import Any

import numpy as np

from pcd.problems.base import Problem, check_float, check_points, register

A = np.array([-1.0, -0.5])
BOX_CENTER = np.array([1.0, 0.5])
HALF = 0.5
P = np.array([0.5, 0.0])


@register
class Scale(Problem):
    name = "scale"
    display_name = "Scale invariance (box constraint x 10^k)"
    description = "Secondary multiplied by 10^k: weighted sum slides along the front, PCD should stay."
    paper = "Priority-Constrained Descent, arXiv 2606.29521 (scale-invariance synthetic)"

    def __init__(self, k: float = 0.0) -> None:
        self.k = check_float(k, "k", -12.0, 12.0, self.name)
        self.s = 10.0 ** self.k
        self.K = 2
        self.dim = 2
        self.bounds = ((-2.0, 2.0), (-1.5, 1.5))
        self.objective_names = ("1/2 ||x - a||^2 (primary)", f"10^{self.k:g} x box distance")

    def losses_and_jacobian(self, x):
        X = check_points(x, 2, self.name)
        B = X.shape[0]
        L = np.empty((B, 2))
        J = np.empty((B, 2, 2))
        d1 = X - A
        L[:, 0] = 0.5 * np.einsum("bn,bn->b", d1, d1)
        J[:, 0] = d1
        dev = X - BOX_CENTER
        over = np.abs(dev) - HALF
        L[:, 1] = self.s * np.maximum(over, 0.0).sum(axis=1)
        J[:, 1] = self.s * np.sign(dev) * (over > 0)
        return L, J

    def default_starts(self) -> np.ndarray:
        return np.array([[0.0, -1.2]])

    def optima(self) -> None:
        return None  # no common minimizer (a genuine trade-off)

    @staticmethod
    def ws_endpoint(s: float) -> np.ndarray:
        """Minimizer of ``f_1 + s * (box distance)`` (equal-weight WS at scale s = 10^k)."""
        s = float(s)
        if s <= 0.5:
            return A + s * np.ones(2)
        if s <= 1.5:
            return np.array([-1.0 + s, 0.0])
        return P.copy()

    @staticmethod
    def constrained_optimum() -> np.ndarray:
        """``p = argmin f_1 s.t. f_2 = 0 = (0.5, 0)``: the hierarchical (PCD) operating point."""
        return P.copy()

    def pareto_set(self, n: int = 200) -> np.ndarray:
        n = max(3, int(n))
        s = np.linspace(0.0, 1.5, n)
        return np.array([self.ws_endpoint(v) for v in s])

    def params(self) -> dict[str, Any]:
        return {"k": self.k}
