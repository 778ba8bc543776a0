"""Batched trajectory engine: many methods x many start points, advanced together (float64 NumPy).

Interface (stable; pages, CLI and tests use it)::

    from pcd.engine import run, sample_steps
    res = run("saddle2d", ["pcd", "ws", "mgda"], starts=None, steps=3000,
              optimizer="adam", lr=0.01,
              method_params={"pcd": {"tau": 0.3}},       # per-method hyper-parameters
              optimizer_params={"betas": (0.9, 0.999)},  # Adam: betas, eps, weight_decay;
                                                        # SGD: momentum, dampening, nesterov, weight_decay
              record=None,                              # None = every step, int N = ~N sampled
                                                        # steps (sample_steps), or explicit indices
              seed=0,                                   # stochastic methods get seeded Generators
              problem_params={})                        # when `problem` is a registry name
    res.positions      [M, S, T, n]   positions x_t at the recorded steps ``res.record`` [T]
    res.losses         [M, S, T, K]   losses at those positions
    res.grad_norms     [M, S, T, K]   ||grad f_k(x_t)||
    res.weights        [M, S, T, K]   the method's weights at x_t (PCD: [1, mu...] rescaled)
    res.update_norms   [M, S, T]      ||d_t||, d_t = weights_t @ J_t (the direction fed to the optimizer)
    res.directions     [M, S, T, n]   d_t itself, as fed to the optimizer (Step.direction: a direction
                                      method's own update, e.g. GradDrop's masked one, not w_t @ J_t)
    res.multipliers    [M, S, T, K-1] the secondaries' multipliers mu_t where the method reports them
                                      (PCD, DBGD: ``info["mu"]``; NaN for the other methods)
    per trajectory [M, S]: end [.., n], end_losses [.., K], primary_grad_norm, cms_residual,
    pareto_residual, final_update_norm, speed, stalled, diverged, diverged_step, diagnosis
    res.to_records()   -> list of JSON-able dicts, one per (method, start)
    res.trajectory(m, s) -> dict of one trajectory's arrays

Step semantics. For t = 0..steps the engine evaluates ``L_t, J_t`` at ``x_t`` (one batched
problem call over all M*S points), forms ``G_t = J_t J_t^T``, calls each method ONCE with its
``[S, K, K]`` slice (plus losses, J, its state and a seeded ``np.random.Generator``), takes the
direction :meth:`Step.direction` (``d_t = w_t @ J_t``, or the exact update of a direction method
such as GradDrop), evaluated for all methods at once, and, for t < steps, applies the optimizer:
``x_{t+1} = opt(x_t, d_t)``. The engine validates the Gram matrices itself (finite float64
``[S, K, K]``; rows of diverged trajectories are replaced by the identity and frozen) and provides
losses and J, so it calls ``Method.update`` directly unless a method overrides ``__call__``. ``res.method_seconds`` times each method's calls.
Adam and SGD(+momentum, Nesterov) reproduce ``torch.optim`` exactly (same formulas and order of
floating-point operations; tested against ``torch.optim.Adam/SGD``).

Diagnosis per trajectory, at the last finite point ``x_end``:
  * ``cms_residual = max_k ||grad f_k(x_end)||`` -- composite multi-stationarity (PCD paper,
    Def. of CMS): zero iff every objective is stationary. Nonsmooth objectives use the
    min-norm subgradient (see :mod:`pcd.problems.base`), so this is exact for the relu-box.
  * ``pareto_residual = min_{lambda in simplex} ||sum_k lambda_k grad f_k||`` -- the min-norm
    element of the convex hull of the gradients (Desideri's MGDA; zero iff Pareto-stationary),
    computed exactly on the Gram matrix by MGDA's solver (``simplex_min_norm``, see
    :func:`min_norm_point`).
  * ``speed = ||x_T - x_{T-W}|| / (lr * W)`` over the last ``W = max(1, steps // 10)`` steps
    (~1 for Adam while moving, ~||d|| for SGD).
  * ``stalled``: the update has (nearly) vanished, ``speed <= stall_tol * scale`` (scale = 1 for
    Adam, ``max(||grad f_1||, grad_tol)`` for SGD), while the primary is NOT stationary,
    ``||grad f_1(x_end)|| > grad_tol``.
  * ``diverged``: a non-finite position/loss/gradient appeared (``diverged_step`` = the step);
    the trajectory is frozen from then on, later records are NaN; never raises. A method that
    raises is reported in ``errors[name]`` and its trajectories marked diverged ("error").
  * ``diagnosis``: ``"diverged"`` / ``"error"``; ``"cms"`` if ``cms_residual <= grad_tol``;
    ``"conflict_equilibrium"`` if stalled (note: this also labels a method parked on an active
    constraint with the primary held back on purpose, e.g. PCD chattering on the ``scale``
    problem's box corner -- read it together with the secondary losses); ``"primary_stationary"``
    if only the primary gradient
    vanished (e.g. MGDA's failure mode at g_1 = 0, or PCD's deployed update halting at g_1 = 0);
    ``"moving"`` otherwise.
"""
from __future__ import annotations

import time
import zlib
from dataclasses import dataclass, field
from typing import Any, Literal, overload

import numpy as np

from pcd.optim import SGD, Adam, make_optimizer
from pcd.problems import Problem
from pcd.problems import make as make_problem
from pcd.problems.base import check_float, check_int

__all__ = ["run", "run_budgets", "run_paths", "RunResult", "sample_steps", "pareto_residual", "min_norm_point", "Adam",
           "SGD", "make_optimizer",
           "resolve_methods", "diagnose", "outcomes", "OUTCOMES", "GRAD_TOL", "STALL_TOL"]

MAX_STEPS = 1_000_000
MAX_CELLS = 200_000_000  # M*S*T*(2n + 3K + 1) recorded floats (1.6 GB) -- refuse beyond


