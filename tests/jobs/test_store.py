"""Unit tests of the SQLite run store: claim, cancel, reap, order, concurrency."""
from __future__ import annotations

import json
import multiprocessing as mp
import sqlite3
import threading

import pytest

from pcd.jobs.store import RunStore, eta_seconds


def test_wal_mode_and_schema(tmp_path):
    s = RunStore(tmp_path)
    assert s.path.exists()
    mode = sqlite3.connect(s.path).execute("PRAGMA journal_mode").fetchone()[0]
    assert mode == "wal"


def test_claim_order_priority_then_fifo(tmp_path):
    s = RunStore(tmp_path)
    a = s.submit({"n": 1})
    b = s.submit({"n": 2})
    c = s.submit({"n": 3}, priority=5)
    assert s.queue_order() == [c, a, b]
    got = [s.claim("w", "cpu:0")["id"] for _ in range(3)]
    assert got == [c, a, b]
    assert s.claim("w", "cpu:0") is None
    run = s.get(a)
    assert run["status"] == "running" and run["attempts"] == 1 and run["device"] == "cpu:0"
    assert run["config"] == {"n": 1} and len(run["token"]) == 16


def _claimer(path, n_out):
    s = RunStore(path)
    got = []
    while True:
        r = s.claim(f"proc{mp.current_process().pid}", "cpu")
        if r is None:
            break
        got.append(r["id"])
    n_out.put(got)


def test_concurrent_claims_never_duplicate(tmp_path):
    s = RunStore(tmp_path)
    ids = s.submit_many([{"i": i} for i in range(60)])
    q = mp.get_context("fork").Queue()
    procs = [mp.get_context("fork").Process(target=_claimer, args=(str(tmp_path), q)) for _ in range(4)]
    for p in procs:
        p.start()
    results = [q.get(timeout=60) for _ in procs]
    for p in procs:
        p.join(timeout=30)
    flat = [i for r in results for i in r]
    assert sorted(flat) == ids  # every run taken exactly once
    assert len(set(flat)) == len(flat)


def test_concurrent_submits_nothing_lost(tmp_path):
    RunStore(tmp_path)
    errors = []

    def submit(k):
        try:
            st = RunStore(tmp_path)
            for i in range(25):
                st.submit({"session": k, "i": i})
        except Exception as exc:  # pragma: no cover - reported below
            errors.append(exc)

    threads = [threading.Thread(target=submit, args=(k,)) for k in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=60)
    assert not errors
    runs = RunStore(tmp_path).list()
    keys = {(r["config"]["session"], r["config"]["i"]) for r in runs}
    assert len(runs) == 100 and len(keys) == 100
    # each session's runs keep their submission order in the queue
    order = RunStore(tmp_path).queue_order()
    by_id = {r["id"]: r["config"] for r in runs}
    for k in range(4):
        seq = [by_id[i]["i"] for i in order if by_id[i]["session"] == k]
        assert seq == list(range(25))
    # every run's folder holds its own config from the moment it was submitted (issue 24, part 3)
    store = RunStore(tmp_path)
    for rid, cfg in by_id.items():
        assert json.loads((store.run_dir(rid) / "config.json").read_text()) == cfg


def test_reopen_keeps_queue_and_order(tmp_path):
    s = RunStore(tmp_path)
    ids = s.submit_many([{"i": i} for i in range(50)])
    s.close()
    s2 = RunStore(tmp_path)
    assert s2.queue_order() == ids
    assert all(r["status"] == "queued" for r in s2.list())


def test_cancel_queued_and_running(tmp_path):
    s = RunStore(tmp_path)
    a, b = s.submit({}), s.submit({})
    assert s.cancel(a) == "cancelled"
    assert s.get(a)["status"] == "cancelled"
    run = s.claim("w", "cpu")
    assert run["id"] == b  # the cancelled run is never claimed
    assert not s.cancel_requested(b)
    assert s.cancel(b) == "cancelling"
    assert s.cancel_requested(b) and s.get(b)["status"] == "running"
    assert s.finish(b, run["token"], "cancelled")
    with pytest.raises(ValueError, match="already cancelled"):
        s.cancel(b)
    with pytest.raises(ValueError, match="no run with id 999"):
        s.cancel(999)
    with pytest.raises(ValueError, match="positive integer"):
        s.cancel("abc")


