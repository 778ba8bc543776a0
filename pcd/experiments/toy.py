"""The toy runs' plain-data helpers: one run from several per-method runs, the non-dominated points
of a loss cloud, and the gradients at every recorded frame of a trajectory (the toy page's inset,
the lesson, ``python -m pcd toy``), and the runs in objective space."""
from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

import pcd.methods as registry
from pcd.engine import outcome_label


def merge_results(results: Sequence[Any]):
    """Concatenate engine runs of *different methods* on the same problem, starts and recorded
    steps into one :class:`pcd.engine.RunResult` (so each method can be run and cached separately).
    """
    import dataclasses

    results = list(results)
    if not results:
        raise ValueError("merge_results needs at least one run")
    if len(results) == 1:
        return results[0]
    first = results[0]
    for r in results[1:]:
        if r.problem != first.problem or r.steps != first.steps or not np.array_equal(r.record, first.record) \
                or not np.array_equal(r.starts, first.starts):
            raise ValueError("runs to merge must share problem, steps, recorded steps and starts")
    names = [m for r in results for m in r.methods]
    if len(set(names)) != len(names):
        raise ValueError(f"runs to merge must have different methods, got {names}")
    fields = {f: np.concatenate([getattr(r, f) for r in results], axis=0) for f in PER_METHOD[:-2]}
    for opt in PER_METHOD[-2:]:  # optional records (multipliers, directions): kept when every run has them
        if all(getattr(r, opt, None) is not None for r in results):
            fields[opt] = np.concatenate([getattr(r, opt) for r in results], axis=0)
    mp: dict = {}
    errors: dict = {}
    ms: dict = {}
    for r in results:
        mp.update(r.method_params)
        errors.update(r.errors)
        ms.update(r.method_seconds)
    return dataclasses.replace(first, methods=names, method_params=mp, errors=errors, method_seconds=ms,
                               seconds=float(sum(r.seconds for r in results)), **fields)


PER_METHOD = ("positions", "losses", "grad_norms", "weights", "update_norms", "end", "end_losses", "end_grad_norms",
              "primary_grad_norm", "cms_residual", "pareto_residual", "final_update_norm", "speed", "stalled",
              "diverged", "diverged_step", "diagnosis", "multipliers", "directions")


def select_methods(res: Any, methods: Sequence[str]):
    """The run of ``methods`` (a subset of ``res.methods``, in that order) out of one engine run: the
    inverse of :func:`merge_results` (copies of the rows; ``seconds`` shared out by method)."""
    import dataclasses

    methods = list(methods)
    missing = [m for m in methods if m not in res.methods]
    if missing or len(set(methods)) != len(methods):
        raise ValueError(f"select_methods needs distinct methods of the run {res.methods}, got {methods}")
    idx = [res.methods.index(m) for m in methods]
    fields = {f: None if getattr(res, f, None) is None else np.array(getattr(res, f)[idx]) for f in PER_METHOD}
    ms = {m: v for m, v in res.method_seconds.items() if m in methods}
    return dataclasses.replace(res, methods=methods, method_params={m: v for m, v in res.method_params.items()
                                                                    if m in methods},
                               errors={m: v for m, v in res.errors.items() if m in methods}, method_seconds=ms,
                               seconds=float(sum(ms.values())) if ms else res.seconds, **fields)


def pareto_filter(points: Any) -> np.ndarray:
    """The non-dominated rows of ``points [N, 2]`` (both columns minimized; non-finite rows
    dropped), sorted by the first column."""
    P = np.asarray(points, dtype=np.float64).reshape(-1, 2)
    P = P[np.isfinite(P).all(axis=1)]
    if not len(P):
        return P
    P = P[np.lexsort((P[:, 1], P[:, 0]))]
    best = np.minimum.accumulate(P[:, 1])
    keep = np.r_[True, P[1:, 1] < best[:-1]]  # strictly below every point with a smaller first loss
    return P[keep]


