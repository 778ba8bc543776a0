"""Issue 24's rows on run folders, the database and storage faults: no run is ever lost, a storage
fault is named for what it is (never "damage", never rebuild advice), one run's bad files never stop
the queue, a wall-clock step never fails a healthy run, a copied data folder serves what it served.

CI runs as root, so permission / read-only / full-disk faults are simulated by monkeypatching what
SQLite or the file system would raise (``sqlite3.connect`` on a read-only handle, ``os.replace``
raising ENOSPC), never with chmod."""
from __future__ import annotations

import errno
import json
import os
import shutil
import sqlite3

import pytest

from pcd.cli import main as cli_main
from pcd.jobs import store as S
from pcd.jobs.store import DB_NAME, RunStore, StorageFault, StoreError, rebuild
from pcd.jobs.supervisor import Supervisor

FAULT_WORDS = ("damage", "rebuild", "corrupt")


def _one_line_error(capsys, *argv) -> str:
    rc = cli_main([str(a) for a in argv])
    err = capsys.readouterr().err
    assert rc == 2 and err.startswith("error: ") and err.count("\n") == 1, err
    return err


def _no_damage_words(msg: str) -> None:
    assert not any(w in msg.lower() for w in FAULT_WORDS), msg


def _drop_db(data) -> None:
    for ext in ("", "-wal", "-shm"):
        (data / (DB_NAME + ext)).unlink(missing_ok=True)


def _fifty_eight(data):
    """The issue's store: 8 done runs (with folders and final.json), 34 queued, 16 cancelled."""
    s = RunStore(data)
    ids = s.submit_many([{"method": "pcd", "seed": i} for i in range(58)], priority=2)
    for _ in ids[:8]:
        run = s.claim("w", "cpu:0")
        assert run is not None
        (s.run_dir(run["id"]) / "final.json").write_text(json.dumps({"test_acc": 90.0 + run["id"]}))
        assert s.finish(run["id"], run["token"], "done", result={"test_acc": 90.0 + run["id"]})
    for rid in ids[42:]:
        assert s.cancel(rid) == "cancelled"
    assert s.counts() == {"queued": 34, "running": 0, "done": 8, "failed": 0, "cancelled": 16}
    s.close()
    with sqlite3.connect(data / DB_NAME) as c:  # fold the WAL into the file
        c.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    return ids


def _readonly_connect(monkeypatch):
    """Every SQLite connection to a file opens read-only, as on a file the user may read but not write."""
    real = sqlite3.connect

    def connect(database, *args, **kwargs):
        if isinstance(database, str) and not database.startswith("file:") and database != ":memory:":
            kwargs["uri"] = True
            database = f"file:{os.path.abspath(database)}?mode=ro"
        return real(database, *args, **kwargs)

    monkeypatch.setattr(sqlite3, "connect", connect)


def test_unwritable_58_run_database_is_named_and_never_replaced(tmp_path, capsys, monkeypatch):
    data = tmp_path / "d"
    _fifty_eight(data)
    # a database written by an older version: only the done runs had run folders
    for folder in (data / "runs").iterdir():
        if not (folder / "final.json").exists():
            shutil.rmtree(folder)
    db = data / DB_NAME
    before = db.read_bytes()
    _readonly_connect(monkeypatch)
    s = RunStore(data)  # reading is fine: the runs can still be listed
    assert len(s.list()) == 58
    with pytest.raises(StorageFault) as e:  # a write names the fault
        s.submit({"method": "pcd"})
    msg = str(e.value)
    assert str(db) in msg and "read-only" in msg and "\n" not in msg
    _no_damage_words(msg)
    s.close()
    assert cli_main(["runs", "list", "--all", "--data-dir", str(data)]) == 0
    assert capsys.readouterr().out.count("queued") == 34
    err = _one_line_error(capsys, "runs", "cancel", "--data-dir", data, 20)
    assert "read-only" in err
    _no_damage_words(err)
    # following the old advice anyway: the rebuild refuses, the 58 runs stay
    err = _one_line_error(capsys, "runs", "rebuild", "--data-dir", data)
    assert "opens fine (58 run(s))" in err and "nothing was rebuilt" in err
    monkeypatch.undo()
    assert db.read_bytes() == before
    assert not list(data.glob(f"{DB_NAME}.damaged-*")) and not list(data.glob("*.rebuild-*"))
    assert RunStore(data).counts() == {"queued": 34, "running": 0, "done": 8, "failed": 0, "cancelled": 16}


