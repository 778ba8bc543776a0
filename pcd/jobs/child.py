"""The child process that executes one claimed run: ``python -m pcd.jobs.child --data-dir D
--run-id N --token T --runner module:function``.

It is started by the supervisor in a fresh process (fresh CUDA context, ``CUDA_VISIBLE_DEVICES``
set to its slot's GPU, a bounded torch thread count). It heartbeats from a background thread,
writes progress and per-epoch metrics through ``on_progress``, answers ``should_stop`` from the
run's cancel flag, and marks its own run done / failed / cancelled. It dies with its supervisor
(``PR_SET_PDEATHSIG`` plus a parent check in the heartbeat thread), so a ``kill -9`` of the
supervisor leaves no orphan training on the GPU; its writes are conditioned on the claim token, so
a late write from a dying child can never touch a requeued run.
"""
from __future__ import annotations

import argparse
import ctypes
import importlib
import os
import signal
import socket
import sys
import threading
import time
import traceback
from collections.abc import Callable
from typing import Any

from pcd.jobs.store import RunStore


class Cancelled(Exception):
    """Raised by runners (or recognised by name, e.g. ``pcd.train.run.Cancelled``) on cancel."""


def is_cancel(exc: BaseException) -> bool:
    return isinstance(exc, Cancelled) or type(exc).__name__ == "Cancelled"


def resolve_runner(spec: str) -> Callable[..., dict]:
    """``"package.module:function"`` -> the function; ValueError with what is wrong otherwise."""
    if not isinstance(spec, str) or spec.count(":") != 1:
        raise ValueError(f"runner must look like 'package.module:function', got {spec!r}")
    mod_name, fn_name = spec.split(":")
    try:
        mod = importlib.import_module(mod_name)
    except ImportError as exc:
        raise ValueError(f"runner module {mod_name!r} cannot be imported: {exc}") from None
    fn = getattr(mod, fn_name, None)
    if not callable(fn):
        raise ValueError(f"runner {spec!r}: module {mod_name!r} has no function {fn_name!r}")
    return fn


def describe_error(exc: BaseException) -> str:
    """One line for the runs table: the exception type and its first message line."""
    name = type(exc).__name__
    msg = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
    if name == "OutOfMemoryError" or "out of memory" in msg.lower():
        return f"out of memory ({name}): {msg}"[:2000]
    return f"{name}: {msg}"[:2000] if msg else name


def _die_with_parent() -> None:
    """Ask Linux to SIGKILL us when the supervisor dies (no-op elsewhere)."""
    if not sys.platform.startswith("linux"):
        return
    try:
        libc = ctypes.CDLL("libc.so.6", use_errno=True)
        PR_SET_PDEATHSIG = 1
        libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
    except OSError:  # pragma: no cover
        pass


def _set_threads() -> None:
    n = os.environ.get("PCD_TORCH_THREADS")
    if not n:
        return
    try:
        import torch
        torch.set_num_threads(max(1, int(n)))
        try:
            torch.set_num_interop_threads(1)
        except RuntimeError:
            pass
    except ImportError:  # pragma: no cover
        pass


def execute(data_dir: str, run_id: int, token: str, runner: str, *, parent_pid: int | None = None,
            heartbeat_s: float = 2.0, stop_poll_s: float = 0.5) -> int:
    store = RunStore(data_dir)
    run = store.get(run_id)
    if run["status"] != "running" or run["token"] != token:
        print(f"run {run_id} is not ours to execute (status {run['status']})", file=sys.stderr)
        return 3
    gpus = os.environ.get("CUDA_VISIBLE_DEVICES")
    store.set_pid(run_id, token, os.getpid(), placement={
        "host": socket.gethostname(), "pid": os.getpid(), "gpu": gpus if gpus else None, "backend": "local"})
    out_dir = store.run_dir(run_id)
    out_dir.mkdir(parents=True, exist_ok=True)
    lock = threading.Lock()  # one connection shared by the heartbeat thread and the runner
    stop_evt = threading.Event()

    def beat() -> None:
        while not stop_evt.wait(heartbeat_s):
            if parent_pid is not None and os.getppid() != parent_pid:
                os._exit(70)  # supervisor died: never train on as an orphan
            with lock:
                try:
                    mine = store.heartbeat(run_id, token)
                except Exception:  # a busy database is not a reason to die
                    continue
            if not mine and not stop_evt.is_set():
                os._exit(71)  # the run was taken from us (requeued or finished by the supervisor)

    threading.Thread(target=beat, daemon=True, name="pcd-heartbeat").start()
    last_check: list[Any] = [0.0, False]  # [last poll time, stop requested]

    def should_stop() -> bool:
        now = time.monotonic()
        if not last_check[1] and now - last_check[0] >= stop_poll_s:
            last_check[0] = now
            with lock:
                last_check[1] = store.cancel_requested(run_id)
        return last_check[1]

    def on_progress(payload: dict) -> None:
        # a failed progress write never fails the run: the epoch rows are in metrics.jsonl too and
        # the supervisor reconciles them into the store
        with lock:
            try:
                store.report_progress(run_id, token, payload)
            except Exception as exc:
                print(f"progress write failed (the run goes on): {describe_error(exc)}", file=sys.stderr, flush=True)

    try:
        fn = resolve_runner(runner)
        result = fn(dict(run["config"]), out_dir=str(out_dir), on_progress=on_progress, should_stop=should_stop)
        if not isinstance(result, dict):
            raise TypeError(f"runner returned {type(result).__name__}, expected a result dict")
    except BaseException as exc:
        stop_evt.set()
        with lock:
            if is_cancel(exc):
                store.finish(run_id, token, "cancelled", error="cancelled by user")
                return 0
            traceback.print_exc()
            store.finish(run_id, token, "failed", error=describe_error(exc))
        return 1
    stop_evt.set()
    with lock:
        store.finish(run_id, token, "done", result=result)
    return 0


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m pcd.jobs.child")
    p.add_argument("--data-dir", required=True)
    p.add_argument("--run-id", type=int, required=True)
    p.add_argument("--token", required=True)
    p.add_argument("--runner", required=True)
    p.add_argument("--parent-pid", type=int, default=None)
    p.add_argument("--heartbeat", type=float, default=2.0)
    a = p.parse_args(argv)
    _die_with_parent()
    if a.parent_pid is not None and os.getppid() != a.parent_pid:
        return 70  # the supervisor died before we set PDEATHSIG
    _set_threads()
    return execute(a.data_dir, a.run_id, a.token, a.runner, parent_pid=a.parent_pid, heartbeat_s=a.heartbeat)


if __name__ == "__main__":
    sys.exit(main())
