"""Corrupted-database scenarios: never replaced silently, never a raw DatabaseError, nothing lost."""
from __future__ import annotations

import json
import os
import sqlite3

import pytest

from pcd.cli import main as cli_main
from pcd.jobs.store import DB_NAME, RunStore, StoreError, rebuild
from pcd.jobs.supervisor import Supervisor


def _finished_run(data, rid_cfg=None):
    """A store with two finished runs whose folders hold config.json / final.json / metrics.jsonl."""
    s = RunStore(data)
    ids = s.submit_many([{"method": "pcd", "epochs": 2}, {"method": "ws", "epochs": 2}])
    for rid in ids:
        folder = s.run_dir(rid)
        folder.mkdir(parents=True, exist_ok=True)
        cfg = s.get(rid)["config"]
        (folder / "config.json").write_text(json.dumps(cfg))
        (folder / "metrics.jsonl").write_text("\n".join(json.dumps({"epoch": e, "acc": 0.5 + e / 10})
                                                        for e in (1, 2)) + "\n")
    # the first finished, the second was interrupted (no final.json)
    (s.run_dir(ids[0]) / "final.json").write_text(json.dumps({"test_acc": 97.5, "method": "pcd"}))
    s.close()
    return ids


def _one_line_error(capsys, *argv):
    rc = cli_main([str(a) for a in argv])
    err = capsys.readouterr().err
    assert rc == 2 and err.startswith("error: ") and err.count("\n") == 1, err
    return err


@pytest.mark.parametrize("damage", ["header", "pages", "text"])
def test_not_a_database_is_reported_and_never_replaced(tmp_path, capsys, damage):
    data = tmp_path / "d"
    _finished_run(data)
    db = data / DB_NAME
    with sqlite3.connect(db) as c:  # fold the WAL into the main file first
        c.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    raw = bytearray(db.read_bytes())
    if damage == "header":
        raw[:16] = b"garbage garbage!"
    elif damage == "pages":
        for i in range(100, len(raw), 7):  # every page after the header's first 100 bytes
            raw[i] = (raw[i] * 31 + 17) % 256
    else:
        raw = bytearray(b"these are my notes, not a database\n" * 50)
    db.write_bytes(bytes(raw))
    for side in ("-wal", "-shm"):
        (data / (DB_NAME + side)).unlink(missing_ok=True)
    before = db.read_bytes()
    with pytest.raises(StoreError) as e:
        RunStore(data)
    msg = str(e.value)
    assert "\n" not in msg and str(db) in msg and "python -m pcd runs rebuild" in msg
    assert db.read_bytes() == before  # never replaced
    err = _one_line_error(capsys, "runs", "list", "--data-dir", data)
    assert "rebuild" in err and db.read_bytes() == before
    # the rebuild command keeps the damaged file and recovers both runs from their folders
    assert cli_main(["runs", "rebuild", "--data-dir", str(data)]) == 0
    backups = [b for b in data.glob(f"{DB_NAME}.damaged-*") if not b.name.endswith(("-wal", "-shm"))]
    assert len(backups) == 1 and backups[0].read_bytes() == before
    s = RunStore(data)
    runs = {r["id"]: r for r in s.list()}
    assert sorted(runs) == [1, 2]
    assert runs[1]["status"] == "done" and runs[1]["result"]["test_acc"] == 97.5
    assert runs[2]["status"] == "failed" and "retry" in runs[2]["error"]
    assert [m["acc"] for m in s.metrics(1)] == [0.6, 0.7]
    s.retry(2)  # the interrupted run can be resumed
    assert s.submit({"method": "pcd"}) == 3  # ids continue after the recovered ones


@pytest.mark.parametrize("how", ["truncated", "deleted"])
def test_missing_or_empty_database_next_to_run_folders_is_rebuilt(tmp_path, how):
    data = tmp_path / "d"
    _finished_run(data)
    db = data / DB_NAME
    for side in ("-wal", "-shm"):
        (data / (DB_NAME + side)).unlink(missing_ok=True)
    if how == "truncated":
        db.write_bytes(b"")
    else:
        db.unlink()
    with pytest.raises(StoreError, match="python -m pcd runs rebuild"):
        RunStore(data, auto_rebuild=False)
    s = RunStore(data)  # the default: rebuilt, history kept
    assert s.rebuilt is not None and s.rebuilt["runs"] == 2
    assert [r["status"] for r in s.list()] == ["done", "failed"]
    if how == "truncated":
        assert list(data.glob(f"{DB_NAME}.damaged-*"))  # the empty file is kept too


def test_fresh_folder_is_not_a_rebuild(tmp_path):
    s = RunStore(tmp_path / "new")
    assert s.rebuilt is None and s.list() == []


