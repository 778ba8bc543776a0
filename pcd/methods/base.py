"""The one small interface shared by every method.

A method maps a batch of Gram matrices ``G = J J^T`` of shape ``[B, K, K]`` (objective 0 is the
primary) -- plus, where it needs them, the loss values ``[B, K]``, the Jacobian ``[B, K, n]`` and
its own state -- to weights ``[B, K]``. The update direction is ``weights @ J`` (``[B, n]``), and
the caller steps *against* it (``theta <- theta - lr * d`` for SGD). The same interface serves the
2-D toys (thousands of start points at once, float64 NumPy) and real networks (B = 1, Gram matrix
computed from per-objective gradients).

Methods are registered with :func:`register` and listed by :func:`pcd.methods.available`. Each
declares a display name, a one-line description, its claims and its hyper-parameters with ranges,
so the pages build their widgets from the registry (its colour is in :mod:`pcd.viz.theme`).
"""
from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np

from pcd import _validate as V
from pcd._fast import all_finite


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
        name = f"{where}{self.name}"
        if self.kind == "bool":
            return V.boolean(value, name)
        if self.kind == "choice":
            return V.choice(value, name, self.choices)
        if self.per_objective and isinstance(value, (list, tuple, np.ndarray)):
            if np.ndim(value) != 1 or len(value) == 0 or len(value) > V.LIMITS["K"]:
                raise V.Invalid(f"{name} must be a number or a list of 1 to {V.LIMITS['K']} numbers, "
                                f"got {V.show(value)}")
            return np.array([self._check_number(v, name) for v in value], dtype=float)
        v = self._check_number(value, name)
        return int(v) if self.kind == "int" else float(v)

    def _check_number(self, value: Any, name: str) -> float:
        """Typed: a string is not a number (``"0.1"`` is refused), an int hyper-parameter takes an
        integer (an integral float such as ``3.0`` is fine)."""
        if isinstance(value, np.ndarray) and value.ndim == 0:
            value = value.item()
        if self.kind == "int":
            if isinstance(value, (float, np.floating)) and math.isfinite(value) and value == int(value):
                value = int(value)
            return float(V.integer(value, name, low=None if self.low is None else math.ceil(self.low),
                                   high=None if self.high is None else math.floor(self.high)))
        return V.number(value, name, low=self.low, high=self.high)


# The vocabulary of ``Method.claims``: the aggregator properties of Jacobian descent (arXiv
# 2406.16232, Sec. 2.2), PCD's own two (arXiv 2606.29521, eq. (3)), and "hierarchical" (objective 0
# is the primary: the update is not symmetric in the objectives). One shared test
# (tests/methods/test_aggregator_properties.py) checks every method's claims with :mod:`pcd.methods.properties`:
# a property is claimed exactly when it holds.
CLAIMS = ("non_conflicting", "linear_under_scaling", "weighted", "primary_anchored", "per_secondary_progress",
          "hierarchical")

# The method families, in display order: the pages group the method picker by family
# (:func:`pcd.methods.families`) and :mod:`pcd.viz.theme` gives each family its own hue band.
#   hierarchical          objective 0 is the primary, the others constrain it (PCD, DBGD, AuxiNash)
#   gradient aggregation  symmetric combination of the per-objective gradients (MGDA, UPGrad, ...)
#   loss weighting        weights set from the loss values alone, i.e. a scalarization of the losses
#                         (weighted sum, FAMO, UW, DWA, GLS, STCH)
#   constrained           Lagrangian-type methods with multipliers as state
FAMILIES = ("hierarchical", "gradient aggregation", "loss weighting", "constrained")

# What a caller can hand a method besides the Gram matrix (checked once, by :func:`pcd.methods.resolve`).
CAPABILITIES = ("losses", "jacobian")


