"""The run store: one SQLite database (WAL mode) that is the queue, the progress feed and the results.

Table ``runs`` holds one row per run (config, status, priority, timestamps, attempts, heartbeat,
progress, device, error, result) and table ``metrics`` one row per run and epoch. Every process
(the page, the CLI, the supervisor and its children) opens its own connection; WAL lets readers
run while a writer commits, and ``busy_timeout`` serialises writers.

Status machine::

    queued --claim--> running --finish--> done | failed | cancelled
    queued --cancel--> cancelled            running --reap (worker died)--> queued | failed
    failed | cancelled --retry--> queued

Claiming is one atomic statement, so two workers can never take the same run::

    UPDATE runs SET status='running', ... WHERE id = (SELECT id FROM runs WHERE status='queued'
        ORDER BY priority DESC, id LIMIT 1) AND status='queued' RETURNING *

Damage. A file that is not a SQLite database (or whose pages are corrupt) is reported in one line
(:class:`StoreError`: path, what is wrong, the command that rebuilds it) and never replaced. Each run's
folder holds its ``config.json`` and ``queue.json`` (priority, label, attempts, cancelled) from the
moment it is submitted, so a missing or empty database next to run folders is rebuilt whole from
them (:func:`rebuild`; queued runs included, finished ones from ``final.json`` + ``metrics.jsonl``);
a rebuild of a damaged file merges every row that file still yields, never drops one, keeps the old
file as a backup and refuses to replace a database that opens fine. A worker calls
:meth:`RunStore.check_file` to notice that its file was replaced or deleted. A stored row whose
config no longer parses is returned with ``invalid`` set (a one-line reason) instead of raising, so a
page can show it and offer to delete it.

Storage faults. A full disk, a read-only file system or a permission problem raises
:class:`StorageFault` naming the fault, the path and what to do -- never "damaged", never rebuild
advice (the file is fine). Opening writes nothing, so a read-only store can still be listed.

Scale. ``list(limit=, offset=, newest_first=)`` and :meth:`RunStore.iter_runs` page in SQL; counts
are one ``GROUP BY``; :meth:`RunStore.iter_done` extracts only the result fields a summary needs with
SQLite's JSON functions; :meth:`RunStore.version` (a counter kept by triggers) tells a page whether
anything changed. Paths stored in a result are relative to the run folder (a copied data folder
serves what it served); old absolute rows are mapped by their ``runs/<id>/`` suffix.

Every claim draws a fresh random ``token``; a worker's writes are conditioned on it, so a stale
child of a dead supervisor can never overwrite the state of a run that was requeued meanwhile.
"""
from __future__ import annotations

import builtins
import json
import math
import numbers
import os
import secrets
import shutil
import sqlite3
import time
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Any

from pcd import _files, _json
from pcd import _validate as V

STATUSES = ("queued", "running", "done", "failed", "cancelled")
FINISHED = ("done", "failed", "cancelled")
DB_NAME = "pcd.sqlite3"
SQLITE_HEADER = b"SQLite format 3\x00"


class StoreError(ValueError):
    """The database file is unusable (not a database, corrupt, replaced or deleted): one line
    with the path, what is wrong and what to do. Never raised for bad user input."""


class StorageFault(StoreError):
    """The storage under the data folder refuses a read or write (disk full, read-only file system,
    permission denied): one line naming the fault, the path and what to do. Never called damage and
    never answered with rebuild advice: the database itself is fine."""


def storage_fault(exc: BaseException, path: str | os.PathLike) -> StorageFault | None:
    """``exc`` (an ``OSError`` or a SQLite error) as a :class:`StorageFault` when it is one
    (:func:`pcd._validate.storage_fault` names it), else None."""
    msg = V.storage_fault(exc, path)
    return StorageFault(msg) if msg else None


def rebuild_command(data_dir: str | os.PathLike) -> str:
    return f"python -m pcd runs rebuild --data-dir {data_dir}"


def _file_problem(path: Path) -> str | None:
    """``"missing"``, ``"empty"``, a reason the file is not a database, or None (looks fine).
    Raises ``OSError`` when the file cannot be read (a storage fault, not damage)."""
    try:
        st = os.stat(path)
    except FileNotFoundError:
        return "missing"
    if not os.path.isfile(path):
        return "is not a regular file"
    if st.st_size == 0:
        return "empty"
    with open(path, "rb") as fh:  # an OSError (permission denied, ...) is the caller's storage fault
        head = fh.read(len(SQLITE_HEADER))
    if head != SQLITE_HEADER:
        return "is not a SQLite database (wrong file header)"
    return None


#: A config check handed to the store by whoever sets up the queue (the queue knows no run config):
#: ``check(config) -> config`` (normalized) or ``ValueError`` with a one-line reason. Training hands
#: :func:`pcd.train.queue.check_stored` (the CLI, the Pruning lab).
ConfigCheck = Callable[[dict], Any]


def stored_config_problem(config: dict, check: ConfigCheck | None) -> str | None:
    """Why a stored config would not run according to ``check`` (the read-back check of a row: a row
    edited by hand, or written by an older version with laxer checks, is shown as invalid instead of
    crashing a page or a worker), or None; None too when no check was handed."""
    if check is None:
        return None
    try:
        check(config)
    except ValueError as exc:
        return f"invalid stored config: {str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__}"
    return None


QUEUE_NAME = "queue.json"  # a run's queue entry (priority, label, attempts, cancelled), next to config.json


def run_folders(data_dir: str | os.PathLike, notes: builtins.list[str] | None = None) -> builtins.list[Path]:
    """``<data_dir>/runs/<id>/`` folders holding a ``config.json`` (id order). Names that are not
    plain ASCII digits (``runs/²``: ``str.isdigit`` accepts it) and run folders that are symlinks
    are skipped; when ``notes`` is given, one line naming them is appended to it."""
    root = Path(data_dir) / "runs"
    if not root.is_dir():
        return []
    out, odd, links = [], [], []
    for p in root.iterdir():
        name = p.name
        if not (_files.is_plain_id(name) and int(name) >= 1):
            if not name.startswith("."):
                odd.append(name)
            continue
        if p.is_symlink():
            links.append(name)
        elif (p / "config.json").is_file():
            out.append(p)
    if notes is not None and odd:
        notes.append(f"ignored {len(odd)} folder(s) in {root} not named by a run id (ASCII digits): "
                     + ", ".join(repr(n) for n in sorted(odd)[:10]) + (" ..." if len(odd) > 10 else ""))
    if notes is not None and links:
        notes.append(f"ignored {len(links)} run folder(s) in {root} that are symlinks (a run folder must be a "
                     "real folder inside the data folder): " + ", ".join(sorted(links, key=int)[:10]))
    return sorted(out, key=lambda q: int(q.name))


def _write_atomic(path: Path, text: str) -> None:
    """Write ``text`` to ``path`` through a temporary file + rename (never a half-written file)."""
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        tmp.write_text(text, encoding="utf-8")
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


