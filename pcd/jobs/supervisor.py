"""The supervisor (``python -m pcd worker``): one per machine and data folder, it takes queued runs
and executes each in a fresh child process (or, with ``backend="ray"``, as a Ray task).

- **One per data folder**: an exclusive ``flock`` on ``<data_dir>/supervisor.lock`` (released by
  the kernel when the process dies, even by ``kill -9``). The file holds the owner's pid.
- **Slots**: one per GPU (``torch.cuda.device_count()``) with ``CUDA_VISIBLE_DEVICES`` set to that
  GPU, else one CPU slot; ``slots=N`` overrides. Each slot gets ``cpu_count // slots`` torch
  threads (oversubscribed threads made CPU steps 5-12x slower in the issue-6 probe).
- **Recovery**: at start-up every run still marked running belongs to a dead supervisor (we hold
  the lock) and is requeued -- the runner resumes from ``runs/<id>/checkpoint.pt`` -- or failed
  once it used its ``max_attempts``.
- **Child exit without a verdict** (segfault, OOM killer, ``os._exit``): the run is failed with
  the exit code and the last line of its log; the slot moves on to the next run.
- **Cancel**: a cancel flag in the store; the child stops at its next ``should_stop`` check; after
  ``cancel_grace_s`` the supervisor kills the child's process group (GPU memory is freed with it).
- **Watchdog**: a run without progress for ``stall_timeout_s`` is killed and failed.
- **Slots follow the machine / cluster**: ``executor.plan_slots`` is re-read every ``resync_s``;
  slots are added and retired as Ray nodes join and leave (``cluster.json`` in the data folder
  says what the supervisor sees). A run whose node or worker is lost (``Outcome("lost")``) goes
  back to the queue, counted against ``max_attempts`` ("infrastructure lost: ..."); a run that
  crashes by itself fails.
- **Metrics reconcile**: the per-epoch rows the runner writes to ``runs/<id>/metrics.jsonl`` are
  copied into the store when a progress message did not arrive (every 5 s and at the verdict).
- **Lifetime**: with ``parent_pid`` (what :func:`ensure_supervisor` passes unless detached) the
  supervisor stops as soon as that process is gone.
"""
from __future__ import annotations

import fcntl
import inspect
import json
import os
import signal
import socket
import sqlite3
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from pcd import _files
from pcd import _validate as V
from pcd.jobs.executors import executor_class
from pcd.jobs.executors.base import Job, Outcome, Slot, log_tail, package_root
from pcd.jobs.placement import CLUSTER_NAME
from pcd.jobs.store import RunStore, StorageFault, StoreError, default_data_dir, rebuild_command, storage_fault

LOCK_NAME = "supervisor.lock"
# `python -m pcd worker` without importing the other CLI commands (some import torch at start-up)
WORKER_CMD = [sys.executable, "-c", "import sys; from pcd.cli.worker import main; sys.exit(main())"]


class SupervisorRunning(RuntimeError):
    """Another supervisor holds this data folder's lock."""

    def __init__(self, pid: int | None, path: Path) -> None:
        super().__init__(f"a supervisor (pid {pid}) already serves {path.parent}")
        self.pid = pid


# ---- the one-per-machine lock ----------------------------------------------------------------

class SupervisorLock:
    def __init__(self, data_dir: str | os.PathLike) -> None:
        self.path = Path(data_dir) / LOCK_NAME
        self.fd: int | None = None

    def acquire(self) -> SupervisorLock:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)  # not inherited by children
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            raise SupervisorRunning(supervisor_pid(self.path.parent), self.path) from None
        os.ftruncate(fd, 0)
        os.write(fd, f"{os.getpid()}\n".encode())
        self.fd = fd
        return self

    def release(self) -> None:
        if self.fd is not None:
            try:
                os.ftruncate(self.fd, 0)
                fcntl.flock(self.fd, fcntl.LOCK_UN)
            finally:
                os.close(self.fd)
                self.fd = None

    def __enter__(self) -> SupervisorLock:
        return self.acquire()

    def __exit__(self, *exc: Any) -> None:
        self.release()


def supervisor_pid(data_dir: str | os.PathLike | None = None) -> int | None:
    """The pid of the live supervisor serving ``data_dir``, or None when none holds the lock."""
    path = Path(data_dir if data_dir is not None else default_data_dir()) / LOCK_NAME
    if not path.exists():
        return None
    fd = os.open(path, os.O_RDONLY)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
        except BlockingIOError:
            text = os.read(fd, 64).decode(errors="replace").strip()
            return int(text) if text.isdigit() else -1
        fcntl.flock(fd, fcntl.LOCK_UN)
        return None
    finally:
        os.close(fd)


