"""The local executor: each run in a fresh Python process (``pcd.jobs.child``) on this machine,
one slot per GPU (``CUDA_VISIBLE_DEVICES`` set to it) or one CPU slot, a bounded torch thread count."""
from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable
from typing import Any

from pcd import _files
from pcd.jobs.executors.base import Job, Outcome, Slot, package_root
from pcd.jobs.store import RunStore


def _gpu_count() -> int:
    """``torch.cuda.device_count()``; on a machine without an NVIDIA driver (no /dev/nvidiactl and
    no nvidia-smi) torch is not even imported, so the supervisor starts light."""
    if os.environ.get("CUDA_VISIBLE_DEVICES") == "" or not (os.path.exists("/dev/nvidiactl") or shutil.which("nvidia-smi")):
        return 0
    try:
        import torch
        return torch.cuda.device_count() if torch.cuda.is_available() else 0
    except Exception:  # pragma: no cover
        return 0


def plan_slots(slots: int | None = None, gpus: int | None = None, cpus: int | None = None) -> list[Slot]:
    """One slot per GPU (else one CPU slot); ``slots`` overrides the count (round-robin over GPUs).
    Each slot gets ``cpus // slots`` torch threads (oversubscribed threads made CPU steps 5-12x
    slower in the issue-6 probe)."""
    if slots is not None and (isinstance(slots, bool) or not isinstance(slots, int) or not 1 <= slots <= 64):
        raise ValueError(f"slots must be an integer in [1, 64], got {slots!r}")
    if gpus is None:
        gpus = _gpu_count()
    cpus = cpus or os.cpu_count() or 1
    n = slots or max(1, gpus)
    threads = str(max(1, min(8, cpus // n)) if gpus else max(1, cpus // n))
    out = []
    for i in range(n):
        env = {"PCD_TORCH_THREADS": threads, "OMP_NUM_THREADS": threads, "MKL_NUM_THREADS": threads}
        if gpus:
            g = i % gpus
            env["CUDA_VISIBLE_DEVICES"] = str(g)
            out.append(Slot(f"cuda:{g}" + (f"#{i}" if n > gpus else ""), env, g))
        else:
            env["CUDA_VISIBLE_DEVICES"] = ""
            out.append(Slot(f"cpu:{i}", env, None))
    return out


class LocalExecutor:
    """Each run in a fresh Python process (``pcd.jobs.child.main``) in its own process group."""

    name = "local"
    runs_heartbeat = True  # the child heartbeats the store itself

    def __init__(self, store: RunStore, runner: str, heartbeat_s: float = 2.0,
                 log: Callable[[str], None] | None = None) -> None:
        self.store, self.runner, self.heartbeat_s = store, runner, heartbeat_s
        self._slots: list[Slot] | None = None

    @classmethod
    def check_runner(cls, runner: str) -> None:
        """Nothing to do here: each child imports the runner itself (keeps the supervisor light)."""

    def plan_slots(self, slots: int | None) -> list[Slot]:
        """This machine's slots (they do not change while the supervisor runs)."""
        if self._slots is None:
            self._slots = plan_slots(slots)
        return self._slots

    def describe(self) -> dict:
        return {"nodes": [{"host": socket.gethostname(), "state": "ready", "home": True}]}

    def start(self, run: dict, slot: Slot) -> Any:
        # a run folder that is a link (out of the data folder) is refused: nothing is written through it
        run_dir = _files.run_folder(self.store.data_dir, run["id"])
        run_dir.mkdir(parents=True, exist_ok=True)
        env = dict(os.environ)
        env.update(slot.env)
        env["PYTHONPATH"] = os.pathsep.join(p for p in [package_root(), env.get("PYTHONPATH", "")] if p)
        cmd = [sys.executable, "-c", "import sys; from pcd.jobs.child import main; sys.exit(main())", "--data-dir", str(self.store.data_dir),
               "--run-id", str(run["id"]), "--token", run["token"], "--runner", self.runner,
               "--parent-pid", str(os.getpid()), "--heartbeat", str(self.heartbeat_s)]
        with open(run_dir / "worker.log", "ab") as log:
            log.write(f"--- attempt {run['attempts']} on {slot.name} at {time.ctime()}\n".encode())
            log.flush()
            return subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
                                    env=env, start_new_session=True, close_fds=True)

    def poll(self, job: Job) -> Outcome | None:
        rc = job.handle.poll()
        return None if rc is None else Outcome("exited", rc)

    def request_cancel(self, job: Job) -> None:
        pass  # the child reads the flag from the store itself

    def kill(self, job: Job) -> None:
        try:
            os.killpg(job.handle.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
        try:
            job.handle.wait(timeout=10)
        except subprocess.TimeoutExpired:  # pragma: no cover
            pass

    def pump(self, jobs: dict[int, Job]) -> None:
        pass

    def close(self) -> None:
        pass
