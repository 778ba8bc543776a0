"""Measure the run queue: ``python -m pcd.jobs.bench [--runs N] [--poll S] [--json FILE]``.

With a real supervisor (default settings, one CPU slot) on a temporary data folder and tiny
digits runs of ``pcd.train.run.train``:

- enqueue -> start latency: ``started_at - created_at`` of runs submitted to an idle supervisor;
- enqueue -> first progress: until the child reported its first step (process start, imports,
  data loading);
- kill -9 recovery: the supervisor is killed with SIGKILL mid-run; time until its orphaned child is
  gone, and from the restart until the run is running again (and when it finished, resumed from
  its checkpoint).
"""
from __future__ import annotations

import argparse
import json
import os
import signal
import statistics
import subprocess
import tempfile
import time
from pathlib import Path

from pcd.jobs.executors.base import package_root
from pcd.jobs.store import RunStore
from pcd.jobs.supervisor import WORKER_CMD, supervisor_pid

TINY = {"dataset": "digits", "arch": "smallcnn", "method": "pcd", "tau": 0.02, "epochs": 1, "batch_size": 64,
        "max_train_samples": 256, "max_test_samples": 200, "export": False, "device": "cpu", "progress_every": 1}


def _wait(pred, timeout: float, what: str, interval: float = 0.02):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        v = pred()
        if v:
            return v
        time.sleep(interval)
    raise RuntimeError(f"timed out after {timeout} s waiting for {what}")


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as fh:
            return fh.read().split(")")[-1].split()[0] != "Z"
    except OSError:
        return False


def _start(data_dir: Path, poll: float) -> subprocess.Popen:
    env = dict(os.environ, PYTHONPATH=package_root())
    log = open(data_dir / "bench-worker.log", "ab")
    try:
        return subprocess.Popen([*WORKER_CMD, "--data-dir", str(data_dir), "--poll", str(poll)], env=env,
                                stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    finally:
        log.close()


def measure(runs: int = 3, poll: float = 0.5, data_dir: str | None = None) -> dict:
    if not isinstance(runs, int) or runs < 1:
        raise ValueError(f"runs must be an integer >= 1, got {runs!r}")
    tmp = Path(data_dir or tempfile.mkdtemp(prefix="pcd-bench-"))
    store = RunStore(tmp)
    procs = [_start(tmp, poll)]
    try:
        _wait(lambda: supervisor_pid(tmp), 60, "the supervisor")
        lat, wall = [], []
        for _ in range(runs):
            rid = store.submit(TINY)
            _wait(lambda rid=rid: store.get(rid)["status"] in ("done", "failed"), 300, "a tiny run", 0.05)
            r = store.get(rid)
            if r["status"] != "done":
                raise RuntimeError(f"run {rid} failed: {r['error']}")
            lat.append(r["started_at"] - r["created_at"])
            wall.append(r["finished_at"] - r["created_at"])
            _wait(lambda r=r: not r["pid"] or not _alive(r["pid"]), 30, "the child to exit")
            time.sleep(2 * poll)  # the supervisor has seen the exit: the slot is idle again
        # first progress: a run with many progress reports, observed live
        rid = store.submit({**TINY, "epochs": 30, "max_train_samples": 1024})
        t_sub = time.time()
        _wait(lambda: (store.get(rid)["progress"] or 0) > 0, 300, "first progress", 0.01)
        t_first = time.time() - t_sub
        _wait(lambda: len(store.metrics(rid)) >= 2, 300, "two epochs", 0.02)
        child = store.get(rid)["pid"]
        t_kill = time.monotonic()
        os.kill(procs[0].pid, signal.SIGKILL)
        procs[0].wait(timeout=10)
        _wait(lambda: not _alive(child), 30, "the orphaned child to die", 0.005)
        child_gone = time.monotonic() - t_kill
        t_restart = time.time()
        procs.append(_start(tmp, poll))
        _wait(lambda: store.get(rid)["attempts"] == 2 and store.get(rid)["status"] == "running", 120,
              "the run to restart", 0.01)
        restart = store.get(rid)["started_at"] - t_restart
        _wait(lambda: (store.get(rid)["progress"] or 0) > store.get(rid)["progress0"], 300, "resumed progress", 0.02)
        resumed_progress = time.time() - t_restart
        store.cancel(rid)
        _wait(lambda: store.get(rid)["status"] == "cancelled", 60, "cancel", 0.02)
        return {
            "poll_s": poll,
            "enqueue_to_start_s": {"median": statistics.median(lat), "max": max(lat), "n": len(lat)},
            "tiny_run_submit_to_done_s": {"median": statistics.median(wall)},
            "enqueue_to_first_progress_s": t_first,
            "kill9_orphan_child_gone_s": child_gone,
            "kill9_restart_to_running_s": restart,
            "kill9_restart_to_progress_s": resumed_progress,
            "cpu_count": os.cpu_count(),
            "loadavg": os.getloadavg(),
        }
    finally:
        for p in procs:
            try:
                os.killpg(p.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            p.wait(timeout=10)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m pcd.jobs.bench", description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--poll", type=float, default=0.5, help="supervisor poll interval (default 0.5 = the default)")
    ap.add_argument("--json", default=None)
    a = ap.parse_args(argv)
    res = measure(a.runs, a.poll)
    text = json.dumps(res, indent=2)
    print(text)
    if a.json:
        Path(a.json).write_text(text + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