def _portable(value: Any, folder: Path) -> Any:
    """``value`` with every absolute ``path`` / ``*_path`` string inside ``folder`` made relative to it
    (a stored path keeps working when the data folder is copied or moved)."""
    if isinstance(value, dict):
        out = {}
        for k, v in value.items():
            if isinstance(v, str) and isinstance(k, str) and (k == "path" or k.endswith("_path")) \
                    and os.path.isabs(v):
                try:
                    rel = os.path.relpath(os.path.abspath(v), os.path.abspath(folder))
                except ValueError:
                    rel = os.pardir
                out[k] = v if rel == os.pardir or rel.startswith(os.pardir + os.sep) else rel
            else:
                out[k] = _portable(v, folder)
        return out
    if isinstance(value, list):
        return [_portable(v, folder) for v in value]
    return value


def moved_path(path: str, run_id: int) -> str | None:
    """An absolute path stored by an older version for run ``run_id`` in a data folder that has
    since been copied or moved: its part after the last ``runs/<run_id>/``, else None."""
    parts = Path(path).parts
    for i in range(len(parts) - 2, -1, -1):
        if parts[i] == "runs" and parts[i + 1] == str(run_id):
            rest = parts[i + 2:]
            return os.path.join(*rest) if rest else None
    return None

_SCHEMA = """
CREATE TABLE IF NOT EXISTS runs (
    id               INTEGER PRIMARY KEY AUTOINCREMENT,
    config           TEXT    NOT NULL,
    status           TEXT    NOT NULL DEFAULT 'queued'
                     CHECK (status IN ('queued','running','done','failed','cancelled')),
    priority         INTEGER NOT NULL DEFAULT 0,
    label            TEXT,
    created_at       REAL    NOT NULL,
    started_at       REAL,
    finished_at      REAL,
    attempts         INTEGER NOT NULL DEFAULT 0,
    max_attempts     INTEGER NOT NULL DEFAULT 3,
    heartbeat        REAL,
    progress         REAL    NOT NULL DEFAULT 0,
    progress0        REAL    NOT NULL DEFAULT 0,
    progress_at      REAL,
    epoch            INTEGER,
    epochs           INTEGER,
    device           TEXT,
    worker           TEXT,
    token            TEXT,
    pid              INTEGER,
    cancel_requested INTEGER NOT NULL DEFAULT 0,
    error            TEXT,
    result           TEXT,
    placement        TEXT
);
CREATE INDEX IF NOT EXISTS runs_queue ON runs (status, priority DESC, id);
CREATE TABLE IF NOT EXISTS metrics (
    run_id     INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
    epoch      INTEGER NOT NULL,
    data       TEXT    NOT NULL,
    created_at REAL    NOT NULL,
    PRIMARY KEY (run_id, epoch)
);
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value INTEGER NOT NULL);
CREATE TRIGGER IF NOT EXISTS runs_version_insert AFTER INSERT ON runs
    BEGIN UPDATE meta SET value = value + 1 WHERE key = 'version'; END;
CREATE TRIGGER IF NOT EXISTS runs_version_update AFTER UPDATE ON runs
    BEGIN UPDATE meta SET value = value + 1 WHERE key = 'version'; END;
CREATE TRIGGER IF NOT EXISTS runs_version_delete AFTER DELETE ON runs
    BEGIN UPDATE meta SET value = value + 1 WHERE key = 'version'; END;
"""


def default_data_dir() -> Path:
    """The user's data folder: ``$PCD_DATA_DIR``, else ``$XDG_DATA_HOME/pcd-studio``
    (``~/.local/share/pcd-studio``)."""
    env = os.environ.get("PCD_DATA_DIR")
    if env:
        return Path(env).expanduser()
    base = os.environ.get("XDG_DATA_HOME") or os.path.join(os.path.expanduser("~"), ".local", "share")
    return Path(base) / "pcd-studio"


def dumps(obj: Any) -> str:
    """Strict JSON text (NumPy values converted, NaN/inf -> null): :func:`pcd._json.dumps`."""
    return _json.dumps(obj)


_CHECKED: set[tuple[int, int, int, int]] = set()  # database file versions that passed quick_check here


def _check_key(st: os.stat_result) -> tuple[int, int, int, int]:
    return (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns)


def _status_of(c: sqlite3.Connection, rid: int) -> str:
    """The status of run ``rid`` inside a transaction; ValueError when there is no such run."""
    row = c.execute("SELECT status FROM runs WHERE id=?", (rid,)).fetchone()
    if row is None:
        raise ValueError(f"no run with id {rid}")
    return row["status"]


