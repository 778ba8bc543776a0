"""Pruning studies as plain data, for the results explorer, the CLI and tests: one point per run,
Pareto fronts, matched-sparsity comparisons, dominated hypervolume, mean ± std per setting, the
setting / study labels, run-time estimates -- and the same summaries read from a run store
(:func:`summary_rows`, :func:`done_studies`, :func:`study_points`: the fields are extracted in SQL
and aggregated as a stream, so time and memory stay small whatever the store holds).

The functions take the run dicts of :meth:`pcd.jobs.store.RunStore.list` (or the points built from
them) and return plain lists / dicts / floats. The queue (``pcd.jobs``) knows nothing of them: they
are training's reading of its runs' results.
"""
from __future__ import annotations

import math
import statistics
from array import array
from collections.abc import Callable, Iterable, Sequence
from typing import TYPE_CHECKING, Any

from pcd import _validate as V

if TYPE_CHECKING:
    from pcd.jobs.store import RunStore

# x-axis choices: key -> (label, "higher is better" is always true after this transform)
X_AXES: dict[str, str] = {
    "group_sparsity": "native group sparsity (% filters with norm < 1e-4)",
    "param_reduction": "parameter reduction after physical pruning (%)",
    "param_sparsity": "parameter sparsity (% weights |w| < 1e-3 × their layer's largest |w|)",
    "flops_factor": "FLOPs reduction (before / after, x)",
    "latency_factor": "latency speed-up (before / after, batch 1, x)",
    "size_factor": "file size reduction (before / after, x)",
}
Y_AXES: dict[str, str] = {
    "test_acc": "test accuracy (%)",
    "export_acc": "test accuracy of the exported (pruned) network (%)",
}


def _num(v: Any) -> float | None:
    try:
        f = float(v)
    except (TypeError, ValueError):
        return None
    return f if math.isfinite(f) else None


def _ratio(a: Any, b: Any) -> float | None:
    a, b = _num(a), _num(b)
    return a / b if a is not None and b not in (None, 0.0) else None


#: what :func:`run_point` reads of a result (dotted: inside ``export``); a store extracts just these
#: in SQL for the study summaries (:meth:`pcd.jobs.store.RunStore.iter_done`). Keep in step with it.
POINT_RESULT_PATHS = ("test_acc", "group_sparsity", "param_sparsity", "effective_rank", "seconds", "diverged",
                      "grouping", "export.params_before", "export.params_after", "export.test_acc",
                      "export.flops_before", "export.flops_after", "export.latency_ms_before",
                      "export.latency_ms_after", "export.file_bytes_before", "export.file_bytes_after",
                      "export.latency_speedup")


def _latency_factor(ex: dict, res: dict) -> float | None:
    """Batch-1 speed-up of the export: the latency protocol's median of per-round ratios (what the
    run's inside view and speed-up sentence show; robust to load that hits one side of a round) --
    ``export.latency_speedup``, or read from the protocol in a whole result of a run from before that
    key -- else (runs from before the protocol, or light runs of before that key) the ratio of the
    two medians."""
    sp = _num(ex.get("latency_speedup"))
    if sp is not None:
        return sp
    proto = ex.get("latency_protocol")
    if isinstance(proto, dict) and proto:
        dev = str((res.get("provenance") or {}).get("device") or "")
        per = proto.get(dev) if dev in proto else next(iter(proto.values())) if len(proto) == 1 else None
        try:
            return _num(per["batch_1"]["speedup"]["after"]["median"])  # type: ignore[index]
        except (KeyError, TypeError):
            pass
    return _ratio(ex.get("latency_ms_before"), ex.get("latency_ms_after"))


