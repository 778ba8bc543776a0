"""Ray executor: the same supervisor dispatches each run as a Ray task (``PCD_BACKEND=ray`` or
``python -m pcd worker --backend ray``).

- Each run is one task with ``num_gpus=1`` when the cluster has GPUs (Ray sets
  ``CUDA_VISIBLE_DEVICES`` for it), else ``num_cpus=1``; ``max_retries=0`` -- retries are the
  store's business (``max_attempts``), not Ray's.
- Progress streams back through one small actor (``ProgressChannel``): the task pushes every
  ``on_progress`` payload (epoch ends synchronously, so no epoch row is lost), the supervisor
  drains the actor every tick and writes into the local SQLite store; the run table, the page and
  ``python -m pcd runs list`` look exactly as with local children.
- Cancel: the task's ``should_stop`` reads a flag in the actor (it stops at its next check);
  after the grace period the supervisor calls ``ray.cancel(ref, force=True)``.
- Files: the task writes ``runs/<id>/`` under the data folder path *on the node that runs it*;
  give the nodes a shared folder at the same path (NFS) to resume on another node and to download
  exported models from the page. Every node needs ``pip install pcd-studio`` (same version).

Cluster recipe (documented in the README)::

    head$    ray start --head --port=6379
    gpu-N$   ray start --address=<head-ip>:6379
    head$    PCD_BACKEND=ray RAY_ADDRESS=<head-ip>:6379 python -m pcd worker
"""
from __future__ import annotations

import os
import time
from typing import Any

from pcd.jobs.child import describe_error, is_cancel, resolve_runner
from pcd.jobs.executors.base import Job, Outcome, Slot
from pcd.jobs.store import RunStore

_REMOTES: dict[str, Any] = {}


def available() -> bool:
    try:
        import ray  # noqa: F401
        return True
    except ImportError:
        return False


def _remotes() -> tuple[Any, Any]:
    """The actor class and the task, defined once ``ray`` is imported (it is an optional extra)."""
    if _REMOTES:
        return _REMOTES["channel"], _REMOTES["task"]
    import ray

    @ray.remote(num_cpus=0)
    class ProgressChannel:
        def __init__(self) -> None:
            self.events: list = []
            self.cancel: set = set()

        def push(self, run_id: int, payload: dict) -> None:
            self.events.append((run_id, payload))

        def drain(self) -> list:
            ev, self.events = self.events, []
            return ev

        def request_cancel(self, run_id: int) -> None:
            self.cancel.add(run_id)

        def should_stop(self, run_id: int) -> bool:
            return run_id in self.cancel

    def execute(runner: str, config: dict, out_dir: str, run_id: int, channel: Any) -> dict:
        import ray as _ray

        os.makedirs(out_dir, exist_ok=True)
        last = [0.0, False]

        def on_progress(payload: dict) -> None:
            ref = channel.push.remote(run_id, payload)
            if payload.get("metrics") is not None:
                _ray.get(ref, timeout=30)  # epoch rows are never lost

        def should_stop() -> bool:
            now = time.monotonic()
            if not last[1] and now - last[0] >= 0.5:
                last[0] = now
                try:
                    last[1] = bool(_ray.get(channel.should_stop.remote(run_id), timeout=10))
                except Exception:  # a slow actor is not a reason to stop
                    pass
            return bool(last[1])

        fn = resolve_runner(runner)
        return fn(dict(config), out_dir=out_dir, on_progress=on_progress, should_stop=should_stop)

    _REMOTES["channel"] = ProgressChannel
    _REMOTES["task"] = ray.remote(max_retries=0)(execute)
    return _REMOTES["channel"], _REMOTES["task"]


class RayExecutor:
    """Executor used by :class:`pcd.jobs.supervisor.Supervisor` when ``backend="ray"``."""

    name = "ray"

    def __init__(self, store: RunStore, runner: str, address: str | None = None) -> None:
        try:
            import ray
        except ImportError:
            raise ValueError("backend 'ray' needs Ray: pip install 'pcd-studio[ray]' (or 'ray[default]')") from None
        self.ray = ray
        if not ray.is_initialized():
            ray.init(address=address or os.environ.get("PCD_RAY_ADDRESS") or os.environ.get("RAY_ADDRESS"),
                     include_dashboard=False, log_to_driver=False)
        self.store, self.runner = store, runner
        channel_cls, self.task = _remotes()
        self.channel = channel_cls.remote()
        res = ray.cluster_resources()
        self.gpus = int(res.get("GPU", 0))

    def plan_slots(self, slots: int | None) -> list[Slot]:
        if slots is not None and (isinstance(slots, bool) or not isinstance(slots, int) or not 1 <= slots <= 1024):
            raise ValueError(f"slots must be an integer in [1, 1024], got {slots!r}")
        n = slots or max(1, self.gpus)
        return [Slot(f"ray:{'gpu' if self.gpus else 'cpu'}#{i}", {}, None) for i in range(n)]

    def start(self, run: dict, slot: Any) -> Any:
        opts = {"num_gpus": 1} if self.gpus else {"num_cpus": 1}
        return self.task.options(**opts).remote(self.runner, run["config"], str(self.store.run_dir(run["id"])),
                                                int(run["id"]), self.channel)

    def poll(self, job: Job) -> Outcome | None:
        ray = self.ray
        ready, _ = ray.wait([job.handle], timeout=0)
        if not ready:
            return None
        try:
            return Outcome("result", ray.get(job.handle))
        except ray.exceptions.TaskCancelledError:
            return Outcome("cancelled")
        except ray.exceptions.RayTaskError as exc:
            cause = getattr(exc, "cause", None) or exc
            if is_cancel(cause):
                return Outcome("cancelled")
            return Outcome("error", describe_error(cause))
        except ray.exceptions.RayError as exc:  # worker or node died
            return Outcome("error", f"Ray worker lost: {describe_error(exc)}")

    def request_cancel(self, job: Any) -> None:
        self.channel.request_cancel.remote(job.run_id)

    def kill(self, job: Any) -> None:
        try:
            self.ray.cancel(job.handle, force=True)
        except Exception:  # already finished
            pass

    def pump(self, jobs: dict) -> None:
        try:
            events = self.ray.get(self.channel.drain.remote(), timeout=30)
        except Exception:
            return
        for run_id, payload in events:
            job = jobs.get(run_id)
            if job is not None:
                self.store.report_progress(run_id, job.token, payload)

    def close(self) -> None:
        try:
            self.ray.kill(self.channel)
        except Exception:
            pass