class RunStore:
    """Access to one data folder's run store (``<data_dir>/pcd.sqlite3``, run files in
    ``<data_dir>/runs/<id>/``). Cheap to create; each instance opens its own connection.

    ``check``: the read-back check of a stored config (:data:`ConfigCheck`, handed by whoever sets up
    the queue); a row it refuses is returned with ``invalid`` set. Without one, rows are not checked
    beyond being a JSON object."""

    def __init__(self, data_dir: str | os.PathLike | None = None, *, timeout: float = 30.0,
                 auto_rebuild: bool = True, check: ConfigCheck | None = None) -> None:
        if check is not None and not callable(check):
            raise ValueError(f"check must be a function config -> config (or None), got {V.show(check)}")
        self.check = check
        if data_dir is not None and not isinstance(data_dir, (str, os.PathLike)):
            raise ValueError(f"data_dir must be a folder path, got {V.show(data_dir)}")
        if data_dir is not None:
            V.data_folder(data_dir, "data_dir")
        self.data_dir = Path(data_dir).expanduser() if data_dir is not None else default_data_dir()
        if self.data_dir.exists() and not self.data_dir.is_dir():
            raise ValueError(f"data_dir {str(self.data_dir)!r} exists and is not a folder")
        try:
            self.data_dir.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise (storage_fault(exc, self.data_dir)
                   or ValueError(f"data_dir {self.data_dir}: cannot create it ({exc.strerror})")) from None
        self.path = self.data_dir / DB_NAME
        self.rebuilt: dict | None = None
        try:
            problem = _file_problem(self.path)
        except OSError as exc:
            raise (storage_fault(exc, self.path)
                   or StoreError(f"run database {self.path} cannot be read ({exc.strerror}); nothing was "
                                 "changed")) from None
        if problem in ("missing", "empty") and run_folders(self.data_dir):
            n = len(run_folders(self.data_dir))
            if not auto_rebuild:
                raise StoreError(f"run database {self.path} is {problem} but {n} run folder(s) exist in "
                                 f"{self.data_dir / 'runs'}; rebuild it with: {rebuild_command(self.data_dir)}")
            self.rebuilt = rebuild(self.data_dir)
        elif problem not in (None, "missing", "empty"):
            raise StoreError(f"run database {self.path} {problem}; nothing was changed. Move it aside and "
                             f"rebuild from the run folders with: {rebuild_command(self.data_dir)}")
        try:
            self._connect(timeout)
        except sqlite3.DatabaseError as exc:
            fault = storage_fault(exc, self.path)
            if fault is not None:
                raise fault from None
            raise StoreError(f"run database {self.path} is damaged ({exc}); nothing was changed. Rebuild it "
                             f"from the run folders with: {rebuild_command(self.data_dir)}") from None

    def _connect(self, timeout: float) -> None:
        self._conn = sqlite3.connect(str(self.path), timeout=timeout, isolation_level=None,
                                     check_same_thread=False)
        self._conn.row_factory = sqlite3.Row
        self._conn.execute(f"PRAGMA busy_timeout = {int(timeout * 1000)}")
        mode = self._conn.execute("PRAGMA journal_mode = WAL").fetchone()[0]
        if str(mode).lower() != "wal":  # pragma: no cover - e.g. a network file system
            raise ValueError(f"could not put {self.path} in WAL mode (got {mode}); use a local folder")
        self._conn.execute("PRAGMA synchronous = NORMAL")
        self._conn.execute("PRAGMA foreign_keys = ON")
        st = os.stat(self.path)
        if _check_key(st) not in _CHECKED:
            # once per file version and process: the check reads every page (~1 s at 200,000 runs) and
            # a page script opens the store on every rerun. The file changes (size, mtime) only when
            # SQLite checkpoints its WAL; damage that appears in between fails the query that meets
            # it (a DatabaseError, reported in one line)
            ok = self._conn.execute("PRAGMA quick_check(1)").fetchone()[0]
            if ok != "ok":
                self._conn.close()
                raise sqlite3.DatabaseError(f"integrity check: {ok}")
        self._conn.executescript(_SCHEMA)
        _add_missing_columns(self._conn)
        _CHECKED.add(_check_key(os.stat(self.path)))
        self._identity = (st.st_dev, st.st_ino)

    def check_file(self) -> None:
        """Raise :class:`StoreError` if this store's database file was deleted or replaced since it
        was opened (writes would go to a file nobody reads). Workers call it every poll."""
        try:
            st = os.stat(self.path)
        except FileNotFoundError:
            raise StoreError(f"run database {self.path} was deleted while in use; stop this worker and "
                             f"restart it (the run folders rebuild the history: "
                             f"{rebuild_command(self.data_dir)})") from None
        if (st.st_dev, st.st_ino) != self._identity:
            raise StoreError(f"run database {self.path} was replaced by another file while in use; "
                             "stop this worker and restart it")

    # ---- plumbing ----------------------------------------------------------------------------

    def close(self) -> None:
        self._conn.close()

    def __enter__(self) -> RunStore:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def _tx(self, fn: Callable[[sqlite3.Connection], Any]) -> Any:
        """Run ``fn`` in one write transaction (BEGIN IMMEDIATE takes the write lock up front)."""
        c = self._conn
        try:
            c.execute("BEGIN IMMEDIATE")
            try:
                out = fn(c)
                c.execute("COMMIT")
            except BaseException:
                if c.in_transaction:
                    c.execute("ROLLBACK")
                raise
        except (sqlite3.OperationalError, OSError) as exc:
            fault = storage_fault(exc, getattr(exc, "filename", None) or self.path)
            if fault is not None:
                raise fault from None
            raise
        return out

    def run_dir(self, run_id: int) -> Path:
        return self.data_dir / "runs" / str(int(run_id))

    def run_file(self, run_id: Any, path: Any) -> Path | None:
        """A file of run ``run_id`` named by a stored path (e.g. ``result.export.path``:
        relative to the run folder, or absolute into it), served only if it lies inside the run's
        real folder (:func:`pcd._files.run_file`): ``ValueError`` for anything else (``/etc/passwd``,
        ``../``, a link out, a run folder that is itself a link); None when it does not exist. Read it
        with :meth:`read_run_file` (regular files only, bounded)."""
        if path is None or path == "":
            return None
        rid = self._check_id(run_id)
        if isinstance(path, str) and os.path.isabs(path):
            # a row of an older version stores absolute paths: one into this run's folder at another
            # data-folder location (copied or moved since) is taken by its part after runs/<id>/
            try:
                V.inside(path, self.run_dir(rid), "stored file path")
            except V.Invalid:
                rest = moved_path(path, rid)
                if rest is not None:
                    path = rest
        p = _files.run_file(self.data_dir, rid, path)
        return p if os.path.lexists(p) else None

    def read_run_file(self, run_id: Any, path: Any, *, kind: str = "model") -> bytes | None:
        """The bytes of :meth:`run_file` through the one reader (regular file, the kind's size bound
        from :data:`pcd._files.MAX_BYTES`); None when it does not exist. ``ValueError`` if refused."""
        p = self.run_file(run_id, path)
        return None if p is None else _files.read_bytes(p, p.parent, kind=kind, name="run file")

    def _row(self, row: sqlite3.Row | None) -> dict | None:
        if row is None:
            return None
        d = dict(row)
        d["invalid"] = None
        try:
            d["config"] = V.parse_json(d["config"], "stored config") if d.get("config") else {}
            if not isinstance(d["config"], dict):
                raise V.Invalid(f"stored config must be a JSON object, got {V.show(d['config'])}")
        except V.Invalid as exc:
            d["invalid"], d["config"] = str(exc), {}
        if d["invalid"] is None and d["config"]:
            d["invalid"] = stored_config_problem(d["config"], self.check)
        try:
            d["result"] = V.parse_json(d["result"], "stored result") if d.get("result") else None
        except V.Invalid as exc:
            d["invalid"], d["result"] = d["invalid"] or str(exc), None
        d["cancel_requested"] = bool(d.get("cancel_requested"))
        d["placement"] = json.loads(d["placement"]) if d.get("placement") else None
        return d

    @staticmethod
    def _check_id(run_id: Any) -> int:
        """A run id: an integer in [1, 2**63 - 1] (SQLite's INTEGER), digits in a string accepted."""
        if isinstance(run_id, str) and run_id.strip().isdigit() and len(run_id.strip()) <= 30:
            run_id = int(run_id.strip())
        if isinstance(run_id, bool) or not isinstance(run_id, numbers.Integral):
            raise ValueError(f"run id must be a positive integer, got {V.show(run_id)}")
        return V.integer(run_id, "run id", low=1, high=V.LIMITS["run_id"])

    # ---- submitting ----------------------------------------------------------------------------

    def submit(self, config: dict, *, priority: int = 0, max_attempts: int = 3,
               label: str | None = None, check: ConfigCheck | None = None) -> int:
        """Queue one run; returns its id (``check``: as in :meth:`submit_many`)."""
        return self.submit_many([config], priority=priority, max_attempts=max_attempts,
                                labels=[label], check=check)[0]

    def submit_many(self, configs: Iterable[dict], *, priority: int = 0, max_attempts: int = 3,
                    labels: Iterable[str | None] | None = None, check: ConfigCheck | None = None) -> list[int]:
        """Queue several runs in one transaction (a sweep is all queued or none); returns ids in order.

        ``check`` (handed by the caller, e.g. :func:`pcd.train.queue.validate_for_queue`): each config
        is replaced by ``check(config)`` before anything is stored, so a bad config fails at submit
        time (``ValueError``) and nothing is queued."""
        configs = list(configs)
        if not configs:
            raise ValueError("nothing to submit: give at least one config")
        for i, cfg in enumerate(configs):
            if not isinstance(cfg, dict):
                raise ValueError(f"config #{i} must be a JSON object (dict), got {type(cfg).__name__}")
        if check is not None:
            configs = [check(dict(cfg)) for cfg in configs]
            for i, cfg in enumerate(configs):
                if not isinstance(cfg, dict):
                    raise ValueError(f"check returned {type(cfg).__name__} for config #{i}, expected a dict")
        V.integer(priority, "priority", low=-(2**62), high=2**62)
        if isinstance(max_attempts, bool) or not isinstance(max_attempts, int) or not 1 <= max_attempts <= 100:
            raise ValueError(f"max_attempts must be an integer in [1, 100], got {max_attempts!r}")
        labels = list(labels) if labels is not None else [None] * len(configs)
        if len(labels) != len(configs):
            raise ValueError("labels must have one entry per config")
        try:
            texts = [dumps(c) for c in configs]
        except (TypeError, ValueError) as exc:
            raise ValueError(f"config is not JSON-serialisable: {exc}") from None
        now = time.time()

        made: list[Path] = []

        def fn(c: sqlite3.Connection) -> list[int]:
            ids = []
            for text, lab in zip(texts, labels):
                cur = c.execute(
                    "INSERT INTO runs (config, priority, max_attempts, label, created_at) VALUES (?,?,?,?,?)",
                    (text, priority, max_attempts, lab, now))
                ids.append(int(cur.lastrowid or 0))  # sqlite3 always sets it after an INSERT
            # each run's folder holds its config and queue entry before the runs are committed, so a
            # lost database comes back whole from the folders (queued runs included)
            for rid, text, lab in zip(ids, texts, labels):
                folder = self.run_dir(rid)
                if not folder.exists():
                    made.append(folder)
                folder.mkdir(parents=True, exist_ok=True)
                _write_atomic(folder / "config.json", text)
                _write_atomic(folder / QUEUE_NAME, dumps({"priority": priority, "label": lab,
                                                         "max_attempts": max_attempts, "created_at": now}))
            return ids

        try:
            return self._tx(fn)
        except BaseException:
            for folder in made:  # an aborted submit leaves no run folder behind
                shutil.rmtree(folder, ignore_errors=True)
            raise

    def _mark_queue_file(self, run_id: int, **changes: Any) -> None:
        """Update a run's ``queue.json`` (cancelled / queued again) so a rebuild restores that state.
        Best effort for runs submitted before run folders held one (nothing to update then)."""
        try:
            folder = _files.run_folder(self.data_dir, run_id)
            qfile = folder / QUEUE_NAME
            entry = _files.read_json(qfile, folder, kind="config", name=QUEUE_NAME) if qfile.exists() else None
        except V.Invalid:
            entry = None
        if not isinstance(entry, dict):
            return
        entry.update(changes)
        try:
            _write_atomic(qfile, dumps(entry))
        except OSError as exc:
            raise storage_fault(exc, qfile) or StoreError(f"cannot write {qfile}: {exc.strerror}") from None

    # ---- worker side -------------------------------------------------------------------------

    def claim(self, worker: str, device: str) -> dict | None:
        """Atomically take the next queued run (highest priority, then oldest); None if none."""
        now = time.time()
        token = secrets.token_hex(8)
        row = self._conn.execute(
            """UPDATE runs SET status='running', worker=?, device=?, token=?, attempts=attempts+1,
                   started_at=?, heartbeat=?, progress_at=?, progress0=progress, error=NULL, pid=NULL,
                   placement=NULL
               WHERE id = (SELECT id FROM runs WHERE status='queued' ORDER BY priority DESC, id LIMIT 1)
                 AND status='queued'
               RETURNING *""",
            (worker, device, token, now, now, now)).fetchone()
        return self._row(row)

    def set_pid(self, run_id: int, token: str, pid: int, placement: dict | None = None) -> None:
        """The worker process is up (the no-progress watchdog counts from here, not from the claim).
        ``placement``: where it runs (``{"host", "node", "ip", "gpu", "pid"}``), shown with the run."""
        now = time.time()
        place = dumps(placement) if placement is not None else None
        self._conn.execute("UPDATE runs SET pid=?, heartbeat=?, progress_at=?, placement=COALESCE(?, placement) "
                           "WHERE id=? AND token=? AND status='running'",
                           (int(pid), now, now, place, int(run_id), token))

    def add_metrics(self, run_id: int, rows: Iterable[dict]) -> int:
        """Insert per-epoch rows the store does not have yet (the run's ``metrics.jsonl`` reconciled
        after a lost progress write); rows already stored are kept. Returns how many were added."""
        rows = [r for r in rows if isinstance(r, dict) and isinstance(r.get("epoch"), int)
                and not isinstance(r.get("epoch"), bool)]
        if not rows:
            return 0
        now = time.time()

        def fn(c: sqlite3.Connection) -> int:
            if c.execute("SELECT 1 FROM runs WHERE id=?", (int(run_id),)).fetchone() is None:
                return 0
            n = 0
            for r in rows:
                n += c.execute("INSERT OR IGNORE INTO metrics (run_id, epoch, data, created_at) VALUES (?,?,?,?)",
                               (int(run_id), int(r["epoch"]), dumps(r), now)).rowcount
            return n

        return self._tx(fn)

    def heartbeat(self, run_id: int, token: str) -> bool:
        """Record that the worker of this run is alive; False if the run is no longer ours."""
        cur = self._conn.execute("UPDATE runs SET heartbeat=? WHERE id=? AND token=? AND status='running'",
                                 (time.time(), int(run_id), token))
        return cur.rowcount == 1

    def report_progress(self, run_id: int, token: str, payload: dict) -> bool:
        """Store one ``on_progress`` payload (progress 0..1, epoch, optional per-epoch metrics row).

        Returns False if the run is no longer owned by this token (requeued or finished)."""
        if not isinstance(payload, dict):
            raise ValueError(f"progress payload must be a dict, got {type(payload).__name__}")
        prog = payload.get("progress")
        try:
            prog = min(1.0, max(0.0, float(prog))) if prog is not None else None
        except (TypeError, ValueError):
            raise ValueError(f"progress must be a number in [0, 1], got {prog!r}") from None
        if prog is not None and not math.isfinite(prog):
            prog = None
        metrics = payload.get("metrics")
        epoch = payload.get("epoch")
        now = time.time()

        def fn(c: sqlite3.Connection) -> bool:
            cur = c.execute(
                """UPDATE runs SET progress=COALESCE(?, progress), epoch=COALESCE(?, epoch),
                       epochs=COALESCE(?, epochs), heartbeat=?, progress_at=?
                   WHERE id=? AND token=? AND status='running'""",
                (prog, epoch, payload.get("epochs"), now, now, int(run_id), token))
            if cur.rowcount != 1:
                return False
            if isinstance(metrics, dict):
                ep = metrics.get("epoch", epoch)
                if ep is not None:
                    c.execute("INSERT OR REPLACE INTO metrics (run_id, epoch, data, created_at) VALUES (?,?,?,?)",
                              (int(run_id), int(ep), dumps(metrics), now))
            return True

        return self._tx(fn)

    def note(self, run_id: int, token: str, text: str) -> bool:
        """Record a problem on a running run (e.g. its ``metrics.jsonl`` could not be read) without
        stopping it: shown as its error, kept when it finishes done. False if not ours any more."""
        cur = self._conn.execute("UPDATE runs SET error=? WHERE id=? AND token=? AND status='running'",
                                 (str(text)[:2000], int(run_id), token))
        return cur.rowcount == 1

    def cancel_requested(self, run_id: int) -> bool:
        row = self._conn.execute("SELECT cancel_requested, status FROM runs WHERE id=?", (int(run_id),)).fetchone()
        return row is None or bool(row["cancel_requested"]) or row["status"] != "running"

    def finish(self, run_id: int, token: str, status: str, *, result: dict | None = None,
               error: str | None = None) -> bool:
        """Mark a running run finished (only if ``token`` still owns it). Returns True if written."""
        if status not in FINISHED:
            raise ValueError(f"finish status must be one of {list(FINISHED)}, got {status!r}")
        res = dumps(_portable(result, self.run_dir(run_id))) if result is not None else None
        prog = 1.0 if status == "done" else None
        cur = self._conn.execute(
            """UPDATE runs SET status=?, result=COALESCE(?, result), error=COALESCE(?, error), finished_at=?,
                   progress=COALESCE(?, progress), heartbeat=?
               WHERE id=? AND token=? AND status='running'""",
            (status, res, error, time.time(), prog, time.time(), int(run_id), token))
        return cur.rowcount == 1

    def requeue_or_fail(self, run_id: int, token: str | None, reason: str) -> str | None:
        """A running run lost its worker: back to the queue (it resumes from its checkpoint) unless
        it used up its attempts (then failed) or a cancel was requested (then cancelled).
        ``token=None`` matches any owner. Returns the new status, or None if nothing changed."""
        def fn(c: sqlite3.Connection) -> str | None:
            q = "SELECT * FROM runs WHERE id=? AND status='running'" + (" AND token=?" if token else "")
            row = c.execute(q, (int(run_id), token) if token else (int(run_id),)).fetchone()
            if row is None:
                return None
            now = time.time()
            if row["cancel_requested"]:
                new, err = "cancelled", None
            elif row["attempts"] >= row["max_attempts"]:
                new, err = "failed", f"{reason}; gave up after {row['attempts']} attempt(s)"
            else:
                new, err = "queued", f"{reason}; requeued (attempt {row['attempts']} of {row['max_attempts']})"
            c.execute("""UPDATE runs SET status=?, error=?, token=NULL, pid=NULL,
                             finished_at=CASE WHEN ?='queued' THEN NULL ELSE ? END WHERE id=?""",
                      (new, err, new, now, int(run_id)))
            return new

        return self._tx(fn)

    def release(self, run_id: int, token: str, reason: str) -> str | None:
        """Give a running run back to the queue without counting the attempt (graceful stop)."""
        cur = self._conn.execute(
            """UPDATE runs SET status=CASE WHEN cancel_requested THEN 'cancelled' ELSE 'queued' END,
                   attempts=MAX(0, attempts-1), token=NULL, pid=NULL, error=?
               WHERE id=? AND token=? AND status='running'""", (reason, int(run_id), token))
        return self.get(run_id)["status"] if cur.rowcount == 1 else None

    def reap_orphans(self, reason: str = "worker died") -> dict[int, str]:
        """Every run still marked running (their supervisor is gone) -> requeued / failed / cancelled.
        Only call this while holding the supervisor lock of this data folder."""
        ids = [r["id"] for r in self._conn.execute("SELECT id FROM runs WHERE status='running' ORDER BY id")]
        out = {}
        for rid in ids:
            new = self.requeue_or_fail(rid, None, reason)
            if new:
                out[int(rid)] = new
        return out

    # ---- user side ---------------------------------------------------------------------------

    def cancel(self, run_id: Any) -> str:
        """Cancel a run: a queued run is cancelled at once; a running run gets its cancel flag set
        (its worker stops within a few seconds). Returns the resulting status."""
        rid = self._check_id(run_id)

        def fn(c: sqlite3.Connection) -> str:
            st = _status_of(c, rid)
            if st == "queued":
                c.execute("UPDATE runs SET status='cancelled', finished_at=?, cancel_requested=1 WHERE id=?",
                          (time.time(), rid))
                self._mark_queue_file(rid, cancelled=True)
                return "cancelled"
            if st == "running":
                c.execute("UPDATE runs SET cancel_requested=1 WHERE id=?", (rid,))
                return "cancelling"
            raise ValueError(f"run {rid} is already {st}; only queued or running runs can be cancelled")

        return self._tx(fn)

    def retry(self, run_id: Any) -> None:
        """Put a failed or cancelled run back in the queue (it resumes from its checkpoint if any)."""
        rid = self._check_id(run_id)

        def fn(c: sqlite3.Connection) -> None:
            st = _status_of(c, rid)
            if st not in ("failed", "cancelled"):
                raise ValueError(f"run {rid} is {st}; only failed or cancelled runs can be retried")
            c.execute("""UPDATE runs SET status='queued', attempts=0, cancel_requested=0, error=NULL,
                             finished_at=NULL, token=NULL, pid=NULL WHERE id=?""", (rid,))
            self._mark_queue_file(rid, cancelled=False)

        self._tx(fn)

    def delete(self, run_id: Any) -> None:
        """Delete a run that is not running, with its metrics and its files."""
        rid = self._check_id(run_id)

        def fn(c: sqlite3.Connection) -> None:
            if _status_of(c, rid) == "running":
                raise ValueError(f"run {rid} is running; cancel it first, then delete it")
            c.execute("DELETE FROM metrics WHERE run_id=?", (rid,))
            c.execute("DELETE FROM runs WHERE id=?", (rid,))

        self._tx(fn)
        folder = self.run_dir(rid)
        if folder.is_symlink():  # the link goes, never what it points to
            folder.unlink(missing_ok=True)
            return
        for name in (QUEUE_NAME, "config.json"):  # first: a half-removed folder is never rebuilt as a run
            try:
                (folder / name).unlink(missing_ok=True)
            except OSError:
                pass
        shutil.rmtree(folder, ignore_errors=True)

    # ---- reading -----------------------------------------------------------------------------

    def get(self, run_id: Any) -> dict:
        rid = self._check_id(run_id)
        row = self._row(self._conn.execute("SELECT * FROM runs WHERE id=?", (rid,)).fetchone())
        if row is None:
            raise ValueError(f"no run with id {rid}")
        return row

    def list(self, status: str | Iterable[str] | None = None, *, limit: int | None = None, offset: int = 0,
             newest_first: bool = False) -> builtins.list[dict]:
        """Runs, oldest first (``newest_first``: newest first), optionally only those with the given
        status(es); ``limit`` / ``offset`` page through them in SQL (None = all)."""
        where, args = self._status_filter(status)
        if limit is not None:
            V.integer(limit, "limit", low=0, high=V.LIMITS["run_id"])
        V.integer(offset, "offset", low=0, high=V.LIMITS["run_id"])
        q = (f"SELECT * FROM runs{where} ORDER BY id {'DESC' if newest_first else 'ASC'}"
             f" LIMIT {-1 if limit is None else int(limit)} OFFSET {int(offset)}")
        rows = self._conn.execute(q, args).fetchall()
        return [r for r in map(self._row, rows) if r is not None]

    def iter_runs(self, status: str | Iterable[str] | None = None, *, newest_first: bool = False,
                  batch: int = 1000) -> Iterator[dict]:
        """Every run (oldest first, or newest first), read ``batch`` rows at a time: memory stays
        bounded however many runs the store holds (``runs list --all``, ``runs summary``)."""
        where, args = self._status_filter(status)
        last: int | None = None
        op, order = ("<", "DESC") if newest_first else (">", "ASC")
        while True:
            cond = "" if last is None else f"{' WHERE' if not where else ' AND'} id {op} ?"
            rows = self._conn.execute(f"SELECT * FROM runs{where}{cond} ORDER BY id {order} LIMIT {int(batch)}",
                                      [*args] if last is None else [*args, last]).fetchall()
            if not rows:
                return
            last = int(rows[-1]["id"])
            for r in map(self._row, rows):
                if r is not None:
                    yield r

    _DONE_SRC = "COALESCE(json_extract(result, '$.config'), config)"  # the result's own config first
    _DONE_WHERE = "+status='done' AND result IS NOT NULL AND json_valid(config) AND json_valid(result)"

    def done_groups(self) -> builtins.list[tuple[str, int, int]]:
        """``(config without seed, runs, newest id)`` per distinct config of the finished runs, one
        SQL aggregate: what a results view groups into studies without reading a single run."""
        return [(str(k), int(n), int(m)) for k, n, m in self._conn.execute(
            f"SELECT json_remove({self._DONE_SRC}, '$.seed') AS k, COUNT(*), MAX(id) FROM runs "
            f"WHERE {self._DONE_WHERE} GROUP BY k")]

    def iter_done(self, result_paths: Iterable[str], *, newest_first: bool = False, limit: int | None = None,
                  keys: Iterable[str] | None = None, batch: int = 5000) -> Iterator[dict]:
        """Finished runs, light (oldest first, or newest first; at most ``limit``): ``{"id", "status",
        "started_at", "finished_at", "config", "config_key", "result"}`` where ``result`` holds only
        ``result_paths`` (``"test_acc"``, ``"export.params_after"``, ...), extracted by SQLite's JSON
        functions in one pass per row: the whole result (history, latency tables) is never parsed in
        Python. The config (the result's own when it has one) is parsed once per distinct
        config-without-seed (``config_key``, for callers that cache what they derive from it). Rows
        whose JSON SQLite does not accept are left out (:meth:`list` shows them flagged invalid)."""
        paths = builtins.list(result_paths)
        if not paths:
            raise ValueError("iter_done needs at least one result path")
        for p in paths:
            if not all(part.isidentifier() for part in p.split(".")):
                raise ValueError(f"result path must be dotted names, got {p!r}")
        if limit is not None:
            V.integer(limit, "limit", low=0, high=V.LIMITS["run_id"])
        src = self._DONE_SRC
        values = "json_extract(result, " + ", ".join(f"'$.{p}'" for p in paths) + ")"
        op, order = ("<", "DESC") if newest_first else (">", "ASC")
        wanted = None if keys is None else builtins.list(keys)
        only = "" if wanted is None else \
            f" AND json_remove({src}, '$.seed') IN (SELECT value FROM json_each(?))"
        # `+status` (in _DONE_WHERE): walk the rows in id order (stops after `limit`), not the status
        # index and a sort
        q = (f"SELECT id, started_at, finished_at, json_remove({src}, '$.seed'), json_extract({src}, '$.seed'), "
             f"{values} FROM runs WHERE {self._DONE_WHERE}{only} "
             f"AND (? IS NULL OR id {op} ?) ORDER BY id {order} LIMIT ?")
        extra = () if wanted is None else (json.dumps(wanted),)
        configs: dict[str, dict | None] = {}
        last: int | None = None
        left = limit
        while left is None or left > 0:
            n = batch if left is None else min(batch, left)
            rows = self._conn.execute(q, (*extra, last, last, int(n))).fetchall()
            if not rows:
                return
            last = int(rows[-1][0])
            for row in rows:
                key = row[3]
                if key not in configs:
                    if len(configs) > 10_000:  # bounded whatever the store holds
                        configs.clear()
                    try:
                        got = V.parse_json(key, "stored config")
                        configs[key] = got if isinstance(got, dict) else None
                    except V.Invalid:
                        configs[key] = None
                base = configs[key]
                if base is None:
                    continue
                cfg = dict(base)
                if row[4] is not None:
                    cfg["seed"] = row[4]
                got_values = json.loads(row[5]) if len(paths) > 1 else [row[5]]
                res: dict[str, Any] = {}
                for p, v in zip(paths, got_values):
                    if v is None:
                        continue
                    *parents, leaf = p.split(".")
                    node = res
                    for part in parents:
                        node = node.setdefault(part, {})
                    node[leaf] = v
                yield {"id": int(row[0]), "status": "done", "started_at": row[1], "finished_at": row[2],
                       "config": cfg, "config_key": key, "result": res}
            if left is not None:
                left -= len(rows)

    @staticmethod
    def _status_filter(status: str | Iterable[str] | None) -> tuple[str, builtins.list[str]]:
        if status is None:
            return "", []
        wanted = [status] if isinstance(status, str) else builtins.list(status)
        bad = [s for s in wanted if s not in STATUSES]
        if bad:
            raise ValueError(f"unknown status {bad}; allowed: {', '.join(STATUSES)}")
        return f" WHERE status IN ({','.join('?' * len(wanted))})", wanted

    def version(self) -> int:
        """A counter that grows whenever a run is added, changed or deleted (by any process; triggers
        keep it): a page re-reads its tables only when it differs from the one it last showed."""
        row = self._conn.execute("SELECT value FROM meta WHERE key='version'").fetchone()
        return int(row[0]) if row else 0

    def status_marker(self, status: str) -> tuple:
        """``(count, max id, max finished_at)`` of the runs with ``status``: changes when one of them
        is added, removed or finishes again (cheaper to compare than the runs themselves)."""
        self._status_filter(status)
        row = self._conn.execute("SELECT COUNT(*), MAX(id), MAX(finished_at) FROM runs WHERE status=?",
                                 (status,)).fetchone()
        return tuple(row)

    def queue_order(self) -> builtins.list[int]:
        """Ids of the queued runs in the order the workers will take them."""
        return [int(r[0]) for r in self._conn.execute(
            "SELECT id FROM runs WHERE status='queued' ORDER BY priority DESC, id")]

    def metrics(self, run_id: Any) -> builtins.list[dict]:
        rid = self._check_id(run_id)
        return [json.loads(r[0]) for r in self._conn.execute(
            "SELECT data FROM metrics WHERE run_id=? ORDER BY epoch", (rid,))]

    def counts(self) -> dict[str, int]:
        out = {s: 0 for s in STATUSES}
        for st, n in self._conn.execute("SELECT status, COUNT(*) FROM runs GROUP BY status"):
            out[st] = int(n)
        return out