def run_point(run: dict, labels: tuple[str, str] | None = None) -> dict | None:
    """One finished run -> a flat point (None for runs without a result). ``labels``: its
    ``(setting, study)`` labels when the caller already has them (one per config, not per run)."""
    if not isinstance(run, dict):
        raise ValueError(f"a run must be a dict, got {type(run).__name__}")
    res = run.get("result")
    if run.get("status") != "done" or not isinstance(res, dict):
        return None
    cfg = res.get("config") or run.get("config") or {}
    ex = res.get("export") or {}
    pb, pa = _num(ex.get("params_before")), _num(ex.get("params_after"))
    started, finished = _num(run.get("started_at")), _num(run.get("finished_at"))
    return {
        "id": run.get("id"),
        "method": str(cfg.get("method", "?")),
        "setting": setting_label(cfg) if labels is None else labels[0],
        "study": study_label(cfg) if labels is None else labels[1],
        "config": cfg,
        "tau": _num(cfg.get("tau")),
        "seed": cfg.get("seed"),
        "dataset": cfg.get("dataset"),
        "arch": cfg.get("arch"),
        "secondary": cfg.get("secondary", "group_lasso"),
        "grouping": res.get("grouping", cfg.get("grouping")),
        "epochs": cfg.get("epochs"),
        "test_acc": _num(res.get("test_acc")),
        "export_acc": _num(ex.get("test_acc")),
        "group_sparsity": _num(res.get("group_sparsity")),
        "param_sparsity": _num(res.get("param_sparsity")),
        "effective_rank": _num(res.get("effective_rank")),
        "param_reduction": 100.0 * (1.0 - pa / pb) if pa is not None and pb else None,
        "flops_factor": _ratio(ex.get("flops_before"), ex.get("flops_after")),
        "latency_factor": _latency_factor(ex, res),
        "size_factor": _ratio(ex.get("file_bytes_before"), ex.get("file_bytes_after")),
        "params_before": pb,
        "params_after": pa,
        "flops_after": _num(ex.get("flops_after")),
        "file_bytes_after": _num(ex.get("file_bytes_after")),
        "latency_ms_after": _num(ex.get("latency_ms_after")),
        "seconds": _num(res.get("seconds")),
        "wall_seconds": finished - started if started is not None and finished is not None else None,
        "diverged": bool(res.get("diverged", False)),
    }


def run_points(runs: Iterable[dict]) -> list[dict]:
    return [p for p in (run_point(r) for r in runs) if p is not None]


def pareto_front(points: Sequence[dict], x: str, y: str = "test_acc") -> list[int]:
    """Indices of the points not dominated when maximizing both ``x`` and ``y``, sorted by ``x``."""
    if x not in X_AXES and x != "test_acc":
        raise ValueError(f"unknown x axis {x!r}; allowed: {', '.join(X_AXES)}")
    if y not in Y_AXES:
        raise ValueError(f"unknown y axis {y!r}; allowed: {', '.join(Y_AXES)}")
    valid = [(i, p[x], p[y]) for i, p in enumerate(points) if p.get(x) is not None and p.get(y) is not None]
    front = []
    for i, xi, yi in valid:
        dominated = any((xj >= xi and yj >= yi) and (xj > xi or yj > yi) for _, xj, yj in valid)
        if not dominated:
            front.append((xi, yi, i))
    front.sort()
    out, seen = [], set()
    for xi, yi, i in front:  # keep one of exact duplicates
        if (xi, yi) not in seen:
            seen.add((xi, yi))
            out.append(i)
    return out


def matched_comparison(points: Sequence[dict], x: str, target: float, tol: float,
                       y: str = "test_acc") -> list[dict]:
    """Per method, the best ``y`` among its runs whose ``x`` is within ``target +- tol``
    (the paper compares methods at matched sparsity, e.g. 80-85 % parameter reduction)."""
    if x not in X_AXES:
        raise ValueError(f"unknown x axis {x!r}; allowed: {', '.join(X_AXES)}")
    t, w = _num(target), _num(tol)
    if t is None or w is None or w < 0:
        raise ValueError(f"target must be a number and tol a number >= 0, got {target!r}, {tol!r}")
    best: dict[str, dict] = {}
    counts: dict[str, int] = {}
    for p in points:
        if p.get(x) is None or p.get(y) is None or abs(p[x] - t) > w:
            continue
        m = p["method"]
        counts[m] = counts.get(m, 0) + 1
        if m not in best or p[y] > best[m][y]:
            best[m] = p
    return [{"method": m, y: b[y], x: b[x], "tau": b.get("tau"), "run_id": b["id"], "runs_in_window": counts[m]}
            for m, b in sorted(best.items(), key=lambda kv: -kv[1][y])]


