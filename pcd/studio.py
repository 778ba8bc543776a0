"""Page-level data preparation for the Studio pages (no Streamlit, no new math).

Every function here only *calls* the library (``pcd.methods``, ``pcd.pcd_weights``,
``pcd.engine``, ``pcd.problems``) and arranges its results as plain data (dicts, NumPy arrays,
pandas tables) for the figure builders in :mod:`pcd.viz` and for the CLI/tests. The pages are then
just widgets -> these functions -> figures.
"""
from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

import pcd.methods as registry
from pcd import _validate as V
from pcd.direction import pcd_weights
from pcd.viz.theme import method_color, outcome_label


# ---------------------------------------------------------------------------------------------
# input helpers
# ---------------------------------------------------------------------------------------------
def _num(value: Any, name: str, low: float | None = None, high: float | None = None) -> float:
    return V.number(value, name, low=low, high=high, strict=False)


def check_methods(methods: Any) -> list[str]:
    """Registry names (list or comma-separated string), validated, duplicates removed, order kept
    (:func:`pcd.methods.parse_names`)."""
    return registry.parse_names(methods, duplicates="drop")


# ---------------------------------------------------------------------------------------------
# page 1: gradient geometry
# ---------------------------------------------------------------------------------------------
def gradient_vectors(angle_deg: float = 150.0, norm2: float = 1.0, third: tuple[float, float] | None = None,
                     norm1: float = 1.0) -> np.ndarray:
    """The 2-D gradients of the geometry page as rows ``J [K, 2]``.

    ``g1`` points along the x axis with length ``norm1``; ``g2`` makes ``angle_deg`` (0..180) with
    it and has length ``norm2``; ``third = (angle_deg, norm)`` adds ``g3`` (angle measured from
    ``g1`` counter-clockwise, -180..180).
    """
    a2 = _num(angle_deg, "angle between g1 and g2 (degrees)", 0.0, 180.0)
    n1 = _num(norm1, "||g1||", 0.0, 1e6)
    n2 = _num(norm2, "||g2||", 0.0, 1e6)
    rows = [[n1, 0.0], [n2 * math.cos(math.radians(a2)), n2 * math.sin(math.radians(a2))]]
    if third is not None:
        try:
            a3, n3 = third
        except (TypeError, ValueError):
            raise ValueError(f"third gradient must be (angle_deg, norm), got {third!r}") from None
        a3 = _num(a3, "angle of g3 (degrees)", -180.0, 180.0)
        n3 = _num(n3, "||g3||", 0.0, 1e6)
        rows.append([n3 * math.cos(math.radians(a3)), n3 * math.sin(math.radians(a3))])
    return np.array(rows, dtype=np.float64)


