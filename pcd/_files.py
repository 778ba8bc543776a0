"""The one reader for files the product did not just write.

Every read of a path that comes from a run folder, the data folder, the store or an archive (logs,
``metrics.jsonl``, ``config.json``, ``final.json``, exported models, checkpoints, CIFAR batches,
recorder files, ``cluster.json``) goes through this module:

- **regular files only**: the file is opened with ``O_NONBLOCK | O_NOFOLLOW`` and checked with
  ``fstat`` on the open descriptor, so a FIFO never blocks, and a device (``/dev/zero``), socket or
  folder is refused in one line, with no window between the check and the read;
- **no link out of its folder**: with ``folder`` given, the path is resolved (links followed) and
  must stay inside ``folder``; a link *inside* the folder is fine. :func:`run_folder` refuses a run
  folder that is itself a link (its files would otherwise be "inside" wherever it points);
- **a documented size bound per kind of file** (:data:`MAX_BYTES`): a larger file is refused from
  its size, before a byte is read, and a file that grows while it is read stops at the bound;
- **tails from the end**: :func:`read_tail` seeks to the last ``max_bytes`` of a log, whatever its size.

Errors are :class:`FileRefused` (a ``ValueError`` through :class:`pcd._validate.Invalid`): one line
with the path, what is wrong and what is allowed.
"""
from __future__ import annotations

import errno
import os
import stat
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import IO, Any

from pcd import _validate as V

MiB = 2**20

#: The size bound of each kind of file (bytes). A file of that kind larger than this is refused.
MAX_BYTES: dict[str, int] = {
    "config": 1 * MiB,        # a run's config.json (a few hundred bytes in practice)
    "json": V.MAX_JSON_BYTES,  # final.json, cluster.json, any other small JSON document (4 MiB)
    "metrics": 64 * MiB,      # metrics.jsonl: one short row per epoch (~1 KiB) -> 65,000 epochs
    "log": 256 * 2**10,       # the tail of worker.log / supervisor.log that is read (256 KiB)
    "recorder": 256 * MiB,    # a training-geometry recorder file
    "checkpoint": 2048 * MiB,  # checkpoint.pt: model + optimizer + method state (ResNet-18: ~135 MB)
    "model": 1024 * MiB,      # an exported pruned model (ResNet-18 unpruned: ~45 MB)
    "cifar-archive": 256 * MiB,  # cifar-10/100-python.tar.gz (163 MB / 161 MB)
    "cifar-batch": 160 * MiB,  # one extracted CIFAR batch; the exact bound is per member (pcd.train.data)
}


class FileRefused(V.Invalid):
    """A file the product will not read: not a regular file, a link out of its folder, too large, or
    unreadable. The message is one line naming the path."""


def _limit(kind: str, max_bytes: int | None) -> int:
    if kind not in MAX_BYTES:
        raise ValueError(f"unknown file kind {kind!r}; known: {', '.join(MAX_BYTES)}")
    return MAX_BYTES[kind] if max_bytes is None else int(max_bytes)


def _mb(n: int) -> str:
    return f"{n / MiB:.1f} MiB" if n >= MiB else f"{n} bytes"


def checked_path(path: Any, folder: Any = None, name: str = "file") -> Path:
    """``path`` as an absolute path; with ``folder``, resolved (links followed; a relative path is
    taken from ``folder``) and required to lie inside ``folder``. Touches nothing but ``stat``."""
    if not isinstance(path, (str, os.PathLike)) or (isinstance(path, str) and (not path or "\x00" in path)):
        raise FileRefused(f"{name} must be a file path, got {V.show(path)}")
    if folder is None:
        return Path(os.path.abspath(os.fspath(path)))
    try:
        return V.inside(path, folder, name)
    except V.Invalid as exc:
        raise FileRefused(f"{exc} (a link out of its folder is not followed)") from None


@contextmanager
def open_file(path: Any, folder: Any = None, *, kind: str, max_bytes: int | None = None,
              name: str | None = None, whole: bool = True) -> Iterator[tuple[IO[bytes], int]]:
    """Open a regular file for reading: ``(binary file object, size)``.

    ``whole=True`` (files read in full) refuses a file larger than the kind's bound from its size;
    ``whole=False`` (tails) allows any size. Refused in one line (:class:`FileRefused`): missing,
    not a regular file (FIFO, device, socket, folder), a link out of ``folder``, too large, unreadable.
    """
    limit = _limit(kind, max_bytes)
    label = name or kind
    p = checked_path(path, folder, label)
    flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOCTTY", 0)
    if folder is not None:
        flags |= getattr(os, "O_NOFOLLOW", 0)  # p is resolved: a link appearing now is a swap
    try:
        fd = os.open(p, flags)
    except FileNotFoundError:
        raise FileRefused(f"{label} {p}: no such file") from None
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise FileRefused(f"{label} {p}: became a link while being opened; not read") from None
        if exc.errno in (errno.ENXIO, errno.EISDIR):
            raise FileRefused(f"{label} {p}: not a regular file (a device, pipe, socket or folder cannot be read)") from None
        raise FileRefused(f"{label} {p}: cannot read ({exc.strerror or type(exc).__name__})") from None
    try:
        st = os.fstat(fd)
        if stat.S_ISDIR(st.st_mode):
            raise FileRefused(f"{label} {p}: is a folder, not a file")
        if not stat.S_ISREG(st.st_mode):
            raise FileRefused(f"{label} {p}: not a regular file (a device, pipe or socket cannot be read)")
        if whole and st.st_size > limit:
            raise FileRefused(f"{label} {p}: {st.st_size} bytes, larger than the {limit}-byte limit "
                              f"({_mb(limit)}) for a {kind} file; not read")
        os.set_blocking(fd, True)
        fh = os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise
    with fh:
        yield fh, int(st.st_size)


