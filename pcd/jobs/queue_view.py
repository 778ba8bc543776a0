"""The data behind the Pruning lab's queue tab (and ``runs list``): counts per status and the newest
page of runs, read with SQL aggregates and ``LIMIT`` so the cost does not grow with the store
(200,000 runs: see ``benchmarks/bench_store_scale.py``), plus a change marker so an auto-refresh
re-reads only when something changed.

Plain data in, plain data out: the page draws it, a test or the benchmark calls it directly. What the
finished runs *mean* (study summaries, fronts, labels) is training's: :mod:`pcd.train.studies`.
"""
from __future__ import annotations

from dataclasses import dataclass, field

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


#: what :func:`pcd.train.studies.estimate_seconds` reads of a result (besides the config)
ESTIMATE_PATHS = ("seconds", "epochs_completed")


def estimate_basis(store: RunStore, n: int = ESTIMATE_BASIS) -> list[dict]:
    """The newest ``n`` finished runs, light (:meth:`RunStore.iter_done`): what
    :func:`pcd.train.studies.estimate_seconds` measures from (bounded whatever the store holds;
    recent runs reflect this machine as it is now)."""
    return list(store.iter_done(ESTIMATE_PATHS, newest_first=True, limit=n))