def _add_missing_columns(conn: sqlite3.Connection) -> None:
    """Columns added after a data folder was created (``CREATE TABLE IF NOT EXISTS`` keeps old tables)."""
    have = {r[1] for r in conn.execute("PRAGMA table_info(runs)")}
    if "placement" not in have:
        conn.execute("ALTER TABLE runs ADD COLUMN placement TEXT")
    if conn.execute("SELECT 1 FROM meta WHERE key='version'").fetchone() is None:  # no write when it is there
        conn.execute("INSERT OR IGNORE INTO meta (key, value) VALUES ('version', 0)")


def _readonly(path: Path, opts: str = "mode=ro") -> sqlite3.Connection:
    conn = sqlite3.connect(f"{path.resolve().as_uri()}?{opts}", uri=True)
    conn.row_factory = sqlite3.Row
    return conn


def opens_fine(path: str | os.PathLike) -> int | None:
    """How many runs the database at ``path`` holds when it opens fine (read-only, SQLite's quick
    check passes, table ``runs`` is there), else None. A storage fault (permission denied, ...)
    raises :class:`StorageFault`: a file that cannot be read cannot be judged damaged."""
    p = Path(path)
    try:
        if _file_problem(p) is not None:
            return None
        conn = _readonly(p)
    except (OSError, sqlite3.OperationalError) as exc:
        raise storage_fault(exc, p) or StoreError(f"run database {p} cannot be opened ({exc})") from None
    try:
        if conn.execute("PRAGMA quick_check(1)").fetchone()[0] != "ok":
            return None
        return int(conn.execute("SELECT COUNT(*) FROM runs").fetchone()[0])
    except sqlite3.OperationalError as exc:
        fault = storage_fault(exc, p)
        if fault is not None:
            raise fault from None
        return None
    except sqlite3.DatabaseError:
        return None
    finally:
        conn.close()