def method_directions(J: Any, methods: Any, tau: float = 0.3,
                      method_params: dict[str, dict] | None = None, seed: int = 0) -> dict[str, Any]:
    """One step of every method at gradients ``J [K, n]`` (first step, fresh state).

    Returns ``{"J", "rows"}`` where each row is a dict: ``method``, ``label``, ``color``,
    ``weights [K]``, ``direction [n]`` (:meth:`Step.direction`: ``weights @ J``, or a direction
    method's own),
    ``progress [K]`` (``g_i . d``: first-order decrease of objective i per unit step),
    ``conflicts`` (some ``g_i . d < 0``), ``norm`` (``||d||``) and ``error`` (a message when the
    method rejected the input; nothing raised). A method with a ``primary_knob`` (PCD's ``tau``)
    gets ``tau`` from the argument unless ``method_params`` sets it; PCD's row carries ``mu``, ``feasible`` and ``qp_point``:
    the QP solution ``d~`` drawn in units where ``||g~_1|| = ||g_1||`` (``g_1 + sum_j mu_j ||g_1|| g_j/||g_j||``,
    first step of the EMA normalizer so ``s_i = 1/||g_i||``), plus ``halfplanes``: the feasible
    region ``{d : (g_j/||g_j||) . d >= tau ||g_1||}`` as ``(unit normal, offset)`` pairs.
    """
    J = np.asarray(J, dtype=np.float64)
    if J.ndim != 2 or J.shape[0] < 2 or J.shape[1] < 1 or not np.isfinite(J).all():
        raise ValueError(f"J must be a finite [K, n] array with K >= 2 objectives, got shape {np.shape(J)}")
    tau = _num(tau, "tau", 0.0, 1.0)
    names = check_methods(methods)
    method_params = {k.lower(): dict(v or {}) for k, v in (method_params or {}).items()}
    K = J.shape[0]
    G = (J @ J.T)[None]
    losses = np.ones((1, K))
    norms = np.linalg.norm(J, axis=1)
    rows = []
    for i, name in enumerate(names):
        hp = dict(method_params.get(name, {}))
        knob = registry.get(name).primary_knob
        if knob is not None:
            hp.setdefault(knob, tau)
        row: dict[str, Any] = {"method": name, "label": registry.get(name).display_name or name,
                               "color": method_color(name), "error": None}
        try:
            inst = registry.make(name, **hp)
            out = inst(G, losses=losses, jacobian=J[None], state=inst.init(1, K),
                       rng=np.random.default_rng([seed, i]))
            w = np.asarray(out.weights, dtype=np.float64)[0]
            d = out.direction(J[None])[0]
        except ValueError as exc:
            row.update(weights=np.full(K, np.nan), direction=np.full(J.shape[1], np.nan),
                       progress=np.full(K, np.nan), conflicts=False, norm=float("nan"), error=str(exc))
            rows.append(row)
            continue
        progress = J @ d
        tol = 1e-9 * float(norms.max()) ** 2  # rounding level of g_i . d for |d| ~ |g|
        row.update(weights=w, direction=d, progress=progress,
                   conflicts=bool(np.any(progress < -tol)), norm=float(np.linalg.norm(d)))
        if name == "pcd":
            row.update(_pcd_geometry(J, inst.hparams["tau"]))
        rows.append(row)
    return {"J": J, "tau": tau, "rows": rows}


def _pcd_geometry(J: np.ndarray, tau: Any) -> dict[str, Any]:
    norms = np.linalg.norm(J, axis=1)
    K = J.shape[0]
    taus = np.broadcast_to(np.asarray(tau, dtype=np.float64), (K - 1,)) if np.ndim(tau) else np.full(K - 1, float(tau))
    if norms[0] == 0:
        return {"mu": np.full(K - 1, np.nan), "feasible": True, "qp_point": np.zeros(J.shape[1]), "halfplanes": [],
                "normalized_weights": np.full(K, np.nan), "deployed_scale": 0.0}
    with np.errstate(divide="ignore"):
        scales = np.where(norms > 0, 1.0 / np.where(norms > 0, norms, 1.0), 0.0)
    res = pcd_weights((J @ J.T)[None], scales[None], float(taus[0]) if np.all(taus == taus[0]) else taus).qp
    wt = np.asarray(res.weights, dtype=np.float64)[0]      # normalized-space weights (w~_1 = 1)
    qp_point = norms[0] * (wt * scales) @ J                 # d~ in units where ||g~_1|| = ||g_1||
    dn = float(np.linalg.norm((wt * scales) @ J))           # ||d~|| in normalized units
    deployed_scale = norms[0] / dn if dn > 0 else 0.0        # d = d~ * ||g_1|| / ||d~||
    halfplanes = [(J[j] / norms[j], float(taus[j - 1]) * norms[0]) for j in range(1, K) if norms[j] > 0]
    return {"mu": np.asarray(res.mu, dtype=np.float64).reshape(-1)[: K - 1],
            "feasible": bool(np.asarray(res.feasible).reshape(-1)[0]),
            "qp_point": qp_point, "halfplanes": halfplanes,
            "normalized_weights": wt, "deployed_scale": deployed_scale}