# ---------------------------------------------------------------------------------------------
# recording helper
# ---------------------------------------------------------------------------------------------
def sample_steps(steps: int, n: int = 200) -> np.ndarray:
    """About ``n`` step indices in ``[0, steps]`` for animations: half geometrically spaced (so the
    fast early motion is not lost), half linearly spaced; always includes 0 and ``steps``.

    Returns a sorted, unique int array (length <= n + 2, = steps + 1 when steps + 1 <= n).
    """
    steps = check_int(steps, "steps", 1, MAX_STEPS, "sample_steps")
    n = check_int(n, "n", 2, 100_000, "sample_steps")
    if steps + 1 <= n:
        return np.arange(steps + 1)
    half = n // 2
    geo = np.unique(np.round(np.geomspace(1, steps, half)).astype(int))
    lin = np.round(np.linspace(0, steps, n - half)).astype(int)
    return np.unique(np.concatenate([[0, steps], geo, lin]))


# ---------------------------------------------------------------------------------------------
# K = 2 objectives on R^2: the Gram matrix written out (one order of operations)
# ---------------------------------------------------------------------------------------------
def gram22(J: np.ndarray) -> np.ndarray:
    """``G = J J^T`` for ``J [B, 2, 2]``, entry by entry: ``G_kl = J_k0 J_l0 + J_k1 J_l1``.

    ``np.matmul`` on stacked tiny matrices may fuse multiply-adds (its last bit depends on the
    batch size); this form is the one the end-point fast path (:mod:`pcd._kernels`) reproduces
    bit for bit (as :func:`pcd.methods.base.combine` does for ``d = w @ J``)."""
    P = J[:, :, None, :] * J[:, None, :, :]  # P_kln = J_kn J_ln: two broadcast ufuncs, not thirteen
    return P[..., 0] + P[..., 1]


# ---------------------------------------------------------------------------------------------
# Pareto residual: min-norm element of the convex hull of the gradients
# ---------------------------------------------------------------------------------------------
def min_norm_point(jacobian: Any) -> tuple[np.ndarray, np.ndarray]:
    """Min-norm element of the convex hull of the rows of ``J [B, K, n]``: ``(lambda [B, K], p [B, n])``
    with ``lambda`` in the simplex and ``p = lambda @ J`` (Desideri 2012, MGDA).

    Solved on the Gram matrix ``J J^T`` by the one min-norm solver,
    :func:`pcd.methods._solvers.simplex_min_norm` (MGDA's; K = 2 closed form, exact enumeration up
    to K = 5, pivoting beyond), after scaling each problem by an exact power of two so that its
    largest entry lies in [0.5, 1) (``lambda`` is invariant to ``J -> c J``). Optimality
    certificate: ``g_i . p >= ||p||^2`` for every i. Non-finite rows give NaN. At a
    Pareto-stationary point ``||p||`` is zero up to rounding in the Gram matrix (about 1e-16 to
    1e-14 times the largest gradient norm).
    """
    J = np.asarray(jacobian, dtype=np.float64)
    if J.ndim == 2:
        J = J[None]
    if J.ndim != 3 or J.shape[1] < 1:
        raise ValueError(f"min_norm_point: Jacobian must have shape [B, K, n], got {np.shape(jacobian)}")
    B, K, n = J.shape
    lam = np.full((B, K), np.nan)
    ok = np.isfinite(J).all(axis=(1, 2))
    if ok.any():
        from pcd.methods._solvers import simplex_min_norm

        Jo = J[ok]
        # lambda is invariant to J -> c J: scale each problem's largest entry into [0.5, 1) by an
        # exact power of two, so that the Gram matrix cannot overflow.
        top = np.abs(Jo).max(axis=(1, 2), initial=0.0)
        _, e = np.frexp(np.where(top > 0, top, 1.0))
        Js = np.ldexp(Jo, -e[:, None, None])
        lam[ok] = simplex_min_norm(Js @ Js.transpose(0, 2, 1))
    p = np.einsum("bk,bkn->bn", lam, J)
    return lam, p


def pareto_residual(jacobian: Any) -> np.ndarray:
    """``min_{lambda in simplex} ||J^T lambda||`` for a batch ``J [B, K, n]`` -> ``[B]``: zero iff
    the point is Pareto-stationary. See :func:`min_norm_point`."""
    _, p = min_norm_point(jacobian)
    return np.linalg.norm(p, axis=-1)


