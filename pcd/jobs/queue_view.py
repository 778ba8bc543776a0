"""The data behind the Pruning lab's queue tab (and ``runs list``): counts per status and the newest
page of runs, read with SQL aggregates and ``LIMIT`` so the cost does not grow with the store
(200,000 runs: see ``benchmarks/bench_store_scale.py``), plus a change marker so an auto-refresh
re-reads only when something changed.

Plain data in, plain data out: the page draws it, a test or the benchmark calls it directly.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from pcd import _validate as V
from pcd.jobs.store import RunStore

PAGE_SIZE = 50        # runs per page of the queue tab (newest first), as `runs list`
RUNNING_SHOWN = 20    # live curves for at most this many running runs
ESTIMATE_BASIS = 2000  # run-time estimates use the newest finished runs only (bounded, and current)


@dataclass
class QueuePage:
    """One read of the queue: ``version`` (the store's change counter when read), ``counts`` per
    status, ``total``, the page of ``runs`` (newest first, ``offset`` skipped) and the ``running``
    runs (for the live curves)."""
    version: int
    counts: dict[str, int]
    total: int
    offset: int
    limit: int
    runs: list[dict] = field(default_factory=list)
    running: list[dict] = field(default_factory=list)

    @property
    def active(self) -> bool:
        """Runs are queued or running: the tab refreshes itself."""
        return bool(self.counts.get("queued") or self.counts.get("running"))

    @property
    def pages(self) -> int:
        return max(1, -(-self.total // self.limit))


def queue_page(store: RunStore, *, page: int = 1, limit: int = PAGE_SIZE,
               previous: QueuePage | None = None) -> QueuePage:
    """Counts and the newest runs of ``store`` (page ``page``, 1 = newest). With ``previous`` (the
    last read) and nothing changed since, ``previous`` is returned as it is (one tiny query)."""
    limit = V.integer(limit, "runs per page", low=1, high=10_000)
    page = V.integer(page, "page", low=1, high=V.LIMITS["run_id"] // limit, strict=False)
    offset = (page - 1) * limit
    version = store.version()
    if previous is not None and previous.version == version and previous.offset == offset \
            and previous.limit == limit:
        return previous
    counts = store.counts()
    return QueuePage(version=version, counts=counts, total=sum(counts.values()), offset=offset, limit=limit,
                     runs=store.list(limit=limit, offset=offset, newest_first=True),
                     running=store.list("running", limit=RUNNING_SHOWN))


#: what :func:`pcd.jobs.results.estimate_seconds` reads of a result (besides the config)
ESTIMATE_PATHS = ("seconds", "epochs_completed")


def estimate_basis(store: RunStore, n: int = ESTIMATE_BASIS) -> list[dict]:
    """The newest ``n`` finished runs, light (:meth:`RunStore.iter_done`): what
    :func:`pcd.jobs.results.estimate_seconds` measures from (bounded whatever the store holds;
    recent runs reflect this machine as it is now)."""
    return list(store.iter_done(ESTIMATE_PATHS, newest_first=True, limit=n))


def summary_rows(store: RunStore, study: str | None = None) -> list[dict]:
    """Mean ± std per (study, method, setting) of the finished runs in ``store`` (optionally only
    studies whose label contains ``study``): the result fields :func:`pcd.jobs.results.run_point`
    needs are extracted in SQL (:meth:`RunStore.iter_done`) and aggregated as a stream, so time
    and memory stay small whatever the store holds."""
    from pcd.jobs import results as R

    points = (p for p in _points(store.iter_done(R.POINT_RESULT_PATHS))
              if p is not None and (not study or study in p["study"]))
    return R.aggregate(points)


def _points(runs: Any) -> Any:
    """:func:`pcd.jobs.results.run_point` of light runs (:meth:`RunStore.iter_done`), the setting and
    study labels computed once per distinct config (they do not depend on the seed)."""
    from pcd.jobs import results as R

    labels: dict[str, tuple[str, str]] = {}
    for run in runs:
        key = run["config_key"]
        lab = labels.get(key)
        if lab is None:
            if len(labels) > 10_000:
                labels.clear()
            try:  # run["config"] is already the result's own config where it has one
                lab = labels[key] = (R.setting_label(run["config"]), R.study_label(run["config"]))
            except (TypeError, ValueError):  # a config the labels cannot describe: left out
                continue
        yield R.run_point(run, lab)


STUDY_POINTS = 20_000  # the results explorer draws at most the newest 20,000 runs of a study


def done_studies(store: RunStore, previous: tuple | None = None) -> tuple:
    """``(marker, studies)``: ``{study label: {"keys": [configs without seed], "runs": n, "newest": id}}``
    of the finished runs, newest study first, from one SQL aggregate (:meth:`RunStore.done_groups`);
    ``previous`` is returned as it is while no run finished or was removed since."""
    from pcd.jobs import results as R

    marker = store.status_marker("done")
    if previous is not None and previous[0] == marker:
        return previous
    studies: dict[str, dict] = {}
    for key, n, newest in store.done_groups():
        try:
            cfg = V.parse_json(key, "stored config")
            label = R.study_label(cfg) if isinstance(cfg, dict) else None
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
    from pcd.jobs import results as R

    pts = [p for p in _points(store.iter_done(R.POINT_RESULT_PATHS, keys=study["keys"], newest_first=True,
                                              limit=limit)) if p is not None][::-1]
    return pts, R.aggregate(pts)