def directions_table(result: dict[str, Any]):
    """The per-method table of :func:`method_directions` as a DataFrame (one row per method):
    progress ``g_i . d``, conflicts, ``||d||``, the raw weights ``w`` (``d = sum w_i g_i``) and,
    for PCD, the normalized weights ``w~`` (``w~_1 = 1``: the pinned primary) with the deployed
    scale ``||g_1|| / ||d~||`` that turns them into ``w_i = w~_i s_i * scale``; ``note`` only when
    some method reported a problem."""
    import pandas as pd

    def vec(v: Any) -> str:
        return "(" + ", ".join(f"{float(x):.4g}" for x in v) + ")"

    J = result["J"]
    K = J.shape[0]
    recs = []
    for r in result["rows"]:
        rec: dict[str, Any] = {"method": r["label"]}
        for k in range(K):
            rec[f"g{k + 1}·d"] = float(r["progress"][k])
        rec["conflicts"] = "—" if r["error"] else ("yes" if r["conflicts"] else "no")
        rec["‖d‖"] = r["norm"]
        rec["w"] = "—" if r["error"] else vec(r["weights"])
        if "normalized_weights" in r:
            rec["w̃ × scale"] = f"{vec(r['normalized_weights'])} × {r['deployed_scale']:.4g}"
        else:
            rec["w̃ × scale"] = ""
        rec["note"] = r["error"] or ""
        recs.append(rec)
    df = pd.DataFrame.from_records(recs)
    if not df["note"].any():
        df = df.drop(columns=["note"])
    if not df["w̃ × scale"].any():
        df = df.drop(columns=["w̃ × scale"])
    return df


# ---------------------------------------------------------------------------------------------
# page 2: toy landscapes
# ---------------------------------------------------------------------------------------------
MAX_STARTS = 64


def parse_starts(text: str, dim: int = 2) -> np.ndarray:
    """Typed start points ``"x, y; x, y"`` (or one point per line) -> ``[S, dim]``.

    Raises ValueError naming the bad entry; at most ``MAX_STARTS`` points.
    """
    if not isinstance(text, str) or not text.strip():
        raise ValueError("type at least one start point as 'x, y' (separate points with ';' or new lines)")
    parts = [p.strip() for p in text.replace("\n", ";").split(";") if p.strip()]
    if len(parts) > MAX_STARTS:
        raise ValueError(f"at most {MAX_STARTS} start points, got {len(parts)}")
    pts = []
    for i, part in enumerate(parts):
        vals = [v for v in part.replace("(", " ").replace(")", " ").replace(",", " ").split() if v]
        if len(vals) != dim:
            raise ValueError(f"start point {i + 1} ({part!r}) must have {dim} numbers")
        try:
            p = [float(v) for v in vals]
        except ValueError:
            raise ValueError(f"start point {i + 1} ({part!r}) must contain numbers only") from None
        if not all(math.isfinite(v) for v in p):
            raise ValueError(f"start point {i + 1} ({part!r}) must be finite")
        pts.append(p)
    return np.array(pts, dtype=np.float64)


def grid_starts(bounds: Sequence[Sequence[float]], n: int = 3, margin: float = 0.12) -> np.ndarray:
    """An ``n x n`` grid of start points inside 2-D ``bounds`` (``margin`` = fraction left at each edge)."""
    n = int(n)
    if not 1 <= n <= 8:
        raise ValueError(f"grid size must be in [1, 8] (at most 64 starts), got {n}")
    margin = _num(margin, "margin", 0.0, 0.49)
    try:
        (a0, a1), (b0, b1) = bounds
    except (TypeError, ValueError):
        raise ValueError(f"bounds must be ((xmin, xmax), (ymin, ymax)), got {bounds!r}") from None
    def axis(lo, hi):
        w = hi - lo
        return np.array([(lo + hi) / 2]) if n == 1 else np.linspace(lo + margin * w, hi - margin * w, n)
    X, Y = np.meshgrid(axis(float(a0), float(a1)), axis(float(b0), float(b1)))
    return np.stack([X.ravel(), Y.ravel()], axis=1)


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
    per_method = ["positions", "losses", "grad_norms", "weights", "update_norms", "end", "end_losses",
                  "end_grad_norms", "primary_grad_norm", "cms_residual", "pareto_residual",
                  "final_update_norm", "speed", "stalled", "diverged", "diverged_step", "diagnosis"]
    fields = {f: np.concatenate([getattr(r, f) for r in results], axis=0) for f in per_method}
    for opt in ("multipliers", "directions"):  # optional records: kept when every run has them
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


