"""The shared interface of every landscape (``pcd.problems``).

A :class:`Problem` has ``K`` objectives on ``R^dim``; objective 0 is the *primary*, the others are
*secondaries*. Its one required method is the batched oracle

    ``losses_and_jacobian(x [B, dim]) -> (L [B, K], J [B, K, dim])``   (float64)

with analytic (exact) gradients. Where an objective is nonsmooth (``abs``, ``relu``, ``max``) the
row of ``J`` is the **minimum-norm element of the (Clarke) subdifferential** at a kink -- e.g.
``relu'(0) = 0``, ``sign(0) = 0`` -- so ``max_i ||J_i||`` is exactly the CMS residual of PCD's
theory (every objective individually stationary iff ``0`` lies in each subdifferential).
Problems never raise on non-finite values: NaN/inf propagate and the engine reports divergence.

Each problem also knows plotting bounds, default start points, its known optima (points where
every objective is optimal at once, if any) and a sampled Pareto set when it is known, plus a
``grid(nx, ny)`` helper for contour backgrounds of 2-D problems.
"""
from __future__ import annotations

from typing import Any, ClassVar

import numpy as np

from pcd import _validate as V


def check_points(x: Any, dim: int, who: str = "problem") -> np.ndarray:
    """Validate a batch of points ``[B, dim]`` (a single ``[dim]`` point is promoted to ``[1, dim]``)."""
    try:
        arr = np.asarray(x, dtype=np.float64)
    except (TypeError, ValueError):
        raise ValueError(f"{who}: points must be numbers, got {type(x).__name__}") from None
    if arr.ndim == 1:
        arr = arr[None, :]
    if arr.ndim != 2 or arr.shape[1] != dim:
        raise ValueError(f"{who}: points must have shape [B, {dim}], got {np.shape(x)}")
    return arr


def check_int(value: Any, name: str, low: int, high: int | None = None, who: str = "") -> int:
    """An integer in ``[low, high]`` or a ValueError saying so (text and integral floats accepted)."""
    return V.integer(value, f"{who}: {name}" if who else name, low=low, high=high,
                     strict=False)


def check_float(value: Any, name: str, low: float | None = None, high: float | None = None,
                who: str = "", strict_low: bool = False) -> float:
    """A finite float in the given range or a ValueError saying so (text accepted)."""
    return V.number(value, f"{who}: {name}" if who else name, low=low, high=high,
                    open_low=strict_low, strict=False)


class Problem:
    """Base class of a batched multi-objective landscape (objective 0 = primary).

    Subclasses set ``name``/``display_name``/``description``/``paper`` and, per instance,
    ``K``, ``dim``, ``bounds`` (one ``(low, high)`` per coordinate, for plotting) and
    ``objective_names``, and implement :meth:`losses_and_jacobian`.
    """

    name: ClassVar[str] = ""
    display_name: str = ""  # the class's; an instance may say more (a variant, its K)
    description: ClassVar[str] = ""
    paper: ClassVar[str] = ""

    K: int = 2
    dim: int = 2
    bounds: tuple[tuple[float, float], ...] = ((-1.0, 1.0), (-1.0, 1.0))
    objective_names: tuple[str, ...] = ("primary", "secondary")

    # ---- required ---------------------------------------------------------------------------
    def losses_and_jacobian(self, x: Any) -> tuple[np.ndarray, np.ndarray]:
        """Losses ``[B, K]`` and Jacobian ``[B, K, dim]`` at points ``x [B, dim]`` (float64)."""
        raise NotImplementedError

    # ---- conveniences ---------------------------------------------------------------------------
    def losses(self, x: Any) -> np.ndarray:
        """Losses ``[B, K]`` at points ``x [B, dim]``."""
        return self.losses_and_jacobian(x)[0]

    def default_starts(self) -> np.ndarray:
        """Default start points ``[S, dim]``."""
        return np.zeros((1, self.dim))

    def optima(self) -> np.ndarray | None:
        """Points ``[P, dim]`` where every objective is optimal at once (CMS minima), if known."""
        return None

    def pareto_set(self, n: int = 200) -> np.ndarray | None:
        """A sampled Pareto set ``[P, dim]`` (ordered along the set) when known, else None."""
        return None

    def pareto_front(self, n: int = 200) -> np.ndarray | None:
        """Losses ``[P, K]`` along :meth:`pareto_set`, when known."""
        ps = self.pareto_set(n)
        return None if ps is None else self.losses(ps)

    def params(self) -> dict[str, Any]:
        """The construction parameters (JSON-able), so ``make(name, **params())`` rebuilds it."""
        return {}

    def describe(self) -> dict[str, Any]:
        """Plain-data summary for pages and JSON."""
        opt = self.optima()
        return {
            "name": self.name,
            "display_name": self.display_name or self.name,
            "description": self.description,
            "paper": self.paper,
            "K": self.K,
            "dim": self.dim,
            "bounds": [list(b) for b in self.bounds],
            "objective_names": list(self.objective_names),
            "default_starts": self.default_starts().tolist(),
            "optima": None if opt is None else np.asarray(opt).tolist(),
            "params": self.params(),
        }

    def grid(self, nx: int = 101, ny: int = 101,
             bounds: Any = None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Contour background of a 2-D problem over :attr:`bounds` (or over ``bounds``, a box
        ``((xmin, xmax), (ymin, ymax))`` checked by :func:`pcd._validate.box`).

        Returns ``(xs [nx], ys [ny], Z [K, ny, nx])`` with ``Z[k, j, i] = f_k(xs[i], ys[j])``
        (the layout Plotly's ``go.Contour(x=xs, y=ys, z=Z[k])`` expects).
        """
        if self.dim != 2:
            raise ValueError(f"{self.name}: grid() needs a 2-D problem, this one has dim = {self.dim}")
        nx = check_int(nx, "nx", 2, 2000, self.name)
        ny = check_int(ny, "ny", 2, 2000, self.name)
        (bx0, bx1), (by0, by1) = self.bounds if bounds is None else V.box(bounds, f"{self.name}: grid bounds")
        xs = np.linspace(bx0, bx1, nx)
        ys = np.linspace(by0, by1, ny)
        X, Y = np.meshgrid(xs, ys)
        pts = np.stack([X.ravel(), Y.ravel()], axis=1)
        with np.errstate(all="ignore"):
            L = self.losses(pts)
        Z = L.T.reshape(self.K, ny, nx)
        return xs, ys, Z

    def __repr__(self) -> str:
        args = ", ".join(f"{k}={v!r}" for k, v in self.params().items())
        return f"{type(self).__name__}({args})"


_REGISTRY: dict[str, type[Problem]] = {}


def register(cls: type[Problem]) -> type[Problem]:
    """Class decorator adding a problem to the registry under ``cls.name``."""
    if not cls.name or cls.name != cls.name.lower():
        raise ValueError(f"problem name must be a non-empty lower-case string, got {cls.name!r}")
    _REGISTRY[cls.name] = cls
    return cls
