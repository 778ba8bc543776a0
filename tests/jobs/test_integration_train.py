"""Integration: the real pruning runs (``pcd.train.run.train``) on tiny digits problems through
the CLI and a 2-slot CPU supervisor -- concurrency, both cancels and ``kill -9`` recovery."""
from __future__ import annotations

import json
import os
import signal
import time

import pytest

from pcd.cli import main
from pcd.jobs import RunStore
from pcd.train.queue import train_available
from tests.jobs.conftest import wait_for

pytestmark = [pytest.mark.slow,
              pytest.mark.skipif(not train_available(), reason="pcd.train.run (issue 6) is not installed")]

TINY = {"dataset": "digits", "arch": "smallcnn", "epochs": 2, "batch_size": 64, "max_train_samples": 256,
        "max_test_samples": 200, "latency_repeats": 2, "device": "cpu", "progress_every": 1}
PRUNE_KEYS = {"config", "test_acc", "group_sparsity", "param_sparsity", "effective_rank", "seconds", "export"}
EXPORT_KEYS = {"params_before", "params_after", "flops_before", "flops_after", "latency_ms_before",
               "latency_ms_after", "file_bytes_before", "file_bytes_after", "test_acc"}


class _Out:
    def __init__(self, rc, out, err):
        self.returncode, self.stdout, self.stderr = rc, out, err


@pytest.fixture
def cli(capsys):
    """``python -m pcd ...`` in-process (same code path, without paying the interpreter start-up)."""
    def run(*args):
        rc = main([str(a) for a in args])
        o = capsys.readouterr()
        return _Out(rc, o.out, o.err)
    return run


def test_real_runs_two_slots_cancel_and_kill9_recovery(tmp_path, worker, cli):
    d = str(tmp_path)
    store = RunStore(tmp_path)
    cfg = tmp_path / "sweep.json"
    cfg.write_text(json.dumps([{**TINY, "method": "pcd", "tau": 0.02}, {**TINY, "method": "ws"}]))
    out = cli("runs", "submit", "--data-dir", d, "--config", cfg)
    assert out.returncode == 0, out.stderr
    a, b = map(int, out.stdout.split())
    # a queued run cancelled before it starts
    (tmp_path / "q.json").write_text(json.dumps({**TINY, "method": "mgda"}))
    c = int(cli("runs", "submit", "--data-dir", d, "--config", tmp_path / "q.json", "--priority", "-1").stdout)
    assert cli("runs", "cancel", "--data-dir", d, c).stdout.strip() == f"{c}: cancelled"

    sup = worker("--slots", "2", runner="pcd.train.run:train")
    wait_for(lambda: all(store.get(i)["status"] in ("done", "failed") for i in (a, b)), 240, interval=0.5,
             what="two tiny digits runs")
    listed = {r["id"]: r for r in json.loads(cli("runs", "list", "--data-dir", d, "--json").stdout)}
    for i in (a, b):
        r = listed[i]
        assert r["status"] == "done", r["error"]
        assert r["progress"] == 1.0 and PRUNE_KEYS <= set(r["result"]) and EXPORT_KEYS <= set(r["result"]["export"])
        assert 0.0 <= r["result"]["test_acc"] <= 100.0
        assert [m["epoch"] for m in store.metrics(i)] == [1, 2]
        assert (store.run_dir(i) / "final.json").exists()
    ra, rb = store.get(a), store.get(b)
    assert {ra["device"], rb["device"]} == {"cpu:0", "cpu:1"}
    assert ra["started_at"] < rb["finished_at"] and rb["started_at"] < ra["finished_at"]  # in parallel
    assert listed[c]["status"] == "cancelled" and store.get(c)["started_at"] is None

    # kill -9 the supervisor while a run trains: the restarted one resumes it from its checkpoint
    resum = store.submit({**TINY, "method": "pcd", "tau": 0.05, "epochs": 20, "max_train_samples": 1024,
                          "export": False})
    wait_for(lambda: len(store.metrics(resum)) >= 2, 120, interval=0.05, what="two finished epochs")
    os.kill(sup.pid, signal.SIGKILL)
    sup.wait(timeout=10)
    assert store.get(resum)["status"] == "running"  # orphaned
    t_restart = time.time()
    worker("--slots", "2", runner="pcd.train.run:train")
    wait_for(lambda: store.get(resum)["attempts"] == 2 and store.get(resum)["status"] == "running", 30,
             interval=0.05, what="orphan requeued and restarted")
    recovery_s = store.get(resum)["started_at"] - t_restart

    # meanwhile on the second slot: cancel a running run
    long = store.submit({**TINY, "method": "pcd", "tau": 0.02, "epochs": 60, "export": False})
    wait_for(lambda: (store.get(long)["progress"] or 0) > 0, 120, interval=0.2, what="long run progressing")
    latency = store.get(long)["started_at"] - store.get(long)["created_at"]  # the second slot was idle
    assert latency < 5.0
    t0 = time.monotonic()
    assert cli("runs", "cancel", "--data-dir", d, long).stdout.strip() == f"{long}: cancelling"
    wait_for(lambda: store.get(long)["status"] == "cancelled", 30, interval=0.1, what="running run cancelled")
    cancel_s = time.monotonic() - t0
    assert cancel_s < 10.0
    assert store.get(long)["epoch"] < 60

    wait_for(lambda: store.get(resum)["status"] in ("done", "failed"), 240, interval=0.5, what="resumed run")
    r = store.get(resum)
    assert r["status"] == "done", r["error"]
    assert r["result"]["epochs_completed"] == 20
    assert [m["epoch"] for m in store.metrics(resum)] == list(range(1, 21))
    assert [h["epoch"] for h in r["result"]["history"]] == list(range(1, 21))
    log = (store.run_dir(resum) / "worker.log").read_text()
    assert log.count("--- attempt") == 2
    print(f"\nenqueue->start latency {latency:.2f} s; cancel of a running run {cancel_s:.2f} s; "
          f"kill-9 recovery (restart -> running again) {recovery_s:.2f} s; "
          f"cancelled run: {store.get(long)['error']}")
