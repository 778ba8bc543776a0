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
    description = "The CAGrad paper's two-objective toy (its Pareto set is not drawn)."
    paper = "Conflict-Averse Gradient Descent (Liu et al., NeurIPS 2021), toy example"

    def __init__(self) -> None:
        super().__init__(primary=F1, secondaries=[F2], bounds=((-10.0, 10.0), (-10.0, 10.0)),
                         starts=[[-8.5, 7.5], [-8.5, -5.0], [9.0, 9.0], [-7.5, -0.5], [9.0, -1.0]])
        self.objective_names = ("f1 (primary)", "f2")

    def pareto_set(self, n: int = 200) -> None:
        """Not available: we did not derive this toy's Pareto set in closed form and a grid search
        for anti-parallel gradients is ambiguous here (tanh saturation makes the gradients nearly
        anti-parallel on whole columns), so nothing is drawn rather than a wrong curve."""
        return None

    def params(self) -> dict:
        return {}
