"""Executors: how the supervisor starts, watches and stops one run.

- :mod:`pcd.jobs.executors.base`: the shared vocabulary (:class:`Slot`, :class:`Job`,
  :class:`Outcome`, the :class:`Executor` protocol) and small helpers.
- :mod:`pcd.jobs.executors.local`: each run in a fresh child process on this machine.
- :mod:`pcd.jobs.executors.ray`: each run as a task on a Ray cluster (``ray`` is imported lazily).

The supervisor imports executors; executors never import the supervisor.
"""
from __future__ import annotations

from pcd.jobs.executors.base import Executor, Job, Outcome, Slot
from pcd.jobs.executors.local import LocalExecutor, plan_slots

__all__ = ["Executor", "Job", "Outcome", "Slot", "LocalExecutor", "plan_slots"]
