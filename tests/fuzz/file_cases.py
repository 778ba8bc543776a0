"""Hostile files (issue 24's table): each case builds a data folder, run folder or archive that an
attacker or an unlucky user could leave, runs the product's reader on it and says what went wrong.

A case *fails* when the call hangs (no answer within its generous deadline), raises anything but a
one-line ``ValueError``/``FileNotFoundError``, returns content it must not serve (``/etc/passwd``'s
text, bytes of a file outside the folder), or takes more memory than its bound allows.
Used by ``tests/fuzz/test_file_reader.py`` and the "files and faults" block of ``python -m tests.fuzz.measure``.
"""
from __future__ import annotations

import io
import json
import os
import pickle
import shutil
import tarfile
import threading
import tracemalloc
from collections.abc import Callable
from pathlib import Path

import numpy as np

DEADLINE_S = 120.0  # generous: a hang is minutes-to-forever, a correct refusal is milliseconds
PASSWD_MARK = "root:"


def _store(tmp: Path, runs: int = 1):
    from pcd.jobs.store import RunStore

    store = RunStore(tmp / "data")
    for _ in range(runs):
        store.submit({"dataset": "digits", "method": "pcd", "epochs": 1})
    store.run_dir(1).mkdir(parents=True, exist_ok=True)
    return store


def _log_panel_and_cli(store) -> str:
    """What the Pruning lab's panel and ``python -m pcd runs log 1`` show (the same function)."""
    from pcd.jobs.placement import log_tail

    return log_tail(store, 1, 60)


def case_log_links_to_passwd(tmp: Path) -> str | None:
    store = _store(tmp)
    os.symlink("/etc/passwd", store.run_dir(1) / "worker.log")
    text = _log_panel_and_cli(store)
    if PASSWD_MARK in text:
        return "served /etc/passwd through a worker.log link"
    return None if "not shown" in text else f"no reason given: {text[:80]!r}"


def case_log_links_to_dev_zero(tmp: Path) -> str | None:
    store = _store(tmp)
    os.symlink("/dev/zero", store.run_dir(1) / "worker.log")
    text = _log_panel_and_cli(store)
    return None if "not shown" in text and len(text) < 1000 else f"read /dev/zero: {len(text)} chars"


def case_log_is_fifo(tmp: Path) -> str | None:
    store = _store(tmp)
    os.mkfifo(store.run_dir(1) / "worker.log")
    text = _log_panel_and_cli(store)
    return None if "not a regular file" in text else f"unexpected: {text[:80]!r}"


def case_log_is_huge(tmp: Path) -> str | None:
    """A 6 GiB (sparse) log: only its tail is read."""
    store = _store(tmp)
    p = store.run_dir(1) / "worker.log"
    with open(p, "wb") as fh:
        fh.truncate(6 * 2**30)
        fh.seek(6 * 2**30 - 11)
        fh.write(b"\nlast line\n")
    tracemalloc.start()
    text = _log_panel_and_cli(store)
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    if not text.endswith("last line"):
        return f"tail lost its last line: {text[-40:]!r}"
    return None if peak < 16 * 2**20 else f"reading the tail took {peak / 2**20:.0f} MiB"


def case_run_folder_links_out(tmp: Path) -> str | None:
    """``runs/1`` is a link to a folder outside the data folder: nothing in it is served."""
    from pcd.jobs.store import RunStore

    outside = tmp / "outside"
    outside.mkdir()
    (outside / "model_pruned.pt").write_bytes(b"secret")
    store = RunStore(tmp / "data")
    store.submit({"dataset": "digits", "method": "pcd", "epochs": 1})
    (tmp / "data" / "runs").mkdir(exist_ok=True)
    shutil.rmtree(tmp / "data" / "runs" / "1", ignore_errors=True)  # written at submit: replaced by a link
    os.symlink(outside, tmp / "data" / "runs" / "1")
    for path in ("model_pruned.pt", str(outside / "model_pruned.pt")):
        try:
            got = store.read_run_file(1, path)
        except ValueError as exc:
            if "link" not in str(exc):
                return f"refused without naming the link: {exc}"
            continue
        return f"served {path!r} from a linked run folder: {got!r}"
    return None


def case_export_link_out(tmp: Path) -> str | None:
    store = _store(tmp)
    os.symlink("/etc/passwd", store.run_dir(1) / "model_pruned.pt")
    try:
        got = store.read_run_file(1, "model_pruned.pt")
    except ValueError:
        return None
    return f"served a link out: {got[:20]!r}"