def endpoint_table(res: Any, objective_names: Sequence[str] | None = None):
    """One row per trajectory: method, start, end point, final losses, ``||grad f_1||``, CMS
    residual and the engine's diagnosis in words (with the step for divergence)."""
    import pandas as pd

    K = res.end_losses.shape[-1]
    names = list(objective_names) if objective_names is not None else [f"f{k + 1}" for k in range(K)]
    recs = []
    for m, name in enumerate(res.methods):
        label = registry.get(name).display_name if name in registry.available() else name
        for s in range(res.S):
            diag = str(res.diagnosis[m, s])
            text = outcome_label(diag, name, short=True)
            if diag == "diverged" and res.diverged_step[m, s] == 0 \
                    and not np.isfinite(np.asarray(res.losses)[m, s, 0]).all():
                text = "start is where the formula is undefined"
            elif diag in ("diverged", "error") and res.diverged_step[m, s] >= 0:
                text += f" at step {int(res.diverged_step[m, s])}"
            if diag == "error" and name in res.errors:
                text += f" ({res.errors[name]})"
            rec = {"method": label, "start": f"S{s + 1} ({', '.join(f'{v:.2f}' for v in res.starts[s])})",
                   "end": "(" + ", ".join(f"{v:.3f}" for v in res.end[m, s]) + ")"}
            for k in range(K):
                rec[f"final {names[k]}"] = float(res.end_losses[m, s, k])
            rec["‖∇f₁‖"] = float(res.primary_grad_norm[m, s])
            rec["CMS residual"] = float(res.cms_residual[m, s])
            rec["diagnosis"] = text
            recs.append(rec)
    return pd.DataFrame.from_records(recs)


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
            text = ("Pareto-stationary: gradients cancel" if d == "conflict_equilibrium" and res.methods[m] != "pcd"
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


def trajectories_table(res: Any):
    """Long table of every recorded point: method, start, step, coordinates, losses (for CSV)."""
    import pandas as pd

    M, S, T, n = res.positions.shape
    K = res.losses.shape[-1]
    cols: dict[str, Any] = {
        "method": np.repeat(np.asarray(res.methods, dtype=object), S * T),
        "start": np.tile(np.repeat(np.arange(1, S + 1), T), M),
        "step": np.tile(np.asarray(res.record), M * S),
    }
    for i in range(n):
        cols[f"x{i + 1}"] = res.positions[..., i].reshape(-1)
    for k in range(K):
        cols[f"f{k + 1}"] = res.losses[..., k].reshape(-1)
    cols["update_norm"] = res.update_norms.reshape(-1)
    return pd.DataFrame(cols)


TOY_PROBLEMS = {
    "saddle2d": "Saddle: two valleys and a barrier (PCD Fig. 1)",
    "double_well": "Double well, K = 2 slice (two coordinates, one secondary)",
    "two_task": "Two-task toy (CAGrad / Nash-MTL / FAMO)",
    "quadratic": "Convex quadratic pair (Pareto set known)",
    "quadratic_torchjd": "TorchJD's convex quadratic form (Pareto set known)",
    "custom": "Custom formula pair",
}


# Named formula pairs for the custom problem (primary, secondary, the map's box): typed into the
# formula boxes by the page's preset selector, editable from there.
TOY_FORMULAS: dict[str, dict[str, Any]] = {
    "valleys": {"label": "Two valleys, box secondary (the default)", "f1": "(x**2-4)**2/4 + y**2/2",
                "f2": "relu(abs(x-2)-0.5) + relu(abs(y)-0.5)", "bounds": ((-3.5, 3.5), (-2.0, 2.0))},
    "himmelblau": {"label": "Himmelblau: four minima, the secondary picks (3, 2)",
                   "f1": "((x**2+y-11)**2 + (x+y**2-7)**2)/10",
                   "f2": "relu(abs(x-3)-0.3) + relu(abs(y-2)-0.3)", "bounds": ((-5.0, 5.0), (-5.0, 5.0))},
    "rosenbrock": {"label": "Rosenbrock-style pair: one curved valley, minima at (±1, 1)",
                   "f1": "(1-x)**2 + 5*(y-x**2)**2", "f2": "(1+x)**2 + 5*(y-x**2)**2",
                   "bounds": ((-2.0, 2.0), (-1.0, 3.0))},
    "camel": {"label": "Three-hump camel: the secondary wants the side hump (-1.75, 0.87)",
              "f1": "2*x**2 - 1.05*x**4 + x**6/6 + x*y + y**2",
              "f2": "relu(abs(x+1.75)-0.3) + relu(abs(y-0.87)-0.3)", "bounds": ((-2.5, 2.5), (-2.0, 2.0))},
    "log_barrier": {"label": "Log barrier: f1 undefined for x <= 0",
                    "f1": "x - log(x) + (y-1)**2/2", "f2": "abs(y)", "bounds": ((-1.0, 3.0), (-1.5, 2.5)),
                    "starts": ((2.6, 2.0), (0.4, -1.0), (2.2, -1.2))},
}


def fit_bounds(res: Any, bounds: Sequence[Sequence[float]], pad: float = 0.06,
               max_factor: float = 4.0) -> tuple[tuple[float, float], tuple[float, float]]:
    """The map's box ``bounds`` grown to cover every finite recorded point of ``res`` (start points
    included), with ``pad`` of the span as a margin on the sides that grew; a run that ran away is
    covered up to ``max_factor`` times the box's span around its centre (the table has the rest)."""
    (x0, x1), (y0, y1) = V.box(bounds)
    pad = _num(pad, "pad", 0.0, 1.0)
    pos = np.asarray(res.positions, dtype=np.float64)[..., :2].reshape(-1, 2)
    pos = np.concatenate([pos, np.asarray(res.starts, dtype=np.float64)[:, :2]])
    pos = pos[np.isfinite(pos).all(axis=1)]
    out = []
    for lo, hi, col in ((x0, x1, 0), (y0, y1, 1)):
        span, mid = hi - lo, (lo + hi) / 2
        cap_lo, cap_hi = mid - max_factor * span / 2, mid + max_factor * span / 2
        if len(pos):
            plo, phi = float(np.clip(pos[:, col].min(), cap_lo, cap_hi)), float(np.clip(pos[:, col].max(), cap_lo, cap_hi))
            if plo < lo:
                lo = plo - pad * (max(hi, phi) - plo)
            if phi > hi:
                hi = phi + pad * (hi - lo)
        out.append((float(lo), float(hi)))
    return (out[0], out[1])


def formula_caret(exc: BaseException) -> str | None:
    """For a formula error of the custom problem: the formula with a caret under the position
    the parser names (``"x**2 + foo(y)\n       ^"``), or None when the error has no position."""
    text, pos = getattr(exc, "formula", None), getattr(exc, "position", None)
    if not isinstance(text, str) or not isinstance(pos, int) or "\n" in text:
        return None
    return f"{text}\n{' ' * max(0, min(pos, len(text)))}^"


def toy_problem(name: str, primary: str | None = None, secondary: str | None = None,
                bounds: Sequence[Sequence[float]] | None = None, starts: Any = None):
    """The 2-D problem of the toy page: a registry problem, the double-well K = 2 slice, or a
    custom formula pair (the parser's ValueError names the bad token and its position)."""
    import pcd.problems as problems

    key = str(name).strip().lower()
    if key not in TOY_PROBLEMS:
        raise ValueError(f"unknown toy problem {name!r}; allowed: {', '.join(TOY_PROBLEMS)}")
    if key == "double_well":
        return problems.make("double_well", K=2, dim=2)
    if key == "quadratic_torchjd":
        return problems.make("quadratic", variant="torchjd")
    if key == "custom":
        kwargs: dict[str, Any] = {}
        if primary is not None:
            kwargs["primary"] = primary
        if secondary is not None:
            kwargs["secondaries"] = [secondary]
        if bounds is not None:
            kwargs["bounds"] = bounds
        if starts is not None:
            kwargs["starts"] = starts
        return problems.make("custom", **kwargs)
    return problems.make(key)


def hparam_values(method: str, values: dict[str, Any] | None) -> dict[str, Any]:
    """Keep only a method's known hyper-parameters that differ from their defaults (validated)."""
    cls = registry.get(method)
    out = {}
    known = {p.name: p for p in cls.params}
    for k, v in (values or {}).items():
        if k not in known:
            raise ValueError(f"{method}: unknown hyper-parameter {k!r}; allowed: {', '.join(known) or 'none'}")
        v = known[k].validate(v, method)
        if v != known[k].default:
            out[k] = v
    return out


def url_hparams(obj: Any) -> dict[str, dict[str, Any]]:
    """Hyper-parameters from a shared link (``{"method": {"param": value}}``), every value
    validated by its :class:`~pcd.methods.base.Param`; anything else (unknown methods or names,
    ``{"pcd": 5}``, ``null``, lists where a number goes, 400-digit numbers) is dropped."""
    out: dict[str, dict[str, Any]] = {}
    if not isinstance(obj, dict):
        return out
    names = set(registry.available())
    for m, vals in obj.items():
        if m not in names or not isinstance(vals, dict):
            continue
        known = {p.name: p for p in registry.get(m).params}
        good = {}
        for k, v in vals.items():
            if k not in known or isinstance(v, (list, dict)) or v is None:
                continue
            try:
                good[k] = known[k].validate(v, m)
            except ValueError:
                continue
        if good:
            out[m] = good
    return out


# ---- exports ----------------------------------------------------------------------------------

def export_settings(settings: dict[str, Any] | None) -> dict[str, str]:
    """``settings`` as display strings (method names as display names, lists joined), plus the
    library version: what an exported table or figure needs to say how it was produced."""
    import pcd

    out: dict[str, str] = {}
    for key, value in (settings or {}).items():
        if key in ("method", "methods"):
            names = [value] if isinstance(value, str) else list(value)
            value = ", ".join(registry.get(n).display_name if n in registry.available() else str(n) for n in names)
        elif isinstance(value, (list, tuple)):
            value = ", ".join(str(v) for v in value)
        elif isinstance(value, float):
            value = f"{value:g}"
        out[str(key)] = str(value)
    out["version"] = f"pcd {pcd.__version__}"
    return out


def table_with_settings(df: Any, settings: dict[str, Any] | None):
    """A copy of the table with one constant column per setting (``setting: <name>``) and the version."""
    table = df.copy()
    for key, value in export_settings(settings).items():
        col = f"setting: {key}"
        if col in table.columns:
            raise ValueError(f"the table already has a column {col!r}")
        table[col] = value
    return table


def figure_html(fig: Any, settings: dict[str, Any] | None) -> str:
    """The figure as standalone HTML (Plotly bundled) with a settings line above it."""
    import html as _html

    page = fig.to_html(include_plotlyjs=True, full_html=True)
    items = " · ".join(f"<b>{_html.escape(k)}</b>: {_html.escape(v)}" for k, v in export_settings(settings).items())
    head = (f'<p class="pcd-settings" style="font-family:sans-serif;font-size:14px;color:#24292f">{items}</p>')
    return page.replace("<body>", "<body>" + head, 1)


# ---------------------------------------------------------------------------------------------
# basin maps page: the toy page's choices and the link that opens one start there
# ---------------------------------------------------------------------------------------------
TOY_LRS = (0.001, 0.002, 0.005, 0.01, 0.02, 0.05, 0.1, 0.2)
TOY_STEPS = (200, 500, 1000, 1500, 2000, 3000, 5000)
BASIN_GRIDS = (25, 50, 100, 150, 200)


def toy_query(problem: str, method: str, start: Sequence[float], *, tau: float, optimizer: str, lr: float,
              steps: int, f1: str | None = None, f2: str | None = None) -> dict[str, str]:
    """Query parameters that open the toy page on ONE start point and one method (the basin map's
    click): ``problem``, ``methods``, ``tau``, ``opt``, ``lr``, ``steps``, ``starts=typed``, ``typed``
    (and ``f1``/``f2`` for a custom pair). ``lr``/``steps`` must be among the toy page's choices
    (:data:`TOY_LRS`, :data:`TOY_STEPS`), else that page would fall back to its defaults."""
    key = str(problem).strip().lower()
    if key not in TOY_PROBLEMS:
        raise ValueError(f"unknown toy problem {problem!r}; allowed: {', '.join(TOY_PROBLEMS)}")
    registry.get(method)
    if float(lr) not in TOY_LRS or int(steps) not in TOY_STEPS:
        raise ValueError(f"the toy page offers lr in {list(TOY_LRS)} and steps in {list(TOY_STEPS)}; "
                         f"got lr {lr}, steps {steps}")
    x, y = (float(v) for v in start)
    q = {"problem": key, "methods": method, "tau": f"{float(tau):g}", "opt": str(optimizer), "lr": f"{float(lr):g}",
         "steps": str(int(steps)), "starts": "typed", "typed": f"{x:.3f}, {y:.3f}"}
    if key == "custom":
        q.update({"f1": str(f1 or ""), "f2": str(f2 or "")})
    return q


def basin_table(res: Any) -> Any:
    """One row per (method, outcome) with a nonzero fraction: the fraction of starts and the median
    end point of those starts (where the map's colour leads to)."""
    import pandas as pd

    from pcd.experiments.basin import OUTCOME_LABELS
    from pcd.viz.theme import method_label

    rows = []
    for m, name in enumerate(res.methods):
        for k, frac in res.fractions(name).items():
            if frac <= 0:
                continue
            sel = np.asarray(res.outcome[m]) == k
            ends = np.asarray(res.ends[m])[sel]
            fin = ends[np.isfinite(ends).all(axis=1)]
            med = np.median(fin, axis=0) if len(fin) else [math.nan, math.nan]
            rows.append({"method": method_label(name), "outcome": OUTCOME_LABELS[k], "fraction": frac,
                         "median end x": float(med[0]), "median end y": float(med[1])})
    return pd.DataFrame(rows)


# ---- the studio's pages -------------------------------------------------------------------------

def studio_pages(folder: Any) -> list[dict[str, Any]]:
    """Every ``NN_Name.py`` page in ``folder``, in file order: ``{"path", "url_path", "title",
    "icon", "blurb"}``. ``url_path`` is ``Name`` (the URL Streamlit's automatic multipage menu
    gave the file, so old links keep working); ``title`` and ``icon`` are what the page passes to
    ``setup_page`` (menu label = page title), ``blurb`` its docstring's summary after the colon,
    ``full_plotly`` whether it passes ``full_plotly=True`` (its figures need Streamlit's Plotly.js).
    """
    import re
    from pathlib import Path

    out = []
    for path in sorted(Path(folder).glob("[0-9]*_*.py")):
        src = path.read_text(encoding="utf-8")
        stem = re.sub(r"^\d+_", "", path.stem)
        m = re.search(r"setup_page\(\s*(?:title=)?(['\"])(.+?)\1", src)
        icon = re.search(r"icon\s*=\s*(['\"])(:material/[a-z_]+:)\1", src)
        doc = re.match(r'\s*(?:\"\"\"|\'\'\')(.*?)(?:\"\"\"|\'\'\'|\n)', src, re.S)
        blurb = ""
        if doc and ":" in doc.group(1):
            blurb = doc.group(1).split(":", 1)[1].strip().rstrip(".")
        out.append({"path": path, "url_path": stem, "title": m.group(2) if m else stem.replace("_", " "),
                    "icon": icon.group(2) if icon else ":material/article:", "blurb": blurb,
                    "full_plotly": bool(re.search(r"full_plotly\s*=\s*True", src))})
    return out