def ensure_supervisor(data_dir: str | os.PathLike | None = None, *, slots: int | None = None,
                      backend: str | None = None, runner: str | None = None, detach: bool = False) -> dict:
    """Start a background supervisor for ``data_dir`` unless one is alive. Returns
    ``{"pid": int, "started": bool}``. Safe to call on every page load: a second supervisor that
    loses the race for the lock exits at once. The app calls this, so running the app is enough.

    By default the supervisor lives as long as the caller: it watches the caller's pid and stops
    (its running runs go back to the queue and resume next time) within a fraction of a second of
    the caller's end, however it ends -- Ctrl-C, a ``kill`` of the app process alone, a crash.
    ``detach=True`` starts it in its own session without that watch, so it outlives the app
    (prefer systemd for that: ``deploy/pcd-worker.service``)."""
    data_dir = Path(data_dir if data_dir is not None else default_data_dir())
    pid = supervisor_pid(data_dir)
    if pid:
        return {"pid": pid, "started": False}
    data_dir.mkdir(parents=True, exist_ok=True)
    cmd = [*WORKER_CMD, "--data-dir", str(data_dir), "--quiet-if-running"]
    if slots is not None:
        cmd += ["--slots", str(int(slots))]
    if backend:
        cmd += ["--backend", backend]
    if runner:
        cmd += ["--runner", runner]
    if not detach:
        cmd += ["--parent-pid", str(os.getpid())]
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in [package_root(), env.get("PYTHONPATH", "")] if p)
    with open(data_dir / "supervisor.log", "ab") as log:
        proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
                                env=env, start_new_session=bool(detach), close_fds=True)
    # wait (bounded) until it holds the lock, so callers see it at once
    deadline = time.monotonic() + 10.0
    while time.monotonic() < deadline:
        pid = supervisor_pid(data_dir)
        if pid or proc.poll() is not None:
            break
        time.sleep(0.05)
    return {"pid": pid or proc.pid, "started": proc.poll() is None}


# ---- the supervisor --------------------------------------------------------------------------