def test_rebuild_refuses_a_database_that_opens_fine(tmp_path):
    data = tmp_path / "d"
    s = RunStore(data)
    s.submit({"method": "pcd"})
    s.close()
    with pytest.raises(StoreError, match=r"opens fine \(1 run\(s\)\); nothing was rebuilt"):
        rebuild(data)
    assert RunStore(data).counts()["queued"] == 1


@pytest.mark.parametrize("message,word", [("database or disk is full", "disk is full"),
                                          ("attempt to write a readonly database", "read-only")])
def test_sqlite_storage_faults_are_named(tmp_path, monkeypatch, capsys, message, word):
    data = tmp_path / "d"
    RunStore(data).submit({"method": "pcd"})

    def connect(*args, **kwargs):
        raise sqlite3.OperationalError(message)

    monkeypatch.setattr(sqlite3, "connect", connect)
    with pytest.raises(StorageFault) as e:
        RunStore(data)
    assert word in str(e.value) and str(data / DB_NAME) in str(e.value)
    _no_damage_words(str(e.value))
    err = _one_line_error(capsys, "runs", "list", "--data-dir", data)
    _no_damage_words(err)


def test_full_disk_during_a_write_is_named_and_nothing_half_done(tmp_path, monkeypatch):
    data = tmp_path / "d"
    s = RunStore(data)
    first = s.submit({"method": "pcd"})

    def full(src, dst):
        raise OSError(errno.ENOSPC, "No space left on device", str(dst))

    monkeypatch.setattr(S.os, "replace", full)
    with pytest.raises(StorageFault) as e:
        s.submit_many([{"method": "pcd"}, {"method": "ws"}])
    assert "disk is full" in str(e.value) and "config.json" in str(e.value)
    _no_damage_words(str(e.value))
    monkeypatch.undo()
    # the submit is all or nothing: no row, no run folder, no temporary file
    assert [r["id"] for r in s.list()] == [first]
    assert sorted(p.name for p in (data / "runs").iterdir()) == [str(first)]
    assert not [p for p in (data / "runs" / str(first)).iterdir() if p.name.startswith(".")]


def test_rebuild_on_a_full_disk_changes_nothing(tmp_path, monkeypatch):
    data = tmp_path / "d"
    s = RunStore(data)
    s.submit({"method": "pcd"})
    s.close()
    _drop_db(data)
    (data / DB_NAME).write_bytes(b"not a database" * 100)
    before = (data / DB_NAME).read_bytes()
    real = os.replace

    def full(src, dst):
        if str(dst).endswith(DB_NAME):
            raise OSError(errno.ENOSPC, "No space left on device", str(dst))
        return real(src, dst)

    monkeypatch.setattr(S.os, "replace", full)
    with pytest.raises(StorageFault) as e:
        rebuild(data)
    assert "disk is full" in str(e.value)
    monkeypatch.undo()
    assert (data / DB_NAME).read_bytes() == before
    assert not list(data.glob("*.rebuild-*")) and not list(data.glob(f"{DB_NAME}.damaged-*"))


