"""The supervisor's failure handling, end to end with real processes (stand-in runners from
``tests/jobs/runners.py``; the real pruning runs are covered in ``test_integration_train.py``)."""
from __future__ import annotations

import os
import signal
import subprocess
import time

import pytest

from pcd.cli.worker import main as worker_main
from pcd.jobs import RunStore, ensure_supervisor, plan_slots, supervisor_pid
from pcd.jobs.supervisor import WORKER_CMD
from tests.jobs.conftest import REPO, kill_tree, wait_for

RUNNER = "tests.jobs.runners:dispatch"


def _alive(pid):
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    try:  # a zombie is dead for our purposes
        with open(f"/proc/{pid}/stat") as fh:
            return fh.read().split(")")[-1].split()[0] != "Z"
    except OSError:
        return False


def _status(store, rid):
    return store.get(rid)["status"]


def test_plan_slots():
    assert [s.name for s in plan_slots(None, gpus=0, cpus=2)] == ["cpu:0"]
    two = plan_slots(2, gpus=0, cpus=2)
    assert [s.env["PCD_TORCH_THREADS"] for s in two] == ["1", "1"]
    assert all(s.env["CUDA_VISIBLE_DEVICES"] == "" for s in two)
    gpu = plan_slots(None, gpus=3, cpus=48)
    assert [s.env["CUDA_VISIBLE_DEVICES"] for s in gpu] == ["0", "1", "2"]
    assert [s.name for s in gpu] == ["cuda:0", "cuda:1", "cuda:2"]
    with pytest.raises(ValueError, match="slots"):
        plan_slots(0)