def read_bytes(path: Any, folder: Any = None, *, kind: str, max_bytes: int | None = None,
               name: str | None = None) -> bytes:
    """The whole file, at most the kind's bound (a file that grows while read is refused)."""
    limit = _limit(kind, max_bytes)
    with open_file(path, folder, kind=kind, max_bytes=limit, name=name) as (fh, _):
        try:
            data = fh.read(limit + 1)
        except OSError as exc:
            raise FileRefused(f"{name or kind} {path}: cannot read ({exc.strerror or type(exc).__name__})") from None
    if len(data) > limit:
        raise FileRefused(f"{name or kind} {path}: grew past the {limit}-byte limit ({_mb(limit)}) for a {kind} "
                          "file while being read; not read")
    return data


def read_text(path: Any, folder: Any = None, *, kind: str, max_bytes: int | None = None,
              name: str | None = None) -> str:
    """:func:`read_bytes` decoded as UTF-8 (a binary file is refused in one line)."""
    data = read_bytes(path, folder, kind=kind, max_bytes=max_bytes, name=name)
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        raise FileRefused(f"{name or kind} {path}: not UTF-8 text") from None


def read_json(path: Any, folder: Any = None, *, kind: str = "json", max_bytes: int | None = None,
              name: str | None = None) -> Any:
    """A strict JSON document (:func:`pcd._validate.parse_json`: no NaN, bounded depth and numbers)."""
    limit = _limit(kind, max_bytes)
    label = name or kind
    text = read_text(path, folder, kind=kind, max_bytes=limit, name=label)
    return V.parse_json(text, f"{label} {path}", max_bytes=limit)


def read_tail(path: Any, folder: Any = None, *, kind: str = "log", max_bytes: int | None = None,
              name: str | None = None) -> str:
    """The last ``max_bytes`` (default: the kind's bound) of a text file of any size, decoded with
    replacement characters; a first line cut by the seek is dropped. '' for an empty file."""
    limit = _limit(kind, max_bytes)
    with open_file(path, folder, kind=kind, max_bytes=limit, name=name, whole=False) as (fh, size):
        start = max(0, size - limit)
        try:
            fh.seek(start)
            data = fh.read(limit)
        except OSError as exc:
            raise FileRefused(f"{name or kind} {path}: cannot read ({exc.strerror or type(exc).__name__})") from None
    text = data.decode("utf-8", errors="replace")
    if start > 0 and "\n" in text:
        text = text.split("\n", 1)[1]
    return text


def tail_lines(path: Any, folder: Any = None, lines: int = 40, *, max_bytes: int | None = None) -> list[str]:
    """The last ``lines`` lines of a log (:func:`read_tail`); [] when it is missing or refused."""
    try:
        text = read_tail(path, folder, kind="log", max_bytes=max_bytes)
    except FileRefused:
        return []
    return text.splitlines()[-max(1, int(lines)):]


def is_plain_id(name: str) -> bool:
    """A run folder's name: ASCII digits only, at most 18 of them (``"²"`` and ``"٣"`` are not ids)."""
    return 0 < len(name) <= 18 and name.isascii() and name.isdigit()


def run_folder(data_dir: Any, run_id: int) -> Path:
    """``<data_dir>/runs/<run_id>``, refused (:class:`FileRefused`) when it, or ``runs``, is a link or
    resolves outside the data folder: a run's files are read only from its own real folder."""
    root = Path(data_dir).expanduser()
    runs = root / "runs"
    folder = runs / str(int(run_id))
    for p in (runs, folder):
        if p.is_symlink():
            raise FileRefused(f"run folder {p} is a link; run files are only read from real folders inside "
                              f"{root}")
    if folder.exists():
        real, base = folder.resolve(), root.resolve()
        if base not in real.parents:
            raise FileRefused(f"run folder {folder} resolves to {real}, outside the data folder {base}")
    return folder


def run_file(data_dir: Any, run_id: int, path: Any, name: str = "stored file path") -> Path:
    """A file of run ``run_id`` named by a stored path (relative to the run folder, or absolute into
    it), resolved inside the run's real folder (:func:`run_folder`); links out are refused."""
    return checked_path(path, run_folder(data_dir, run_id), name)
