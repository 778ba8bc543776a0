"""``two_task``: the two-objective toy of CAGrad (Liu et al., NeurIPS 2021), reused by Nash-MTL
(Navon et al., ICML 2022) and FAMO (Liu et al., NeurIPS 2023) for their trajectory figures.

With ``c_+ = max(tanh(y/2), 0)``, ``c_- = max(tanh(-y/2), 0)`` and a floor ``l = 5e-6``::

    f_1 = c_+ (log(max(|0.5(-x-7) - tanh(-y)|, l)) + 6) + c_- (((-x+7)^2 + 0.1(-y-8)^2)/10 - 20)
    f_2 = c_+ (log(max(|0.5(-x+3) + tanh(-y) + 2|, l)) + 6) + c_- (((-x-7)^2 + 0.1(-y-8)^2)/10 - 20)

(our reading of the public CAGrad toy code; checked against its source text). The objectives are
symmetric: which one is "primary" is a choice -- here f_1. Evaluated through the safe formula
engine of :mod:`pcd.problems.custom`, so gradients are exact (forward-mode AD; min-norm
subgradients at the clamp kinks). Starts: the five used in those papers' figures.
"""
from __future__ import annotations

import numpy as np

from pcd.problems.base import register
from pcd.problems.custom import CustomProblem

F1 = ("relu(tanh(0.5*y)) * (log(max(abs(0.5*(-x-7) - tanh(-y)), 0.000005)) + 6)"
      " + relu(tanh(-0.5*y)) * (((-x+7)**2 + 0.1*(-y-8)**2)/10 - 20)")
F2 = ("relu(tanh(0.5*y)) * (log(max(abs(0.5*(-x+3) + tanh(-y) + 2), 0.000005)) + 6)"
      " + relu(tanh(-0.5*y)) * (((-x-7)**2 + 0.1*(-y-8)**2)/10 - 20)")


@register
class TwoTask(CustomProblem):
    name = "two_task"
    display_name = "Two-task toy (CAGrad / Nash-MTL / FAMO)"
    description = "The CAGrad paper's two-objective toy; its Pareto set is the curve y ~ -8.4, x in [-7, 7]."
    paper = "Conflict-Averse Gradient Descent (Liu et al., NeurIPS 2021), toy example"

    def __init__(self) -> None:
        super().__init__(primary=F1, secondaries=[F2], bounds=((-10.0, 10.0), (-10.0, 10.0)),
                         starts=[[-8.5, 7.5], [-8.5, -5.0], [9.0, 9.0], [-7.5, -0.5], [9.0, -1.0]])
        self.objective_names = ("f1 (primary)", "f2")

    def pareto_set(self, n: int = 200) -> np.ndarray:
        """The Pareto set, from the weighted sums ``lam f_1 + (1 - lam) f_2``, ``lam in [0, 1]``.

        In the lower half-plane ``c_+ = 0`` and both objectives share the factor ``c(y) = c_-``::

            lam f_1 + (1 - lam) f_2 = c(y) [ (lam (x-7)^2 + (1-lam) (x+7)^2)/10 + 0.1 (y+8)^2/10 - 20 ],

        so for every y the minimizing x is ``14 lam - 7`` and y solves a 1-D problem (vectorized
        golden-section search on [-10, -6]). The lower half-plane reaches values near -20 while the
        upper half-plane's are >= log(5e-6) + 6 ~ -6.2, so the set lies there; it runs from
        (-7, y) to (7, y) with y ~ -8.4. Every point is Pareto-stationary (the min-norm convex
        combination of the two gradients vanishes; checked in tests).
        """
        n = max(2, int(n))
        lam = np.linspace(0.0, 1.0, n)
        x = 14.0 * lam - 7.0

        def wsum(y: np.ndarray) -> np.ndarray:
            L = self.losses(np.stack([x, y], axis=-1))
            return lam * L[:, 0] + (1.0 - lam) * L[:, 1]

        lo, hi = np.full(n, -10.0), np.full(n, -6.0)
        r = (np.sqrt(5.0) - 1.0) / 2.0
        a, b = hi - r * (hi - lo), lo + r * (hi - lo)
        fa, fb = wsum(a), wsum(b)
        for _ in range(80):  # (0.618)^80 * 4 ~ 1e-16: converged to float precision
            left = fa < fb
            hi = np.where(left, b, hi)
            lo = np.where(left, lo, a)
            a_new = np.where(left, hi - r * (hi - lo), b)
            b_new = np.where(left, a, lo + r * (hi - lo))
            a, b = a_new, b_new
            fa, fb = wsum(a), wsum(b)
        return np.stack([x, 0.5 * (lo + hi)], axis=-1)

    def params(self) -> dict:
        return {}
