"""Run queue (SQLite), supervisor and the run backends.

A generic queue: it knows a run's config only as a JSON object, the code that executes a run only as
the runner it is handed (``"package.module:function"``) and a config check only as the function it
is handed (``RunStore(check=...)``, ``submit(..., check=...)``). It never imports :mod:`pcd.train`;
training hands its runner and checks (:mod:`pcd.train.queue`).

- :class:`RunStore` (``pcd.jobs.store``): the SQLite store in the data folder -- queue, progress
  feed and results.
- :class:`Supervisor` (``pcd.jobs.supervisor``), ``python -m pcd worker``: executes queued runs,
  one slot per GPU (or one CPU slot); :func:`ensure_supervisor` starts one in the background unless
  one is alive (the app calls it, so running the app is enough).
- ``pcd.jobs.executors``: how a run is executed, one module per backend, named in one registry
  (:data:`pcd.jobs.executors.BACKENDS`): ``local`` (a child process per run) or ``ray`` (a Ray task
  per run, ``PCD_BACKEND=ray``); the supervisor imports them, never the reverse.
"""
from __future__ import annotations

from pcd.jobs.executors.local import plan_slots
from pcd.jobs.store import FINISHED, STATUSES, RunStore, default_data_dir, eta_seconds
from pcd.jobs.supervisor import Supervisor, SupervisorRunning, ensure_supervisor, supervisor_pid

__all__ = ["RunStore", "Supervisor", "SupervisorRunning", "ensure_supervisor", "supervisor_pid", "plan_slots",
           "default_data_dir", "eta_seconds", "STATUSES", "FINISHED"]
