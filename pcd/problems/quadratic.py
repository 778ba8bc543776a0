"""``quadratic``: a convex quadratic pair with a known Pareto set (TorchJD-style illustration).

Both objectives are convex quadratics (Hessians ``A_1, A_2`` positive definite)::

    f_1(x) = 1/2 (x - c_1)^T A_1 (x - c_1),   f_2(x) = s/2 (x - c_2)^T A_2 (x - c_2)

The Pareto set is the curve of weighted-sum minimizers (exact for convex problems)::

    x*(w) = (A_1 + w s A_2)^{-1} (A_1 c_1 + w s A_2 c_2),   w in [0, inf)

from the primary's minimizer ``c_1`` (w = 0) to the secondary's ``c_2`` (w -> inf). Equal-weight
weighted sum ends at ``x*(1)``, which slides along the set when the scale ``s`` changes.

``quadratic``: an illustration in the spirit of the convex quadratic examples of the Jacobian
descent paper (Quinton & Rey, arXiv 2406.16232, seed 002); the matrices below are ours (the seed
does not give them), chosen ill-conditioned and non-aligned so that the aggregators differ.
"""
from __future__ import annotations

import numpy as np

from pcd.problems.base import Problem, check_points, register


class QuadraticPair(Problem):
    """Two convex quadratics in 2-D (base of ``quadratic`` and ``scale``)."""

    A1 = np.eye(2)
    A2 = np.eye(2)
    C1 = np.zeros(2)
    C2 = np.ones(2)
    secondary_scale = 1.0

    def losses_and_jacobian(self, x):
        X = check_points(x, 2, self.name)
        d1 = X - self.C1
        d2 = X - self.C2
        h1 = d1 @ self.A1
        h2 = d2 @ self.A2
        B = X.shape[0]
        L = np.empty((B, 2))
        J = np.empty((B, 2, 2))
        s = self.secondary_scale
        L[:, 0] = 0.5 * np.einsum("bn,bn->b", d1, h1)
        L[:, 1] = 0.5 * s * np.einsum("bn,bn->b", d2, h2)
        J[:, 0] = h1
        J[:, 1] = s * h2
        return L, J

    def pareto_weights(self, n: int = 200) -> np.ndarray:
        """Weights w (on the *unscaled* secondary, i.e. w_eff = w s) sampling the set evenly-ish."""
        t = np.linspace(0.0, 1.0, max(2, int(n)))
        with np.errstate(divide="ignore"):
            return np.where(t < 1, t / (1 - t), np.inf)

    def pareto_point(self, w: float) -> np.ndarray:
        """``x*(w)`` for the weight ``w`` on the *unscaled* secondary (w = inf: c_2)."""
        if not np.isfinite(w):
            return self.C2.copy()
        return np.linalg.solve(self.A1 + w * self.A2, self.A1 @ self.C1 + w * self.A2 @ self.C2)

    def pareto_set(self, n: int = 200) -> np.ndarray:
        return np.array([self.pareto_point(w) for w in self.pareto_weights(n)])

    def ws_endpoint(self, weights: tuple[float, float] = (1.0, 1.0)) -> np.ndarray:
        """Minimizer of ``w_1 f_1 + w_2 f_2`` (with the scale s included in f_2)."""
        return self.pareto_point(weights[1] * self.secondary_scale / weights[0])


# TorchJD's convex quadratic form (the "CQF_v1" objective of TorchJD's public trajectory examples,
# which plot the aggregators of arXiv 2406.16232 on it): f_i(x) = (x - u_i)^T B_i B_i^T (x - u_i).
_TORCHJD_B1 = 0.1 * np.array([[1.0, -1.0], [-1.0, 4.0]])
_TORCHJD_B2 = np.array([[1.0, -2.0], [1.0, -1.0]])
VARIANTS = ("studio", "torchjd")


@register
class Quadratic(QuadraticPair):
    name = "quadratic"
    display_name = "Convex quadratic pair"
    description = "Two ill-conditioned convex quadratics; the Pareto set is a curve between their minima."
    paper = "in the spirit of Jacobian Descent (Quinton & Rey), arXiv 2406.16232"

    def __init__(self, variant: str = "studio") -> None:
        """``variant="studio"``: our pair (below). ``variant="torchjd"``: TorchJD's convex quadratic
        form ``f_i = (x - u_i)^T B_i B_i^T (x - u_i)`` with ``B_1 = 0.1 [[1, -1], [-1, 4]]``,
        ``B_2 = [[1, -2], [1, -1]]``, ``u_1 = (1, -1)``, ``u_2 = (-1, -3)`` and its six start points,
        for comparison with TorchJD's trajectory figures (``A_i = 2 B_i B_i^T`` in our 1/2 convention)."""
        if variant not in VARIANTS:
            raise ValueError(f"quadratic: variant must be one of {list(VARIANTS)}, got {variant!r}")
        self.variant = variant
        if variant == "torchjd":
            self.display_name = "TorchJD's convex quadratic form"
            self.A1 = 2.0 * _TORCHJD_B1 @ _TORCHJD_B1.T
            self.A2 = 2.0 * _TORCHJD_B2 @ _TORCHJD_B2.T
            self.C1 = np.array([1.0, -1.0])
            self.C2 = np.array([-1.0, -3.0])
            self.bounds = ((-6.0, 6.0), (-6.0, 6.0))
        else:
            self.A1 = np.array([[4.0, 1.0], [1.0, 1.0]])
            self.A2 = np.array([[1.0, -0.5], [-0.5, 3.0]])
            self.C1 = np.array([-1.0, 1.0])
            self.C2 = np.array([1.0, -1.0])
            self.bounds = ((-2.5, 2.5), (-2.5, 2.5))
        self.K = 2
        self.dim = 2
        self.objective_names = ("f1 (primary)", "f2 (secondary)")

    def default_starts(self) -> np.ndarray:
        if self.variant == "torchjd":
            return np.array([[3.0, -2.0], [0.0, -3.0], [-4.0, 4.0], [-3.0, 4.0], [1.0, 5.0], [-5.0, -1.0]])
        return np.array([[-2.0, -2.0], [2.0, 2.0], [0.0, 2.2]])

    def optima(self) -> None:
        return None  # no common minimizer: a genuine trade-off

    def params(self) -> dict:
        return {"variant": self.variant}