def case_export_is_fifo(tmp: Path) -> str | None:
    store = _store(tmp)
    os.mkfifo(store.run_dir(1) / "model_pruned.pt")
    try:
        store.read_run_file(1, "model_pruned.pt")
    except ValueError as exc:
        return None if "not a regular file" in str(exc) else f"wrong reason: {exc}"
    return "read a FIFO"


def case_tampered_checkpoint(tmp: Path) -> str | None:
    """A checkpoint that pickles ``os.system``: refused, naming why, never advising ``weights_only=False``."""
    import torch

    from pcd.train.export import load_tensors

    class Payload:
        def __reduce__(self):
            return (os.system, ("echo pwned > " + str(tmp / "PWNED"),))

    p = tmp / "checkpoint.pt"
    torch.save({"model": {}, "x": Payload()}, p)
    try:
        load_tensors(p, tmp, kind="checkpoint")
    except ValueError as exc:
        msg = str(exc)
        if (tmp / "PWNED").exists():
            return "the payload ran"
        if "weights_only" in msg:
            return f"message mentions weights_only: {msg}"
        if "more than tensors" not in msg or "\n" in msg:
            return f"message does not say why in one line: {msg!r}"
        return None
    return "a tampered checkpoint was loaded"


def _cifar_batch(n: int) -> bytes:
    x = np.zeros((n, 3072), np.uint8)
    return pickle.dumps({b"batch_label": b"x", b"data": x, b"labels": [0] * n}, protocol=2)


def _archive_with_member(tmp: Path, member: str, size: int) -> Path:
    """cifar-10-python.tar.gz whose ``member`` is ``size`` zero bytes (a gzip bomb: ~size/1000 on disk)."""
    root = tmp / "cifar"
    root.mkdir()
    out = root / "cifar-10-python.tar.gz"
    with tarfile.open(out, "w:gz", compresslevel=1) as tf:
        info = tarfile.TarInfo(f"cifar-10-batches-py/{member}")
        info.size = size

        class Zeros(io.RawIOBase):
            left = size

            def readable(self) -> bool:
                return True

            def readinto(self, b):  # type: ignore[override]
                n = min(len(b), self.left)
                b[:n] = bytes(n)
                self.left -= n
                return n

        tf.addfile(info, io.BufferedReader(Zeros(), 1 << 20))
    return root


def _expect_size_refusal(fn: Callable[[], object], member: str) -> str | None:
    tracemalloc.start()
    try:
        fn()
    except ValueError as exc:
        peak = tracemalloc.get_traced_memory()[1]
        msg = str(exc)
        if member not in msg or "bytes" not in msg or "at most" not in msg:
            return f"message does not name the member and both sizes: {msg}"
        if peak > 48 * 2**20:
            return f"{peak / 2**20:.0f} MiB taken before refusing"
        return None
    finally:
        tracemalloc.stop()
    return "an oversized member was accepted"


def case_cifar_archive_bomb(tmp: Path) -> str | None:
    """A 64 MiB data_batch_1 inside a ~70 KB archive: refused from its tar header (no inflation)."""
    from pcd.train.data import load_cifar_arrays

    root = _archive_with_member(tmp, "data_batch_1", 64 * 2**20)
    if (root / "cifar-10-python.tar.gz").stat().st_size > 2**20:
        return "test archive is not a bomb"
    return _expect_size_refusal(lambda: load_cifar_arrays("cifar10", root), "data_batch_1")


def case_cifar_archive_other_member_bomb(tmp: Path) -> str | None:
    """A huge member the loader does not want (``readme.html``) is refused, not inflated to skip it."""
    from pcd.train.data import load_cifar_arrays

    root = _archive_with_member(tmp, "readme.html", 200 * 2**20)
    try:
        load_cifar_arrays("cifar10", root)
    except ValueError as exc:
        return None if "readme.html" in str(exc) else f"wrong message: {exc}"
    except FileNotFoundError as exc:
        return f"inflated the whole member to skip it: {exc}"
    return "accepted"


def case_cifar_folder_sparse_6g(tmp: Path) -> str | None:
    """``truncate -s 6G`` an extracted batch: refused from its size."""
    from pcd.train.data import load_cifar_arrays

    folder = tmp / "cifar" / "cifar-10-batches-py"
    folder.mkdir(parents=True)
    for m in [f"data_batch_{i}" for i in range(1, 6)] + ["test_batch"]:
        (folder / m).write_bytes(_cifar_batch(4))
    with open(folder / "data_batch_1", "r+b") as fh:
        fh.truncate(6 * 2**30)
    return _expect_size_refusal(lambda: load_cifar_arrays("cifar10", tmp / "cifar"), "data_batch_1")