# ---------------------------------------------------------------------------------------------
# results
# ---------------------------------------------------------------------------------------------
@dataclass
class RunResult:
    """Plain data of one engine run (see the module docstring for the meaning of every field)."""

    problem: str
    problem_params: dict
    methods: list[str]
    method_params: dict[str, dict]
    optimizer: str
    lr: float
    optimizer_params: dict
    steps: int
    seed: int
    starts: np.ndarray            # [S, n]
    record: np.ndarray            # [T] recorded step indices
    positions: np.ndarray         # [M, S, T, n]
    losses: np.ndarray            # [M, S, T, K]
    grad_norms: np.ndarray        # [M, S, T, K]
    weights: np.ndarray           # [M, S, T, K]
    update_norms: np.ndarray      # [M, S, T]
    end: np.ndarray               # [M, S, n]
    end_losses: np.ndarray        # [M, S, K]
    end_grad_norms: np.ndarray    # [M, S, K]
    primary_grad_norm: np.ndarray  # [M, S]
    cms_residual: np.ndarray      # [M, S]
    pareto_residual: np.ndarray   # [M, S]
    final_update_norm: np.ndarray  # [M, S]
    speed: np.ndarray             # [M, S]
    stalled: np.ndarray           # [M, S] bool
    diverged: np.ndarray          # [M, S] bool
    diverged_step: np.ndarray     # [M, S] int, -1 = never
    diagnosis: np.ndarray         # [M, S] str
    errors: dict[str, str] = field(default_factory=dict)
    seconds: float = 0.0
    method_seconds: dict[str, float] = field(default_factory=dict)
    tolerances: dict[str, float] = field(default_factory=dict)
    multipliers: np.ndarray | None = None  # [M, S, T, K-1], NaN where a method reports no mu
    directions: np.ndarray | None = None   # [M, S, T, n], the direction d_t fed to the optimizer

    @property
    def M(self) -> int:
        return len(self.methods)

    @property
    def S(self) -> int:
        return int(self.starts.shape[0])

    def index(self, method: str) -> int:
        """Row of ``method`` in the [M, ...] arrays."""
        try:
            return self.methods.index(method)
        except ValueError:
            raise ValueError(f"method {method!r} not in this run; ran: {', '.join(self.methods)}") from None

    def trajectory(self, method: str | int, start: int) -> dict[str, Any]:
        """One trajectory's recorded arrays and diagnosis (plain data)."""
        m = self.index(method) if isinstance(method, str) else int(method)
        s = int(start)
        return {
            "method": self.methods[m], "start": self.starts[s].tolist(), "steps": self.record,
            "positions": self.positions[m, s], "losses": self.losses[m, s],
            "grad_norms": self.grad_norms[m, s], "weights": self.weights[m, s],
            "update_norms": self.update_norms[m, s],
            "multipliers": None if self.multipliers is None else self.multipliers[m, s],
            "directions": None if self.directions is None else self.directions[m, s],
            **self._summary(m, s),
        }

    def _summary(self, m: int, s: int) -> dict[str, Any]:
        return {
            "end": self.end[m, s].tolist(),
            "losses": self.end_losses[m, s].tolist(),
            "grad_norms": self.end_grad_norms[m, s].tolist(),
            "primary_grad_norm": float(self.primary_grad_norm[m, s]),
            "cms_residual": float(self.cms_residual[m, s]),
            "pareto_residual": float(self.pareto_residual[m, s]),
            "update_norm": float(self.final_update_norm[m, s]),
            "speed": float(self.speed[m, s]),
            "stalled": bool(self.stalled[m, s]),
            "diverged": bool(self.diverged[m, s]),
            "diverged_step": None if self.diverged_step[m, s] < 0 else int(self.diverged_step[m, s]),
            "diagnosis": str(self.diagnosis[m, s]),
        }

    def to_records(self) -> list[dict[str, Any]]:
        """One JSON-able dict per (method, start): method, start, end, losses, primary_grad_norm,
        cms_residual, pareto_residual, stalled, diverged, diverged_step, diagnosis, ..."""
        out = []
        for m, name in enumerate(self.methods):
            for s in range(self.S):
                rec = {"method": name, "start": self.starts[s].tolist()}
                rec.update(self._summary(m, s))
                if name in self.errors:
                    rec["error"] = self.errors[name]
                out.append(rec)
        return out


# ---------------------------------------------------------------------------------------------
# diagnosis (the one home of the outcome rules and their thresholds)
# ---------------------------------------------------------------------------------------------
GRAD_TOL = 1e-3   # ||grad f_k|| <= GRAD_TOL counts as stationary
STALL_TOL = 1e-2  # speed <= STALL_TOL * scale counts as stopped

#: Basin-map outcome classes (see :func:`outcomes`), in display order.
OUTCOMES = ("cms", "conflict_equilibrium", "single_objective_minimum", "moving", "diverged")

# The outcome wording, in one place (figures, tables, pages and the CLI read it from here).
#: Each basin-map outcome class (:data:`OUTCOMES`) in words: ``(tag, name)`` -- a map's fractions
#: line ("CMS 78 %") and its legend, hover and tables.
OUTCOME_WORDS = {
    "cms": ("CMS", "reached CMS"),
    "conflict_equilibrium": ("conflict", "conflict equilibrium"),
    "single_objective_minimum": ("one min.", "Pareto-stationary at one objective's minimum"),
    "moving": ("moving", "still moving at the budget"),
    "diverged": ("diverged", "diverged"),
}
#: Each trajectory diagnosis in words: ``(short, long)`` -- a table cell, a sentence. The labels of
#: :func:`diagnose`, with ``primary_stationary`` and a PCD ``conflict_equilibrium`` told apart per method
#: (``halted`` / ``pareto_at_primary``, ``held``: :func:`outcome_label`). PCD's deployed
#: update d = d~ ||g_1|| / ||d~|| is zero wherever g_1 = 0 (a known limitation: the update halts), while a
#: symmetric method there sits at a Pareto-stationary point of its own choosing (e.g. FAMO at the
#: primary's minimum with the secondary > 0): different names.
DIAGNOSIS_WORDS = {
    "cms": ("reached CMS", "reached CMS (every objective stationary)"),
    "conflict_equilibrium": ("stalled: gradients cancel", "stalled at a conflict equilibrium (the gradients cancel)"),
    "pareto_at_primary": ("Pareto-stationary at ∇f₁ = 0",
                          "ended where ∇f₁ = 0: Pareto-stationary, the secondary not at its optimum"),
    "halted": ("PCD halted: ∇f₁ = 0", "PCD's update halted: ∇f₁ = 0 zeroes its rescaled step (known limitation)"),
    "held": ("PCD held by a constraint", "PCD stopped: a secondary's τ constraint holds the primary back"),
    "moving": ("still moving", "still moving (no end point within the step budget)"),
    "diverged": ("diverged", "diverged"),
    "error": ("method error", "method error"),
}


def outcome_label(diagnosis: str, method: str | None = None, short: bool = False) -> str:
    """The outcome of a trajectory in words (:data:`DIAGNOSIS_WORDS`, the one home of the wording), from the engine's diagnosis and the method: ``primary_stationary`` is ``halted`` for a
    method that halts where the primary's gradient vanishes (PCD) and ``pareto_at_primary`` otherwise;
    a conflict equilibrium of PCD is ``held`` (its primary keeps weight 1)."""
    import pcd.methods as registry  # the registry imports the engine

    d = str(diagnosis)
    key = str(method or "").lower()
    pcd_like = key in registry.available() and registry.get(key).halts_where_primary_vanishes
    if d == "primary_stationary":
        d = "halted" if pcd_like else "pareto_at_primary"
    elif d == "conflict_equilibrium" and pcd_like:
        d = "held"  # PCD's primary keeps weight 1: it stops only where a constraint binds against it
    words = DIAGNOSIS_WORDS.get(d)
    return d if words is None else words[0 if short else 1]


