"""Basin maps: where each method ends from every start point of a dense 2-D grid.

For a 2-D problem every chosen method is run from an ``n x n`` grid of start points (cell centres
of the problem's plotting bounds, row-major: start ``s = j * n + i`` is ``(xs[i], ys[j])``), and
each start is classified by the engine's diagnosis rules (:func:`pcd.engine.diagnose`,
:func:`pcd.engine.outcomes` -- the one home of every threshold) into one of
:data:`pcd.engine.OUTCOMES`:

* ``cms`` -- reached a point where every objective is stationary;
* ``conflict_equilibrium`` -- stopped where the gradients cancel while none is zero;
* ``single_objective_minimum`` -- stopped Pareto-stationary at one objective's minimum only;
* ``moving`` -- still moving when the step budget ran out;
* ``diverged`` -- non-finite values (or a method error).

On the saddle toy this completes the PCD paper's Fig. 1 (arXiv 2606.29521): PCD's map is (almost)
all CMS, the symmetric methods' maps split at the barrier. Only end points are kept (no per-step
recording), so the engine takes its end-point fast path where one exists.

    from pcd.experiments.basin import basin
    res = basin("saddle2d", ["pcd", "ws"], grid=100, steps=1000, lr=0.01, tau=0.3)
    res.fractions("ws")          # {"cms": ..., "conflict_equilibrium": ..., ...}
    res.to_json()                # the CLI's JSON: {"elapsed_s", "grid", "methods"}
"""
from __future__ import annotations

import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from pcd import _validate
from pcd._json import jsonable
from pcd.engine import OUTCOME_WORDS, OUTCOMES, outcomes, run
from pcd.problems import Problem
from pcd.problems import make as make_problem
from pcd.problems.base import check_float, check_int

__all__ = ["basin", "BasinResult", "merge_basins", "grid_starts", "OUTCOMES", "OUTCOME_LABELS", "DEFAULT_GRID", "MAX_GRID",
           "BASIN_METHODS"]

DEFAULT_GRID = 100
MAX_GRID = _validate.LIMITS["basin_grid"]
BASIN_METHODS = ("pcd", "ws", "mgda", "pcgrad", "cagrad", "famo")

#: each outcome's name, as :data:`pcd.engine.OUTCOME_WORDS` (the one home of the wording) says it
OUTCOME_LABELS = {k: OUTCOME_WORDS[k][1] for k in OUTCOMES}


def check_grid(n: Any) -> int:
    """Grid side ``n`` (``n x n`` starts), an integer in ``[2, MAX_GRID]`` (``LIMITS["basin_grid"]``)."""
    side = _validate.limit("basin_grid", n, "grid", low=2, strict=False)
    assert side is not None  # allow_none is False
    return side