def _dominates(a: np.ndarray, b: np.ndarray) -> bool:
    """Loss vector ``a`` dominates ``b``: no worse anywhere, better somewhere (beyond 1e-9 relative)."""
    tol = 1e-9 * (1.0 + np.abs(b))
    return bool(np.all(a <= b + tol) and np.any(a < b - tol))


def _halts(method: str) -> bool:
    """The method's update halts where the primary gradient vanishes (PCD: it stalls only where a
    constraint binds against g₁, never where the gradients merely cancel)."""
    return method in registry.available() and registry.get(method).halts_where_primary_vanishes


def objective_space(problem: Any, res: Any, grid: Any = None, n: int = 200) -> dict[str, Any]:
    """The toy runs in the (f1, f2) plane: ``losses [M, S, T, 2]`` (the engine's own, recorded with
    the trajectories), the problem's Pareto ``front [P, 2]`` -- its losses along the known Pareto
    set, else (``numerical=True``) the non-dominated points of ``grid = (xs, ys, Z [K, ny, nx])``,
    the map's background grid --, the ``optimum`` (f1, f2) where both objectives are optimal (None
    when the problem has no such point) and one ``verdicts [M][S]`` text per end point: the outcome
    (a stall where the gradients cancel is Pareto-stationary) and who dominates it (another end
    point or the optimum). Two objectives only."""
    L = np.asarray(res.losses, dtype=np.float64)
    if L.ndim != 4 or L.shape[-1] != 2:
        raise ValueError(f"the objective space needs a run with 2 objectives, got losses of shape {L.shape}")
    front, numerical = problem.pareto_front(n), False
    if front is None or len(front) < 1:
        if grid is None:
            front = np.zeros((0, 2))
        else:
            Z = np.asarray(grid[2], dtype=np.float64)
            front, numerical = pareto_filter(Z[:2].reshape(2, -1).T), True
    opt = problem.optima()
    optimum = None if opt is None or not len(opt) else np.asarray(problem.losses(np.asarray(opt)[:1]))[0, :2]
    ends = np.asarray(res.end_losses, dtype=np.float64)[..., :2]
    M, S = ends.shape[:2]
    names = [registry.get(m).display_name if m in registry.available() else m for m in res.methods]
    diag = np.asarray(res.diagnosis, dtype=object)
    verdicts = []
    for m in range(M):
        row = []
        for s in range(S):
            e = ends[m, s]
            d = str(diag[m, s])
            text = ("Pareto-stationary: gradients cancel" if d == "conflict_equilibrium" and not _halts(res.methods[m])
                    else outcome_label(d, res.methods[m], short=True))
            by = [names[k] for k in range(M) if k != m and any(_dominates(ends[k, j], e) for j in range(S))]
            if optimum is not None and _dominates(optimum, e):
                by = ["★ both optimal"] + by
            row.append(text + (" · dominated by " + ", ".join(dict.fromkeys(by)) if by and np.isfinite(e).all()
                               else ""))
        verdicts.append(row)
    return {"methods": list(res.methods), "record": np.asarray(res.record), "losses": L,
            "front": np.asarray(front, dtype=np.float64).reshape(-1, 2), "numerical": numerical,
            "optimum": optimum, "verdicts": verdicts, "names": list(getattr(problem, "objective_names", ("f1", "f2")))}