def hypervolume(points: Sequence[Sequence[float]], ref: Sequence[float] | None = None) -> float:
    """Exact dominated hypervolume of ``points`` (maximization) w.r.t. ``ref`` (default: origin),
    for 1 to 3 objectives: the volume of the union of boxes ``[ref, p]``."""
    pts = [tuple(float(v) for v in p) for p in points]
    if not pts:
        return 0.0
    d = len(pts[0])
    if any(len(p) != d for p in pts) or not 1 <= d <= 3:
        raise ValueError(f"points must all have the same length 1..3, got lengths {sorted({len(p) for p in pts})}")
    if any(not math.isfinite(v) for p in pts for v in p):
        raise ValueError("points must be finite")
    r = tuple(float(v) for v in (ref if ref is not None else (0.0,) * d))
    if len(r) != d:
        raise ValueError(f"ref must have {d} entries, got {len(r)}")
    pts = [p for p in pts if all(p[k] > r[k] for k in range(d))]
    if not pts:
        return 0.0
    if d == 1:
        return max(p[0] for p in pts) - r[0]
    if d == 2:
        vol, best_y = 0.0, r[1]
        for xv, yv in sorted(pts, key=lambda p: -p[0]):
            if yv > best_y:
                vol += (xv - r[0]) * (yv - best_y)
                best_y = yv
        return vol
    levels = sorted({p[2] for p in pts}, reverse=True) + [r[2]]
    vol = 0.0
    for hi, lo in zip(levels[:-1], levels[1:]):
        slab = [(p[0], p[1]) for p in pts if p[2] >= hi]
        vol += hypervolume(slab, r[:2]) * (hi - lo)
    return vol


PERCENT_AXES = ("group_sparsity", "param_reduction", "param_sparsity")


def front_hypervolumes(rows: Sequence[dict], x: str = "param_reduction", y: str = "test_acc") -> dict[str, float]:
    """Each method's dominated hypervolume in the plane ``(x / 100, y / 100)`` (both maximized,
    reference point at the origin): the area its points cover below and left of its own front -- one
    number per method for a K = 2 study, 1.0 = every parameter removed at 100 % accuracy. Only for
    the percentage x axes (:data:`PERCENT_AXES`); ``{}`` otherwise."""
    if x not in PERCENT_AXES:
        return {}
    by: dict[str, list[tuple[float, float]]] = {}
    for r in rows:
        if r.get(x) is not None and r.get(y) is not None and r.get("method") != "unpruned":
            by.setdefault(str(r["method"]), []).append((float(r[x]) / 100.0, float(r[y]) / 100.0))
    return {m: hypervolume(pts) for m, pts in by.items()}


def hypervolume_by_method(points: Sequence[dict], rank_ref: float | None = None) -> dict:
    """K = 3 runs (CE + L1 + nuclear): dominated hypervolume per method in the normalized space
    ``(accuracy / 100, parameter sparsity / 100, 1 - effective rank / rank_ref)``, all to be
    maximized, reference point at the origin; ``rank_ref`` defaults to the largest effective
    rank among the compared runs. Returns ``{"normalization": str, "rank_ref": float,
    "methods": {method: hv}}``."""
    pts = [p for p in points if p.get("secondary") == "l1+nuclear" and None not in
           (p.get("test_acc"), p.get("param_sparsity"), p.get("effective_rank"))]
    if not pts:
        return {"normalization": "", "rank_ref": None, "methods": {}}
    ref = _num(rank_ref) if rank_ref is not None else max(p["effective_rank"] for p in pts)
    if not ref or ref <= 0:
        raise ValueError(f"rank_ref must be a positive number, got {rank_ref!r}")
    by: dict[str, list] = {}
    for p in pts:
        by.setdefault(p["method"], []).append(
            (p["test_acc"] / 100.0, p["param_sparsity"] / 100.0, max(0.0, 1.0 - p["effective_rank"] / ref)))
    return {
        "normalization": (f"objectives (accuracy/100, parameter sparsity/100, 1 - effective rank/{ref:.3g}); "
                          f"all maximized, reference point (0, 0, 0); {ref:.3g} = largest effective rank "
                          "among the compared runs"),
        "rank_ref": ref,
        "methods": {m: hypervolume(v) for m, v in sorted(by.items())},
    }


_SHAPE_KEYS = ("dataset", "arch", "batch_size", "max_train_samples", "secondary", "device")