def case_cifar_folder_batch_is_fifo(tmp: Path) -> str | None:
    from pcd.train.data import load_cifar_arrays

    folder = tmp / "cifar" / "cifar-10-batches-py"
    folder.mkdir(parents=True)
    for m in [f"data_batch_{i}" for i in range(1, 6)] + ["test_batch"]:
        (folder / m).write_bytes(_cifar_batch(4))
    (folder / "test_batch").unlink()
    os.mkfifo(folder / "test_batch")
    try:
        load_cifar_arrays("cifar10", tmp / "cifar")
    except (ValueError, FileNotFoundError):
        return None
    return "read a FIFO as a batch"


def case_cluster_json_link_to_dev_zero(tmp: Path) -> str | None:
    from pcd.jobs.placement import read_cluster

    (tmp / "data").mkdir()
    os.symlink("/dev/zero", tmp / "data" / "cluster.json")
    return None if read_cluster(tmp / "data", os.getpid()) is None else "read /dev/zero as cluster.json"


def case_config_json_huge(tmp: Path) -> str | None:
    """A run folder's config.json of 6 GiB (sparse) read by a resuming run: refused from its size."""
    from pcd import _files

    (tmp / "run").mkdir()
    with open(tmp / "run" / "config.json", "wb") as fh:
        fh.truncate(6 * 2**30)
    try:
        _files.read_json(tmp / "run" / "config.json", tmp / "run", kind="config")
    except ValueError as exc:
        return None if "limit" in str(exc) else f"wrong reason: {exc}"
    return "read a 6 GiB config.json"


def case_json_deeply_nested(tmp: Path) -> str | None:
    from pcd import _files

    (tmp / "final.json").write_text("[" * 200_000)
    try:
        _files.read_json(tmp / "final.json", tmp, kind="json")
    except ValueError as exc:
        return None if "nest" in str(exc) else f"wrong reason: {exc}"
    return "parsed 200,000 levels"


CASES: dict[str, Callable[[Path], str | None]] = {
    "worker.log -> /etc/passwd (runs log, lab panel)": case_log_links_to_passwd,
    "worker.log -> /dev/zero": case_log_links_to_dev_zero,
    "worker.log is a FIFO": case_log_is_fifo,
    "worker.log of 6 GiB (tail only)": case_log_is_huge,
    "runs/1 links outside the data folder (download)": case_run_folder_links_out,
    "export path links to /etc/passwd": case_export_link_out,
    "export is a FIFO": case_export_is_fifo,
    "tampered checkpoint.pt (pickled os.system)": case_tampered_checkpoint,
    "CIFAR archive: data_batch_1 inflates to 64 MiB": case_cifar_archive_bomb,
    "CIFAR archive: unwanted member inflates to 200 MiB": case_cifar_archive_other_member_bomb,
    "CIFAR folder: truncate -s 6G data_batch_1": case_cifar_folder_sparse_6g,
    "CIFAR folder: test_batch is a FIFO": case_cifar_folder_batch_is_fifo,
    "cluster.json -> /dev/zero": case_cluster_json_link_to_dev_zero,
    "config.json of 6 GiB": case_config_json_huge,
    "final.json of 200,000 '['": case_json_deeply_nested,
}


def run_case(name: str, tmp: Path, deadline_s: float = DEADLINE_S) -> str | None:
    """Run one case in a thread: None when it held, else what went wrong (a hang is a failure)."""
    out: dict[str, object] = {}

    def target() -> None:
        try:
            out["result"] = CASES[name](tmp)
        except BaseException as exc:  # a crash is a finding, reported as such
            out["result"] = f"crashed: {type(exc).__name__}: {str(exc)[:160]}"

    th = threading.Thread(target=target, daemon=True)
    th.start()
    th.join(deadline_s)
    if th.is_alive():
        return f"no answer within {deadline_s:.0f} s (hang)"
    res = out.get("result")
    return None if res is None else str(res)


def sweep() -> tuple[int, list[str]]:
    import tempfile

    failures = []
    for name in CASES:
        with tempfile.TemporaryDirectory() as tmp:
            res = run_case(name, Path(tmp))
            if res is not None:
                failures.append(f"{name}: {res}")
    return len(CASES), failures


def as_json() -> str:  # pragma: no cover - a convenience for notes
    n, f = sweep()
    return json.dumps({"tried": n, "failures": f})
