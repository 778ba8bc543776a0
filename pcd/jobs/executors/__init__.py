"""Executors: how the supervisor starts, watches and stops one run -- one module per run backend.

- :mod:`pcd.jobs.executors.base`: the shared vocabulary (:class:`Slot`, :class:`Job`,
  :class:`Outcome`, the :class:`Executor` protocol) and small helpers.
- :mod:`pcd.jobs.executors.local`: each run in a fresh child process on this machine.
- :mod:`pcd.jobs.executors.ray`: each run as a task on a Ray cluster (``ray`` is imported lazily).

:data:`BACKENDS` is the one registry of run backends (name -> its executor class, imported when
chosen): a new backend is its module plus one line here. The supervisor imports executors;
executors never import the supervisor.
"""
from __future__ import annotations

import importlib
from typing import Any

from pcd.jobs.executors.base import Executor, Job, Outcome, Slot
from pcd.jobs.executors.local import LocalExecutor, plan_slots

#: run backend name -> ``"module:Class"`` of its executor (the module is imported only when chosen)
BACKENDS: dict[str, str] = {
    "local": "pcd.jobs.executors.local:LocalExecutor",
    "ray": "pcd.jobs.executors.ray:RayExecutor",
}


def executor_class(backend: str) -> Any:
    """The executor class of run backend ``backend`` (one of :data:`BACKENDS`)."""
    if not isinstance(backend, str) or backend not in BACKENDS:
        raise ValueError(f"backend must be one of {list(BACKENDS)}, got {backend!r}")
    module, _, name = BACKENDS[backend].partition(":")
    return getattr(importlib.import_module(module), name)


__all__ = ["Executor", "Job", "Outcome", "Slot", "LocalExecutor", "plan_slots", "BACKENDS", "executor_class"]