def estimate_seconds(runs: Iterable[dict], config: dict) -> dict | None:
    """Wall time estimate for ``config`` from finished runs of the same shape (dataset, arch, batch
    size, training subset, secondary, device), preferring runs of the same method (a Gram-based step
    costs more than a weighted sum's) when there are any: median seconds per epoch x epochs + median
    fixed overhead (start-up, evaluation, export), with the 25-75 % spread of the same sum over the
    runs (``low``, ``high``). None when no comparable run exists (queue a calibration run)."""
    if not isinstance(config, dict):
        raise ValueError("config must be a dict")
    samples: list[tuple[str, float, float]] = []  # (method, seconds per epoch, overhead)
    for r in runs:
        res = r.get("result") if isinstance(r, dict) else None
        if r.get("status") != "done" or not isinstance(res, dict):
            continue
        cfg = res.get("config") or r.get("config") or {}
        if any(cfg.get(k) != config.get(k) for k in _SHAPE_KEYS if k in config):
            continue
        n = _num(res.get("epochs_completed")) or _num(cfg.get("epochs"))
        sec = _num(res.get("seconds"))
        if not n or sec is None:
            continue
        wall = (_num(r.get("finished_at")) or 0) - (_num(r.get("started_at")) or 0)
        samples.append((str(cfg.get("method")), sec / n, max(0.0, wall - sec) if wall > 0 else math.nan))
    if not samples:
        return None
    same = [x for x in samples if x[0] == str(config.get("method"))]
    use = same or samples
    epochs = int(config.get("epochs") or 1)
    pe = statistics.median(x[1] for x in use)
    known = [x[2] for x in use if not math.isnan(x[2])]
    oh = statistics.median(known) if known else 0.0
    totals = sorted(x[1] * epochs + (x[2] if not math.isnan(x[2]) else oh) for x in use)
    q = statistics.quantiles(totals, n=4, method="inclusive") if len(totals) >= 2 else [totals[0]] * 3
    return {"seconds": pe * epochs + oh, "per_epoch": pe, "overhead": oh, "basis": len(use),
            "low": q[0], "high": q[2], "same_method": bool(same)}


def estimate_study(runs: Sequence[dict], configs: Sequence[dict], nominal_per_run: float,
                   nominal_basis: str) -> dict:
    """The wall time of a list of runs on one slot: each config's :func:`estimate_seconds` (its own
    method's measured times where there are any), else ``nominal_per_run``. Returns ``{"total",
    "low", "high", "measured", "n", "basis"}`` (``low``/``high``: the sums of the 25 % / 75 %
    estimates; nominal configs count their nominal time in both)."""
    total = low = high = 0.0
    measured = 0
    for cfg in configs:
        est = estimate_seconds(runs, cfg)
        if est is None:
            total, low, high = total + nominal_per_run, low + nominal_per_run, high + nominal_per_run
            continue
        measured += 1
        total, low, high = total + est["seconds"], low + est["low"], high + est["high"]
    n = len(configs)
    basis = (f"measured from finished runs of the same shape for {measured} of {n} run(s)"
             + (f"; the other {n - measured}: {nominal_basis}" if measured < n else ""))
    return {"total": total, "low": low, "high": high, "measured": measured, "n": n, "basis": basis}


def calibration_config(config: dict) -> dict:
    """A one-epoch run of the same shape (no export), queued first to calibrate the estimate."""
    if not isinstance(config, dict):
        raise ValueError("config must be a dict")
    return {**config, "epochs": 1, "export": False}


# --------------------------------------------------------------------------- studies: settings, seeds, pairs

_PARAM_SYMBOL = {"tau": "τ", "beta": "β", "lam": "λ", "w": "w", "c": "c", "target_density": "target density",
                 "dual_lr": "dual lr", "lr": "lr"}
# the knob each method's setting is about: shown even at its default value
_SETTING_PARAM = {"ws": "w", "dbgd": "beta", "prox": "lam", "lagrangian": "target_density"}
_STUDY_KEYS = ("dataset", "arch", "secondary", "grouping", "epochs", "optimizer", "lr", "batch_size",
               "schedule", "max_train_samples")


def _fmt(v: Any) -> str:
    return f"{v:g}" if isinstance(v, float) else str(v)


def setting_label(config: dict) -> str:
    """The method's setting in a run config, as people write it: ``τ=0.2`` (PCD), ``w=0.01`` (WS),
    ``λ=0.1`` (prox), ``target density=0.5`` (Lagrangian); ``default`` when every hyper-parameter
    has its default value; ``—`` for the unpruned network (no setting)."""
    method = str(config.get("method", ""))
    mp = dict(config.get("method_params") or {})
    if method == "unpruned":
        return "—"
    parts: list[str] = []
    try:
        import pcd.methods as M

        spec: dict[str, Any] = {p.name: p.default for p in M.get(method).params}
    except ValueError:  # prox, lagrangian
        try:
            from pcd.train.config import SPECIAL_METHODS
        except ImportError:  # pragma: no cover - torch missing
            SPECIAL_METHODS = {}
        spec = {k: d for k, (d, *_rest) in SPECIAL_METHODS.get(method, {}).items()}
    always = _SETTING_PARAM.get(method)
    if "tau" in spec:
        tau = mp.get("tau", config.get("tau"))
        if tau is not None:
            parts.append(f"τ={_fmt(float(tau))}")
    for k, v in mp.items():
        if k == "tau" or k not in spec or (v == spec[k] and k != always):
            continue
        parts.append(f"{_PARAM_SYMBOL.get(k, k)}={_fmt(v)}" + (" (default)" if v == spec[k] else ""))
    return " · ".join(parts) or "default"