class Supervisor:
    """Serve the queue of one data folder until stopped (see the module docstring)."""

    def __init__(self, data_dir: str | os.PathLike | None = None, *, slots: int | None = None,
                 runner: str | None = None, backend: str | None = None, poll_s: float = 0.5,
                 stall_timeout_s: float = 900.0, cancel_grace_s: float = 5.0, heartbeat_s: float = 2.0,
                 resync_s: float = 2.0, parent_pid: int | None = None, options: dict | None = None,
                 log: Callable[[str], None] | None = None) -> None:
        backend = backend or os.environ.get("PCD_BACKEND") or "local"
        self.executor_class = executor_class(backend)  # ValueError naming the registered backends
        runner = runner or os.environ.get("PCD_RUNNER")
        if not runner:
            raise ValueError("no runner: give runner='package.module:function' or set $PCD_RUNNER "
                             "(python -m pcd worker hands pcd.train's)")
        if not isinstance(runner, str) or runner.count(":") != 1:
            raise ValueError(f"runner must look like 'package.module:function', got {runner!r}")
        self.executor_class.check_runner(runner)
        for name, v, lo in (("poll_s", poll_s, 0.01), ("stall_timeout_s", stall_timeout_s, 1.0),
                            ("cancel_grace_s", cancel_grace_s, 0.0), ("heartbeat_s", heartbeat_s, 0.05),
                            ("resync_s", resync_s, 0.05)):
            V.number(v, name, low=lo)
        self.data_dir = Path(data_dir if data_dir is not None else default_data_dir())
        self.store = RunStore(self.data_dir)
        self.backend, self.runner = backend, runner
        self.slot_count = slots
        self.poll_s, self.stall_timeout_s = float(poll_s), float(stall_timeout_s)
        self.cancel_grace_s, self.heartbeat_s = float(cancel_grace_s), float(heartbeat_s)
        self.worker_id = f"{socket.gethostname()}:{os.getpid()}"
        self.jobs: dict[int, Job] = {}
        self._log = log or (lambda msg: print(msg, flush=True))
        self._stop = threading.Event()
        if parent_pid is not None and (isinstance(parent_pid, bool) or not isinstance(parent_pid, int) or parent_pid < 1):
            raise ValueError(f"parent_pid must be a process id (integer >= 1), got {parent_pid!r}")
        if options is not None and not isinstance(options, dict):
            raise ValueError(f"options must be a dict of the backend's options, got {V.show(options)}")
        takes = {k for k, p in inspect.signature(self.executor_class).parameters.items()
                 if p.kind is p.KEYWORD_ONLY or (p.kind is p.POSITIONAL_OR_KEYWORD and k not in ("store", "runner"))}
        unknown = sorted(set(options or {}) - takes - {"heartbeat_s", "log"})
        if unknown:
            raise ValueError(f"backend {backend!r} takes no option {', '.join(unknown)}; its options: "
                             f"{', '.join(sorted(takes - {'heartbeat_s', 'log'})) or 'none'}")
        self.resync_s, self.parent_pid = float(resync_s), parent_pid
        self.options = dict(options or {})
        self.slots: list[Slot] = []
        self.executor: Any = None
        self._next_resync = self._next_reconcile = 0.0
        self._cluster_info: dict | None = None
        self._noted: set[tuple[int, str]] = set()

    def log(self, msg: str) -> None:
        self._log(f"[pcd worker {time.strftime('%H:%M:%S')}] {msg}")

    def stop(self) -> None:
        self._stop.set()

    # -- main loop --

    def run(self, *, idle_exit_s: float | None = None, max_seconds: float | None = None) -> int:
        idle_exit_s = V.number(idle_exit_s, "idle_exit_s", low=0.0, allow_none=True)
        max_seconds = V.number(max_seconds, "max_seconds", low=0.0, allow_none=True)
        lock = SupervisorLock(self.data_dir).acquire()
        try:
            self.executor = self.executor_class(self.store, self.runner, heartbeat_s=self.heartbeat_s,
                                                log=self.log, **self.options)
            self._resync(force=True)
            reaped = self.store.reap_orphans("the previous supervisor died while this run was running")
            for rid, st in reaped.items():
                self.log(f"recovered orphaned run {rid}: {st}")
            self.log(f"serving {self.data_dir} with {len(self.slots)} slot(s) "
                     f"[{', '.join(s.name for s in self.slots)}], backend {self.backend}, runner {self.runner}")
            if threading.current_thread() is threading.main_thread():
                for sig in (signal.SIGTERM, signal.SIGINT):
                    signal.signal(sig, lambda *_: self._stop.set())
            if self.parent_pid is not None:
                threading.Thread(target=self._watch_parent, daemon=True, name="pcd-parent-watch").start()
            t0 = idle_since = time.monotonic()
            while not self._stop.is_set():
                self._guarded_tick()
                now = time.monotonic()
                if self.jobs:
                    idle_since = now
                if idle_exit_s is not None and not self.jobs and now - idle_since >= idle_exit_s \
                        and not self.store.queue_order():
                    self.log("idle; exiting")
                    break
                if max_seconds is not None and now - t0 >= max_seconds:
                    break
                self._stop.wait(self.poll_s)
            self.shutdown()
            return 0
        finally:
            if self.executor is not None:
                self.executor.close()
            lock.release()

    def _watch_parent(self) -> None:
        """Stop (gracefully: runs go back to the queue) as soon as the process that started us is
        gone, however it ended -- a ``kill`` of it alone, a crash, ``os._exit``. (``PR_SET_PDEATHSIG``
        would fire when the *thread* that started us ends, e.g. a Streamlit script thread.)"""
        while not self._stop.wait(0.2):
            if os.getppid() != self.parent_pid:
                self.log(f"the process that started this supervisor (pid {self.parent_pid}) is gone; stopping")
                self._stop.set()
                return

    def _resync(self, force: bool = False) -> None:
        """Re-plan the slots (a Ray cluster's nodes come and go); log what changed; cluster.json."""
        now = time.monotonic()
        if not force and now < self._next_resync:
            return
        self._next_resync = now + self.resync_s
        new = self.executor.plan_slots(self.slot_count)
        old_names, new_names = [s.name for s in self.slots], [s.name for s in new]
        self.slots = new
        if old_names != new_names and not force:
            added = [n for n in new_names if n not in old_names]
            gone = [n for n in old_names if n not in new_names]
            self.log(f"slots now {len(new)}" + (f"; added {', '.join(added)}" if added else "")
                     + (f"; retired {', '.join(gone)}" if gone else ""))
        self._write_cluster()

    def _write_cluster(self) -> None:
        """``<data_dir>/cluster.json`` (when it changed): this supervisor's slots and (on Ray) nodes,
        for the page and ``python -m pcd runs cluster``."""
        info: dict = {"backend": self.backend, "pid": os.getpid(), "worker": self.worker_id,
                      "slots": [s.name for s in self.slots]}
        describe = getattr(self.executor, "describe", None)
        if describe is not None:
            info.update(describe())
        if info == self._cluster_info:
            return
        self._cluster_info = info
        info = dict(info, updated=time.time())
        tmp = self.data_dir / f".cluster.json.{os.getpid()}"
        try:
            tmp.write_text(json.dumps(info, indent=1), encoding="utf-8")
            tmp.replace(self.data_dir / CLUSTER_NAME)
        except OSError as exc:  # a status file never stops the supervisor
            self.log(f"could not write {CLUSTER_NAME}: {exc}")

    def reconcile(self, run_id: int, token: str | None = None) -> int:
        """Copy the per-epoch rows of ``runs/<id>/metrics.jsonl`` that the store lacks (a progress
        message that never arrived) into the store. Returns how many rows were added.

        Whatever goes wrong reading that one run's file (too large, too deeply nested, not UTF-8,
        a FIFO, ...) is caught here, logged and recorded on the run (its ``error``, with ``token``)
        and the queue goes on: one run's files never stop the supervisor."""
        path = self.store.run_dir(run_id) / "metrics.jsonl"
        try:
            folder = _files.run_folder(self.data_dir, run_id)  # a run folder that is a link is refused
            if not os.path.lexists(path):
                return 0
            rows, bad = [], None
            lines = _files.read_text(path, folder, kind="metrics", name="metrics.jsonl").split("\n")
            for i, ln in enumerate(lines):
                if not ln.strip():
                    continue
                try:
                    row = V.parse_json(ln, "metrics row", max_bytes=V.MAX_JSON_BYTES)
                except V.Invalid as exc:
                    if i < len(lines) - 1 and bad is None:  # a complete line (the last may be mid-write)
                        bad = f"line {i + 1} of {path} skipped: {exc}"
                    continue
                if isinstance(row, dict):
                    rows.append(row)
            n = self.store.add_metrics(run_id, rows)
            if bad is not None and (run_id, bad) not in self._noted:  # once, not every 5 s
                self._noted.add((run_id, bad))
                self.log(f"run {run_id}: {bad}")
                if token is not None:
                    self.store.note(run_id, token, bad)
        except (StoreError, sqlite3.DatabaseError):
            raise  # the database itself: _guarded_tick reports it
        except Exception as exc:
            why = f"could not read {path}: {V.show(str(exc), 300)}"
            if (run_id, why) in self._noted:
                return 0
            self._noted.add((run_id, why))
            self.log(f"run {run_id}: {why}")
            if token is not None:
                try:
                    self.store.note(run_id, token, why)
                except sqlite3.Error:
                    pass
            return 0
        if n:
            self.log(f"run {run_id}: {n} metric row(s) reconciled from metrics.jsonl")
        return n

    def _guarded_tick(self) -> None:
        """One tick, after checking that the database file is still the one opened. A deleted,
        replaced or corrupt database stops the supervisor with one line (:class:`StoreError`);
        children are stopped, their run folders keep checkpoints and results for the rebuild."""
        try:
            self.store.check_file()
            self.tick()
        except (StoreError, sqlite3.DatabaseError) as exc:
            for job in list(self.jobs.values()):
                self.executor.kill(job)
            self.jobs.clear()
            if isinstance(exc, StoreError):
                raise
            fault = storage_fault(exc, self.store.path)  # a full disk or a read-only mount is not damage
            if fault is not None:
                raise StorageFault(f"{fault}; the supervisor stopped (its runs resume when it restarts)") from None
            raise StoreError(f"run database {self.store.path} failed while in use ({exc}); stopped. Rebuild "
                             f"it from the run folders with: {rebuild_command(self.data_dir)}") from None

    def tick(self) -> None:
        self.executor.pump(self.jobs)
        now = time.monotonic()
        if now >= self._next_reconcile:
            self._next_reconcile = now + 5.0
            for job in list(self.jobs.values()):
                self.reconcile(job.run_id, job.token)
        for job in list(self.jobs.values()):
            self._check(job)
        self._resync()  # after the checks: a node that just lost a run gets no new one
        busy = {j.slot.name for j in self.jobs.values()}
        for slot in self.slots:
            if slot.name in busy or self._stop.is_set():
                continue
            run = self.store.claim(self.worker_id, slot.name)
            if run is None:
                break
            try:
                handle = self.executor.start(run, slot)
            except Exception as exc:
                self.store.finish(run["id"], run["token"], "failed", error=f"could not start the run: {exc}")
                self.log(f"run {run['id']} failed to start: {exc}")
                continue
            self.jobs[run["id"]] = Job(run["id"], run["token"], slot, handle)
            self.log(f"run {run['id']} started on {slot.name} (attempt {run['attempts']})")

    def _check(self, job: Job) -> None:
        out = self.executor.poll(job)
        if out is not None:
            self.executor.pump(self.jobs)  # the last progress events before the verdict
            self._finish(job, out)
            return
        try:
            row = self.store.get(job.run_id)
        except ValueError:  # deleted under us (cannot happen for running runs, but be safe)
            self.executor.kill(job)
            self.jobs.pop(job.run_id, None)
            return
        if row["status"] != "running" or row["token"] != job.token:
            return  # the child wrote its verdict; we will see it exit on a later tick
        now = time.monotonic()  # elapsed time only: a wall-clock step never fails a healthy run
        if not self.executor.runs_heartbeat:  # e.g. a Ray task: the supervisor heartbeats for it
            self.store.heartbeat(job.run_id, job.token)
        marker = (row.get("progress_at"), row.get("started_at"), row.get("pid"))
        if marker != job.progress_seen:  # progress (or the worker coming up) since the last look
            job.progress_seen, job.progress_mono = marker, now
        if row["cancel_requested"]:
            self.executor.request_cancel(job)
            if job.cancel_seen is None:
                job.cancel_seen = now
            elif now - job.cancel_seen >= self.cancel_grace_s:
                self.executor.kill(job)
                self.store.finish(job.run_id, job.token, "cancelled",
                                  error=f"cancelled by user (worker killed after {self.cancel_grace_s:g} s)")
                self.jobs.pop(job.run_id, None)
                self.log(f"run {job.run_id} cancelled (killed)")
            return
        if now - job.progress_mono > self.stall_timeout_s:
            self.executor.kill(job)
            self.store.finish(job.run_id, job.token, "failed",
                              error=f"watchdog: no progress for {now - job.progress_mono:.0f} s "
                                    f"(limit {self.stall_timeout_s:g} s); worker killed")
            self.jobs.pop(job.run_id, None)
            self.log(f"run {job.run_id} failed: no progress (watchdog)")

    def _finish(self, job: Job, out: Outcome) -> None:
        self.jobs.pop(job.run_id, None)
        self.reconcile(job.run_id, job.token)
        if out.kind in ("lost", "released"):
            if out.kind == "lost":
                new = self.store.requeue_or_fail(job.run_id, job.token, str(out.value))
            else:
                new = self.store.release(job.run_id, job.token, str(out.value))
            self._note(job.run_id, f"--- attempt on {job.slot.name}: {out.value} -> {new}")
            self.log(f"run {job.run_id}: {out.value} -> {new}")
            self._next_resync = 0.0
            return
        if out.kind == "result":
            self.store.finish(job.run_id, job.token, "done", result=out.value)
        elif out.kind == "cancelled":
            self.store.finish(job.run_id, job.token, "cancelled", error="cancelled by user")
        elif out.kind == "error":
            self.store.finish(job.run_id, job.token, "failed", error=str(out.value))
        else:  # a child process exited: did it leave a verdict?
            try:
                row = self.store.get(job.run_id)
            except ValueError:
                return
            if row["status"] == "running" and row["token"] == job.token:
                if row["cancel_requested"]:
                    self.store.finish(job.run_id, job.token, "cancelled", error="cancelled by user")
                else:
                    rc = out.value
                    why = f"killed by signal {-rc}" if isinstance(rc, int) and rc < 0 else f"exit code {rc}"
                    try:
                        tail = log_tail(self.data_dir, job.run_id)
                    except Exception as exc:  # one run's log never stops the queue
                        tail = f"(its worker.log could not be read: {V.show(str(exc), 200)})"
                    self.store.finish(job.run_id, job.token, "failed",
                                      error=f"worker process died ({why})" + (f": {tail}" if tail else ""))
        st = self.store.get(job.run_id)["status"] if self._exists(job.run_id) else "deleted"
        self.log(f"run {job.run_id} finished: {st}")

    def _note(self, run_id: int, line: str) -> None:
        try:
            folder = _files.run_folder(self.data_dir, run_id)  # never through a link out of the data folder
            with open(folder / "worker.log", "a", encoding="utf-8") as fh:
                fh.write(f"{line} at {time.ctime()}\n")
        except (OSError, ValueError):
            pass

    def _exists(self, run_id: int) -> bool:
        try:
            self.store.get(run_id)
            return True
        except ValueError:
            return False

    def shutdown(self) -> None:
        """Graceful stop (SIGTERM/SIGINT): stop children and put their runs back in the queue
        without counting the attempt; they resume from their checkpoints next time."""
        for job in list(self.jobs.values()):
            self.executor.kill(job)
            new = self.store.release(job.run_id, job.token, "supervisor stopped")
            self.log(f"run {job.run_id} released on shutdown: {new}")
        self.jobs.clear()