def combine(weights: np.ndarray, J: np.ndarray) -> np.ndarray:
    """``d = weights @ J`` for weights ``[B, K]`` and Jacobians ``[B, K, n]`` -> ``[B, n]``.

    K = 2 on R^2 (the toys) is written out, ``d_j = w_0 J_0j + w_1 J_1j``: ``np.matmul`` on stacked
    tiny matrices may fuse multiply-adds (its last bit depends on the batch size), and this is the
    order of operations the engine's compiled end-point fast path (``pcd._kernels``) reproduces."""
    if J.ndim == 3 and J.shape[1] == 2 and J.shape[2] == 2 and weights.ndim == 2:
        p = weights[:, :, None] * J  # p_kj = w_k J_kj: two broadcast ufuncs
        return p[:, 0] + p[:, 1]
    return (weights[:, None, :] @ J)[:, 0, :]


@dataclass(frozen=True)
class Kernel:
    """A method's compiled step for K = 2 (what :meth:`Method.kernel` hands the engine's end-point
    fast path, :mod:`pcd._fastpath`). Arrays are component-major over the ``B`` active rows:

      state   rows of per-trajectory state the method keeps, ``S [state, B]`` (zeros at the start)
      rows    ``rows(t, L [2, B], G [3, B], W [2, B], S, p)``, compiled with the signature
              :data:`pcd._kernels.STEP_SIG`: writes the weights of step ``t`` into ``W`` (and updates ``S``
              in place) from the losses and the Gram entries ``(G00, G01, G11)`` and the step's parameters
              ``p``; the fast path then forms ``d = w @ J`` and the optimizer step -- one step at a time, or
              the whole trajectory in one compiled call (:func:`pcd._kernels.trajectory`) where the problem
              is compiled too
      params  ``params(steps) -> p [n, k]``: the parameters ``rows`` gets at each step ``t`` (``p[t]``),
              or one row for every step; None: no parameters
      step    instead of ``rows``, for a step that cannot be compiled whole (FAMO's calls NumPy's log/exp):
              ``step(t, L, G, W, S)``, run one step at a time
      mu_row  the row of ``S`` that holds a multiplier to record (PCD's ``mu``), or None

    ``step`` runs the method's own formula (the function its NumPy path calls, compiled by
    :func:`pcd._kernels.jit`), so the fast path's weights are bit-identical to :meth:`Method.update`'s.
    """

    step: Callable[[int, np.ndarray, np.ndarray, np.ndarray, np.ndarray], None] | None = None
    state: int = 0
    mu_row: int | None = None
    rows: Any = None
    params: Callable[[int], np.ndarray] | None = None


class Step:
    """What :meth:`Method.update` returns for one batch: weights ``[B, K]``, the new state,
    diagnostics, and -- for a :class:`DirectionMethod` only -- the exact update direction.

    ``info`` holds optional per-batch arrays (e.g. PCD's ``mu`` ``[B, K-1]``, ``feasible`` ``[B]``).
    The update direction is :meth:`direction` -- the ONE place the rule lives: ``exact`` when the
    method produced its own direction (methods that act per coordinate, e.g. GradDrop, cannot be
    written as a combination of the gradients; their ``weights`` are then only the least-squares
    weights of that update), ``weights @ J`` otherwise. The caller steps *against* it.
    """

    __slots__ = ("weights", "state", "info", "exact")  # a plain class: built once per method call

    def __init__(self, weights: np.ndarray, state: Any = None, info: dict[str, Any] | None = None,
                 exact: np.ndarray | None = None) -> None:
        self.weights = weights
        self.state = state
        self.info: dict[str, Any] = {} if info is None else info
        self.exact: np.ndarray | None = exact  # [B, n], DirectionMethod only

    def __repr__(self) -> str:
        return f"Step(weights={self.weights!r}, state={self.state!r}, info={self.info!r}, exact={self.exact!r})"

    def direction(self, J: np.ndarray) -> np.ndarray:
        """The update direction ``[B, n]`` for the Jacobians ``J`` ``[B, K, n]`` this step saw."""
        if self.exact is not None:
            return self.exact
        return combine(np.asarray(self.weights, dtype=np.float64), np.asarray(J, dtype=np.float64))


