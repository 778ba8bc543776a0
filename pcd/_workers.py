"""Worker processes for CPU-bound library calls made inside the Streamlit server (the K-objective page's runs).

Why processes: NumPy's many small operations hold the GIL, so threads do not run the engine side by side.
Why not :mod:`multiprocessing` (or ``ProcessPoolExecutor``): Streamlit runs every page as the module
``__main__`` and never puts the real one back, and a *spawn* or *forkserver* child first re-runs its
parent's ``__main__`` -- a worker would execute the last page run, the app's warm-up included, which
asks for workers of its own (measured: load 12 on the 2-core machine). A *fork* would copy the server's
threads and locks. So a worker here is ``python -m pcd._workers``: a fresh interpreter that reads calls
from its stdin and writes each result to its stdout, in order, until its stdin closes (the server
stopped, or :meth:`Worker.close`).

A call is a pickled ``(name, kwargs)`` with ``name`` one of :data:`CALLS` (nothing else is run: one rule
for what a worker may do, although only its parent can write to its pipe); the answer is a pickled
``(True, result)`` or ``(False, exception)``, the exception raised again in the parent (a bad setting is
the same ``ValueError`` as in the server's thread). Each message is 8 bytes of length, then the pickle.
"""
from __future__ import annotations

import collections
import importlib
import os
import pickle
import struct
import subprocess
import sys
import threading
from concurrent.futures import Future
from pathlib import Path
from typing import IO, Any

__all__ = ["CALLS", "Worker", "WorkerDied"]

#: What a worker may run: ``"module:function"`` names.
CALLS = frozenset({"pcd.experiments.synthetic:kdw_budgets"})
_HEAD = struct.Struct("<Q")
MAX_MESSAGE = 1 << 30  # bytes; a longer length prefix is a broken pipe, not a message


class WorkerDied(RuntimeError):
    """The worker process stopped (killed, out of memory) before it answered."""


def _write(stream: IO[bytes], obj: Any) -> None:
    data = pickle.dumps(obj, protocol=pickle.HIGHEST_PROTOCOL)
    stream.write(_HEAD.pack(len(data)) + data)
    stream.flush()


def _read(stream: IO[bytes]) -> Any:
    head = stream.read(_HEAD.size)
    if len(head) < _HEAD.size:
        raise EOFError("the pipe closed")
    (size,) = _HEAD.unpack(head)
    if size > MAX_MESSAGE:
        raise EOFError(f"a message of {size} bytes (at most {MAX_MESSAGE})")
    data = stream.read(size)
    if len(data) < size:
        raise EOFError("the pipe closed inside a message")
    return pickle.loads(data)


def _check(name: Any) -> str:
    if not isinstance(name, str) or name not in CALLS:
        raise ValueError(f"a worker runs only {', '.join(sorted(CALLS))}; asked for {name!r}")
    return name


def _resolve(name: str) -> Any:
    module, func = _check(name).split(":")
    return getattr(importlib.import_module(module), func)


class Worker:
    """One worker process; :meth:`call` returns a Future of the call's result. Calls run one after the
    other, in the order made, and only one is in the worker's pipe at a time: the others wait here, so
    cancelling their Future (``Future.cancel()``) drops them. A worker that stops fails its pending calls
    with :class:`WorkerDied`."""

    def __init__(self) -> None:
        root = str(Path(__file__).resolve().parents[1])  # where ``pcd`` is imported from here
        env = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [root, os.environ.get("PYTHONPATH")])))
        self._proc = subprocess.Popen([sys.executable, "-m", "pcd._workers"], stdin=subprocess.PIPE,
                                      stdout=subprocess.PIPE, env=env, cwd=root)
        self._lock = threading.Lock()
        self._pending: collections.deque[Future] = collections.deque()  # sent: at most one
        self._queue: collections.deque[tuple[Future, tuple[str, dict]]] = collections.deque()  # not sent yet
        self._gone = False  # its answers ended (set by the reader, with the lock held)
        self._reader = threading.Thread(target=self._answers, name="pcd-worker-answers", daemon=True)
        self._reader.start()

    def alive(self) -> bool:
        return not self._gone and self._proc.poll() is None

    def call(self, name: str, **kwargs: Any) -> Future:
        """Run ``name(**kwargs)`` (``name`` in :data:`CALLS`) in the worker."""
        _check(name)  # the worker's own refusal, here first
        fut: Future = Future()
        with self._lock:
            if not self.alive():
                fut.set_exception(WorkerDied("the worker process has stopped"))
                return fut
            self._queue.append((fut, (name, kwargs)))
            self._send_next()
        return fut

    def _send_next(self) -> None:
        """With the lock held: send the next call not cancelled, unless one is in the worker."""
        while not self._pending and self._queue:
            fut, message = self._queue.popleft()
            if not fut.set_running_or_notify_cancel():
                continue  # cancelled while it waited here
            self._pending.append(fut)
            try:
                assert self._proc.stdin is not None
                _write(self._proc.stdin, message)
            except (OSError, ValueError):  # the pipe is closed: the process is gone
                self._pending.remove(fut)
                fut.set_exception(WorkerDied("the worker process has stopped"))

    def _answers(self) -> None:
        assert self._proc.stdout is not None
        while True:
            try:
                ok, value = _read(self._proc.stdout)
            except (EOFError, OSError, pickle.UnpicklingError):
                break
            with self._lock:
                fut = self._pending.popleft() if self._pending else None
                self._send_next()
            if fut is not None:
                fut.set_result(value) if ok else fut.set_exception(value)
        with self._lock:
            self._gone = True  # (a call made from now on fails at once: nobody would read its answer)
            sent, self._pending = list(self._pending), collections.deque()
            waiting, self._queue = [f for f, _ in self._queue], collections.deque()
        for fut in sent:
            fut.set_exception(WorkerDied("the worker process stopped before it answered"))
        for fut in waiting:
            if fut.set_running_or_notify_cancel():
                fut.set_exception(WorkerDied("the worker process stopped before it answered"))

    def close(self, timeout: float = 5.0) -> None:
        """Close its stdin (it finishes the call under way and exits); killed after ``timeout`` s."""
        try:
            if self._proc.stdin is not None:
                self._proc.stdin.close()
        except OSError:
            pass
        try:
            self._proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self._proc.kill()
            self._proc.wait(timeout=timeout)
        self._reader.join(timeout=timeout)

    def kill(self) -> None:
        """Stop it at once (tests: a worker that dies)."""
        self._proc.kill()
        self._proc.wait(timeout=10)


def _serve(stdin: IO[bytes], stdout: IO[bytes]) -> None:
    while True:
        try:
            name, kwargs = _read(stdin)
        except EOFError:
            return
        try:
            answer = (True, _resolve(name)(**kwargs))
        except Exception as exc:  # a bad setting: raised again in the parent
            answer = (False, exc)
        try:
            _write(stdout, answer)
        except (pickle.PicklingError, TypeError, AttributeError) as exc:  # an unpicklable result or exception
            _write(stdout, (False, RuntimeError(f"the worker could not send its answer: {exc}")))


if __name__ == "__main__":
    out = sys.stdout.buffer
    sys.stdout = sys.stderr  # a print in a library call must not corrupt the answers
    _serve(sys.stdin.buffer, out)