def test_queued_runs_survive_losing_the_database(tmp_path):
    data = tmp_path / "d"
    s = RunStore(data)
    a, b = s.submit_many([{"method": "pcd", "seed": 1}, {"method": "ws", "seed": 2}], priority=7,
                         labels=["study · a", "study · b"], max_attempts=5)
    c = s.submit({"method": "mgda"}, label="later")
    gone = s.submit({"method": "pcd", "seed": 9})
    assert s.cancel(b) == "cancelled"
    s.delete(gone)
    s.close()
    _drop_db(data)
    s = RunStore(data)  # rebuilt from the run folders
    assert s.rebuilt is not None and s.rebuilt["queued"] == 2
    runs = {r["id"]: r for r in s.list()}
    assert sorted(runs) == [a, b, c]  # the deleted run stays deleted
    assert runs[a]["status"] == "queued" and runs[a]["priority"] == 7 and runs[a]["label"] == "study · a"
    assert runs[a]["max_attempts"] == 5 and runs[a]["config"] == {"method": "pcd", "seed": 1}
    assert runs[b]["status"] == "cancelled" and runs[c]["status"] == "queued" and runs[c]["label"] == "later"
    assert s.queue_order() == [a, c]
    s.retry(b)
    new = s.submit({"method": "pcd"})  # ids continue after the recovered ones, in a fresh folder
    assert new > c and json.loads((s.run_dir(new) / "config.json").read_text()) == {"method": "pcd"}


def _damage_other_table(db) -> None:
    """Break one page of a table the store does not need: SQLite's quick check fails, the runs
    table still reads (a partly damaged database)."""
    with sqlite3.connect(db) as c:
        root = c.execute("SELECT rootpage FROM sqlite_master WHERE name='notes'").fetchone()[0]
        size = c.execute("PRAGMA page_size").fetchone()[0]
        c.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    raw = bytearray(db.read_bytes())
    raw[(root - 1) * size] = 0x77  # an invalid b-tree page type
    db.write_bytes(bytes(raw))


def test_rebuild_merges_the_old_databases_rows_with_the_folders(tmp_path):
    data = tmp_path / "d"
    ids = _fifty_eight(data)
    with sqlite3.connect(data / DB_NAME) as c:
        c.execute("CREATE TABLE notes (t TEXT)")
        c.executemany("INSERT INTO notes VALUES (?)", [("x" * 500,)] * 50)
    for rid in ids[20:30]:  # queued runs whose folders are gone: only the old database has them
        shutil.rmtree(data / "runs" / str(rid))
    _damage_other_table(data / DB_NAME)
    assert S.opens_fine(data / DB_NAME) is None
    with pytest.raises(StoreError, match="python -m pcd runs rebuild"):
        RunStore(data)
    out = rebuild(data)
    assert out["runs"] == 58 and out["kept"] == 58 and out["backup"]
    s = RunStore(data)
    assert s.counts() == {"queued": 34, "running": 0, "done": 8, "failed": 0, "cancelled": 16}
    assert all(r["priority"] == 2 for r in s.list())


def test_non_digit_and_linked_run_folders_are_skipped_with_one_line(tmp_path, capsys):
    data = tmp_path / "d"
    s = RunStore(data)
    rid = s.submit({"method": "pcd"})
    s.close()
    for odd in ("²", "٣", "abc"):
        (data / "runs" / odd).mkdir()
        (data / "runs" / odd / "config.json").write_text(json.dumps({"method": "pcd"}))
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    (outside / "config.json").write_text(json.dumps({"method": "pcd"}))
    (outside / "final.json").write_text(json.dumps({"test_acc": 99.0}))
    os.symlink(outside, data / "runs" / "7")
    assert cli_main(["runs", "list", "--data-dir", str(data)]) == 0
    _drop_db(data)
    assert cli_main(["runs", "rebuild", "--data-dir", str(data)]) == 0
    out = capsys.readouterr().out
    lines = [ln for ln in out.splitlines() if "not named by a run id" in ln]
    assert len(lines) == 1 and all(repr(n) in lines[0] for n in ("²", "٣", "abc")), out
    assert any("symlink" in ln and "7" in ln for ln in out.splitlines()), out
    assert [r["id"] for r in RunStore(data).list()] == [rid]  # the link is not a run
    assert not list(data.glob("*.rebuild-*"))


def _claimed(data, **cfg):
    s = RunStore(data)
    rid = s.submit({"method": "pcd", **cfg})
    run = s.claim("w", "cpu:0")
    assert run is not None and run["id"] == rid
    return s, run