class MethodOutput(Step):
    """:class:`Step` under the first interface's name (kept while callers move): a method written
    against it puts its own direction in ``info["direction"]``, which becomes ``exact`` here (so
    :class:`Step` itself, built once per method call on the hot path, carries no such check)."""

    __slots__ = ()

    def __init__(self, weights: np.ndarray, state: Any = None, info: dict[str, Any] | None = None,
                 exact: np.ndarray | None = None) -> None:
        if exact is None and info and info.get("direction") is not None:
            exact = np.asarray(info["direction"], dtype=np.float64)
        super().__init__(weights, state, info, exact)


class Method:
    """Base class: an ``(init, update)`` pair in the spirit of Optax, on Gram matrices.

    ``init(batch, K) -> State`` gives the state before the first step (a NamedTuple of batch-first
    arrays, or None for a stateless method); ``update(gram, state, *, losses, jacobian, rng) ->``
    :class:`Step` is pure: it never mutates ``state`` and returns the next one. A checkpoint of any
    method's state is therefore its fields (``state._asdict()``: arrays and ints), no serializer.

    Class attributes:
      name            registry key (lower case, e.g. ``"mgda"``)
      display_name    e.g. ``"MGDA"``
      description     one line in plain words
      paper           reference (title + arXiv/venue)
      params          tuple of :class:`Param`
      claims          the properties in :data:`CLAIMS` the method has (checked for every method)
      family          one of :data:`FAMILIES` (checked by :func:`register`)
      primary_knob    the hyper-parameter that sets how much the secondaries get (PCD: ``"tau"``),
                      None for a method without one; pages and experiments ask for it, not the name
      needs_jacobian  the method needs ``J`` itself, not only ``G = J J^T`` (e.g. GradDrop)
      needs_losses    the method needs the loss values (e.g. FAMO)
      stochastic      uses ``rng`` (e.g. RGW, PCGrad's random order, GradDrop)

    ``hierarchical`` (objective 0 is the primary: PCD, DBGD, AuxiNash) is ``"hierarchical" in claims``.
    ``weights()`` and ``__call__`` are the first interface, kept as thin adapters: ``__call__``
    validates the Gram matrix and the capabilities, then calls :meth:`update`.
    """

    name: ClassVar[str] = ""
    display_name: ClassVar[str] = ""
    description: ClassVar[str] = ""
    paper: ClassVar[str] = ""
    params: ClassVar[tuple[Param, ...]] = ()
    claims: ClassVar[frozenset[str]] = frozenset()
    family: ClassVar[str] = ""
    primary_knob: ClassVar[str | None] = None
    needs_jacobian: ClassVar[bool] = False
    needs_losses: ClassVar[bool] = False
    stochastic: ClassVar[bool] = False
    hierarchical: ClassVar[bool] = False  # derived from claims (set by __init_subclass__)
    #: True when the method's deployed update is rescaled to ``||g_1||`` and so is zero wherever
    #: ``g_1 = 0`` (PCD: ``d = d~ ||g_1|| / ||d~||``, a known limitation of the paper, Sec. 6). Pages
    #: word such a stop "halted", not "Pareto-stationary".
    halts_where_primary_vanishes: ClassVar[bool] = False
    #: True when the update is zero wherever ``g_1 = 0`` for any secondaries: MGDA's min-norm point
    #: (and CAGrad's dual, CR-MOGM around MGDA) is ``g_1`` itself, PCD halts (above). Checked by
    #: ``tests/methods/test_properties.py`` for every deterministic method (False: it still moves).
    zero_where_primary_vanishes: ClassVar[bool] = False
    #: True when the update does NOT vanish at an exact cancellation ``g_1 = -g_2`` (the conflict
    #: equilibrium of the symmetric methods): PCD and DBGD keep following a share of the
    #: secondary's progress. Checked by the same test (False: the update is zero there).
    moves_at_cancellation: ClassVar[bool] = False
    #: ``weights(c G) = c**gram_scaling * weights(G)`` for ``c > 0`` (0: scale-invariant weights,
    #: -0.5: Nash-MTL's ``G a = 1 / a``); None when the method is not homogeneous. Used to retry a
    #: step at scale ~1 when its output at an extreme scale (1e+-300, subnormal) is not finite.
    gram_scaling: ClassVar[float | None] = 0.0

    def __init__(self, **hparams: Any) -> None:
        known = {p.name: p for p in self.params}
        unknown = sorted(set(hparams) - set(known))
        if unknown:
            allowed = ", ".join(known) or "none"
            raise ValueError(f"{self.name}: unknown hyper-parameter(s) {unknown}; allowed: {allowed}")
        self.hparams: dict[str, Any] = {
            n: p.validate(hparams.get(n, p.default), self.name) for n, p in known.items()
        }

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        bad = sorted(set(cls.claims) - set(CLAIMS))
        if bad:
            raise TypeError(f"{cls.__name__}: unknown claim(s) {bad}; allowed: {', '.join(CLAIMS)}")
        if cls.primary_knob is not None and cls.primary_knob not in {p.name for p in cls.params}:
            raise TypeError(f"{cls.__name__}: primary_knob {cls.primary_knob!r} is not one of its params")
        cls.hierarchical = "hierarchical" in cls.claims
        if cls.halts_where_primary_vanishes:
            cls.zero_where_primary_vanishes = True
        if "update" in cls.__dict__ and "kernel" not in cls.__dict__:
            cls.kernel = Method.kernel  # type: ignore[method-assign]  # a new update has no compiled step

    @classmethod
    def needs(cls) -> frozenset[str]:
        """The capabilities (:data:`CAPABILITIES`) a caller must provide."""
        return frozenset(c for c, need in (("losses", cls.needs_losses), ("jacobian", cls.needs_jacobian)) if need)

    # ---- the contract -------------------------------------------------------------------------
    def init(self, batch: int, K: int) -> Any:
        """State before the first step for ``batch`` independent problems with ``K`` objectives."""
        return None

    def update(self, gram: np.ndarray, state: Any = None, *, losses: np.ndarray | None = None,
               jacobian: np.ndarray | None = None, rng: np.random.Generator | None = None) -> Step:
        """One step on a validated batch of Gram matrices ``[B, K, K]`` (``state=None``: fresh)."""
        if type(self).weights is not Method.weights:  # a method written against the first interface
            return self.weights(gram, losses=losses, jacobian=jacobian, state=state, rng=rng)
        raise NotImplementedError

    def state_for(self, state: Any, B: int, K: int) -> Any:
        """``state`` for a batch of ``B`` problems with ``K`` objectives (``init(B, K)`` when None); a
        ``ValueError`` when it was made for another shape (its first field's, ``[B, K]``)."""
        if state is None:
            return self.init(B, K)
        shape = np.shape(state[0])
        if shape != (B, K):
            raise ValueError(f"{self.name}: state is for shape {shape}, got a batch of [{B}, {K}]")
        return state

    def kernel(self) -> Kernel | None:
        """This method's compiled K = 2 step (:class:`Kernel`) for the engine's end-point fast path,
        or None when it has none (the engine then runs its NumPy loop). Asked once per run."""
        return None

    # ---- adapters of the first interface (kept while callers move) -----------------------------
    def init_state(self, batch: int, K: int) -> Any:
        return self.init(batch, K)

    def weights(self, gram: np.ndarray, *, losses: np.ndarray | None = None, jacobian: np.ndarray | None = None,
                state: Any = None, rng: np.random.Generator | None = None) -> Step:
        return self.update(gram, state, losses=losses, jacobian=jacobian, rng=rng)

    def __call__(self, gram: np.ndarray, *, state: Any = None, **kwargs: Any) -> Step:
        gram = check_gram(gram, self.name)
        if (self.needs_losses and kwargs.get("losses") is None) or (
                self.needs_jacobian and kwargs.get("jacobian") is None):
            check_capabilities(self, [k for k in CAPABILITIES if kwargs.get(k) is not None])  # raises
        out: Step | None
        try:
            out = self.update(gram, state, **kwargs)
        except (ZeroDivisionError, OverflowError, FloatingPointError, np.linalg.LinAlgError):
            out = None
        if out is None or not finite_step(out):  # extreme scale: retry at ~1, else ValueError
            out = self._at_unit_scale(gram, state, kwargs)
        out.weights = np.asarray(out.weights, dtype=gram.dtype)
        return out

    def _at_unit_scale(self, gram: np.ndarray, state: Any, kwargs: dict) -> Step:
        """Retry with ``G 4^-e`` (``J 2^-e``), ``e`` putting the largest diagonal entry near 1 (an
        exact power-of-two scaling), and scale the answer back by :attr:`gram_scaling`. A result
        that is still not finite, or a method that is not homogeneous, gives a ``ValueError``
        (the engine reports it as the trajectory's ``error`` diagnosis)."""
        diag = np.diagonal(gram, axis1=-2, axis2=-1)
        top = float(diag.max(initial=0.0))
        what = f"{self.name}: no finite direction for this Gram matrix (largest ||g_i||^2 = {top:.3g})"
        if self.gram_scaling is None or top <= 0.0:
            raise ValueError(what)
        e = int(np.frexp(top)[1])
        e += e % 2  # even, so the Jacobian scales by the exact power 2^-e/2
        kw = dict(kwargs)
        if kw.get("jacobian") is not None:
            kw["jacobian"] = np.ldexp(np.asarray(kw["jacobian"], dtype=np.float64), -(e // 2))
        try:
            with np.errstate(all="ignore"):
                out = self.update(np.ldexp(gram, -e), state, **kw)
                p = self.gram_scaling
                out.weights = np.asarray(out.weights, dtype=np.float64) * 2.0 ** (e * p)
                if out.exact is not None:
                    out.exact = np.asarray(out.exact, dtype=np.float64) * 2.0 ** (e * (p + 0.5))
                    if out.info and out.info.get("direction") is not None:
                        out.info["direction"] = out.exact
        except (ZeroDivisionError, OverflowError, FloatingPointError, np.linalg.LinAlgError):
            raise ValueError(what) from None
        if not finite_step(out):
            raise ValueError(what)
        return out

    def __repr__(self) -> str:
        args = ", ".join(f"{k}={v!r}" for k, v in self.hparams.items())
        return f"{type(self).__name__}({args})"


class DirectionMethod(Method):
    """A method that produces its update direction itself (per coordinate, e.g. GradDrop): it
    needs ``J``; its :class:`Step` carries ``exact`` and, as ``weights``, the least-squares weights
    of that direction (its projection onto the span of the gradients)."""

    needs_jacobian: ClassVar[bool] = True


def state_fields(state: Any) -> dict[str, Any] | None:
    """A method state as plain fields (arrays, ints, None) -- what a checkpoint stores."""
    if state is None:
        return None
    if not hasattr(state, "_asdict"):
        raise TypeError(f"method state must be a NamedTuple (or None), got {type(state).__name__}")
    return dict(state._asdict())


def state_from_fields(method: Method, batch: int, K: int, fields: dict[str, Any] | None) -> Any:
    """Inverse of :func:`state_fields`: the state type comes from ``method.init`` (no reflection)."""
    template = method.init(batch, K)
    if fields is None or template is None:
        return template if fields is None else None
    names = type(template)._fields
    if set(fields) != set(names):
        raise ValueError(f"{method.name}: checkpointed state has fields {sorted(fields)}, expected {list(names)}")
    return type(template)(**fields)


def check_capabilities(method: Method | type[Method], provided: Any) -> None:
    """ValueError when ``method`` needs something (:data:`CAPABILITIES`) the caller does not provide."""
    missing = sorted(method.needs() - set(provided))
    if missing:
        what = {"jacobian": "the Jacobian J, not only the Gram matrix", "losses": "the loss values"}
        raise ValueError(f"{method.name} needs {' and '.join(what[m] for m in missing)}")


def finite_step(out: Step) -> bool:
    """True when a step's weights (and exact direction, if any) are all finite."""
    w = out.weights if isinstance(out.weights, np.ndarray) else np.asarray(out.weights)
    if w.dtype.kind == "f":
        if not all_finite(w):
            return False
    elif w.dtype.kind == "c" and not np.isfinite(w).all():
        return False
    if out.exact is None:
        return True
    d = out.exact if isinstance(out.exact, np.ndarray) and out.exact.dtype.kind == "f" else \
        np.asarray(out.exact, dtype=np.float64)
    return all_finite(d)


def check_gram(gram: Any, who: str = "gram") -> np.ndarray:
    """Validate a batch of Gram matrices ``[B, K, K]`` (a single ``[K, K]`` is promoted)."""
    g = np.asarray(gram, dtype=np.float64) if not isinstance(gram, np.ndarray) else gram
    if g.dtype.kind != "f":
        g = g.astype(np.float64)
    if g.ndim == 2:
        g = g[None]
    if g.ndim != 3 or g.shape[-1] != g.shape[-2] or g.shape[-1] < 1:
        raise ValueError(f"{who}: Gram matrix must have shape [B, K, K] with K >= 1, got {np.shape(gram)}")
    if not all_finite(g):
        raise ValueError(f"{who}: Gram matrix contains NaN or inf")
    return g


def check_losses(losses: Any, B: int, K: int, who: str, *, nonnegative: str | None = None) -> np.ndarray:
    """The loss values ``[B, K]`` of a batch (a single ``[K]`` is promoted) as float64; a one-line
    ``ValueError`` for anything else. ``nonnegative`` (the reason, e.g. GLS's "the geometric mean of
    a negative loss is undefined") also refuses a negative (or NaN) loss, naming the objective."""
    try:
        L = np.asarray(losses, dtype=np.float64)
    except (TypeError, ValueError):
        raise V.Invalid(f"{who}: losses must be numbers of shape [B, K] = [{B}, {K}], got {V.show(losses)}") from None
    if L.ndim == 1:
        L = L[None]
    if L.shape != (B, K):
        raise V.Invalid(f"{who}: losses must have shape [B, K] = [{B}, {K}], got {list(np.shape(losses))}")
    if nonnegative is not None and not (L >= 0.0).all():
        b, k = np.argwhere(~(L >= 0.0))[0]
        raise V.Invalid(f"{who}: losses must be >= 0 ({nonnegative}), got {L[b, k]:.6g} for objective {int(k)}")
    return L


def check_jacobian(jacobian: Any, B: int, K: int, who: str) -> np.ndarray:
    """The Jacobians ``[B, K, n]`` of a batch (a single ``[K, n]`` is promoted) as float64; a one-line
    ``ValueError`` for a wrong shape or a NaN / inf entry (methods that act per coordinate)."""
    J = np.asarray(jacobian, dtype=np.float64)
    if J.ndim == 2:
        J = J[None]
    if J.ndim != 3 or J.shape[:2] != (B, K):
        raise ValueError(f"{who}: jacobian must have shape [B, K, n] = [{B}, {K}, n], got {list(J.shape)}")
    if not all_finite(J):
        raise ValueError(f"{who}: jacobian contains NaN or inf")
    return J


def per_objective(value: Any, K: int, who: str) -> np.ndarray:
    """A per-objective hyper-parameter (one number for every objective, or ``K`` values) as ``[K]``."""
    v = np.asarray(value, dtype=np.float64)
    if v.ndim == 0:
        return np.full(K, float(v))
    if v.shape != (K,):
        raise V.Invalid(f"{who} needs one number or one value per objective ({K}), got {v.size} values")
    return v


_REGISTRY: dict[str, type[Method]] = {}


def register(cls_or_name: Any = None, display_name: str = "", family: str = "") -> Any:
    """Class decorator adding a method to the registry under ``cls.name`` (a lower-case name and a
    ``family`` from :data:`FAMILIES` are required). The identity may be given here, as
    ``@register("mgda", "MGDA", "gradient aggregation")`` (name, display name, family), instead of as
    class attributes: the one line every method module repeats."""
    if isinstance(cls_or_name, str):
        def decorate(cls: type[Method]) -> type[Method]:
            cls.name, cls.display_name, cls.family = cls_or_name, display_name, family
            return register(cls)
        return decorate
    cls = cls_or_name
    if not cls.name or cls.name != cls.name.lower():
        raise ValueError(f"method name must be a non-empty lower-case string, got {cls.name!r}")
    V.choice(cls.family, f"{cls.name}: family", FAMILIES)
    _REGISTRY[cls.name] = cls
    return cls
