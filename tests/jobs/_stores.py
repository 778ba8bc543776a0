"""A run store seeded with queued runs, and finishing the next claimed one: shared by the queue-view
tests (``tests/jobs/test_queue_view.py``) and the study statistics streamed from a store
(``tests/train/test_studies.py``)."""
from __future__ import annotations

from pcd.jobs.store import RunStore


def seeded_store(tmp_path, n=12):
    """A store under ``tmp_path/d`` with ``n`` queued runs (methods, seeds and taus alternating); returns
    the store and the run ids in submission order."""
    s = RunStore(tmp_path / "d")
    ids = s.submit_many([{"method": "pcd" if i % 2 else "ws", "seed": i % 3, "tau": 0.02 if i % 4 else 0.05}
                         for i in range(n)])
    return s, ids


def finish_next(s, result):
    """Claim the next queued run and finish it ``done`` with ``result``; returns its id."""
    run = s.claim("w", "cpu:0")
    assert s.finish(run["id"], run["token"], "done", result=result)
    return run["id"]
