"""The one small interface shared by every method.

A method maps a batch of Gram matrices ``G = J J^T`` of shape ``[B, K, K]`` (objective 0 is the
primary) -- plus, where it needs them, the loss values ``[B, K]``, the Jacobian ``[B, K, n]`` and
its own state -- to weights ``[B, K]``. The update direction is ``weights @ J`` (``[B, n]``), and
the caller steps *against* it (``theta <- theta - lr * d`` for SGD). The same interface serves the
2-D toys (thousands of start points at once, float64 NumPy) and real networks (B = 1, Gram matrix
computed from per-objective gradients).

Methods are registered with :func:`register` and listed by :func:`pcd.methods.available`. Each
declares a display name, a colour (the one used on every page and plot), a one-line description
and its hyper-parameters with ranges, so the pages build their widgets from the registry.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, ClassVar

import numpy as np

# One colour per method, used on every page and in every figure (Plotly/D3-like qualitative
# palette, PCD the strongest accent). Keys are registry names.
COLORS: dict[str, str] = {
    "pcd": "#d62728",
    "ws": "#7f7f7f",
    "mgda": "#1f77b4",
    "pcgrad": "#ff7f0e",
    "cagrad": "#2ca02c",
    "famo": "#9467bd",
    "upgrad": "#8c564b",
    "dualproj": "#e377c2",
    "imtlg": "#bcbd22",
    "alignedmtl": "#17becf",
    "nashmtl": "#393b79",
    "graddrop": "#637939",
    "rgw": "#8c6d31",
    "dbgd": "#843c39",
    "auxinash": "#7b4173",
    # constrained / specialised baselines (pcd.train, pcd.experiments)
    "lagrangian": "#3182bd",
    "auglag": "#31a354",
    "nupi": "#756bb1",
    "gda": "#636363",
    "penalty": "#969696",
    "prox": "#e6550d",
    "unpruned": "#000000",
}


@dataclass(frozen=True)
class Param:
    """A validated hyper-parameter with a range, used by the CLI and to build page widgets.

    ``kind`` is ``"float"``, ``"int"``, ``"bool"`` or ``"choice"``; ``log`` asks for a log-scale
    slider; ``low``/``high`` are inclusive bounds (``None`` = unbounded); ``choices`` for ``choice``.
    """

    name: str
    default: Any
    low: float | None = None
    high: float | None = None
    kind: str = "float"
    log: bool = False
    help: str = ""
    choices: tuple = ()
    per_objective: bool = False  # a value per secondary is also accepted (e.g. PCD's tau)

    def validate(self, value: Any, method: str = "") -> Any:
        where = f"{method}: " if method else ""
        if self.kind == "bool":
            if isinstance(value, (bool, np.bool_)):
                return bool(value)
            raise ValueError(f"{where}{self.name} must be true or false, got {value!r}")
        if self.kind == "choice":
            if value in self.choices:
                return value
            raise ValueError(f"{where}{self.name} must be one of {list(self.choices)}, got {value!r}")
        if self.per_objective and isinstance(value, (list, tuple, np.ndarray)):
            arr = np.asarray(value, dtype=float)
            if arr.ndim != 1 or arr.size == 0:
                raise ValueError(f"{where}{self.name} must be a number or a list of numbers")
            return np.array([self._check_number(v, where) for v in arr], dtype=float)
        value = self._check_number(value, where)
        return int(value) if self.kind == "int" else float(value)

    def _check_number(self, value: Any, where: str) -> float:
        try:
            v = float(value)
        except (TypeError, ValueError):
            raise ValueError(f"{where}{self.name} must be a number, got {value!r}") from None
        if not math.isfinite(v):
            raise ValueError(f"{where}{self.name} must be finite, got {value!r}")
        if self.kind == "int" and v != int(v):
            raise ValueError(f"{where}{self.name} must be an integer, got {value!r}")
        lo = "-inf" if self.low is None else self.low
        hi = "inf" if self.high is None else self.high
        if (self.low is not None and v < self.low) or (self.high is not None and v > self.high):
            raise ValueError(f"{where}{self.name} must be in [{lo}, {hi}], got {value!r}")
        return v


@dataclass
class MethodOutput:
    """What a method returns for one batch: weights ``[B, K]``, its new state, diagnostics.

    ``info`` holds optional per-batch arrays (e.g. PCD's ``mu`` ``[B, K]``, ``feasible`` ``[B]``).

    ``info["direction"]`` ``[B, n]``, when present, is the exact update and callers must use it
    instead of ``weights @ J``: methods that act per coordinate (``needs_jacobian``, e.g. GradDrop)
    cannot be written as a combination of the gradients; their ``weights`` are then only the
    least-squares weights of that update (its projection onto the span of the gradients).
    """

    weights: np.ndarray
    state: Any = None
    info: dict[str, np.ndarray] = field(default_factory=dict)


class Method:
    """Base class. Subclasses set the class attributes and implement :meth:`weights`.

    Class attributes:
      name            registry key (lower case, e.g. ``"mgda"``)
      display_name    e.g. ``"MGDA"``
      description     one line in plain words
      paper           reference (title + arXiv/venue)
      params          tuple of :class:`Param`
      needs_jacobian  the method needs ``J`` itself, not only ``G = J J^T`` (e.g. GradDrop)
      needs_losses    the method needs the loss values (e.g. FAMO)
      stochastic      uses ``rng`` (e.g. RGW, PCGrad's random order, GradDrop)
      hierarchical    treats objective 0 as the primary (PCD, DBGD, AuxiNash); False = symmetric
    """

    name: ClassVar[str] = ""
    display_name: ClassVar[str] = ""
    description: ClassVar[str] = ""
    paper: ClassVar[str] = ""
    params: ClassVar[tuple[Param, ...]] = ()
    needs_jacobian: ClassVar[bool] = False
    needs_losses: ClassVar[bool] = False
    stochastic: ClassVar[bool] = False
    hierarchical: ClassVar[bool] = False

    def __init__(self, **hparams: Any) -> None:
        known = {p.name: p for p in self.params}
        unknown = sorted(set(hparams) - set(known))
        if unknown:
            allowed = ", ".join(known) or "none"
            raise ValueError(f"{self.name}: unknown hyper-parameter(s) {unknown}; allowed: {allowed}")
        self.hparams: dict[str, Any] = {
            n: p.validate(hparams.get(n, p.default), self.name) for n, p in known.items()
        }

    @property
    def color(self) -> str:
        return COLORS.get(self.name, "#444444")

    def init_state(self, batch: int, K: int) -> Any:
        """State before the first step for ``batch`` independent problems with ``K`` objectives."""
        return None

    def weights(
        self,
        gram: np.ndarray,
        *,
        losses: np.ndarray | None = None,
        jacobian: np.ndarray | None = None,
        state: Any = None,
        rng: np.random.Generator | None = None,
    ) -> MethodOutput:
        raise NotImplementedError

    def __call__(self, gram: np.ndarray, **kwargs: Any) -> MethodOutput:
        gram = check_gram(gram, self.name)
        if self.needs_jacobian and kwargs.get("jacobian") is None:
            raise ValueError(f"{self.name} needs the Jacobian J, not only the Gram matrix")
        if self.needs_losses and kwargs.get("losses") is None:
            raise ValueError(f"{self.name} needs the loss values")
        out = self.weights(gram, **kwargs)
        out.weights = np.asarray(out.weights, dtype=gram.dtype)
        return out

    def __repr__(self) -> str:
        args = ", ".join(f"{k}={v!r}" for k, v in self.hparams.items())
        return f"{type(self).__name__}({args})"


def check_gram(gram: Any, who: str = "gram") -> np.ndarray:
    """Validate a batch of Gram matrices ``[B, K, K]`` (a single ``[K, K]`` is promoted)."""
    g = np.asarray(gram, dtype=np.float64) if not isinstance(gram, np.ndarray) else gram
    if g.dtype.kind != "f":
        g = g.astype(np.float64)
    if g.ndim == 2:
        g = g[None]
    if g.ndim != 3 or g.shape[-1] != g.shape[-2] or g.shape[-1] < 1:
        raise ValueError(f"{who}: Gram matrix must have shape [B, K, K] with K >= 1, got {np.shape(gram)}")
    if not np.isfinite(g).all():
        raise ValueError(f"{who}: Gram matrix contains NaN or inf")
    return g


_REGISTRY: dict[str, type[Method]] = {}


def register(cls: type[Method]) -> type[Method]:
    """Class decorator adding a method to the registry under ``cls.name``."""
    if not cls.name or cls.name != cls.name.lower():
        raise ValueError(f"method name must be a non-empty lower-case string, got {cls.name!r}")
    _REGISTRY[cls.name] = cls
    return cls
