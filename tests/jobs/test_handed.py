"""What the queue is handed instead of importing it (issue 26, part 5): the config checks, the runner
and the run backend. ``pcd.jobs`` never imports ``pcd.train`` (``tests/test_import_graph.py``); these
tests show that the hand-over carries what the import did."""
from __future__ import annotations

import os
import shutil
import threading

import pytest

from pcd.jobs import RunStore, Supervisor
from pcd.jobs.executors import BACKENDS, LocalExecutor, executor_class
from pcd.jobs.executors.base import Job, Outcome, Slot, log_tail
from pcd.jobs.store import stored_config_problem
from pcd.train.queue import check_stored, validate_for_queue


def test_the_store_checks_a_stored_config_only_with_the_check_it_is_handed(tmp_path):
    plain = RunStore(tmp_path)
    rid = plain.submit({"epochs": 10**9, "dataset": "digits"})  # written by hand / an older version
    assert plain.get(rid)["invalid"] is None  # the queue itself knows no run config
    checked = RunStore(tmp_path, check=check_stored)
    assert checked.get(rid)["invalid"].startswith("invalid stored config: epochs must be")
    assert [r["invalid"] is not None for r in checked.list()] == [True]
    assert stored_config_problem({"epochs": 3}, check_stored) is None
    assert stored_config_problem({"data_dir": "/etc"}, check_stored).startswith("invalid stored config: data_dir")

    def two_lines(cfg):
        raise ValueError("first line\nsecond line")

    assert stored_config_problem({}, two_lines) == "invalid stored config: first line"
    assert stored_config_problem({"epochs": 10**9}, None) is None
    with pytest.raises(ValueError, match="check must be a function"):
        RunStore(tmp_path, check="check_stored")


def test_submit_applies_the_handed_check_and_queues_nothing_it_refuses(tmp_path):
    s = RunStore(tmp_path)
    with pytest.raises(ValueError, match="epochs must be"):
        s.submit_many([{"dataset": "digits"}, {"dataset": "digits", "epochs": 0}], check=validate_for_queue)
    assert s.queue_order() == [] and not (tmp_path / "runs").exists()  # all or nothing
    rid = s.submit({"dataset": "digits", "epochs": 1}, check=validate_for_queue)
    stored = s.get(rid)["config"]
    assert stored["epochs"] == 1 and "batch_size" in stored  # the check's normalized config is stored
    with pytest.raises(ValueError, match="expected a dict"):
        s.submit({"epochs": 1}, check=lambda cfg: None)


def test_the_supervisor_runs_only_the_runner_it_is_handed(tmp_path, monkeypatch):
    monkeypatch.delenv("PCD_RUNNER", raising=False)
    with pytest.raises(ValueError, match="no runner"):
        Supervisor(tmp_path)
    monkeypatch.setenv("PCD_RUNNER", "tests.jobs.runners:quick")
    assert Supervisor(tmp_path).runner == "tests.jobs.runners:quick"


def test_backends_are_one_registry(tmp_path):
    assert executor_class("local") is LocalExecutor
    assert executor_class("ray").name == "ray"  # the module imports without Ray; ray itself is lazy
    with pytest.raises(ValueError, match=r"backend must be one of \['local', 'ray'"):
        Supervisor(tmp_path, backend="slurm", runner="tests.jobs.runners:quick")
    with pytest.raises(ValueError, match="backend 'local' takes no option bogus; its options: none"):
        Supervisor(tmp_path, runner="tests.jobs.runners:quick", options={"bogus": 1})
    with pytest.raises(ValueError, match="backend 'ray' takes no option slots; its options: address, channel_node, "
                                         "cpus_per_run"):
        Supervisor(tmp_path, backend="ray", runner="tests.jobs.runners:quick", options={"slots": 2})


class InlineExecutor:
    """A run backend written for this test: each run in a thread of the supervisor's process."""

    name = "inline"
    runs_heartbeat = False  # a thread has no heartbeat of its own: the supervisor heartbeats for it

    @classmethod
    def check_runner(cls, runner):
        from pcd.jobs.child import resolve_runner
        resolve_runner(runner)

    def __init__(self, store, runner, *, heartbeat_s=2.0, log=None, label="inline"):
        from pcd.jobs.child import resolve_runner
        self.store, self.fn, self.label = store, resolve_runner(runner), label

    def plan_slots(self, slots):
        return [Slot(f"{self.label}:0", {})]

    def start(self, run, slot):
        box: dict = {}
        folder = self.store.run_dir(run["id"])
        folder.mkdir(parents=True, exist_ok=True)

        def go():
            try:
                box["result"] = self.fn(dict(run["config"]), out_dir=str(folder))
            except Exception as exc:  # pragma: no cover - the runner used here does not raise
                box["error"] = repr(exc)

        t = threading.Thread(target=go, daemon=True)
        t.start()
        return t, box

    def poll(self, job: Job):
        t, box = job.handle
        if t.is_alive():
            return None
        return Outcome("result", box["result"]) if "result" in box else Outcome("error", box.get("error"))

    def request_cancel(self, job):
        pass

    def kill(self, job):
        pass

    def pump(self, jobs):
        pass

    def close(self):
        pass


def test_a_new_backend_is_its_module_plus_one_registry_line(tmp_path, monkeypatch):
    monkeypatch.setitem(BACKENDS, "inline", "tests.jobs.test_handed:InlineExecutor")  # the one line
    store = RunStore(tmp_path)
    rid = store.submit({"epochs": 2, "sleep": 0.01})
    sup = Supervisor(tmp_path, backend="inline", runner="tests.jobs.runners:quick", poll_s=0.02,
                     options={"label": "thread"}, log=lambda m: None)
    # in a thread (the main thread's signal handlers stay pytest's); bounded: it exits when the queue is empty
    th = threading.Thread(target=sup.run, kwargs={"idle_exit_s": 0.1, "max_seconds": 30}, daemon=True)
    th.start()
    th.join(40)
    assert not th.is_alive()
    run = store.get(rid)
    assert run["status"] == "done" and run["device"] == "thread:0"
    assert run["result"]["epochs_done"] == 2 and run["result"]["pid"] == os.getpid()


def test_a_crash_tail_is_read_from_the_runs_real_folder_only(tmp_path):
    store = RunStore(tmp_path)
    rid = store.submit({"epochs": 1})
    folder = store.run_dir(rid)
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "worker.log").write_text("start\nTraceback ...\nRuntimeError: boom\n\n")
    assert log_tail(tmp_path, rid) == "RuntimeError: boom"
    assert log_tail(tmp_path, 999) == ""  # no folder, no log
    # a run folder that is a link: its log is not followed, even though the file is "inside" the link
    elsewhere = tmp_path.parent / f"{tmp_path.name}-elsewhere"
    elsewhere.mkdir()
    (elsewhere / "worker.log").write_text("secret line\n")
    other = store.submit({"epochs": 1})
    shutil.rmtree(store.run_dir(other))
    os.symlink(elsewhere, store.run_dir(other))
    assert log_tail(tmp_path, other) == ""
