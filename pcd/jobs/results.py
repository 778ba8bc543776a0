"""Plain-data views of finished runs for the results explorer, the CLI and tests: one point per run,
Pareto fronts, matched-sparsity comparisons, dominated hypervolume, run-time estimates.

All functions take the run dicts of :meth:`pcd.jobs.store.RunStore.list` (or the points built from
them) and return plain lists / dicts / floats.
"""
from __future__ import annotations

import math
import statistics
from collections.abc import Iterable, Sequence
from typing import Any

# x-axis choices: key -> (label, "higher is better" is always true after this transform)
X_AXES: dict[str, str] = {
    "group_sparsity": "native group sparsity (% filters with norm < 1e-4)",
    "param_reduction": "parameter reduction after physical pruning (%)",
    "param_sparsity": "parameter sparsity (% weights |w| < 1e-8)",
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


def run_point(run: dict) -> dict | None:
    """One finished run -> a flat point (None for runs without a result)."""
    if not isinstance(run, dict):
        raise ValueError(f"a run must be a dict, got {type(run).__name__}")
    res = run.get("result")
    if run.get("status") != "done" or not isinstance(res, dict):
        return None
    cfg = res.get("config") or run.get("config") or {}
    ex = res.get("export") or {}
    pb, pa = _num(ex.get("params_before")), _num(ex.get("params_after"))
    return {
        "id": run.get("id"),
        "method": str(cfg.get("method", "?")),
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
        "latency_factor": _ratio(ex.get("latency_ms_before"), ex.get("latency_ms_after")),
        "size_factor": _ratio(ex.get("file_bytes_before"), ex.get("file_bytes_after")),
        "seconds": _num(res.get("seconds")),
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
    size, training subset, secondary, device): median seconds per epoch x epochs + median fixed
    overhead (start-up, evaluation, export). None when no comparable run exists (queue a
    calibration run)."""
    if not isinstance(config, dict):
        raise ValueError("config must be a dict")
    per_epoch, overhead = [], []
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
        per_epoch.append(sec / n)
        wall = (_num(r.get("finished_at")) or 0) - (_num(r.get("started_at")) or 0)
        if wall > 0:
            overhead.append(max(0.0, wall - sec))
    if not per_epoch:
        return None
    epochs = int(config.get("epochs") or 1)
    pe = statistics.median(per_epoch)
    oh = statistics.median(overhead) if overhead else 0.0
    return {"seconds": pe * epochs + oh, "per_epoch": pe, "overhead": oh, "basis": len(per_epoch)}


def calibration_config(config: dict) -> dict:
    """A one-epoch run of the same shape (no export), queued first to calibrate the estimate."""
    if not isinstance(config, dict):
        raise ValueError("config must be a dict")
    return {**config, "epochs": 1, "export": False}