@pytest.mark.parametrize("kind", ["nested", "fifo", "binary", "huge", "linked-folder"])
def test_bad_metrics_file_is_recorded_on_its_run_and_the_queue_goes_on(tmp_path, kind, monkeypatch):
    data = tmp_path / "d"
    sup = Supervisor(data, runner="tests.jobs.runners:quick", poll_s=0.05)
    s, run = _claimed(data)
    path = sup.store.run_dir(run["id"]) / "metrics.jsonl"
    good = json.dumps({"epoch": 1, "acc": 0.5})
    if kind == "nested":
        path.write_text("[" * 200_000 + "\n" + good + "\n")
    elif kind == "fifo":
        os.mkfifo(path)
    elif kind == "binary":
        path.write_bytes(b"\xff\xfe" * 1000)
    elif kind == "linked-folder":  # runs/<id> swapped for a link to a folder outside the data folder
        outside = tmp_path / "outside"
        outside.mkdir()
        (outside / "metrics.jsonl").write_text(good + "\n")
        folder = sup.store.run_dir(run["id"])
        shutil.rmtree(folder)
        os.symlink(outside, folder)
    else:
        from pcd import _files
        monkeypatch.setitem(_files.MAX_BYTES, "metrics", 1000)
        path.write_text((good + "\n") * 100)
    n = sup.reconcile(run["id"], run["token"])  # never raises
    row = sup.store.get(run["id"])
    assert row["status"] == "running" and row["error"] and "metrics.jsonl" in row["error"]
    assert "\n" not in row["error"]
    assert n == (1 if kind == "nested" else 0)
    # the queue goes on: the next run is claimed and finishes
    nxt = s.submit({"method": "ws"})
    other = s.claim("w", "cpu:1")
    assert other["id"] == nxt and s.finish(nxt, other["token"], "done", result={"test_acc": 1.0})
    # the run keeps the reason when it finishes
    assert s.finish(run["id"], run["token"], "done", result={"test_acc": 2.0})
    assert "metrics.jsonl" in s.get(run["id"])["error"]
    sup.store.close()


class _IdleExecutor:
    """An executor whose run never ends by itself (the watchdog decides)."""

    runs_heartbeat = True  # as a local child process: the watchdog reads the run's own heartbeat

    def __init__(self):
        self.killed = []

    def poll(self, job):
        return None

    def kill(self, job):
        self.killed.append(job.run_id)

    def request_cancel(self, job):
        pass

    def pump(self, jobs):
        pass


def test_wall_clock_step_does_not_fail_a_healthy_run(tmp_path, monkeypatch):
    import time

    from pcd.jobs.executors.base import Job, Slot
    from pcd.jobs.executors.local import plan_slots

    data = tmp_path / "d"
    sup = Supervisor(data, runner="tests.jobs.runners:quick", stall_timeout_s=60.0)
    sup.executor = _IdleExecutor()
    run = sup.store.claim("w", "cpu:0") if sup.store.submit({"method": "pcd"}) else None
    job = Job(run["id"], run["token"], Slot("cpu:0", {}), handle=None)
    sup.jobs[job.run_id] = job
    sup._check(job)
    real_time, real_mono = time.time, time.monotonic
    monkeypatch.setattr(time, "time", lambda: real_time() + 3600.0)  # NTP steps the clock an hour on
    sup._check(job)
    assert sup.store.get(job.run_id)["status"] == "running" and not sup.executor.killed
    assert sup.store.report_progress(job.run_id, job.token, {"progress": 0.5})  # written at the new wall time
    sup._check(job)
    assert sup.store.get(job.run_id)["status"] == "running"
    # the watchdog still works on elapsed time: no progress for longer than the limit
    monkeypatch.setattr(time, "monotonic", lambda: real_mono() + 61.0)
    sup._check(job)
    row = sup.store.get(job.run_id)
    assert row["status"] == "failed" and "watchdog: no progress" in row["error"] and sup.executor.killed
    assert plan_slots  # the local executor module is importable beside the fake
    sup.store.close()