def study_label(config: dict) -> str:
    """What runs of one study share (everything but method, setting and seed), as one line."""
    c = {k: config.get(k) for k in _STUDY_KEYS}
    sub = f" · {c['max_train_samples']} train images" if c["max_train_samples"] else ""
    lr = _num(c["lr"])
    return (f"{c['dataset']}/{c['arch']} · {c['secondary']} ({c['grouping']}) · {c['epochs']} ep · "
            f"{c['optimizer']} lr {lr:g} · batch {c['batch_size']}{sub}" if lr is not None else
            f"{c['dataset']}/{c['arch']} · {c['secondary']} · {c['epochs']} ep{sub}")


AGG_KEYS = ("test_acc", "export_acc", "param_reduction", "group_sparsity", "param_sparsity", "effective_rank",
            "flops_factor", "latency_factor", "size_factor", "params_after", "flops_after", "file_bytes_after",
            "latency_ms_after", "seconds", "wall_seconds")


def _mean_std(values: list[float]) -> tuple[float | None, float | None]:
    if not values:
        return None, None
    return statistics.fmean(values), (statistics.stdev(values) if len(values) > 1 else None)


def aggregate(points: Iterable[dict]) -> list[dict]:
    """Mean and standard deviation over seeds per (study, method, setting): one row per group with
    ``n`` (seeds), ``seeds``, ``run_ids`` and for each measure ``m`` of :data:`AGG_KEYS` the keys
    ``m`` (mean) and ``m_std`` (sample std, None for a single seed). Rows keep the order in which
    their first run appears. ``points`` may be a stream (a generator over a large store): only the
    measures are kept per group, never the points."""
    groups: dict[tuple, dict[str, Any]] = {}
    for p in points:
        key = (p.get("study"), p.get("method"), p.get("setting"))
        g = groups.get(key)
        if g is None:
            g = groups[key] = {"n": 0, "seeds": [], "run_ids": [], "diverged": 0,
                               "values": {k: array("d") for k in AGG_KEYS}}
        g["n"] += 1
        if p.get("seed") is not None:
            g["seeds"].append(p.get("seed"))
        g["run_ids"].append(p.get("id"))
        g["diverged"] += bool(p.get("diverged"))
        for k in AGG_KEYS:
            if p.get(k) is not None:
                g["values"][k].append(p[k])
    rows = []
    for (study, method, setting), g in groups.items():
        row: dict[str, Any] = {"study": study, "method": method, "setting": setting, "n": g["n"],
                               "seeds": sorted(g["seeds"]), "run_ids": g["run_ids"], "diverged": g["diverged"]}
        for k in AGG_KEYS:
            row[k], row[f"{k}_std"] = _mean_std(list(g["values"][k]))
        rows.append(row)
    return rows


def method_fronts(rows: Sequence[dict], x: str, y: str = "test_acc") -> dict[str, list[int]]:
    """Each method's own Pareto front (maximize ``x`` and ``y``): ``{method: indices into rows}``."""
    out: dict[str, list[int]] = {}
    for m in dict.fromkeys(r["method"] for r in rows):
        idx = [i for i, r in enumerate(rows) if r["method"] == m]
        out[m] = [idx[j] for j in pareto_front([rows[i] for i in idx], x, y)]
    return out


PAPER_PAIRS = {"better": 28, "worse": 1, "tie": 18, "n": 47}

# Below these, a point removed nothing worth comparing: 0.5 % of the parameters (or filters,
# weights), or a before/after factor of 1.005.
NOTHING_REMOVED = {"group_sparsity": 0.5, "param_reduction": 0.5, "param_sparsity": 0.5, "flops_factor": 1.005,
                   "latency_factor": 1.005, "size_factor": 1.005}


def nothing_to_compare(rows: Sequence[dict], x: str = "param_reduction") -> str | None:
    """Why a matched-sparsity comparison would be empty of meaning, or None: no run removed anything
    (every point's ``x`` at most :data:`NOTHING_REMOVED`), so every pair would be "matched" at zero
    sparsity and its verdict would only rank the unpruned accuracies of single seeds."""
    vals = [r[x] for r in rows if r.get(x) is not None and r.get("method") != "unpruned"]
    if not vals:
        return None
    floor = NOTHING_REMOVED.get(x, 0.0)
    if max(vals) <= floor:
        return (f"no run removed anything (every {X_AXES.get(x, x)} is at most {floor:g}), so there is nothing "
                "to compare at matched sparsity: train longer (the digits preset uses 40 epochs), raise τ or "
                "the secondary's weight, or export with a target reduction")
    return None