def test_runs_in_queue_order_with_slot_env_and_low_latency(tmp_path, worker):
    store = RunStore(tmp_path)
    a = store.submit({"epochs": 2, "sleep": 0.05})
    c = store.submit({"epochs": 2, "sleep": 0.05}, priority=1)
    worker(runner=RUNNER)
    wait_for(lambda: all(_status(store, i) == "done" for i in (a, c)), 60, what="2 runs done")
    runs = {i: store.get(i) for i in (a, c)}
    assert runs[c]["started_at"] < runs[a]["started_at"]  # priority first, then FIFO
    for r in runs.values():
        assert r["result"]["cuda_visible_devices"] == ""
        assert r["result"]["torch_threads_env"] == str(max(1, os.cpu_count() // 1))
        assert [m["epoch"] for m in store.metrics(r["id"])] == [1, 2]
    # enqueue -> start latency with an idle supervisor (poll 0.1 s; generous bound for a loaded CI box)
    wait_for(lambda: not _alive(runs[a]["pid"]), 20, what="the last child exited (slot free)")
    time.sleep(0.3)
    d = store.submit({"epochs": 1, "sleep": 0.01})
    wait_for(lambda: _status(store, d) == "done", 30, what="run d done")
    r = store.get(d)
    assert r["started_at"] - r["created_at"] < 3.0


def test_two_slots_run_concurrently(tmp_path, worker):
    store = RunStore(tmp_path)
    ids = store.submit_many([{"epochs": 2, "sleep": 0.6}, {"epochs": 2, "sleep": 0.6},
                             {"behaviour": "torch_threads"}])
    worker("--slots", "2", runner=RUNNER)
    wait_for(lambda: all(_status(store, i) == "done" for i in ids), 90, what="the runs done")
    r1, r2, r3 = (store.get(i) for i in ids)
    assert {r1["device"], r2["device"]} == {"cpu:0", "cpu:1"}
    assert r1["started_at"] < r2["finished_at"] and r2["started_at"] < r1["finished_at"]  # overlapped
    # each child gets cpu_count // slots torch threads (oversubscription made steps 5-12x slower)
    assert r3["result"] == {"threads": max(1, os.cpu_count() // 2), "cuda_visible_devices": ""}


def test_crash_oom_and_hard_death_fail_and_the_next_run_proceeds(tmp_path, worker):
    store = RunStore(tmp_path)
    crash, oom, die, ok = store.submit_many(
        [{"behaviour": "crash"}, {"behaviour": "oom"}, {"behaviour": "die"}, {"behaviour": "quick", "epochs": 1}])
    worker(runner=RUNNER)
    wait_for(lambda: _status(store, ok) == "done", 120, what="the last run done")  # 4 child start-ups, loaded box
    e = {i: store.get(i) for i in (crash, oom, die)}
    assert all(r["status"] == "failed" for r in e.values())
    assert e[crash]["error"] == "RuntimeError: boom: simulated crash in epoch 1"
    assert e[oom]["error"].startswith("out of memory (OutOfMemoryError): CUDA out of memory")
    assert "worker process died (exit code 13)" in e[die]["error"] and "about to die hard" in e[die]["error"]
    assert (store.run_dir(crash) / "worker.log").read_text().count("Traceback") >= 1


def test_cancel_running_run_stops_within_seconds(tmp_path, worker):
    store = RunStore(tmp_path)
    rid = store.submit({"epochs": 200, "sleep": 0.2})
    nxt = store.submit({"epochs": 1, "sleep": 0.01})
    worker(runner=RUNNER)
    wait_for(lambda: store.get(rid)["epoch"], 30, what="first epoch")
    pid = store.get(rid)["pid"]
    assert pid and _alive(pid)
    t0 = time.monotonic()
    assert store.cancel(rid) == "cancelling"
    wait_for(lambda: _status(store, rid) == "cancelled", 10, what="run cancelled")
    assert time.monotonic() - t0 < 5.0  # the child stops itself at its next check (not killed)
    assert store.get(rid)["error"] == "cancelled by user"
    wait_for(lambda: not _alive(pid), 10, what="child process gone")
    assert store.get(rid)["epoch"] < 200
    wait_for(lambda: _status(store, nxt) == "done", 30, what="next run done")


def test_cancel_of_a_hung_run_kills_it(tmp_path, worker):
    store = RunStore(tmp_path)
    rid = store.submit({"behaviour": "hang"})
    worker("--cancel-grace", "1", runner=RUNNER)
    wait_for(lambda: (store.run_dir(rid) / "hung.pid").exists() and store.get(rid)["pid"], 30, what="hang")
    pid = store.get(rid)["pid"]
    store.cancel(rid)
    wait_for(lambda: _status(store, rid) == "cancelled", 8, what="hung run cancelled")
    assert "worker killed" in store.get(rid)["error"]
    wait_for(lambda: not _alive(pid), 5, what="hung child killed")


def test_watchdog_fails_a_run_without_progress(tmp_path, worker):
    store = RunStore(tmp_path)
    rid = store.submit({"behaviour": "hang"})
    nxt = store.submit({"epochs": 1, "sleep": 0.01})
    # the limit also covers a child's start-up until it reports its pid (imports take 4 s on a loaded box)
    worker("--stall-timeout", "12", runner=RUNNER)
    wait_for(lambda: _status(store, rid) == "failed", 45, what="watchdog")
    assert store.get(rid)["error"].startswith("watchdog: no progress for")
    wait_for(lambda: _status(store, nxt) == "done", 45, what="next run done")


def _kill9_midrun(tmp_path, worker, max_attempts):
    store = RunStore(tmp_path)
    rid = store.submit({"epochs": 6, "sleep": 0.4}, max_attempts=max_attempts)
    sup = worker(runner=RUNNER)
    wait_for(lambda: (store.get(rid)["epoch"] or 0) >= 2, 30, what="2 epochs")
    child = store.get(rid)["pid"]
    os.kill(sup.pid, signal.SIGKILL)
    sup.wait(timeout=10)
    wait_for(lambda: not _alive(child), 5, what="child dies with its supervisor")
    assert store.get(rid)["status"] == "running"  # orphaned until a supervisor starts again
    t0 = time.time()
    worker(runner=RUNNER)
    return store, rid, t0


def test_kill9_supervisor_requeues_and_resumes_from_checkpoint(tmp_path, worker):
    store, rid, t0 = _kill9_midrun(tmp_path, worker, max_attempts=3)
    # (after max_attempts the same reaping fails the run: tests/jobs/test_store.py)
    wait_for(lambda: _status(store, rid) == "done", 60, what="resumed run done")
    r = store.get(rid)
    assert r["attempts"] == 2
    assert r["result"]["resumed_from"] >= 2  # continued from its checkpoint, not from scratch
    assert [m["epoch"] for m in store.metrics(rid)] == [1, 2, 3, 4, 5, 6]
    assert r["started_at"] - t0 < 20.0  # recovery: restart -> running again (seconds; loaded CI box)


def test_one_supervisor_per_data_dir(tmp_path, worker):
    first = worker(runner=RUNNER)
    wait_for(lambda: supervisor_pid(tmp_path) == first.pid, 20, what="lock held")
    env = dict(os.environ, PYTHONPATH=str(REPO))
    second = subprocess.run([*WORKER_CMD, "--data-dir", str(tmp_path)],
                            cwd=REPO, env=env, capture_output=True, text=True, timeout=60)
    assert second.returncode == 2
    assert f"a supervisor (pid {first.pid}) already serves" in second.stderr
    assert worker_main(["--data-dir", str(tmp_path), "--quiet-if-running"]) == 0
    assert ensure_supervisor(tmp_path) == {"pid": first.pid, "started": False}
    kill_tree(first)
    wait_for(lambda: supervisor_pid(tmp_path) is None, 10, what="lock released by kill -9")


def test_ensure_supervisor_starts_one_in_the_background(tmp_path):
    store = RunStore(tmp_path)
    rid = store.submit({"epochs": 1, "sleep": 0.01})
    env_before = os.environ.get("PCD_RUNNER")
    os.environ["PCD_RUNNER"] = RUNNER
    try:
        info = ensure_supervisor(tmp_path)
    finally:
        if env_before is None:
            os.environ.pop("PCD_RUNNER")
        else:
            os.environ["PCD_RUNNER"] = env_before
    try:
        assert info["started"] and supervisor_pid(tmp_path) == info["pid"]
        assert ensure_supervisor(tmp_path)["started"] is False
        wait_for(lambda: _status(store, rid) == "done", 30, what="run done")
    finally:
        os.kill(info["pid"], signal.SIGKILL)
    wait_for(lambda: supervisor_pid(tmp_path) is None, 10, what="stopped")


def test_sigterm_gives_running_run_back_to_the_queue(tmp_path, worker):
    store = RunStore(tmp_path)
    rid = store.submit({"epochs": 100, "sleep": 0.2})
    sup = worker(runner=RUNNER)
    wait_for(lambda: store.get(rid)["epoch"], 30, what="first epoch")
    sup.send_signal(signal.SIGTERM)
    assert sup.wait(timeout=15) == 0
    r = store.get(rid)
    assert r["status"] == "queued" and r["attempts"] == 0 and r["error"] == "supervisor stopped"


APP_PROCESS = """
import os, runpy, sys, time
runpy.run_path(sys.argv[1], run_name="__main__")  # app.py in Streamlit's bare mode: it starts the supervisor
print("app up", flush=True)
time.sleep(600)
"""


def _start_app(tmp_path):
    """A process that runs app.py (as `streamlit run` would, without the server) and stays alive."""
    env = dict(os.environ, PCD_DATA_DIR=str(tmp_path), PCD_RUNNER=RUNNER, PYTHONPATH=str(REPO))
    env.pop("PCD_NO_AUTOSTART", None)
    env.pop("PCD_BACKEND", None)
    log = open(tmp_path / "app.log", "ab")
    try:
        return subprocess.Popen([os.sys.executable, "-c", APP_PROCESS, str(REPO / "app.py")], cwd=REPO, env=env,
                                stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    finally:
        log.close()


def test_app_started_supervisor_stops_when_the_app_process_is_killed_alone(tmp_path):
    store = RunStore(tmp_path)
    rid = store.submit({"epochs": 300, "sleep": 0.2})
    app = _start_app(tmp_path)
    try:
        sup = wait_for(lambda: supervisor_pid(tmp_path), 60, what="the app started a supervisor")
        assert sup != app.pid and _alive(sup)
        wait_for(lambda: store.get(rid)["epoch"], 30, what="the run trains")
        child = store.get(rid)["pid"]
        os.kill(app.pid, signal.SIGKILL)  # the app process alone, not its process group
        app.wait(timeout=10)
        t0 = time.monotonic()
        wait_for(lambda: not _alive(sup), 5, what="the supervisor gone after its app was killed")
        gone = time.monotonic() - t0
        assert supervisor_pid(tmp_path) is None  # the data folder's lock is free again
        wait_for(lambda: not _alive(child), 5, what="its run's child gone")
        r = store.get(rid)  # a graceful stop: the run is back in the queue, the attempt not counted
        assert r["status"] == "queued" and r["attempts"] == 0 and r["error"] == "supervisor stopped"
        assert gone < 5.0
        assert "is gone; stopping" in (tmp_path / "supervisor.log").read_text()
    finally:
        kill_tree(app)
        pid = supervisor_pid(tmp_path)
        if pid:
            os.kill(pid, signal.SIGKILL)


def test_a_detached_supervisor_outlives_its_starter(tmp_path):
    env = dict(os.environ, PYTHONPATH=str(REPO))
    code = "import sys; from pcd.jobs import ensure_supervisor; print(ensure_supervisor(sys.argv[1], detach=True)['pid'])"
    out = subprocess.run([os.sys.executable, "-c", code, str(tmp_path)], cwd=REPO, env=env, capture_output=True,
                         text=True, timeout=60)
    pid = int(out.stdout.strip().splitlines()[-1])
    try:
        time.sleep(1.0)  # longer than the parent watch's period
        assert _alive(pid) and supervisor_pid(tmp_path) == pid
    finally:
        os.kill(pid, signal.SIGKILL)
    wait_for(lambda: supervisor_pid(tmp_path) is None, 10, what="stopped")
