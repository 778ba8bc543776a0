"""``saddle2d``: the PCD paper's Fig. 1 -- two valleys, a saddle barrier, and a box constraint.

Primary (a double well in theta_1, a bowl in theta_2; minima (+-2, 0), saddle at (0, 0))::

    L1(theta) = (theta_1^2 - 4)^2 / 4 + theta_2^2 / 2
    grad L1   = (theta_1 (theta_1^2 - 4), theta_2)

Secondary (l1 distance to the box [1.5, 2.5] x [-0.5, 0.5] around (2, 0))::

    L2(theta) = sum_d relu(|theta_d - c_d| - 0.5),   c = (2, 0)
    grad L2   = sign(theta_d - c_d) * 1[|theta_d - c_d| > 0.5]     (min-norm subgradient: 0 on the
                                                                     box boundary and inside)

The only point where both objectives are optimal (a CMS point) is (2, 0). Starting in the left
valley, the secondary's unit pull to the right is balanced by the primary's barrier (whose slope
reaches 3.08 at theta_1 = -2/sqrt(3)): symmetric methods stop at a *conflict equilibrium*
(e.g. weighted sum where theta_1 (theta_1^2 - 4) = 1, theta_1 ~ -1.86) with L2 > 0.
Source: PCD paper (arXiv 2606.29521), Fig. 1 and its synthetic-experiment section; starts
(-2.55, 0.40), (-2.90, 0.12), (-1.65, -0.55).
"""
from __future__ import annotations

import numpy as np

from pcd.problems.base import Problem, check_points, register


@register
class Saddle2D(Problem):
    name = "saddle2d"
    display_name = "Saddle (PCD Fig. 1)"
    description = "Two valleys and a saddle barrier; the secondary pulls to a box around (2, 0)."
    paper = "Priority-Constrained Descent, arXiv 2606.29521, Fig. 1"

    CENTER = np.array([2.0, 0.0])
    HALF_WIDTH = 0.5

    def __init__(self) -> None:
        self.K = 2
        self.dim = 2
        self.bounds = ((-3.5, 3.5), (-2.0, 2.0))
        self.objective_names = ("L1 (primary: double well)", "L2 (secondary: box distance)")

    def losses_and_jacobian(self, x):
        x = check_points(x, 2, self.name)
        t1, t2 = x[:, 0], x[:, 1]
        B = x.shape[0]
        L = np.empty((B, 2))
        J = np.empty((B, 2, 2))
        sq = t1 * t1 - 4.0
        L[:, 0] = 0.25 * sq * sq + 0.5 * t2 * t2
        J[:, 0, 0] = t1 * sq
        J[:, 0, 1] = t2
        dev = x - self.CENTER
        over = np.abs(dev) - self.HALF_WIDTH
        hinge = np.maximum(over, 0.0)
        L[:, 1] = hinge[:, 0] + hinge[:, 1]  # the sum over the two coordinates (the same bits as .sum(axis=1))
        J[:, 1, :] = np.sign(dev) * (over > 0)
        return L, J

    def default_starts(self) -> np.ndarray:
        return np.array([[-2.55, 0.40], [-2.90, 0.12], [-1.65, -0.55]])

    def optima(self) -> np.ndarray:
        return np.array([[2.0, 0.0]])

    def pareto_set(self, n: int = 200) -> np.ndarray:
        # The ideal point is attained at (2, 0): the (global) Pareto set is that single point.
        return np.array([[2.0, 0.0]])