def paired_comparison(rows: Sequence[dict], x: str = "param_reduction", y: str = "test_acc",
                      reference: str = "pcd", exclude: Sequence[str] = ("unpruned",),
                      min_x: float | None = None) -> dict:
    """The paper's matched-sparsity comparison on aggregated rows (:func:`aggregate`).

    Every baseline point (a (method, setting) mean over seeds, other than ``reference`` and
    ``exclude``; with ``min_x`` only those whose ``x`` is at least ``min_x``) is paired with the
    ``reference`` point whose ``x`` is closest -- chosen on ``x`` alone, never on accuracy (ties on
    ``x`` go to the earlier row). The pair is ``better`` / ``worse`` for the reference when the
    difference in ``y`` exceeds the seed noise ``sqrt(std_ref^2 + std_base^2)`` (sample std over
    seeds; a single-seed point contributes 0), else ``tie``. Independently, a baseline point is
    *dominated* when some reference point has ``x`` and ``y`` at least as large, one strictly.

    Returns ``{"pairs": [...], "better", "worse", "tie", "n", "dominated", "x", "y", "single_seed",
    "nothing"}``: ``single_seed`` when no point has two seeds (no noise estimate: a tie then needs
    equal accuracy), ``nothing`` the reason of :func:`nothing_to_compare` (then no pair is made)."""
    if x not in X_AXES:
        raise ValueError(f"unknown x axis {x!r}; allowed: {', '.join(X_AXES)}")
    if y not in Y_AXES:
        raise ValueError(f"unknown y axis {y!r}; allowed: {', '.join(Y_AXES)}")
    ref = [r for r in rows if r["method"] == reference and r.get(x) is not None and r.get(y) is not None]
    base = [r for r in rows if r["method"] != reference and r["method"] not in exclude
            and r.get(x) is not None and r.get(y) is not None and (min_x is None or r[x] >= min_x)]
    pairs: list[dict] = []
    counts = {"better": 0, "worse": 0, "tie": 0}
    dominated = 0
    nothing = nothing_to_compare([*ref, *base], x)
    single = all(len(r.get("seeds") or [0]) < 2 for r in [*ref, *base])
    for b in base if ref and not nothing else []:
        p = min(ref, key=lambda q: abs(q[x] - b[x]))
        diff = p[y] - b[y]
        noise = math.hypot(p.get(f"{y}_std") or 0.0, b.get(f"{y}_std") or 0.0)
        verdict = "tie" if abs(diff) <= noise else ("better" if diff > 0 else "worse")
        counts[verdict] += 1
        dom = any(q[x] >= b[x] and q[y] >= b[y] and (q[x] > b[x] or q[y] > b[y]) for q in ref)
        dominated += dom
        pairs.append({"method": b["method"], "setting": b["setting"], f"{x}": b[x], f"{y}": b[y],
                      "pcd_setting": p["setting"], f"pcd_{x}": p[x], f"pcd_{y}": p[y], "difference": diff,
                      "noise": noise, "verdict": verdict, "dominated_by_pcd": dom})
    return {"pairs": pairs, **counts, "n": len(pairs), "dominated": dominated, "x": x, "y": y,
            "single_seed": single, "nothing": nothing}


def pairs_line(comp: dict) -> str:
    """The counts in one line next to the paper's: ``here 9 better / 2 worse / 4 tie of 15 ...``."""
    p = PAPER_PAIRS
    return (f"here: PCD better {comp['better']} / worse {comp['worse']} / tie {comp['tie']} of {comp['n']} "
            f"baseline points ({comp['dominated']} Pareto-dominated by a PCD point) · paper: "
            f"{p['better']} / {p['worse']} / {p['tie']} of {p['n']}"
            + (" — one seed per point: no seed noise is known, so any accuracy difference counts; queue "
               "more seeds before reading these verdicts" if comp.get("single_seed") else ""))


# --------------------------------------------------------------------------- the export report

