"""Which methods follow the 1.536·√(K−1) law on the K-objective double well -- measured.

The law is the primary-gradient residual of a method that never leaves the start ``x_j = -0.6``
(a Pareto-stationary point: the convex combination with ``lambda_0 = 1/(1 + (K-1)/0.96)`` is zero
there). A run of :func:`pcd.experiments.synthetic.kdw` ends in one of four places, read off its
record (``ratio`` = final ``||grad f_1||`` / law, ``end_mean`` = mean coordinate at the end):

* ``"on the law"``        -- ``ratio >= 0.98``: never left the start (MGDA);
* ``"all-optimal point"`` -- ``end_mean > 0.5``: crossed the barrier towards ``x = 1``, where
  every objective is optimal (PCD), whatever its residual there (an oscillating Adam run has one);
* ``"primary's other minimum"`` -- ``end_mean < -0.95`` and ``ratio < 0.01``: went the other way, to
  the primary's minimum ``x = -1`` where the secondaries are not optimal;
* ``"still moving"`` -- the run's diagnosis is *moving* and it has not crossed;
* ``"stalls below the law"`` -- anything else: stopped between, short of the barrier, at a residual
  below the law (a conflict equilibrium off the start).

:func:`verdicts` turns the records of one method over K into one verdict; :func:`measure` runs
the double well per method and :func:`table` reads the table
that ``python benchmarks/kdw_law.py`` measured (``kdw_law.json`` next to this module), shown on
the K-objective page.
"""
from __future__ import annotations

import json
import math
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

TABLE = Path(__file__).with_name("kdw_law.json")
COMMAND = "python benchmarks/kdw_law.py"
ON_LAW = 0.98       # ratio at or above: the run never left the start
CROSSED = 0.5       # mean coordinate above: past the barrier (x = 0), towards x = 1
OTHER_MIN = -0.95   # mean coordinate below (with a residual < 1 % of the law): the primary's minimum x = -1
OUTCOMES = ("on the law", "all-optimal point", "primary's other minimum", "still moving", "stalls below the law")

__all__ = ["outcome", "verdicts", "measure", "table", "TABLE", "COMMAND", "OUTCOMES"]


def outcome(record: dict[str, Any]) -> str:
    """Where one (K, method) run of :func:`~pcd.experiments.synthetic.kdw` ended (one of
    :data:`OUTCOMES`); needs ``ratio`` and ``end_mean``."""
    for key in ("ratio", "end_mean"):
        if key not in record:
            raise ValueError(f"a K-objective record needs {key!r} (see pcd.experiments.synthetic.kdw)")
    ratio, end = float(record["ratio"]), float(record["end_mean"])
    if not (math.isfinite(ratio) and math.isfinite(end)):
        return "stalls below the law" if not record.get("diverged") else "diverged"
    if ratio >= ON_LAW:
        return "on the law"
    if end > CROSSED:
        return "all-optimal point"
    if end < OTHER_MIN and ratio < 0.01:
        return "primary's other minimum"
    if record.get("diagnosis") == "moving":
        return "still moving"
    return "stalls below the law"


def _ks(ks: Sequence[int]) -> str:
    return ", ".join(str(k) for k in ks)


def verdicts(records: Iterable[dict[str, Any]]) -> list[dict[str, Any]]:
    """One row per method (in order of appearance): ``method``, ``ratio_min``, ``ratio_max``
    (residual / law over K), ``outcomes`` ({K: :func:`outcome`}) and ``verdict``: *follows the law*
    (on the law at every K), *crosses: zero residual* (all-optimal point with residual / law
    < 1e-6 at every K), *crosses at every K*, *stalls below the law* (never crosses, off the law),
    or, when the K disagree, *does not follow: <outcome> at K = …; …*."""
    recs = list(records or [])
    if not recs:
        raise ValueError("no K-objective records (choose at least one K and one method)")
    out = []
    for m in dict.fromkeys(str(r["method"]) for r in recs):
        rows = sorted((r for r in recs if r["method"] == m), key=lambda r: int(r["K"]))
        ratios = [float(r["ratio"]) for r in rows]
        finite = [x for x in ratios if math.isfinite(x)] or [math.nan]
        lo, hi = min(finite), max(finite)
        outs = {int(r["K"]): outcome(r) for r in rows}
        kinds = set(outs.values())
        if kinds == {"on the law"}:
            verdict = "follows the law"
        elif kinds == {"all-optimal point"}:
            verdict = "crosses: zero residual" if hi < 1e-6 else "crosses at every K"
        elif kinds <= {"stalls below the law", "on the law"}:
            verdict = "stalls below the law"
        else:
            groups = {o: [k for k, v in outs.items() if v == o] for o in OUTCOMES + ("diverged",)}
            verdict = "does not follow: " + "; ".join(f"{o} at K = {_ks(ks)}" for o, ks in groups.items() if ks)
        out.append({"method": m, "ratio_min": lo, "ratio_max": hi, "outcomes": outs, "verdict": verdict})
    return out


def measure(methods: str | Iterable[str], Ks: Iterable[int], steps: int, lr: float, optimizer: str,
            tau: float | None) -> dict[str, Any]:
    """Run the double well for ``methods`` (one method at a time, every K) and return
    ``{"settings", "records", "verdicts"}`` (JSON-able): what ``benchmarks/kdw_law.py`` writes to
    :data:`TABLE` with the K-objective page's defaults (:mod:`pcd.studio.kbench`)."""
    from pcd.experiments.synthetic import kdw, parse_methods

    names = parse_methods(methods)
    ks = [int(k) for k in Ks]
    settings: dict[str, Any] = {"Ks": ks, "steps": int(steps), "lr": float(lr), "optimizer": str(optimizer),
                                "tau": tau}
    records = []
    for m in names:
        records += kdw(Ks=ks, methods=[m], steps=int(steps), lr=float(lr), optimizer=str(optimizer), tau=tau)
    keep = ("K", "method", "primary_grad_norm", "law", "ratio", "diagnosis", "end_mean", "diverged")
    records = [{k: r[k] for k in keep} for r in records]
    return {"settings": settings, "records": records, "verdicts": verdicts(records)}


def table(path: str | Path | None = None) -> dict[str, Any]:
    """The measured table (:data:`TABLE`, written by ``python benchmarks/kdw_law.py``):
    ``{"settings", "command", "records", "verdicts"}``; the verdicts are recomputed from the stored
    records (one rule: :func:`verdicts`)."""
    p = Path(path) if path is not None else TABLE
    try:
        data = json.loads(p.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise ValueError(f"no measured K-law table at {p}: run {COMMAND}") from None
    data["verdicts"] = verdicts(data["records"])
    return data