def grid_starts(bounds: Any, n: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(xs [n], ys [n], starts [n*n, 2])``: cell centres of ``bounds``, row-major (x fastest)."""
    (x0, x1), (y0, y1) = ((float(a), float(b)) for a, b in bounds)
    xs = x0 + (np.arange(n) + 0.5) * ((x1 - x0) / n)
    ys = y0 + (np.arange(n) + 0.5) * ((y1 - y0) / n)
    X, Y = np.meshgrid(xs, ys)
    return xs, ys, np.stack([X.ravel(), Y.ravel()], axis=1)


@dataclass
class BasinResult:
    """Plain data of one basin-map computation (see the module docstring)."""

    problem: str
    problem_params: dict
    bounds: list[list[float]]
    n: int
    xs: np.ndarray                    # [n] start x coordinates (columns)
    ys: np.ndarray                    # [n] start y coordinates (rows)
    starts: np.ndarray                # [S, 2], S = n * n, row-major
    methods: list[str]
    ends: np.ndarray                  # [M, S, 2] end points (last finite point where diverged)
    outcome: np.ndarray               # [M, S] str, one of OUTCOMES
    diagnosis: np.ndarray             # [M, S] str, the engine's diagnosis
    end_losses: np.ndarray            # [M, S, K]
    settings: dict[str, Any] = field(default_factory=dict)
    elapsed_s: float = 0.0
    method_seconds: dict[str, float] = field(default_factory=dict)
    errors: dict[str, str] = field(default_factory=dict)

    def index(self, method: str) -> int:
        try:
            return self.methods.index(method)
        except ValueError:
            raise ValueError(f"method {method!r} not in this basin map; ran: {', '.join(self.methods)}") from None

    def fractions(self, method: str) -> dict[str, float]:
        """Fraction of starts per outcome (every key of :data:`OUTCOMES`; they sum to 1)."""
        o = self.outcome[self.index(method)]
        return {k: float(np.count_nonzero(o == k)) / o.size for k in OUTCOMES}

    def codes(self, method: str) -> np.ndarray:
        """Outcome codes ``[n, n]`` (index into :data:`OUTCOMES`), row j = ys[j], column i = xs[i]."""
        o = self.outcome[self.index(method)]
        lut = {k: i for i, k in enumerate(OUTCOMES)}
        return np.array([lut[str(v)] for v in o], dtype=np.int64).reshape(self.n, self.n)

    def start_index(self, x: float, y: float) -> int:
        """Row-major index of the grid start nearest to ``(x, y)``."""
        i = int(np.clip(np.argmin(np.abs(self.xs - float(x))), 0, self.n - 1))
        j = int(np.clip(np.argmin(np.abs(self.ys - float(y))), 0, self.n - 1))
        return j * self.n + i

    def to_json(self) -> dict[str, Any]:
        """``{"elapsed_s", "grid": {...}, "methods": {name: {"fractions", "ends", "outcome"}}}`` as strict
        JSON values (a diverged start's end point is its last finite point; non-finite numbers -> null)."""
        grid = {"n": self.n, "x": self.xs.tolist(), "y": self.ys.tolist(), "bounds": self.bounds,
                "order": "row-major: start s = j * n + i is (x[i], y[j])",
                "problem": self.problem, "problem_params": self.problem_params, **self.settings}
        methods = {}
        for m, name in enumerate(self.methods):
            methods[name] = {"fractions": self.fractions(name), "ends": self.ends[m],
                             "outcome": [str(v) for v in self.outcome[m]]}
            if name in self.errors:
                methods[name]["error"] = self.errors[name]
        return jsonable({"elapsed_s": self.elapsed_s, "grid": grid, "methods": methods})


def _method_params(names: list[str], tau: float | None, extra: dict | None) -> dict[str, dict]:
    import pcd.methods as registry

    out: dict[str, dict] = {}
    for name in names:
        hp = dict((extra or {}).get(name, {}) or {})
        if tau is not None and "tau" not in hp and any(p.name == "tau" for p in registry.get(name).params):
            hp["tau"] = tau
        if hp:
            out[name] = hp
    return out


def basin(problem: str | Problem = "saddle2d", methods: str | Iterable[str] = BASIN_METHODS,
          grid: int = DEFAULT_GRID, steps: int = 1000, lr: float = 0.01, tau: float | None = 0.3,
          optimizer: str = "adam", method_params: dict | None = None, problem_params: dict | None = None,
          seed: int = 0, progress: Callable[[float, str], None] | None = None) -> BasinResult:
    """Run every method from an ``grid x grid`` grid of starts on a 2-D problem; classify the ends.

    ``problem``: a registry name (with ``problem_params``) or a :class:`~pcd.problems.Problem`
    (e.g. a custom formula pair); it must have 2 coordinates. ``tau`` goes to every method with a
    ``tau`` hyper-parameter (PCD) unless ``method_params`` sets it. ``progress(fraction, message)``
    is called as the run advances (after each method on the engine's fast path, where methods run
    side by side, one per core). One engine call with ``record=[steps]`` (end points only).
    Raises ValueError on bad input.
    """
    from pcd.experiments.synthetic import parse_methods

    t0 = time.perf_counter()
    prob = make_problem(problem, **(problem_params or {}))
    if prob.dim != 2:
        raise ValueError(f"basin maps need a 2-D problem; {prob.name} has {prob.dim} coordinates")
    n = check_grid(grid)
    steps = check_int(steps, "steps", 1, 1_000_000)
    lr = check_float(lr, "lr", 0.0, strict_low=True)
    if tau is not None:
        tau = check_float(tau, "tau", 0.0, 1.0)
    names = parse_methods(methods)
    mp = _method_params(names, tau, method_params)
    xs, ys, starts = grid_starts(prob.bounds, n)
    M = len(names)
    res = run(prob, names, starts=starts, steps=steps, optimizer=optimizer, lr=lr, method_params=mp or None,
              seed=seed, record=[steps], progress=progress)
    ends = res.end
    diag = res.diagnosis
    outc = np.stack([outcomes(res.diagnosis[m], res.end_grad_norms[m], res.tolerances["grad_tol"])
                     for m in range(M)])
    if progress is not None:
        progress(1.0, "done")
    settings = {"steps": steps, "lr": lr, "tau": tau, "optimizer": str(optimizer).strip().lower(), "seed": seed,
                "method_params": {k: {p: (v.tolist() if isinstance(v, np.ndarray) else v) for p, v in hp.items()}
                                  for k, hp in mp.items()}, **res.tolerances}
    return BasinResult(problem=prob.name, problem_params=prob.params(), bounds=[list(map(float, b)) for b in prob.bounds],
                       n=n, xs=xs, ys=ys, starts=starts, methods=names, ends=ends, outcome=outc, diagnosis=diag,
                       end_losses=res.end_losses, settings=settings, elapsed_s=time.perf_counter() - t0,
                       method_seconds=dict(res.method_seconds), errors=dict(res.errors))


def merge_basins(results: list[BasinResult]) -> BasinResult:
    """Basin maps of *different methods* on the same grid and settings as one result (a page computes
    them a few methods at a time so the first maps show early)."""
    if not results:
        raise ValueError("merge_basins needs at least one result")
    first = results[0]
    for r in results[1:]:
        if r.n != first.n or r.problem != first.problem or r.settings.get("steps") != first.settings.get("steps") \
                or not np.array_equal(r.starts, first.starts):
            raise ValueError("merge_basins: results must share the problem, the grid and the settings")
    methods = [m for r in results for m in r.methods]
    if len(set(methods)) != len(methods):
        raise ValueError(f"merge_basins: a method appears twice: {methods}")
    cat = lambda key: np.concatenate([getattr(r, key) for r in results])  # noqa: E731
    mp: dict = {}
    for r in results:
        mp.update(r.settings.get("method_params", {}))
    return BasinResult(problem=first.problem, problem_params=first.problem_params, bounds=first.bounds, n=first.n,
                       xs=first.xs, ys=first.ys, starts=first.starts, methods=methods, ends=cat("ends"),
                       outcome=cat("outcome"), diagnosis=cat("diagnosis"), end_losses=cat("end_losses"),
                       settings={**first.settings, "method_params": mp},
                       elapsed_s=sum(r.elapsed_s for r in results),
                       method_seconds={k: v for r in results for k, v in r.method_seconds.items()},
                       errors={k: v for r in results for k, v in r.errors.items()})