def trajectory_gradients(problem: Any, res: Any, start: int = 0, methods: Sequence[str] | None = None) -> dict[str, Any]:
    """The gradients ``g_k`` and each method's step ``d`` at every recorded frame of start ``start``.

    ``res``: a :class:`pcd.engine.RunResult` of ``problem`` (2-D or not); ``methods``: a subset of
    ``res.methods`` (default: all). Returns ``{"start", "steps" [T], "methods": {name: {...}}}``
    with, per method, arrays over the recorded frames ``T``:

    * ``g [T, K, n]``: the raw gradients ``grad f_k(x_t)`` at the recorded position ``x_t``
      (re-evaluated from the problem: the engine evaluates the very same point);
    * ``d [T, n]``: the method's direction ``d_t``, the vector fed to the optimizer, as the engine
      recorded it (``res.directions``: for a method that builds its direction per coordinate, e.g.
      GradDrop's random mask, its own update -- not ``w_t @ J_t``). A result without recorded
      directions (an older one) falls back to ``w_t @ J_t``; ``exact`` is then False for such
      methods;
    * ``norms [T, K]`` (``||g_k||``), ``d_norm [T]`` (``||d||``, the engine's ``update_norms`` when
      exact), ``cos [T]`` (``cos(g_1, g_2)``; NaN where a gradient is zero), ``mu [T, K-1]`` (the
      secondaries' multipliers where the method reports them: PCD, DBGD; NaN otherwise),
      ``diagnosis`` (the engine's, for the whole trajectory).

    Frames after a divergence are NaN (the engine records NaN positions there).
    """
    pos = np.asarray(getattr(res, "positions", None), dtype=np.float64)
    if pos.ndim != 4:
        raise ValueError("trajectory_gradients needs a run result with positions [M, S, T, n]")
    M, S, T, n = pos.shape
    try:
        s = int(start)
    except (TypeError, ValueError):
        raise ValueError(f"start must be an integer in [0, {S - 1}], got {start!r}") from None
    if not 0 <= s < S:
        raise ValueError(f"start must be in [0, {S - 1}] (this run has {S} starts), got {start!r}")
    names = list(res.methods) if methods is None else [str(m) for m in methods]
    for name in names:
        if name not in res.methods:
            raise ValueError(f"method {name!r} is not in this run; ran: {', '.join(res.methods)}")
    weights = np.asarray(res.weights, dtype=np.float64)
    mults = getattr(res, "multipliers", None)
    dirs = getattr(res, "directions", None)
    if dirs is not None and np.shape(dirs) != pos.shape:
        dirs = None
    out: dict[str, Any] = {"start": s, "steps": np.asarray(res.record), "methods": {}}
    for name in names:
        m = res.methods.index(name)
        x = pos[m, s]
        ok = np.isfinite(x).all(axis=1)
        K = weights.shape[-1]
        J = np.full((T, K, n), np.nan)
        if ok.any():
            _, Jok = problem.losses_and_jacobian(x[ok])
            J[ok] = np.asarray(Jok, dtype=np.float64)
        norms = np.linalg.norm(J, axis=2)
        if dirs is not None:  # what the optimizer was fed (Step.direction)
            d = np.asarray(dirs[m, s], dtype=np.float64)
            exact = True
        else:
            d = np.einsum("tk,tkn->tn", weights[m, s], J)
            try:
                exact = not bool(getattr(registry.get(name), "needs_jacobian", False))
            except ValueError:
                exact = True
        d_norm = np.asarray(res.update_norms[m, s], dtype=np.float64) if exact else np.linalg.norm(d, axis=1)
        with np.errstate(invalid="ignore", divide="ignore"):
            cos = np.einsum("tn,tn->t", J[:, 0], J[:, 1]) / (norms[:, 0] * norms[:, 1]) if K >= 2 else np.full(T, np.nan)
        cos = np.where((norms[:, 0] > 0) & (norms[:, 1] > 0) if K >= 2 else False, cos, np.nan)
        mu = np.full((T, max(K - 1, 0)), np.nan) if mults is None or np.ndim(mults) != 4 \
            else np.asarray(mults[m, s], dtype=np.float64)
        out["methods"][name] = {"g": J, "d": d, "norms": norms, "d_norm": d_norm, "cos": np.clip(cos, -1.0, 1.0),
                                "mu": mu, "exact": exact, "diagnosis": str(np.asarray(res.diagnosis)[m, s])}
    return out
