"""Storage faults, lost databases and hostile run folders against the run store and the supervisor
(issue 24's table, parts 3-5 and 7), swept systematically: every storage fault x every place the
store writes, every odd run-folder name x list / rebuild, every bad ``metrics.jsonl`` x the
supervisor's reconcile.

A case *fails* when: a storage fault is called damage or answered with rebuild advice, or is not
named (disk full / read-only / permission denied) with its path; anything raises other than a
one-line ``ValueError``; a run is lost (a queued, cancelled or finished run missing after the
database is lost and rebuilt, or a healthy database replaced); a stray ``*.rebuild-*`` file stays;
the supervisor raises while reading one run's files, or does not record why on that run.
Used by ``tests/fuzz/test_files_faults.py`` and ``python -m tests.fuzz.measure``.
"""
from __future__ import annotations

import errno
import json
import os
import shutil
import sqlite3
import tempfile
from collections.abc import Callable
from pathlib import Path
from unittest import mock

DAMAGE_WORDS = ("damage", "rebuild", "corrupt")
# what the file system or SQLite says for each fault, and the word the message must use
OS_FAULTS = {"ENOSPC": (errno.ENOSPC, "disk is full"), "EROFS": (errno.EROFS, "read-only"),
             "EACCES": (errno.EACCES, "permission denied"), "EPERM": (errno.EPERM, "not permitted"),
             "EDQUOT": (errno.EDQUOT, "quota")}
SQLITE_FAULTS = {"sqlite-full": ("database or disk is full", "disk is full"),
                 "sqlite-readonly": ("attempt to write a readonly database", "read-only")}
ODD_NAMES = ["²", "٣", "abc", "-1", "0", "1" * 19, " 1", "1 ", "1.0", "①", "𝟙"]


def _named(msg: str, word: str, path_part: str) -> str | None:
    if "\n" in msg:
        return f"message is not one line: {msg!r}"
    if any(w in msg.lower() for w in DAMAGE_WORDS):
        return f"a storage fault called damage / rebuild: {msg}"
    if word not in msg.lower() or path_part not in msg:
        return f"fault not named ({word!r}, {path_part!r}): {msg}"
    return None


def _expect_fault(fn: Callable[[], object], word: str, path_part: str) -> str | None:
    from pcd.jobs.store import StorageFault

    try:
        fn()
    except StorageFault as exc:
        return _named(str(exc), word, path_part)
    except Exception as exc:  # any other exception is the failure this sweep looks for
        return f"{type(exc).__name__}: {str(exc)[:200]}"
    return "the fault was not reported"


def _os_fault(code: int) -> Callable[..., object]:
    def boom(*args: object, **kwargs: object) -> object:
        raise OSError(code, os.strerror(code), str(args[-1]) if args else None)
    return boom


def _sqlite_fault(message: str) -> Callable[..., object]:
    def boom(*args: object, **kwargs: object) -> object:
        raise sqlite3.OperationalError(message)
    return boom