def _salvage(path: Path) -> tuple[builtins.list[dict], builtins.list[tuple], str | None]:
    """The run rows and metric rows a damaged database still yields (read-only, row by row when a
    whole-table read fails), and a note on what could not be read."""
    rows: builtins.list[dict] = []
    metrics: builtins.list[tuple] = []
    note = None
    for opts in ("mode=ro", "immutable=1"):
        try:
            conn = _readonly(path, opts)
        except sqlite3.Error as exc:
            note = str(exc)
            continue
        try:
            try:
                rows = [dict(r) for r in conn.execute("SELECT * FROM runs ORDER BY id")]
            except sqlite3.DatabaseError as exc:
                note = str(exc)
                try:
                    ids = [int(r[0]) for r in conn.execute("SELECT id FROM runs")]
                except sqlite3.DatabaseError:
                    ids = []
                for i in ids:
                    try:
                        got = conn.execute("SELECT * FROM runs WHERE id=?", (i,)).fetchone()
                    except sqlite3.DatabaseError:
                        continue
                    if got is not None:
                        rows.append(dict(got))
            try:
                metrics = [tuple(r) for r in conn.execute("SELECT run_id, epoch, data, created_at FROM metrics")]
            except sqlite3.DatabaseError:
                metrics = []
        finally:
            conn.close()
        if rows:
            break
    return rows, metrics, note