@pytest.mark.parametrize("how", ["deleted", "replaced"])
def test_worker_notices_its_database_was_deleted_or_replaced(tmp_path, how):
    data = tmp_path / "d"
    _finished_run(data)
    sup = Supervisor(data, runner="tests.jobs.runners:dispatch", poll_s=0.05)
    from pcd.jobs.executors.local import LocalExecutor, plan_slots
    sup.executor, sup.slots = LocalExecutor(sup.store, sup.runner, 0.5), plan_slots(1)
    sup._guarded_tick()  # fine while the file is the one opened
    db = data / DB_NAME
    if how == "deleted":
        db.unlink()
    else:
        tmp = data / "other.sqlite3"
        sqlite3.connect(tmp).close()
        os.replace(tmp, db)
    with pytest.raises(StoreError) as e:
        sup._guarded_tick()
    assert how in str(e.value) and "\n" not in str(e.value)
    sup.store.close()


def test_worker_reports_corruption_in_one_line(tmp_path):
    data = tmp_path / "d"
    data.mkdir()
    (data / DB_NAME).write_bytes(b"\x00" * 4096)
    import contextlib
    import io

    from pcd.cli.worker import main as worker_main
    err = io.StringIO()
    with contextlib.redirect_stderr(err):
        rc = worker_main(["--data-dir", str(data), "--idle-exit", "0"])
    assert rc == 2 and err.getvalue().startswith("error: run database") and err.getvalue().count("\n") == 1


def test_invalid_stored_row_is_flagged_and_deletable(tmp_path, capsys):
    data = tmp_path / "d"
    s = RunStore(data)
    good = s.submit({"method": "pcd"})
    bad = s.submit({"method": "pcd"})
    deep = s.submit({"method": "pcd"})
    s._conn.execute("UPDATE runs SET config=?, status='failed' WHERE id=?", ("{not json", bad))
    s._conn.execute("UPDATE runs SET config=?, status='failed' WHERE id=?", ("[" * 5000 + "]" * 5000, deep))
    runs = {r["id"]: r for r in s.list()}
    assert runs[good]["invalid"] is None
    assert "not valid JSON" in runs[bad]["invalid"] and runs[bad]["config"] == {}
    assert "nest" in runs[deep]["invalid"]
    assert cli_main(["runs", "list", "--data-dir", str(data)]) == 0
    capsys.readouterr()
    s.delete(bad)
    s.delete(deep)
    assert [r["id"] for r in s.list()] == [good]


def test_rebuild_skips_unreadable_folders(tmp_path):
    data = tmp_path / "d"
    (data / "runs" / "5").mkdir(parents=True)
    (data / "runs" / "5" / "config.json").write_text("[" * 5000)
    (data / "runs" / "6").mkdir(parents=True)
    (data / "runs" / "6" / "config.json").write_text(json.dumps({"method": "pcd"}))
    out = rebuild(data)
    assert out["runs"] == 1 and len(out["skipped"]) == 1 and "run 5" in out["skipped"][0]


def test_download_path_must_stay_inside_the_run_folder(tmp_path):
    s = RunStore(tmp_path / "d")
    rid = s.submit({"method": "pcd"})
    folder = s.run_dir(rid)
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "model_pruned.pt").write_bytes(b"model")
    assert s.run_file(rid, str(folder / "model_pruned.pt")) == (folder / "model_pruned.pt").resolve()
    assert s.run_file(rid, "model_pruned.pt") == (folder / "model_pruned.pt").resolve()
    assert s.run_file(rid, str(folder / "missing.pt")) is None
    other = s.run_dir(rid + 1)
    other.mkdir(parents=True)
    (other / "model_pruned.pt").write_bytes(b"other run")
    os.symlink("/etc/passwd", folder / "link.pt")
    for bad in ("/etc/passwd", str(folder / ".." / str(rid + 1) / "model_pruned.pt"), "../../pcd.sqlite3",
                str(folder / "link.pt")):
        with pytest.raises(ValueError, match="must be inside"):
            s.run_file(rid, bad)


@pytest.mark.parametrize("key,value", [("epochs", 10**9), ("seed", 10**30), ("latency_repeats", 10**9),
                                       ("threads", 10**6), ("batch_size", 10**12), ("progress_every", 10**12),
                                       ("lr", 1e-300), ("tau", "0.1"), ("epochs", "3"), ("data_dir", "/etc")])
def test_stored_row_failing_validation_is_flagged(tmp_path, key, value):
    from pcd.train.queue import check_stored

    s = RunStore(tmp_path / "d", check=check_stored)  # the check training hands the queue
    rid = s.submit({"method": "pcd"})
    s._conn.execute("UPDATE runs SET config=? WHERE id=?", (json.dumps({"method": "pcd", key: value}), rid))
    row = s.get(rid)
    assert row["invalid"] and key in row["invalid"] and "\n" not in row["invalid"]
    s.delete(rid)


def test_bad_configs_refused_at_submit_and_flagged_on_read_back():
    from tests.fuzz import config_cases

    tried, failures = config_cases.sweep()
    assert tried >= 40 and not failures, failures