def diagnose(end_grad_norms: np.ndarray, speed: np.ndarray, alive: np.ndarray, errored: np.ndarray,
             optimizer: str, grad_tol: float = GRAD_TOL, stall_tol: float = STALL_TOL
             ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """The engine's per-trajectory diagnosis (module docstring) from the end point's gradient norms
    ``[B, K]``, the final ``speed [B]``, ``alive [B]`` and ``errored [B]`` (a method raised).

    Returns ``(cms_residual, primary_grad_norm, stalled, diagnosis)``, each ``[B]``.
    """
    end_grad_norms = np.asarray(end_grad_norms, dtype=np.float64)
    cms = end_grad_norms.max(axis=1)
    g1 = end_grad_norms[:, 0]
    scale = np.ones(g1.shape) if optimizer == "adam" else np.maximum(g1, grad_tol)
    with np.errstate(invalid="ignore"):
        slow = speed <= stall_tol * scale
        stalled = alive & (g1 > grad_tol) & slow
        diag = np.full(g1.shape, "moving", dtype=object)
        diag[alive & (g1 <= grad_tol) & slow] = "primary_stationary"
        diag[stalled] = "conflict_equilibrium"
        diag[alive & (cms <= grad_tol)] = "cms"
    diag[~alive] = "diverged"
    diag[~alive & errored] = "error"
    return cms, g1, stalled, diag


def outcomes(diagnosis: np.ndarray, end_grad_norms: np.ndarray, grad_tol: float = GRAD_TOL) -> np.ndarray:
    """Basin-map outcome of each trajectory (one of :data:`OUTCOMES`) from its :func:`diagnose` label.

    ``cms`` reached CMS; ``conflict_equilibrium`` stopped with every objective's gradient nonzero
    (they cancel); ``single_objective_minimum`` stopped where one objective is stationary but not
    all -- Pareto-stationary at that objective's minimum (``primary_stationary``, or a stall with
    a secondary's gradient <= ``grad_tol``); ``moving`` still moving at the step budget;
    ``diverged`` non-finite values or a method error.
    """
    d = np.asarray(diagnosis, dtype=object)
    gmin = np.asarray(end_grad_norms, dtype=np.float64).min(axis=-1)
    out = d.copy()
    with np.errstate(invalid="ignore"):
        out[(d == "primary_stationary") | ((d == "conflict_equilibrium") & (gmin <= grad_tol))] = \
            "single_objective_minimum"
    out[(d == "diverged") | (d == "error")] = "diverged"
    return out


# ---------------------------------------------------------------------------------------------
# the runner
# ---------------------------------------------------------------------------------------------
def resolve_methods(methods: Any, method_params: dict[str, dict] | None = None) -> list[tuple[str, Any]]:
    """``"pcd,ws"`` / ``["pcd", "ws"]`` / Method instances / ``(label, instance)`` pairs ->
    ``[(label, instance)]``. A pair runs one method under several settings in one batched run
    (e.g. PCD at every tau of a sweep); labels must be unique.

    ``method_params`` maps a method name to its hyper-parameters (validated by the method).
    """
    import pcd.methods as registry

    if isinstance(methods, str):
        methods = [m for m in (p.strip() for p in methods.split(",")) if m]
    if isinstance(methods, registry.Method):
        methods = [methods]
    try:
        methods = list(methods)
    except TypeError:
        raise ValueError(f"methods must be a list of names, got {methods!r}") from None
    if not methods:
        raise ValueError(f"no methods given; available: {', '.join(registry.available())}")
    method_params = dict(method_params or {})
    names = [(m.strip().lower() if isinstance(m, str) else getattr(m[1] if isinstance(m, tuple) else m, "name", ""))
             for m in methods]
    unknown_params = sorted(set(k.lower() for k in method_params) - set(names))
    if unknown_params:
        raise ValueError(f"method_params given for method(s) not run: {unknown_params}; running: {names}")
    params_lc = {k.lower(): v for k, v in method_params.items()}
    out: list[tuple[str, Any]] = []
    seen: set[str] = set()
    for m, name in zip(methods, names):
        if isinstance(m, tuple) and len(m) == 2 and isinstance(m[0], str) and isinstance(m[1], registry.Method):
            label, inst = m  # a labelled instance: the same method with several settings in one run
        elif isinstance(m, registry.Method):
            inst, label = m, m.name or type(m).__name__
        elif isinstance(m, str):
            hp = params_lc.get(name, {}) or {}
            if not isinstance(hp, dict):
                raise ValueError(f"method_params[{name!r}] must be a dict of hyper-parameters, got {hp!r}")
            inst, label = registry.resolve(name, hp), name  # the engine provides losses and J
        else:
            raise ValueError(f"methods must be names, Method instances or (label, instance) pairs, got {m!r}")
        if label in seen:
            raise ValueError(f"method {label!r} given twice")
        seen.add(label)
        out.append((label, inst))
    return out


def _check_starts(starts: Any, problem: Problem) -> np.ndarray:
    if starts is None:
        return np.asarray(problem.default_starts(), dtype=np.float64)
    try:
        arr = np.asarray(starts, dtype=np.float64)
    except (TypeError, ValueError):
        raise ValueError("starts must be numbers, shape [S, dim]") from None
    if arr.ndim == 1 and arr.size == problem.dim:
        arr = arr[None]
    if arr.ndim != 2 or arr.shape[1] != problem.dim or arr.shape[0] < 1:
        raise ValueError(f"starts must have shape [S, {problem.dim}] for {problem.name}, got {np.shape(starts)}")
    if not np.isfinite(arr).all():
        raise ValueError("starts must be finite")
    return arr


def _check_record(record: Any, steps: int) -> np.ndarray:
    if record is None:
        return np.arange(steps + 1)
    if isinstance(record, (int, np.integer)) and not isinstance(record, bool):
        return sample_steps(steps, int(record))
    try:
        arr = np.asarray(record)
    except Exception:
        raise ValueError("record must be None, an int (number of frames) or a list of step indices") from None
    if arr.ndim != 1 or arr.size == 0 or arr.dtype.kind not in "iuf" or not np.all(arr == np.round(arr)):
        raise ValueError("record must be None, an int (number of frames) or a list of integer step indices")
    arr = np.unique(arr.astype(int))
    if arr[0] < 0 or arr[-1] > steps:
        raise ValueError(f"record indices must be in [0, {steps}]")
    return arr


def run(
    problem: str | Problem,
    methods: Any,
    starts: Any = None,
    steps: int = 1000,
    optimizer: str = "adam",
    lr: float = 0.01,
    method_params: dict[str, dict] | None = None,
    optimizer_params: dict[str, Any] | None = None,
    record: Any = None,
    seed: int = 0,
    problem_params: dict[str, Any] | None = None,
    grad_tol: float = GRAD_TOL,
    stall_tol: float = STALL_TOL,
    fast: bool = True,
    progress: Any = None,
    snapshots: dict[Any, Any] | None = None,
) -> RunResult:
    """Run every (method x start) trajectory together; see the module docstring for semantics.

    ``problem``: a registry name (with ``problem_params``) or a Problem; ``methods``: names
    (list or comma-separated string) or Method instances; ``starts``: ``[S, dim]`` (default: the
    problem's default starts); ``steps`` >= 1; ``lr`` > 0. Raises ValueError on bad input; a
    diverging trajectory is reported (``diverged``), never raised.

    ``record=[steps]`` (end points only) takes the compiled end-point fast path
    (:mod:`pcd._fastpath`, bit-identical results) where it covers the problem, methods and
    optimizer and ``fast`` is True. ``progress(fraction, message)`` is called along the way.

    ``snapshots`` (internal, for :func:`run_budgets`): a dict whose int keys are recorded steps; the
    loop stores there the state a run ending at that step would finish with, and under ``"ctx"``
    the run's problem, methods and settings.
    """
    t_start = time.perf_counter()
    prob = make_problem(problem, **(problem_params or {}))
    steps = check_int(steps, "steps", 1, MAX_STEPS)
    lr = check_float(lr, "lr", 0.0, strict_low=True)
    seed = check_int(seed, "seed", 0, 2**63 - 1)
    grad_tol = check_float(grad_tol, "grad_tol", 0.0)
    stall_tol = check_float(stall_tol, "stall_tol", 0.0)
    x0 = _check_starts(starts, prob)
    meths = resolve_methods(methods, method_params)
    rec = _check_record(record, steps)
    M, S, K, n = len(meths), x0.shape[0], prob.K, prob.dim
    T = rec.size
    if M * S * T * (2 * n + 3 * K + 1) > MAX_CELLS:
        raise ValueError(f"too much to record ({M} methods x {S} starts x {T} steps); "
                         "pass record=N (e.g. 200) to keep ~N frames")
    opt_name = str(optimizer).strip().lower()
    opt = make_optimizer(opt_name, (M * S, n), lr, **(optimizer_params or {}))
    if fast and T == 1 and rec[0] == steps and snapshots is None:
        from pcd import _fastpath

        ends = _fastpath.run_ends(prob, meths, x0, steps, opt, progress)
        if ends is not None:
            bufs = _record_buffers(M * S, T, n, K)
            _record(0, steps, bufs, ends["x"], ends["L"], ends["J"], ends["W"], ends["MU"], ends["D"],
                    ends["alive"], ends["div_step"])
            return _finish(prob, meths, opt_name, lr, optimizer_params, steps, seed, x0, rec, bufs, ends["x"],
                           ends["x_window"], max(1, steps // 10), ends["alive"], np.zeros(M * S, dtype=bool),
                           ends["div_step"], ends["end_x"], ends["end_L"], ends["end_J"], ends["D"], {},
                           t_start, ends["seconds"], grad_tol, stall_tol)

    MS = M * S
    x = np.tile(x0, (M, 1))                       # [MS, n], row m*S + s
    rec_pos = np.full(steps + 1, -1, dtype=np.int64)
    rec_pos[rec] = np.arange(T)
    bufs = _record_buffers(MS, T, n, K)
    MU = np.full((MS, max(K - 1, 0)), np.nan)

    alive = np.ones(MS, dtype=bool)
    div_step = np.full(MS, -1, dtype=np.int64)
    end_x = x.copy()
    end_L = np.full((MS, K), np.nan)
    end_J = np.full((MS, K, n), np.nan)
    W = np.zeros((MS, K))
    D = np.zeros((MS, n))
    errors: dict[str, str] = {}
    secs = [0.0] * M  # seconds in each method's calls (method_seconds, by label, at the end)
    states = [inst.init_state(S, K) for _, inst in meths]
    # each method's generator from (seed, its label): its draws -- and so its trajectory -- do not
    # depend on which other methods run beside it or in what order (a page that runs methods one at a
    # time, in chunks or all together shows the same paths)
    rngs = [np.random.default_rng(np.random.SeedSequence(seed, spawn_key=(zlib.crc32(label.encode()),)))
            for label, _ in meths]
    window = max(1, steps // 10)
    x_window = x.copy()
    eye = np.eye(K)
    method_alive = [True] * M
    plan_stale = [False]  # a method failed this step: rebuild the plan without it

    # Per-method constants, hoisted out of the step loop.
    from pcd._fast import all_finite
    from pcd.methods.base import Method as _Method
    from pcd.methods.base import combine

    slices = [slice(m * S, (m + 1) * S) for m in range(M)]
    direct = [type(inst).__call__ is _Method.__call__ for _, inst in meths]   # Gram pre-validated here
    stoch = [bool(getattr(inst, "stochastic", False)) for _, inst in meths]
    # one tuple per method, unpacked once per step: (index, instance, its bound ``update``
    # for a direct method -- None when the method overrides __call__ --, its rows, its rng or None)
    plan = [(m, inst, inst.update if direct[m] else None, slices[m], rngs[m] if stoch[m] else None)
            for m, (_, inst) in enumerate(meths)]
    all_alive = True
    k2n2 = K == 2 and n == 2  # the 2-D toys: elementwise Gram / direction (the fast path's exact operations)
    perf = time.perf_counter

    def _take(m: int, out: Any, own: list | None) -> list | None:
        """Store method ``m``'s step: state, weights, multipliers; its own direction, if any, in ``own``
        (the step loop below does the same inline: a call per method and step costs ~0.3 us)."""
        sl = slices[m]
        states[m] = out.state
        W[sl] = out.weights
        mu = out.info.get("mu") if out.info else None
        if mu is not None:
            MU[sl] = np.asarray(mu, dtype=np.float64).reshape(S, -1)
        if out.exact is not None:  # a direction method (Step.direction: its own update)
            own = own or []
            own.append((sl, np.asarray(out.exact, dtype=np.float64)))
        return own

    def _method_failed(m: int, exc: BaseException, t: int) -> bool:
        """Method ``m`` raised at step ``t``: report it, stop its rows; returns whether all rows live."""
        sl = slices[m]
        errors[meths[m][0]] = f"{type(exc).__name__}: {exc}".splitlines()[0]
        method_alive[m] = False
        plan_stale[0] = True  # the step loop drops it from the plan after this step
        dead = np.zeros(MS, dtype=bool)
        dead[sl] = alive[sl]
        div_step[dead] = t
        alive[dead] = False
        W[sl] = 0.0
        return bool(alive.all())

    if snapshots is not None:
        snapshots["ctx"] = (prob, meths, opt_name, x0, t_start)
    old_err = np.seterr(all="ignore")  # NaN/inf are detected and reported, not warned about
    report_every = max(1, (steps + 1) // 20)
    try:
        for t in range(steps + 1):
            if progress is not None and t % report_every == 0 and t:
                progress(t / (steps + 1), f"step {t}")
            if t == steps - window:
                x_window = x.copy()
            L, J = prob.losses_and_jacobian(x)
            if not (all_finite(J) and all_finite(L) and all_finite(x)):
                finite = np.isfinite(L).all(axis=1) & np.isfinite(J).all(axis=(1, 2)) & np.isfinite(x).all(axis=1)
                newly = alive & ~finite
                div_step[newly] = t
                alive &= finite
                all_alive = bool(alive.all())
            if all_alive:
                end_x, end_L, end_J = x, L, J
            else:
                L = np.where(alive[:, None], L, 0.0)
                J = np.where(alive[:, None, None], J, 0.0)
                end_x = np.where(alive[:, None], x, end_x)
                end_L = np.where(alive[:, None], L, end_L)
                end_J = np.where(alive[:, None, None], J, end_J)
            G = gram22(J) if k2n2 else J @ J.transpose(0, 2, 1)
            if not all_alive:
                G[~alive] = eye
            own: list | None = None
            retry = None   # direct methods whose step was not finite: (m, state before the update)
            before = states[:]  # each method's state before this step's update (for a retry)
            for m, inst, update, sl, rng in plan:  # the live methods (a failed one leaves it)
                t0 = perf()
                try:
                    if update is not None:
                        # finiteness of the weights is checked once for all methods after the loop
                        # (one np.isfinite over W instead of one per method and step: ~3 us each)
                        out = update(G[sl], states[m], losses=L[sl], jacobian=J[sl], rng=rng)
                    else:
                        out = inst(G[sl], losses=L[sl], jacobian=J[sl], state=states[m], rng=rng)
                except Exception as exc:  # a method bug must not take the page down: report it
                    all_alive = _method_failed(m, exc, t)
                    secs[m] += perf() - t0
                    continue
                # what _take does, inline (most methods: state and weights only)
                states[m] = out.state
                W[sl] = out.weights
                exact, info = out.exact, out.info
                if exact is not None or info:
                    if exact is not None:  # a direction method (Step.direction: its own update)
                        exact = np.asarray(exact, dtype=np.float64)
                        # (its weights are checked with every method's after the loop: the direction here)
                        if update is not None and not all_finite(exact):
                            retry = retry or []  # redone from the state before this step (below)
                            retry.append((m, before[m]))
                            secs[m] += perf() - t0
                            continue
                        own = own or []
                        own.append((sl, exact))
                    mu = info.get("mu") if info else None
                    if mu is not None:
                        MU[sl] = np.asarray(mu, dtype=np.float64).reshape(S, -1)
                secs[m] += perf() - t0
            if not all_finite(W):   # some direct method's weights are not finite
                retried = {m for m, _ in retry or []}
                retry = (retry or []) + [(m, before[m]) for m in range(M) if direct[m] and method_alive[m]
                                         and m not in retried and not np.isfinite(W[slices[m]]).all()]
            if retry:  # what Method.__call__ does: retry at scale ~1, else ValueError -> "error"
                for m, prev_state in retry:
                    label, inst = meths[m]
                    sl = slices[m]
                    t0 = perf()
                    try:
                        out = inst._at_unit_scale(G[sl], prev_state, dict(
                            losses=L[sl], jacobian=J[sl], rng=rngs[m] if stoch[m] else None))
                    except Exception as exc:
                        all_alive = _method_failed(m, exc, t)
                        own = [(s_, d_) for s_, d_ in own or [] if s_ != sl] or None
                    else:
                        own = [(s_, d_) for s_, d_ in own or [] if s_ != sl] or None
                        own = _take(m, out, own)
                    secs[m] += perf() - t0
            if plan_stale[0]:
                plan[:] = [p for p in plan if method_alive[p[0]]]
                plan_stale[0] = False
            D = combine(W, J)  # Step.direction of every method at once: w @ J, then the exact ones
            if own:
                for sl, direction in own:
                    D[sl] = direction
            if not all_alive:
                D[~alive] = 0.0
            r = rec_pos[t]
            if r >= 0:
                _record(r, t, bufs, x, L, J, W, MU, D, None if all_alive else alive, div_step)
                if snapshots is not None and t in snapshots:  # what a run ending here finishes with
                    snapshots[t] = _Snapshot(x.copy(), D.copy(), alive.copy(), div_step.copy(), np.array(end_x),
                                             np.array(end_L), np.array(end_J), dict(errors), list(secs))
            if t < steps:
                x = opt.step(x, D, None if all_alive else alive)
    finally:
        np.seterr(**old_err)

    m_seconds = {label: secs[m] for m, (label, _) in enumerate(meths)}
    errored = _errored(meths, errors, S)
    return _finish(prob, meths, opt_name, lr, optimizer_params, steps, seed, x0, rec, bufs, x, x_window, window,
                   alive, errored, div_step, end_x, end_L, end_J, D, errors, t_start, m_seconds, grad_tol, stall_tol)


def _errored(meths: list, errors: dict[str, str], S: int) -> np.ndarray:
    """``[M*S]``: the rows of the methods that raised (``errors``)."""
    errored = np.zeros(len(meths) * S, dtype=bool)
    for m, (label, _) in enumerate(meths):
        if label in errors:
            errored[m * S:(m + 1) * S] = True
    return errored


@dataclass
class _Snapshot:
    """The loop's state at a recorded step t: what a run with ``steps = t`` ends with."""

    x: np.ndarray
    D: np.ndarray
    alive: np.ndarray
    div_step: np.ndarray
    end_x: np.ndarray
    end_L: np.ndarray
    end_J: np.ndarray
    errors: dict[str, str]
    secs: list[float]


_BUFFERS = ("positions", "losses", "grad_norms", "weights", "update_norms", "multipliers", "directions")


def run_budgets(problem: str | Problem, methods: Any, budgets: Any, record: Any = None,
                **kwargs: Any) -> dict[int, RunResult]:
    """``{b: run(problem, methods, steps=b, record=record(b), **kwargs)}`` for every step budget ``b``
    in ``budgets``, from ONE run of the longest budget: the same results, bit for bit (only the
    timings ``seconds`` / ``method_seconds`` differ).

    Why that is exact: step t of :func:`run` never depends on the budget -- the problem, the
    methods (their states, their seeded generators) and the optimizer (its step counter) see the
    same inputs in the same order; the budget only says where the loop stops and what is recorded.
    So a run to ``B`` passes through the exact state a run to ``b <= B`` ends in: that state
    (position, direction, divergence, errors) is taken at step ``b`` and at ``b - max(1, b // 10)``
    (the speed window), and the end-of-run rules (:func:`_finish`) run on it.

    ``record``: a function of the budget returning what :func:`run` takes as ``record`` (None,
    ``N`` frames or step indices); None records the end point only (``[b]``). ``kwargs``: the
    other arguments of :func:`run` (``starts``, ``optimizer``, ``lr``, ``method_params``, ``seed``,
    ``progress``: called along the one run, which may also pause there; not ``steps``, ``fast``).
    Tested: ``tests/test_engine_budgets.py``.
    """
    for bad in ("steps", "fast", "snapshots"):
        if bad in kwargs:
            raise ValueError(f"run_budgets: {bad!r} is not an argument here (the budgets are the steps)")
    try:
        raw = list(budgets)
    except TypeError:
        raise ValueError("budgets must be a list of step counts (integers >= 1)") from None
    if not raw:
        raise ValueError("budgets must hold at least one step count")
    bs = sorted({check_int(b, "budget", 1, MAX_STEPS) for b in raw})
    if record is not None and not callable(record):
        raise ValueError("record must be None or a function of the budget (returning run's record)")
    recs = {b: _check_record([b] if record is None else record(b), b) for b in bs}
    windows = {b: b - max(1, b // 10) for b in bs}
    snaps: dict[Any, Any] = {t: None for b in bs for t in (b, windows[b])}
    union = np.unique(np.concatenate([*recs.values(), np.array([t for t in snaps], dtype=int)]))
    full = run(problem, methods, steps=bs[-1], record=union, fast=False, snapshots=snaps, **kwargs)
    prob, meths, opt_name, x0, t_start = snaps["ctx"]
    MS, S = full.M * full.S, full.S
    flat = {k: getattr(full, k).reshape((MS,) + getattr(full, k).shape[2:]) for k in _BUFFERS}
    out: dict[int, RunResult] = {}
    for b in bs:
        snap, win = snaps[b], snaps[windows[b]]
        slots = np.searchsorted(union, recs[b])
        bufs = {k: v[:, slots] for k, v in flat.items()}
        m_seconds = {label: snap.secs[m] for m, (label, _) in enumerate(meths)}
        out[b] = _finish(prob, meths, opt_name, full.lr, full.optimizer_params or None, b, full.seed, x0, recs[b],
                         bufs, snap.x, win.x, max(1, b // 10), snap.alive, _errored(meths, snap.errors, S),
                         snap.div_step, snap.end_x, snap.end_L, snap.end_J, snap.D, snap.errors, t_start, m_seconds,
                         full.tolerances["grad_tol"], full.tolerances["stall_tol"])
    return out


@overload
def run_paths(problem: str | Problem, methods: Any, starts: Any = ..., steps: int = ..., optimizer: str = ...,
              lr: float = ..., method_params: dict[str, dict] | None = ...,
              optimizer_params: dict[str, Any] | None = ..., record: Any = ..., fast: bool = ...,
              losses: Literal[False] = ...) -> tuple[list[str], np.ndarray, np.ndarray]: ...


@overload
def run_paths(problem: str | Problem, methods: Any, starts: Any = ..., steps: int = ..., optimizer: str = ...,
              lr: float = ..., method_params: dict[str, dict] | None = ...,
              optimizer_params: dict[str, Any] | None = ..., record: Any = ..., fast: bool = ...,
              *, losses: Literal[True]) -> tuple[list[str], np.ndarray, np.ndarray, np.ndarray]: ...


def run_paths(problem: str | Problem, methods: Any, starts: Any = None, steps: int = 1000, optimizer: str = "adam",
              lr: float = 0.01, method_params: dict[str, dict] | None = None,
              optimizer_params: dict[str, Any] | None = None, record: Any = 200, fast: bool = True,
              losses: bool = False) -> Any:
    """The trajectories alone, for a picture that redraws while the user drags (the toy map's live
    paths): ``(method labels, recorded steps [T], positions [M, S, T, dim])`` -- exactly
    :func:`run`'s ``methods``, ``record`` and ``positions`` for the same arguments (seed 0). Where the
    compiled fast path covers the run (:func:`pcd._fastpath.supported`: K = 2 on R^2, every method
    with a compiled step, Adam/SGD) the points are recorded there, bit-identical and several times
    faster than the NumPy loop, with no gradients or diagnosis; else it is :func:`run`.
    ``losses=True``: also :func:`run`'s ``losses [M, S, T, K]`` as a fourth item -- the problem's losses
    at those points, evaluated in the same step that computed them (NaN from the step a trajectory
    diverged at), exactly :func:`run`'s (the objective-space panel that follows a drag)."""
    prob = make_problem(problem)
    steps = check_int(steps, "steps", 1, MAX_STEPS)
    lr = check_float(lr, "lr", 0.0, strict_low=True)
    x0 = _check_starts(starts, prob)
    meths = resolve_methods(methods, method_params)
    rec = _check_record(record, steps)
    M, S = len(meths), x0.shape[0]
    if M * S * rec.size * prob.dim > MAX_CELLS:
        raise ValueError(f"too much to record ({M} methods x {S} starts x {rec.size} steps)")
    opt = make_optimizer(str(optimizer).strip().lower(), (M * S, prob.dim), lr, **(optimizer_params or {}))
    if fast:
        from pcd import _fastpath

        out = _fastpath.run_ends(prob, meths, x0, steps, opt, record=rec) if _fastpath.supported(prob, meths, opt) \
            else None
        if out is not None:
            pos = out["positions"].reshape(M, S, rec.size, prob.dim)
            if losses:
                return [label for label, _ in meths], rec, pos, out["losses"].reshape(M, S, rec.size, prob.K)
            return [label for label, _ in meths], rec, pos
    res = run(prob, methods, starts=x0, steps=steps, optimizer=optimizer, lr=lr, method_params=method_params,
              optimizer_params=optimizer_params, record=rec, fast=False)
    if losses:
        return list(res.methods), np.asarray(res.record), np.asarray(res.positions), np.asarray(res.losses)
    return list(res.methods), np.asarray(res.record), np.asarray(res.positions)


def _record_buffers(MS: int, T: int, n: int, K: int) -> dict[str, np.ndarray]:
    return {"positions": np.full((MS, T, n), np.nan), "losses": np.full((MS, T, K), np.nan),
            "grad_norms": np.full((MS, T, K), np.nan), "weights": np.full((MS, T, K), np.nan),
            "update_norms": np.full((MS, T), np.nan), "multipliers": np.full((MS, T, max(K - 1, 0)), np.nan),
            "directions": np.full((MS, T, n), np.nan)}


def _record(r: int, t: int, bufs: dict[str, np.ndarray], x: np.ndarray, L: np.ndarray, J: np.ndarray,
            W: np.ndarray, MU: np.ndarray, D: np.ndarray, alive: np.ndarray | None, div_step: np.ndarray) -> None:
    """Write step ``t`` into record slot ``r``; rows not ``alive`` get NaN (their position at the
    step where they diverged is kept)."""
    bufs["positions"][:, r] = x
    bufs["losses"][:, r] = L
    bufs["grad_norms"][:, r] = np.sqrt(np.einsum("bkn,bkn->bk", J, J))
    bufs["weights"][:, r] = W
    bufs["multipliers"][:, r] = MU
    bufs["update_norms"][:, r] = np.sqrt(np.einsum("bn,bn->b", D, D))
    bufs["directions"][:, r] = D
    if alive is not None:
        dead = ~alive
        for key in bufs:
            bufs[key][dead, r] = np.nan
        just = dead & (div_step == t)
        bufs["positions"][just, r] = x[just]


def _finish(prob: Problem, meths: list, opt_name: str, lr: float, optimizer_params: dict | None, steps: int,
            seed: int, x0: np.ndarray, rec: np.ndarray, bufs: dict[str, np.ndarray], x: np.ndarray,
            x_window: np.ndarray, window: int, alive: np.ndarray, errored: np.ndarray, div_step: np.ndarray,
            end_x: np.ndarray, end_L: np.ndarray, end_J: np.ndarray, D: np.ndarray, errors: dict[str, str],
            t_start: float, m_seconds: dict[str, float], grad_tol: float, stall_tol: float) -> RunResult:
    """End-of-run residuals, diagnosis and the :class:`RunResult` (shared by the NumPy loop and the
    end-point fast path, so both report through the same rules)."""
    M, S = len(meths), x0.shape[0]
    end_J = np.asarray(end_J)
    final_unorm = np.sqrt(np.einsum("bn,bn->b", D, D))
    final_unorm[~alive] = np.nan
    with np.errstate(all="ignore"):
        end_gn = np.sqrt(np.einsum("bkn,bkn->bk", end_J, end_J))
        pres = pareto_residual(end_J)
        speed = np.linalg.norm(x - x_window, axis=1) / (lr * window)
    cms, g1, stalled, diag = diagnose(end_gn, speed, alive, errored, opt_name, grad_tol, stall_tol)
    diverged = ~alive
    speed = np.where(alive, speed, np.nan)

    def shp(a: np.ndarray) -> np.ndarray:
        return a.reshape((M, S) + a.shape[1:])

    return RunResult(
        problem=prob.name, problem_params=prob.params(), methods=[lab for lab, _ in meths],
        method_params={lab: dict(getattr(inst, "hparams", {})) for lab, inst in meths},
        optimizer=opt_name, lr=lr, optimizer_params=dict(optimizer_params or {}), steps=steps, seed=seed,
        starts=x0, record=rec, positions=shp(bufs["positions"]), losses=shp(bufs["losses"]),
        grad_norms=shp(bufs["grad_norms"]), weights=shp(bufs["weights"]), update_norms=shp(bufs["update_norms"]),
        end=shp(end_x), end_losses=shp(end_L),
        end_grad_norms=shp(end_gn), primary_grad_norm=shp(g1), cms_residual=shp(cms),
        pareto_residual=shp(pres), final_update_norm=shp(final_unorm), speed=shp(speed),
        stalled=shp(stalled), diverged=shp(diverged), diverged_step=shp(div_step), diagnosis=shp(diag),
        errors=errors, seconds=time.perf_counter() - t_start, method_seconds=m_seconds,
        tolerances={"grad_tol": grad_tol, "stall_tol": stall_tol}, multipliers=shp(bufs["multipliers"]),
        directions=shp(bufs["directions"]),
    )