def _folder_run(folder: Path, rid: int) -> tuple[dict, builtins.list[dict], builtins.list[str]]:
    """One run folder as a ``runs`` row (+ its metric rows and notes). Status from the folder:
    ``final.json`` -> done; never started (only ``config.json`` / ``queue.json``) -> queued (or
    cancelled when its queue entry says so); otherwise failed, with the reason."""
    notes: builtins.list[str] = []
    cfg = _files.read_json(folder / "config.json", folder, kind="config", name="config.json")
    if not isinstance(cfg, dict):
        raise V.Invalid("config.json is not a JSON object")
    entry: dict = {}
    qfile = folder / QUEUE_NAME
    if os.path.lexists(qfile):
        try:
            got = _files.read_json(qfile, folder, kind="config", name=QUEUE_NAME)
            entry = got if isinstance(got, dict) else {}
        except V.Invalid as exc:
            notes.append(f"run {rid}: {exc} (priority and label not restored)")
    result = None
    if os.path.lexists(folder / "final.json"):
        try:
            result = _files.read_json(folder / "final.json", folder, kind="json", name="final.json")
        except V.Invalid as exc:
            notes.append(f"run {rid}: {exc} (kept as failed)")
    rows = []
    mfile = folder / "metrics.jsonl"
    if os.path.lexists(mfile):
        try:
            for line in _files.read_text(mfile, folder, kind="metrics", name="metrics.jsonl").splitlines():
                if line.strip():
                    try:
                        rows.append(V.parse_json(line, "metrics row"))
                    except V.Invalid:
                        continue
        except V.Invalid as exc:
            notes.append(f"run {rid}: {exc} (metrics skipped)")
    created = (folder / "config.json").stat().st_mtime

    def num(key: str, default: Any, low: float, high: float) -> Any:
        v = entry.get(key)
        ok = isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v) and low <= v <= high
        return v if ok else default

    started = any((folder / n).exists() for n in ("metrics.jsonl", "checkpoint.pt", "worker.log", "final.json"))
    if result is not None:
        status, err = "done", None
        finished: float | None = (folder / "final.json").stat().st_mtime
    elif not started:
        status = "cancelled" if entry.get("cancelled") is True else "queued"
        err, finished = None, (created if status == "cancelled" else None)
    else:
        status, finished = "failed", created
        err = ("recovered after the run database was lost: it had started but left no final.json; "
               "retry resumes from its checkpoint")
    label = entry.get("label")
    row = {"id": rid, "config": dumps(cfg), "status": status, "created_at": num("created_at", created, 0, 1e11),
           "started_at": created if started else None, "finished_at": finished,
           "progress": 1.0 if result is not None else 0.0,
           "epochs": cfg.get("epochs") if isinstance(cfg.get("epochs"), int) else None,
           "epoch": len(rows) or None, "error": err,
           "result": dumps(_portable(result, folder)) if result is not None else None,
           "label": label if isinstance(label, str) else ("recovered" if started else None),
           "priority": int(num("priority", 0, -(2**62), 2**62)),
           "max_attempts": int(num("max_attempts", 3, 1, 100)),
           "cancel_requested": int(status == "cancelled")}
    return row, rows, notes