def test_progress_metrics_and_token_guard(tmp_path):
    s = RunStore(tmp_path)
    rid = s.submit({})
    run = s.claim("w", "cpu")
    assert s.report_progress(rid, run["token"], {"epoch": 1, "epochs": 4, "progress": 0.25,
                                                 "metrics": {"epoch": 1, "test_acc": 0.9, "x": float("nan")}})
    assert s.report_progress(rid, run["token"], {"epoch": 1, "progress": 0.3, "metrics": None})
    got = s.get(rid)
    assert got["progress"] == pytest.approx(0.3) and got["epoch"] == 1 and got["epochs"] == 4
    assert s.metrics(rid) == [{"epoch": 1, "test_acc": 0.9, "x": None}]
    # a stale token (a requeued run's old child) can write nothing
    assert not s.report_progress(rid, "deadbeefdeadbeef", {"progress": 0.9})
    assert not s.finish(rid, "deadbeefdeadbeef", "done", result={})
    assert s.get(rid)["progress"] == pytest.approx(0.3)
    assert s.finish(rid, run["token"], "done", result={"test_acc": 0.91})
    got = s.get(rid)
    assert got["status"] == "done" and got["progress"] == 1.0 and got["result"] == {"test_acc": 0.91}
    with pytest.raises(ValueError, match="progress"):
        s.report_progress(rid, run["token"], {"progress": "lots"})


def test_reap_requeues_then_fails_after_max_attempts(tmp_path):
    s = RunStore(tmp_path)
    rid = s.submit({}, max_attempts=2)
    s.claim("w", "cpu")
    assert s.reap_orphans() == {rid: "queued"}
    r = s.get(rid)
    assert r["status"] == "queued" and "requeued (attempt 1 of 2)" in r["error"]
    s.claim("w", "cpu")
    assert s.reap_orphans() == {rid: "failed"}
    r = s.get(rid)
    assert r["status"] == "failed" and "gave up after 2 attempt(s)" in r["error"]
    # a run whose cancel was requested before its worker died ends cancelled
    rid2 = s.submit({})
    s.claim("w", "cpu")
    s.cancel(rid2)
    assert s.reap_orphans() == {rid2: "cancelled"}


def test_retry_and_delete(tmp_path):
    s = RunStore(tmp_path)
    rid = s.submit({})
    run = s.claim("w", "cpu")
    with pytest.raises(ValueError, match="running; cancel it first"):
        s.delete(rid)
    with pytest.raises(ValueError, match="only failed or cancelled"):
        s.retry(rid)
    s.finish(rid, run["token"], "failed", error="x")
    s.retry(rid)
    r = s.get(rid)
    assert r["status"] == "queued" and r["attempts"] == 0 and r["error"] is None
    s.run_dir(rid).mkdir(parents=True, exist_ok=True)
    (s.run_dir(rid) / "f").write_text("x")
    s.cancel(rid)
    s.delete(rid)
    assert not s.run_dir(rid).exists()
    with pytest.raises(ValueError, match="no run"):
        s.get(rid)


def test_submit_validation(tmp_path):
    s = RunStore(tmp_path)
    with pytest.raises(ValueError, match="JSON object"):
        s.submit(["not", "a", "dict"])
    with pytest.raises(ValueError, match="max_attempts"):
        s.submit({}, max_attempts=0)
    with pytest.raises(ValueError, match="not JSON-serialisable"):
        s.submit({"f": object()})
    with pytest.raises(ValueError, match="nothing to submit"):
        s.submit_many([])
    with pytest.raises(ValueError, match="unknown status"):
        s.list("finished")
    with pytest.raises(ValueError, match="not a folder"):
        f = tmp_path / "file"
        f.write_text("")
        RunStore(f)
    # a failing sweep submission queues nothing
    with pytest.raises(ValueError):
        s.submit_many([{"ok": 1}, {"bad": object()}])
    assert s.list() == []


def test_eta(tmp_path):
    run = {"status": "running", "started_at": 100.0, "progress": 0.5, "progress0": 0.25}
    assert eta_seconds(run, now=110.0) == pytest.approx(20.0)  # 0.25 in 10 s -> 0.5 left in 20 s
    assert eta_seconds({**run, "progress": 0.25}, now=110.0) is None
    assert eta_seconds({**run, "status": "done"}, now=110.0) is None