def export_report(result: dict | None) -> dict:
    """What physical pruning did to one run, in words and numbers.

    Returns ``{"rows": [{"measure", "before", "after"}], "removed": bool, "offer_model": bool,
    "message": str}``. ``removed`` is False when no channel could be removed; ``offer_model`` is
    False whenever the exported file is not smaller than the original, so a bigger file is never
    presented as the pruned model. ``message`` says what happened and, when nothing was removed, why."""
    res = result if isinstance(result, dict) else {}
    ex = res.get("export") or {}
    if not ex:
        why = ("training diverged" if res.get("diverged") else
               "export was switched off for this run" if (res.get("config") or {}).get("export") is False else
               "the run has no export")
        return {"rows": [], "removed": False, "offer_model": False, "message": f"No pruned model: {why}."}
    rows = [
        {"measure": "parameters", "before": ex.get("params_before"), "after": ex.get("params_after")},
        {"measure": "channels", "before": ex.get("channels_total"),
         "after": (ex["channels_total"] - ex["channels_removed"]) if ex.get("channels_total") is not None
         and ex.get("channels_removed") is not None else None},
        {"measure": "FLOPs (batch 1)", "before": ex.get("flops_before"), "after": ex.get("flops_after")},
        {"measure": "latency ms (batch 1)", "before": ex.get("latency_ms_before"), "after": ex.get("latency_ms_after")},
        {"measure": "file bytes", "before": ex.get("file_bytes_before"), "after": ex.get("file_bytes_after")},
        {"measure": "test accuracy %", "before": res.get("test_acc"), "after": ex.get("test_acc")},
    ]
    removed = bool(ex.get("channels_removed"))
    fb, fa = _num(ex.get("file_bytes_before")), _num(ex.get("file_bytes_after"))
    smaller = fb is not None and fa is not None and fa < fb
    if not removed:
        thr, weak = _num(ex.get("threshold")), _num(ex.get("weakest_channel_norm"))
        if thr is not None:
            why = (f"no channel's filters have an L2 norm below the export threshold {thr:g}"
                   + (f" (the weakest channel's norm is {weak:.3g})" if weak is not None else ""))
        else:
            why = f"the target reduction {_num(ex.get('target_reduction')) or 0:g} needs no channel removed"
        msg = (f"Nothing could be removed: {why}. The network is unchanged, so no pruned model is offered"
               + (" (its file would only be bigger: it adds the pruning metadata)" if fa and fb and fa >= fb else "")
               + ". Raise τ (PCD) or the secondary's weight, train longer, or export with a target reduction.")
        return {"rows": rows, "removed": False, "offer_model": False, "message": msg}
    pb, pa = _num(ex.get("params_before")), _num(ex.get("params_after"))
    red = 100.0 * (1.0 - pa / pb) if pa is not None and pb else None
    msg = (f"Removed {ex.get('channels_removed')} of {ex.get('channels_total')} channels"
           + (f": {red:.1f} % fewer parameters" if red is not None else "") + ".")
    if not smaller:
        msg += " The exported file is not smaller than the original, so it is not offered as the pruned model."
    return {"rows": rows, "removed": True, "offer_model": smaller, "message": msg}


def landing(row: dict, reference_acc: float | None, margin: float = 1.5) -> str:
    """Where one (method, setting) lands against the unpruned accuracy, in a few words:
    ``removes nothing`` / ``collapsed`` (more than 20 points lost) / ``within 1.5 points`` /
    ``loses N points`` -- with its parameter reduction."""
    acc, red = _num(row.get("test_acc")), _num(row.get("param_reduction"))
    if row.get("method") == "unpruned":
        return "reference"
    if acc is None:
        return "—"
    if red is None or red < 1.0:
        return "removes nothing"
    if reference_acc is None:
        return f"{red:.0f} % removed"
    drop = reference_acc - acc
    if drop > 20.0:
        return f"collapsed: {red:.0f} % removed, {acc:.1f} % accuracy"
    if drop <= margin:
        return f"within {margin:g} points at {red:.0f} % removed"
    return f"loses {drop:.1f} points at {red:.0f} % removed"


def findings(rows: Sequence[dict], margin: float = 1.5, reference: str = "unpruned",
             label: Callable[[str], str] = str) -> list[str]:
    """What a study shows, one sentence per method, from its aggregated rows (:func:`aggregate`):
    the setting that removes the most parameters while staying within ``margin`` points of the
    ``reference`` accuracy, and where the other settings land (``label`` names the methods)."""
    ref = next((r for r in rows if r["method"] == reference and r.get("test_acc") is not None), None)
    if ref is None:
        return [f"No {label(reference)} run in this study: nothing to measure the accuracy loss against."]
    acc0 = ref["test_acc"]
    out = []
    for m in dict.fromkeys(r["method"] for r in rows if r["method"] != reference):
        sub = [r for r in rows if r["method"] == m and r.get("test_acc") is not None]
        ok = [r for r in sub if acc0 - r["test_acc"] <= margin and (r.get("param_reduction") or 0) >= 1.0]
        best = max(ok, key=lambda r: r["param_reduction"]) if ok else None
        if best is not None:
            head = (f"{label(m)} {best['setting']}: removes {best['param_reduction']:.0f} % of the parameters "
                    f"within {margin:g} points ({best['test_acc']:.1f} % vs {acc0:.1f} % unpruned)")
        else:
            head = f"{label(m)}: no setting removes parameters within {margin:g} points of the unpruned network"
        rest = [f"{r['setting']} {landing(r, acc0, margin)}" for r in sub if r is not best]
        out.append(head + ("; " + "; ".join(rest) if rest else "") + ".")
    return out