def _keep_copy(src: Path, dst: Path) -> None:
    """A second name for ``src`` (a hard link; a copy where the file system has none)."""
    try:
        os.link(src, dst)
    except OSError:
        shutil.copy2(src, dst)


def rebuild(data_dir: str | os.PathLike) -> dict:
    """Rebuild a missing, empty or damaged ``<data_dir>/pcd.sqlite3``, merging every row the old
    file still yields with the run folders; never drops a row and refuses to replace a database
    that opens fine (:class:`StoreError`). Storage faults raise :class:`StorageFault` and change
    nothing.

    Each ``runs/<id>/`` with a ``config.json`` is run ``<id>`` (status as :func:`_folder_run` says);
    a row the old database still holds wins over its folder (it knows the status, priority and
    attempts exactly). The new file is built beside the old one and only then swapped in; the old
    file (and its -wal/-shm) is kept as ``pcd.sqlite3.damaged-<time>``. Returns ``{"backup": path or
    None, "runs": n, "done": n, "queued": n, "kept": rows from the old file, "skipped": [notes]}``."""
    root = Path(data_dir).expanduser()
    path = root / DB_NAME
    held = opens_fine(path)
    if held is not None:
        raise StoreError(f"run database {path} opens fine ({held} run(s)); nothing was rebuilt. A rebuild only "
                         "replaces a missing, empty or damaged database")
    skipped: builtins.list[str] = []
    folders = run_folders(root, skipped)
    try:
        exists = os.path.lexists(path) and _file_problem(path) != "missing"
    except OSError as exc:
        raise storage_fault(exc, path) or StoreError(f"run database {path} cannot be read ({exc})") from None
    old_rows, old_metrics, note = _salvage(path) if exists else ([], [], None)
    if exists and note and old_rows:
        skipped.append(f"old database: {len(old_rows)} run row(s) read back, some could not be ({note})")
    elif exists and note:
        skipped.append(f"old database: no run row could be read back ({note})")
    tmp = root / f"{DB_NAME}.rebuild-{os.getpid()}"
    sides = [Path(str(tmp) + ext) for ext in ("", "-wal", "-shm", "-journal")]
    conn = None
    backup = None
    try:
        for side in sides:
            side.unlink(missing_ok=True)
        conn = sqlite3.connect(str(tmp), isolation_level=None)
        conn.executescript(_SCHEMA)
        _add_missing_columns(conn)
        cols = [r[1] for r in conn.execute("PRAGMA table_info(runs)")]
        conn.execute("BEGIN")
        n_folder = 0
        for folder in folders:
            rid = int(folder.name)
            try:
                row, mrows, notes = _folder_run(folder, rid)
            except (V.Invalid, OSError) as exc:
                skipped.append(f"run {rid}: {exc}")
                continue
            skipped.extend(notes)
            conn.execute(f"INSERT INTO runs ({','.join(row)}) VALUES ({','.join('?' * len(row))})", list(row.values()))
            for i, r in enumerate(mrows):
                if isinstance(r, dict):
                    ep = r.get("epoch", i + 1)
                    if isinstance(ep, int) and not isinstance(ep, bool) and 0 <= ep <= V.LIMITS["epochs"]:
                        conn.execute("INSERT OR REPLACE INTO metrics (run_id, epoch, data, created_at) "
                                     "VALUES (?,?,?,?)", (rid, ep, dumps(r), row["created_at"]))
            n_folder += 1
        for old in old_rows:  # what the old database still holds wins over the folders
            keep = {k: v for k, v in old.items() if k in cols}
            if not isinstance(keep.get("id"), int) or keep.get("config") is None:
                skipped.append(f"old database: a row without id or config ({V.show(old.get('id'))}) not kept")
                continue
            conn.execute(f"INSERT OR REPLACE INTO runs ({','.join(keep)}) VALUES ({','.join('?' * len(keep))})",
                         list(keep.values()))
        have = {int(r[0]) for r in conn.execute("SELECT id FROM runs")}
        conn.executemany("INSERT OR REPLACE INTO metrics (run_id, epoch, data, created_at) VALUES (?,?,?,?)",
                         [m for m in old_metrics if m[0] in have])
        conn.execute("COMMIT")
        counts = dict(conn.execute("SELECT status, COUNT(*) FROM runs GROUP BY status").fetchall())
        total = sum(counts.values())
        conn.close()
        conn = None
        # the old file (and its -wal/-shm) is kept as a backup by a second name; the live name is
        # swapped only at the end, so a failure anywhere before leaves it where it was
        sides_old = [root / (DB_NAME + ext) for ext in ("-wal", "-shm")]
        if exists or any(p.exists() for p in sides_old):
            stamp = time.strftime("%Y%m%d-%H%M%S")
            backup = root / f"{DB_NAME}.damaged-{stamp}"
            i = 1
            while backup.exists():
                backup = root / f"{DB_NAME}.damaged-{stamp}-{i}"
                i += 1
            for src, ext in ((path, ""), (sides_old[0], "-wal"), (sides_old[1], "-shm")):
                if src.exists():
                    _keep_copy(src, Path(str(backup) + ext))
        for side in sides_old:  # an old WAL must never be applied to the new file
            side.unlink(missing_ok=True)
        try:
            os.replace(tmp, path)
        except OSError:
            if backup is not None:  # the old file never moved: its WAL back, the extra names gone
                for side, ext in zip(sides_old, ("-wal", "-shm")):
                    kept = Path(str(backup) + ext)
                    if kept.exists() and not side.exists():
                        os.replace(kept, side)
                for ext in ("", "-wal", "-shm"):
                    Path(str(backup) + ext).unlink(missing_ok=True)
                backup = None
            raise
    except (OSError, sqlite3.OperationalError) as exc:
        fault = storage_fault(exc, getattr(exc, "filename", None) or root)
        if fault is not None:
            raise fault from None
        raise
    finally:
        if conn is not None:
            conn.close()
        for side in sides:
            try:
                side.unlink(missing_ok=True)
            except OSError:
                pass
    return {"backup": None if backup is None else str(backup), "runs": total, "done": int(counts.get("done", 0)),
            "queued": int(counts.get("queued", 0)), "kept": len(old_rows), "from_folders": n_folder,
            "skipped": skipped}


def eta_seconds(run: dict, now: float | None = None) -> float | None:
    """Estimated seconds left for a running run, from the progress made since this attempt began."""
    if run.get("status") != "running" or not run.get("started_at"):
        return None
    now = time.time() if now is None else now
    done = float(run.get("progress") or 0) - float(run.get("progress0") or 0)
    elapsed = now - float(run["started_at"])
    if done <= 1e-6 or elapsed <= 0:
        return None
    return max(0.0, elapsed / done * (1.0 - float(run.get("progress") or 0)))