def _fault_cases() -> dict[str, Callable[[Path], str | None]]:
    from pcd.jobs import store as S

    cases: dict[str, Callable[[Path], str | None]] = {}
    for name, (code, word) in OS_FAULTS.items():
        def submit(tmp: Path, code: int = code, word: str = word) -> str | None:
            s = S.RunStore(tmp / "d")
            with mock.patch.object(S.os, "replace", _os_fault(code)):
                bad = _expect_fault(lambda: s.submit({"method": "pcd"}), word, "config.json")
            if bad is None and (s.list() or any((tmp / "d" / "runs").iterdir())):
                bad = "a refused submit left a row or a run folder"
            return bad

        def rebuild(tmp: Path, code: int = code, word: str = word) -> str | None:
            s = S.RunStore(tmp / "d")
            s.submit({"method": "pcd"})
            s.close()
            db = tmp / "d" / S.DB_NAME
            for ext in ("-wal", "-shm"):
                Path(str(db) + ext).unlink(missing_ok=True)
            db.write_bytes(b"x" * 4096)
            before = db.read_bytes()
            real = os.replace

            def replace(src: object, dst: object) -> None:
                if str(dst).endswith(S.DB_NAME):
                    raise OSError(code, os.strerror(code), str(dst))
                real(src, dst)  # type: ignore[arg-type]

            with mock.patch.object(S.os, "replace", replace):
                bad = _expect_fault(lambda: S.rebuild(tmp / "d"), word, S.DB_NAME)
            if bad is None and (db.read_bytes() != before or list((tmp / "d").glob("*.rebuild-*"))
                                or list((tmp / "d").glob("*.damaged-*"))):
                bad = "a refused rebuild changed the folder"
            return bad

        def open_folder(tmp: Path, code: int = code, word: str = word) -> str | None:
            with mock.patch.object(S.Path, "mkdir", _os_fault(code)):
                return _expect_fault(lambda: S.RunStore(tmp / "new"), word, "new")

        cases[f"submit, {name}"] = submit
        cases[f"rebuild, {name}"] = rebuild
        cases[f"create the data folder, {name}"] = open_folder
    for name, (message, word) in SQLITE_FAULTS.items():
        def open_db(tmp: Path, message: str = message, word: str = word) -> str | None:
            S.RunStore(tmp / "d").submit({"method": "pcd"})
            with mock.patch.object(sqlite3, "connect", _sqlite_fault(message)):
                return _expect_fault(lambda: S.RunStore(tmp / "d"), word, S.DB_NAME)

        def write(tmp: Path, message: str = message, word: str = word) -> str | None:
            s = S.RunStore(tmp / "d")
            rid = s.submit({"method": "pcd"})
            real = s._conn
            proxy = mock.MagicMock(wraps=real)

            def execute(sql: str, *args: object) -> object:
                if sql.startswith(("UPDATE", "INSERT", "DELETE")):
                    raise sqlite3.OperationalError(message)
                return real.execute(sql, *args)

            proxy.execute.side_effect = execute
            s._conn = proxy
            try:
                return _expect_fault(lambda: s.cancel(rid), word, S.DB_NAME)
            finally:
                s._conn = real

        def supervisor(tmp: Path, message: str = message, word: str = word) -> str | None:
            from pcd.jobs.executors.local import LocalExecutor, plan_slots
            from pcd.jobs.supervisor import Supervisor

            sup = Supervisor(tmp / "d", runner="tests.jobs.runners:quick", log=lambda msg: None)
            sup.executor, sup.slots = LocalExecutor(sup.store, sup.runner, 0.5), plan_slots(1)
            sup.store.submit({"method": "pcd"})
            with mock.patch.object(sup.store, "claim", _sqlite_fault(message)):
                return _expect_fault(sup._guarded_tick, word, S.DB_NAME)

        cases[f"open the database, {name}"] = open_db
        cases[f"a write in use, {name}"] = write
        cases[f"the supervisor in use, {name}"] = supervisor
    return cases


def _lost_db(tmp: Path) -> str | None:
    """Queued, cancelled, failed-after-start and done runs all come back after the database is lost."""
    from pcd.jobs.store import DB_NAME, RunStore

    s = RunStore(tmp / "d")
    started, done = s.submit_many([{"method": m} for m in ("mgda", "cagrad")])
    for _ in range(2):  # both start; one finishes (final.json), the other is interrupted
        run = s.claim("w", "cpu:0")
        assert run is not None
        (s.run_dir(run["id"]) / "metrics.jsonl").write_text(json.dumps({"epoch": 1}) + "\n")
    (s.run_dir(done) / "final.json").write_text(json.dumps({"test_acc": 1.0}))
    q, c = s.submit_many([{"method": m} for m in ("pcd", "ws")], priority=3)
    s.cancel(c)
    s.close()
    for ext in ("", "-wal", "-shm"):
        (tmp / "d" / (DB_NAME + ext)).unlink(missing_ok=True)
    got = {r["id"]: r["status"] for r in RunStore(tmp / "d").list()}
    want = {q: "queued", c: "cancelled", started: "failed", done: "done"}
    return None if got == want else f"after losing the database: {got}, want {want}"


def _healthy_db_not_replaced(tmp: Path) -> str | None:
    from pcd.jobs.store import DB_NAME, RunStore, StoreError, rebuild

    s = RunStore(tmp / "d")
    s.submit_many([{"method": "pcd"}] * 5)
    s.close()
    try:
        rebuild(tmp / "d")
    except StoreError as exc:
        if "opens fine" not in str(exc):
            return f"refused, but not saying why: {exc}"
    else:
        return "a database that opens fine was rebuilt"
    n = len(RunStore(tmp / "d").list())
    if n != 5 or list((tmp / "d").glob(f"{DB_NAME}.*")):
        return f"{n} runs left after the refused rebuild, or a stray file"
    return None


