"""Helpers for the run-queue tests: a supervisor subprocess that is always stopped."""
from __future__ import annotations

import os
import signal
import subprocess
import time
from pathlib import Path

import pytest

from pcd.jobs.supervisor import WORKER_CMD

REPO = Path(__file__).resolve().parents[2]


def wait_for(pred, timeout, interval=0.05, what="condition"):
    """Poll ``pred`` until truthy (returns its value) or fail after ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while True:
        v = pred()
        if v:
            return v
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout} s waiting for {what}")
        time.sleep(interval)


def kill_tree(proc: subprocess.Popen) -> None:
    if proc.poll() is None:
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    try:
        proc.wait(timeout=10)
    except subprocess.TimeoutExpired:  # pragma: no cover
        pass


def start_worker(data_dir, *args, runner="tests.jobs.runners:quick", env=None, cwd=REPO):
    cmd = [*WORKER_CMD, "--data-dir", str(data_dir), "--poll", "0.1",
           "--runner", runner, *map(str, args)]
    e = dict(os.environ)
    e["PYTHONPATH"] = str(REPO) + os.pathsep + e.get("PYTHONPATH", "")
    e.pop("PCD_BACKEND", None)
    if env:
        e.update(env)
    log = open(Path(data_dir) / "test-worker.log", "ab")
    proc = subprocess.Popen(cmd, cwd=cwd, env=e, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    log.close()
    return proc


@pytest.fixture(scope="session")
def ray_home(tmp_path_factory):
    """One $HOME for every Ray test of the session: Ray caches its auth token (``~/.ray/auth_token``)
    in the process, so a second cluster started under another $HOME would not accept this process."""
    return tmp_path_factory.mktemp("ray-home")


@pytest.fixture
def worker(tmp_path):
    """``worker(*args, runner=...)`` starts a supervisor on ``tmp_path``; all are killed at teardown
    (their children die with them, PR_SET_PDEATHSIG)."""
    procs = []

    def _start(*args, runner="tests.jobs.runners:quick", env=None, data_dir=None):
        p = start_worker(data_dir or tmp_path, *args, runner=runner, env=env)
        procs.append(p)
        return p

    yield _start
    for p in procs:
        kill_tree(p)
    # any child still alive (it should have died with its parent) is killed too
    for pidfile in Path(tmp_path).glob("runs/*/hung.pid"):
        try:
            os.kill(int(pidfile.read_text()), signal.SIGKILL)
        except (ProcessLookupError, ValueError):
            pass