def test_copied_data_folder_serves_everything_it_served(tmp_path):
    data = tmp_path / "old-place"
    s = RunStore(data)
    new_row, old_row = s.submit_many([{"method": "pcd"}, {"method": "ws"}])
    for rid in (new_row, old_row):
        run = s.claim("w", "cpu:0")
        folder = s.run_dir(run["id"])
        (folder / "model_pruned.pt").write_bytes(b"model %d" % rid)
        res = {"test_acc": 90.0, "export": {"path": str(folder / "model_pruned.pt")},
               "checkpoint_path": str(folder / "checkpoint.pt")}
        assert s.finish(run["id"], run["token"], "done", result=res)
    stored = s.get(new_row)["result"]
    assert stored["export"]["path"] == "model_pruned.pt" and stored["checkpoint_path"] == "checkpoint.pt"
    # a row written by an older version holds an absolute path
    s._conn.execute("UPDATE runs SET result=? WHERE id=?",
                    (json.dumps({"export": {"path": str(s.run_dir(old_row) / "model_pruned.pt")}}), old_row))
    s.close()
    copy = tmp_path / "new-place"
    shutil.copytree(data, copy)
    shutil.rmtree(data)  # moved, not copied: nothing may be read from the old place
    c = RunStore(copy)
    for rid in (new_row, old_row):
        got = c.run_file(rid, c.get(rid)["result"]["export"]["path"])
        assert got == (copy / "runs" / str(rid) / "model_pruned.pt").resolve()
        assert got.read_bytes() == b"model %d" % rid
    # the suffix mapping never leaves the run's folder
    for bad in (str(tmp_path / "x" / "runs" / str(old_row) / ".." / str(new_row) / "model_pruned.pt"),
                str(tmp_path / "x" / "runs" / str(new_row) / "model_pruned.pt"), "/etc/passwd"):
        with pytest.raises(ValueError, match="must be inside"):
            c.run_file(old_row, bad)


@pytest.mark.parametrize("message,word", [("database or disk is full", "disk is full"),
                                          ("attempt to write a readonly database", "read-only")])
def test_supervisor_names_a_storage_fault_in_use(tmp_path, message, word):
    from pcd.jobs.executors.local import LocalExecutor, plan_slots

    data = tmp_path / "d"
    sup = Supervisor(data, runner="tests.jobs.runners:quick", poll_s=0.05)
    sup.executor, sup.slots = LocalExecutor(sup.store, sup.runner, 0.5), plan_slots(1)
    sup.store.submit({"method": "pcd"})

    def claim(*args, **kwargs):
        raise sqlite3.OperationalError(message)

    sup.store.claim = claim  # the next write of the supervisor meets the fault
    with pytest.raises(StorageFault) as e:
        sup._guarded_tick()
    assert word in str(e.value) and "\n" not in str(e.value)
    _no_damage_words(str(e.value))
    sup.store.close()


def test_store_fault_sweep():
    """Every storage fault x every place the store writes, odd run-folder names, bad metrics files,
    a lost database (tests/fuzz/store_cases.py; a row of ``python -m tests.fuzz.measure``)."""
    from tests.fuzz import store_cases

    tried, failures = store_cases.sweep()
    assert tried >= 40 and not failures, failures


def test_a_run_whose_folder_became_a_link_fails_to_start_and_writes_nothing_outside(tmp_path):
    """runs/<id> swapped for a link to a folder outside the data folder: the local executor refuses
    to start it (the run fails with the reason), nothing is written through the link, the queue goes on."""
    from pcd.jobs.executors.local import LocalExecutor

    data = tmp_path / "d"
    s = RunStore(data)
    first = s.submit({"method": "pcd", "epochs": 1})
    outside = tmp_path / "outside"
    outside.mkdir()
    shutil.rmtree(s.run_dir(first))
    os.symlink(outside, s.run_dir(first))
    run = s.claim("w", "cpu:0")
    ex = LocalExecutor(s, runner="tests.jobs.runners:quick", heartbeat_s=5.0)
    with pytest.raises(ValueError, match="is a link"):
        ex.start(run, ex.plan_slots(1)[0])
    assert list(outside.iterdir()) == []
    s.close()