def best_above(rows: Sequence[dict], low: float = 80.0, x: str = "param_reduction",
               y: str = "test_acc") -> dict[str, dict]:
    """Per method, its most accurate (method, setting) row with ``x >= low`` (the paper's table
    compares methods at 80-85 % parameter reduction); ``{"row": None, "max_x": ...}`` for a method
    none of whose settings gets there."""
    out: dict[str, dict] = {}
    for m in dict.fromkeys(r["method"] for r in rows):
        sub = [r for r in rows if r["method"] == m and r.get(y) is not None]
        ok = [r for r in sub if (r.get(x) or 0.0) >= low]
        out[m] = {"row": max(ok, key=lambda r: r[y]) if ok else None,
                  "max_x": max((r.get(x) or 0.0 for r in sub), default=None)}
    return out


# --------------------------------------------------------------------------- studies read from a run store

def summary_rows(store: RunStore, study: str | None = None) -> list[dict]:
    """Mean ± std per (study, method, setting) of the finished runs in ``store`` (optionally only
    studies whose label contains ``study``): the result fields :func:`run_point`
    needs are extracted in SQL (:meth:`RunStore.iter_done`) and aggregated as a stream, so time
    and memory stay small whatever the store holds."""
    points = (p for p in _points(store.iter_done(POINT_RESULT_PATHS))
              if p is not None and (not study or study in p["study"]))
    return aggregate(points)


def _points(runs: Any) -> Any:
    """:func:`run_point` of light runs (:meth:`RunStore.iter_done`), the setting and
    study labels computed once per distinct config (they do not depend on the seed)."""
    labels: dict[str, tuple[str, str]] = {}
    for run in runs:
        key = run["config_key"]
        lab = labels.get(key)
        if lab is None:
            if len(labels) > 10_000:
                labels.clear()
            try:  # run["config"] is already the result's own config where it has one
                lab = labels[key] = (setting_label(run["config"]), study_label(run["config"]))
            except (TypeError, ValueError):  # a config the labels cannot describe: left out
                continue
        yield run_point(run, lab)


STUDY_POINTS = 20_000  # the results explorer draws at most the newest 20,000 runs of a study


def done_studies(store: RunStore, previous: tuple | None = None) -> tuple:
    """``(marker, studies)``: ``{study label: {"keys": [configs without seed], "runs": n, "newest": id}}``
    of the finished runs, newest study first, from one SQL aggregate (:meth:`RunStore.done_groups`);
    ``previous`` is returned as it is while no run finished or was removed since."""
    marker = store.status_marker("done")
    if previous is not None and previous[0] == marker:
        return previous
    studies: dict[str, dict] = {}
    for key, n, newest in store.done_groups():
        try:
            cfg = V.parse_json(key, "stored config")
            label = study_label(cfg) if isinstance(cfg, dict) else None
        except (TypeError, ValueError):
            label = None
        if label is None:
            continue
        st = studies.setdefault(label, {"keys": [], "runs": 0, "newest": 0})
        st["keys"].append(key)
        st["runs"] += n
        st["newest"] = max(st["newest"], newest)
    return marker, dict(sorted(studies.items(), key=lambda kv: -kv[1]["newest"]))


def study_points(store: RunStore, study: dict, limit: int = STUDY_POINTS) -> tuple[list[dict], list[dict]]:
    """``(points, rows)`` of one study of :func:`done_studies`: the points of its newest ``limit``
    runs and their mean ± std rows. Bounded work per refresh whatever the study holds; a study with
    more runs is summarised whole by ``python -m pcd runs summary`` (:func:`summary_rows`)."""
    pts = [p for p in _points(store.iter_done(POINT_RESULT_PATHS, keys=study["keys"], newest_first=True,
                                              limit=limit)) if p is not None][::-1]
    return pts, aggregate(pts)