def _odd_folder(name: str) -> Callable[[Path], str | None]:
    def case(tmp: Path) -> str | None:
        from pcd.cli import main as cli_main
        from pcd.jobs.store import DB_NAME, RunStore

        s = RunStore(tmp / "d")
        rid = s.submit({"method": "pcd"})
        s.close()
        odd = tmp / "d" / "runs" / name
        odd.mkdir()
        (odd / "config.json").write_text(json.dumps({"method": "pcd"}))
        try:
            with mock.patch("sys.stdout"), mock.patch("sys.stderr"):
                if cli_main(["runs", "list", "--data-dir", str(tmp / "d")]) != 0:
                    return "runs list failed"
                for ext in ("", "-wal", "-shm"):
                    (tmp / "d" / (DB_NAME + ext)).unlink(missing_ok=True)
                if cli_main(["runs", "rebuild", "--data-dir", str(tmp / "d")]) != 0:
                    return "runs rebuild failed"
        except Exception as exc:
            return f"{type(exc).__name__}: {exc}"
        ids = [r["id"] for r in RunStore(tmp / "d").list()]
        if ids != [rid] or list((tmp / "d").glob("*.rebuild-*")):
            return f"runs after the rebuild: {ids} (want [{rid}]), or a stray .rebuild file"
        return None
    return case


def _bad_metrics(kind: str) -> Callable[[Path], str | None]:
    def case(tmp: Path) -> str | None:
        from pcd.jobs.supervisor import Supervisor

        sup = Supervisor(tmp / "d", runner="tests.jobs.runners:quick", log=lambda msg: None)
        rid = sup.store.submit({"method": "pcd"})
        run = sup.store.claim("w", "cpu:0")
        assert run is not None
        path = sup.store.run_dir(rid) / "metrics.jsonl"
        if kind == "nested":
            path.write_text("[" * 200_000 + "\n")
        elif kind == "fifo":
            os.mkfifo(path)
        elif kind == "binary":
            path.write_bytes(b"\xff\xfe\x00" * 5000)
        elif kind == "dev-zero":
            os.symlink("/dev/zero", path)
        elif kind == "etc-passwd":
            os.symlink("/etc/passwd", path)
        elif kind == "folder":
            path.mkdir()
        elif kind == "linked-run-folder":
            out = tmp / "outside"
            out.mkdir()
            (out / "metrics.jsonl").write_text(json.dumps({"epoch": 1}) + "\n")
            shutil.rmtree(sup.store.run_dir(rid))
            os.symlink(out, sup.store.run_dir(rid))
        try:
            sup.reconcile(rid, run["token"])
        except Exception as exc:
            return f"the supervisor raised {type(exc).__name__}: {str(exc)[:200]}"
        err = sup.store.get(rid)["error"] or ""
        if "metrics.jsonl" not in err or sup.store.metrics(rid):
            return f"not recorded on the run (error {err!r}) or rows taken from it"
        return None
    return case


CASES: dict[str, Callable[[Path], str | None]] = {
    **_fault_cases(),
    "database lost: every run comes back": _lost_db,
    "rebuild of a database that opens fine": _healthy_db_not_replaced,
    **{f"run folder named {n!r}": _odd_folder(n) for n in ODD_NAMES},
    **{f"metrics.jsonl: {k}": _bad_metrics(k) for k in ("nested", "fifo", "binary", "dev-zero", "etc-passwd",
                                                         "folder", "linked-run-folder")},
}


def run_case(name: str, tmp: Path) -> str | None:
    tmp.mkdir(parents=True, exist_ok=True)
    try:
        return CASES[name](tmp)
    except Exception as exc:  # a crash in the set-up is a failure too
        return f"{type(exc).__name__}: {str(exc)[:200]}"


def sweep() -> tuple[int, list[str]]:
    """Every case in its own folder under one temporary folder: ``(tried, failures)``."""
    with tempfile.TemporaryDirectory() as tmp:
        results = {name: run_case(name, Path(tmp) / f"case{i}") for i, name in enumerate(CASES)}
    return len(CASES), [f"{name}: {res}" for name, res in results.items() if res is not None]
