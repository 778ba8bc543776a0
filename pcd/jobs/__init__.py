"""Run queue (SQLite), supervisor and the Ray backend.

- :class:`RunStore` (``pcd.jobs.store``): the SQLite store in the data folder -- queue, progress
  feed and results.
- :class:`Supervisor` (``pcd.jobs.supervisor``), ``python -m pcd worker``: executes queued runs,
  one slot per GPU (or one CPU slot); :func:`ensure_supervisor` starts one in the background unless
  one is alive (the app calls it, so running the app is enough).
- ``pcd.jobs.executors``: how a run is executed -- ``local`` (a child process per run) or ``ray``
  (a Ray task per run, ``PCD_BACKEND=ray``); the supervisor imports them, never the reverse.
"""
from __future__ import annotations

import importlib.util
from typing import Any

from pcd.jobs.executors.local import plan_slots
from pcd.jobs.store import FINISHED, STATUSES, RunStore, default_data_dir, eta_seconds
from pcd.jobs.supervisor import Supervisor, SupervisorRunning, ensure_supervisor, supervisor_pid

DATASETS = ("digits", "cifar10", "cifar100")


def train_available() -> bool:
    """True once the pruning runs (``pcd.train.run``) are installed."""
    try:
        return importlib.util.find_spec("pcd.train.run") is not None
    except (ImportError, ValueError):  # pragma: no cover
        return False


def validate_for_queue(config: Any) -> dict:
    """Validate a run config before it is queued, so a bad config fails at submit time.

    Uses ``pcd.train.run.validate_config`` (defaults filled in, clear ``ValueError``) when the
    pruning runs are installed; otherwise checks the basics (a dict; dataset, tau, epochs)."""
    if not isinstance(config, dict):
        raise ValueError(f"a run config must be a JSON object (dict), got {type(config).__name__}")
    if train_available():
        from pcd.train.run import validate_config
        return dict(validate_config(dict(config)))
    from pcd.train.catalog import check_numbers

    cfg = check_numbers(dict(config))
    ds = cfg.get("dataset", "digits")
    if ds not in DATASETS:
        raise ValueError(f"dataset must be one of {', '.join(DATASETS)}, got {ds!r}")
    return cfg


__all__ = ["RunStore", "Supervisor", "SupervisorRunning", "ensure_supervisor", "supervisor_pid", "plan_slots",
           "default_data_dir", "eta_seconds", "validate_for_queue", "train_available", "STATUSES", "FINISHED"]
