"""What every executor shares: slots, jobs, outcomes and the executor protocol."""
from __future__ import annotations

import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from pcd import _files


@dataclass
class Slot:
    """One place a run can execute. ``name`` is shown as the run's device ("cuda:0", "cpu:0",
    "ray:gpu0@host"); ``env`` is extra environment of a local child; ``node`` the Ray node id."""
    name: str
    env: dict[str, str]
    gpu: int | None = None
    node: str | None = None
    host: str | None = None


@dataclass
class Job:
    run_id: int
    token: str
    slot: Slot
    handle: Any
    started: float = field(default_factory=time.monotonic)  # monotonic: elapsed time only
    cancel_seen: float | None = None     # monotonic time the cancel flag was first seen
    progress_seen: Any = None            # the run's last progress marker the supervisor saw ...
    progress_mono: float = field(default_factory=time.monotonic)  # ... and when (monotonic)


@dataclass
class Outcome:
    """How a run ended, as seen by its executor.

    ``kind``: "exited" (a child process ended; it wrote its own verdict, ``value`` = exit code),
    "result" (``value`` = the result dict), "error" (the run itself crashed; ``value`` = one line),
    "lost" (the infrastructure under the run went away -- node or worker lost; the run goes back
    to the queue and resumes from its checkpoint), "cancelled"."""
    kind: str
    value: Any = None


class Executor(Protocol):
    """A run backend's executor, constructed by the supervisor as
    ``cls(store, runner, heartbeat_s=..., log=..., **options)`` (``options``: the backend's own,
    e.g. Ray's ``cpus_per_run``, its keyword parameters; the supervisor refuses any other option with
    a ``ValueError`` before it starts).

    ``runs_heartbeat``: True when a run heartbeats the store itself (a local child process); False
    when the supervisor must heartbeat for it (a Ray task has no connection to the store).
    ``check_runner(runner)``: called when the supervisor is created, so a runner the backend cannot
    use fails at once (Ray resolves it in the supervisor; local children import it themselves)."""

    name: str
    runs_heartbeat: bool

    @classmethod
    def check_runner(cls, runner: str) -> None: ...
    def plan_slots(self, slots: int | None) -> list[Slot]: ...
    def start(self, run: dict, slot: Slot) -> Any: ...
    def poll(self, job: Job) -> Outcome | None: ...
    def request_cancel(self, job: Job) -> None: ...
    def kill(self, job: Job) -> None: ...
    def pump(self, jobs: dict[int, Job]) -> None: ...
    def close(self) -> None: ...


def package_root() -> str:
    """The folder holding the ``pcd`` package (children must import the same code)."""
    return str(Path(__file__).resolve().parents[3])


def log_tail(data_dir: Any, run_id: int, n: int = 4000) -> str:
    """The last non-empty line of run ``run_id``'s ``worker.log`` among its last ``n`` bytes, read
    from the run's real folder (:func:`pcd._files.run_folder`) through the one reader
    (:func:`pcd._files.read_tail`); '' when there is none, or when the file is refused: a run folder
    that is a link, a FIFO, a device, a link out of the run folder."""
    try:
        folder = _files.run_folder(data_dir, run_id)
        text = _files.read_tail(folder / "worker.log", folder, kind="log", max_bytes=n, name="worker.log")
    except _files.FileRefused:
        return ""
    found = [ln.strip() for ln in text.splitlines()[-200:] if ln.strip()]
    return found[-1] if found else ""
