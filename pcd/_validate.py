"""The one validation layer: every boundary (CLI, run configs, stored rows, query parameters,
formulas, archives, files) checks its input here.

Every check either returns the clean value or raises :class:`Invalid` (a ``ValueError``) with one
line of the form ``"<name> must be <what is allowed>, got <what came>"``. Callers that already
catch ``ValueError`` (the CLI prints ``error: ...`` and exits 2; pages show the message) need no
change.

Numbers are *typed*: ``"0.1"`` is not a number and ``True`` is not an integer (pass
``strict=False`` where the input is text by nature, e.g. a query parameter or an argparse value).
Every value that costs time or memory has a documented upper bound in :data:`LIMITS`.

API::

    integer(v, name, low=, high=, allow_none=, strict=)   -> int | None
    number(v, name, low=, high=, open_low=, open_high=, allow_none=, strict=) -> float | None
    boolean(v, name, strict=)                              -> bool
    choice(v, name, choices)                               -> the matching choice
    box(v, name)                                           -> ((xmin, xmax), (ymin, ymax)), a 2-D map box
    text(v, name, max_len=, allow_empty=)                  -> str
    seed(v, name="seed")                                   -> int in [0, 2**63 - 1]
    limit(kind, v, name=None, low=1)                       -> int within LIMITS[kind]
    frame_size(v, name)                                    -> (w, h) of an exported animation (FRAME_SIZE)
    query_value(raw, default, name, allowed=, low=, high=) -> a query parameter as default's type
    query_json(raw, name)                                  -> a query parameter as small strict JSON
    read_bytes(path, name, max_bytes=) / read_text(...)    -> bounded file read
    parse_json(text, name, max_bytes=, max_depth=)         -> strict JSON, nesting limited
    load_json(path, name, ...)                             -> read_text + parse_json
    inside(path, folder, name)                             -> resolved Path inside folder
    writable_file(path, name) / writable_dir(path, name)   -> a target that can be written
    show(v)                                                -> a short repr for messages
"""
from __future__ import annotations

import errno
import json
import math
import numbers
import os
import re
import stat
from collections.abc import Iterable
from pathlib import Path
from typing import Any, Literal, overload

__all__ = [
    "INT64_MAX",
    "LIMITS",
    "MAX_JSON_BYTES",
    "MAX_JSON_DEPTH",
    "MAX_TEXT",
    "Invalid",
    "boolean",
    "box",
    "choice",
    "frame_size",
    "inside",
    "integer",
    "json_depth",
    "limit",
    "load_json",
    "number",
    "parse_json",
    "query_json",
    "query_value",
    "read_bytes",
    "read_text",
    "seed",
    "show",
    "text",
    "writable_dir",
    "writable_file",
]

INT64_MAX = 2**63 - 1

#: Upper bounds for values that cost time or memory (inclusive). One home for every boundary.
LIMITS: dict[str, int] = {
    "epochs": 10_000,            # a pruning run's epochs
    "steps": 1_000_000,          # trajectory steps of the engine / a CLI experiment
    "K": 512,                    # objectives in one Gram matrix
    "batch_size": 65_536,        # training mini-batch
    "samples": 10_000_000,       # max_train_samples / max_test_samples
    "repeats": 1_000,            # latency_repeats, benchmark repeats
    "threads": 1_024,            # torch threads
    "progress_every": 1_000_000, # batches between progress reports
    "grid": 2_048,               # one side of a landscape grid
    "basin_grid": 200,           # one side of a basin map's start grid (grid x grid trajectories per method)
    "starts": 100_000,           # start points of one batched trajectory run
    "runs": 10_000,              # runs in one sweep / submit
    "run_id": INT64_MAX,         # SQLite INTEGER PRIMARY KEY
    "seed": INT64_MAX,           # numpy / torch seeds
    "frames": 1_000,             # frames of an exported animation (GIF / MP4), at least 2
}

#: An exported animation's frame size (w, h), inclusive bounds; both even (H.264 in yuv420p).
FRAME_SIZE = ((320, 240), (3840, 2160))

MAX_JSON_BYTES = 4 * 1024 * 1024  # 4 MiB: a config / query value / result file read as JSON
MAX_JSON_DEPTH = 32               # nesting of objects and arrays
MAX_TEXT = 10_000                 # characters of a free text field (a formula, a name)
_MAX_NUMBER_CHARS = 100           # a number written with more characters is refused before parsing


class Invalid(ValueError):
    """Bad input: the message is one line saying what is wrong and what is allowed."""


def show(value: Any, width: int = 60) -> str:
    """A short one-line ``repr`` for messages (long values are cut with ``...``)."""
    try:
        r = repr(value)
    except Exception:  # pragma: no cover - a broken __repr__
        r = f"<{type(value).__name__}>"
    r = r.replace("\n", " ").replace("\r", " ")
    if len(r) > width:
        r = r[: width - 3] + "..."
    return r


def _fail(name: str, allowed: str, value: Any) -> Invalid:
    return Invalid(f"{name} must be {allowed}, got {show(value)}")


def _range(low: Any, high: Any, open_low: bool = False, open_high: bool = False) -> str:
    """``in [lo, hi]`` / ``>= lo`` / ``<= hi`` (``(`` / ``>`` for an open end)."""
    if low is not None and high is not None:
        return f"in {'(' if open_low else '['}{low}, {high}{')' if open_high else ']'}"
    if low is not None:
        return f"{'>' if open_low else '>='} {low}"
    return f"{'<' if open_high else '<='} {high}"


def _from_text(value: str, name: str, kind: str) -> Any:
    s = value.strip()
    if len(s) > _MAX_NUMBER_CHARS:
        raise Invalid(f"{name} must be {kind} of at most {_MAX_NUMBER_CHARS} characters, "
                      f"got {len(s)} characters")
    try:
        if kind == "an integer":
            try:
                return int(s)
            except ValueError:
                f = float(s)  # "1e3" is an integer written in floating-point notation
                if math.isfinite(f) and f == int(f):
                    return int(f)
                raise
        return float(s)
    except (ValueError, OverflowError):
        raise _fail(name, kind, value) from None


@overload
def integer(value: Any, name: str, *, low: int | None = ..., high: int | None = ...,
            allow_none: Literal[False] = ..., strict: bool = ...) -> int: ...
@overload
def integer(value: Any, name: str, *, low: int | None = ..., high: int | None = ...,
            allow_none: bool = ..., strict: bool = ...) -> int | None: ...
def integer(value: Any, name: str, *, low: int | None = None, high: int | None = None,
            allow_none: bool = False, strict: bool = True) -> int | None:
    """An integer in ``[low, high]`` (NumPy integers accepted; ``bool`` and floats refused).

    With ``strict=False`` a string holding an integer (``"3"``, ``"1e3"``) and an integral float
    (``3.0``) are accepted too -- for text inputs such as query parameters and CLI values.
    """
    if value is None and allow_none:
        return None
    kind = "an integer"
    if isinstance(value, bool):
        raise _fail(name, kind + (" or null" if allow_none else ""), value)
    if isinstance(value, str) and not strict:
        value = _from_text(value, name, kind)
    if isinstance(value, numbers.Integral):
        v = int(value)
    elif not strict and isinstance(value, numbers.Real) and math.isfinite(float(value)) \
            and float(value) == int(float(value)):
        v = int(float(value))
    else:
        raise _fail(name, kind + (" or null" if allow_none else ""), value)
    if (low is not None and v < low) or (high is not None and v > high):
        raise _fail(name, _range(low, high), value)
    return v


@overload
def number(value: Any, name: str, *, low: float | None = ..., high: float | None = ...,
           open_low: bool = ..., open_high: bool = ..., allow_none: Literal[False] = ...,
           strict: bool = ...) -> float: ...
@overload
def number(value: Any, name: str, *, low: float | None = ..., high: float | None = ...,
           open_low: bool = ..., open_high: bool = ..., allow_none: bool = ...,
           strict: bool = ...) -> float | None: ...
def number(value: Any, name: str, *, low: float | None = None, high: float | None = None,
           open_low: bool = False, open_high: bool = False, allow_none: bool = False,
           strict: bool = True) -> float | None:
    """A finite real number in ``[low, high]`` (``open_low``/``open_high`` exclude the ends).

    ``bool`` and strings are refused (``strict=False`` parses a string); NumPy scalars are fine;
    integers too large for a float are refused, never an ``OverflowError``.
    """
    if value is None and allow_none:
        return None
    kind = "a number" + (" or null" if allow_none else "")
    if isinstance(value, bool):
        raise _fail(name, kind, value)
    if isinstance(value, str) and not strict:
        value = _from_text(value, name, "a number")
    if not isinstance(value, numbers.Real):
        raise _fail(name, kind, value)
    try:
        v = float(value)
    except (OverflowError, ValueError, TypeError):
        raise _fail(name, "a finite number", value) from None
    if not math.isfinite(v):
        raise _fail(name, "a finite number", value)
    if ((low is not None and (v < low or (open_low and v == low)))
            or (high is not None and (v > high or (open_high and v == high)))):
        raise _fail(name, _range(low, high, open_low, open_high), value)
    return v


_TRUE = ("1", "true", "yes", "on")
_FALSE = ("0", "false", "no", "off")


def boolean(value: Any, name: str, *, strict: bool = True) -> bool:
    """``True``/``False`` (NumPy bools too); with ``strict=False`` also 1/0/true/false/yes/no/on/off."""
    try:
        import numpy as np
        if isinstance(value, np.bool_):
            return bool(value)
    except ImportError:  # pragma: no cover
        pass
    if isinstance(value, bool):
        return value
    if not strict:
        if isinstance(value, str) and value.strip().lower() in _TRUE + _FALSE:
            return value.strip().lower() in _TRUE
        if isinstance(value, numbers.Integral) and int(value) in (0, 1):
            return bool(value)
    raise _fail(name, "true or false", value)


def choice(value: Any, name: str, choices: Iterable[Any]) -> Any:
    """``value`` if it is one of ``choices`` (compared by ``==`` and type: ``1`` is not ``True``)."""
    opts = list(choices)
    for c in opts:
        if type(c) is type(value) and c == value:
            return c
        if isinstance(c, str) and isinstance(value, str) and c == value:
            return c
    shown = ", ".join(str(c) for c in opts)
    raise _fail(name, f"one of {shown}", value)


def text(value: Any, name: str, *, max_len: int = MAX_TEXT, allow_empty: bool = False) -> str:
    """A string of at most ``max_len`` characters without NUL bytes (``allow_empty`` for '')."""
    if not isinstance(value, str):
        raise _fail(name, "a string", value)
    if len(value) > max_len:
        raise Invalid(f"{name} must be at most {max_len} characters, got {len(value)}")
    if "\x00" in value:
        raise _fail(name, "text without NUL characters", value)
    if not allow_empty and not value.strip():
        raise _fail(name, "a non-empty string", value)
    return value


def seed(value: Any, name: str = "seed", *, strict: bool = True) -> int:
    """A random seed: an integer in ``[0, 2**63 - 1]`` (fits int64, SQLite and NumPy/torch)."""
    return integer(value, name, low=0, high=LIMITS["seed"], strict=strict)


def limit(kind: str, value: Any, name: str | None = None, *, low: int = 1, allow_none: bool = False,
          strict: bool = True) -> int | None:
    """An integer in ``[low, LIMITS[kind]]`` -- e.g. ``limit("epochs", cfg["epochs"])``."""
    return integer(value, name or kind, low=low, high=LIMITS[kind], allow_none=allow_none, strict=strict)


def frame_size(value: Any, name: str = "size") -> tuple[int, int]:
    """An exported animation's frame size: ``"1280x720"`` or ``(1280, 720)``, width and height even
    integers within :data:`FRAME_SIZE` (H.264 in yuv420p, what slide software plays, needs even sides)."""
    (wlo, hlo), (whi, hhi) = FRAME_SIZE
    allowed = f"'WxH' with even W in [{wlo}, {whi}] and even H in [{hlo}, {hhi}] (e.g. 1280x720)"
    parts: Any = value
    if isinstance(value, str):
        parts = value.lower().replace("×", "x").split("x")
    try:
        w, h = (integer(v, name, strict=not isinstance(value, str)) for v in parts)
    except (TypeError, ValueError):
        raise _fail(name, allowed, value) from None
    if not (wlo <= w <= whi and hlo <= h <= hhi) or w % 2 or h % 2:
        raise _fail(name, allowed, value)
    return w, h


# ---- query parameters (a shared link) -----------------------------------------------------------

MAX_QUERY_JSON_BYTES = 64 * 1024  # a JSON-valued query parameter (e.g. a page's hyper-parameters)
MAX_QUERY_JSON_DEPTH = 8


def _numeric_choice(value: Any, name: str, allowed: Iterable[Any]) -> Any:
    """:func:`choice` for a number parsed from text: a float matches an allowed ``1`` as ``1.0``."""
    opts = list(allowed)
    if isinstance(value, float):
        opts = [float(a) if isinstance(a, numbers.Real) and not isinstance(a, bool) else a for a in opts]
    return choice(value, name, opts)


def query_value(raw: Any, default: Any, name: str, *, allowed: Iterable[Any] | None = None,
                low: float | None = None, high: float | None = None) -> Any:
    """A query parameter (text) as ``default``'s type, checked: the one rule for shared links.

    ``bool`` defaults read 1/0/true/false/yes/no/on/off (empty = false); ``int`` / ``float``
    defaults read a finite number (``"1e3"`` is an integer) within ``[low, high]``; a list default
    reads comma-separated items of its first element's type (text when empty), keeps the items that
    are in ``allowed`` and refuses a list with none left; any other default reads text. ``allowed``
    restricts a scalar to its members. Raises :class:`Invalid` (the caller falls back to
    ``default``: a shared link always opens).
    """
    raw = text(raw, name, allow_empty=True, max_len=MAX_TEXT)
    opts = None if allowed is None else list(allowed)
    if isinstance(default, bool):
        value: Any = boolean(raw, name, strict=False) if raw.strip() else False
    elif isinstance(default, int):
        value = integer(raw, name, low=None if low is None else math.ceil(low),
                        high=None if high is None else math.floor(high), strict=False)
    elif isinstance(default, float):
        value = number(raw, name, low=low, high=high, strict=False)
    elif isinstance(default, (list, tuple)):
        items: list[Any] = [s for s in raw.split(",") if s.strip()]
        kind = default[0] if len(default) else ""
        if not isinstance(kind, str):
            items = [query_value(s, kind, name, low=low, high=high) for s in items]
        if opts is not None:
            kept = []
            for item in items:
                try:
                    kept.append(_numeric_choice(item, name, opts))
                except Invalid:
                    continue  # an unknown item (e.g. a method of a newer version) is left out
            if not kept:
                shown = ", ".join(str(c) for c in opts)
                raise Invalid(f"{name} must be a comma-separated list of {shown}, got {show(raw)}")
            items = kept
        return items
    else:
        value = raw
    if opts is not None:
        value = _numeric_choice(value, name, opts)
    return value


def query_json(raw: Any, name: str) -> Any:
    """A query parameter holding strict JSON, at most :data:`MAX_QUERY_JSON_BYTES` and
    :data:`MAX_QUERY_JSON_DEPTH` levels (see :func:`parse_json`). Raises :class:`Invalid`."""
    return parse_json(raw, name, max_bytes=MAX_QUERY_JSON_BYTES, max_depth=MAX_QUERY_JSON_DEPTH)


# ---- files -------------------------------------------------------------------------------------

def read_bytes(path: Any, name: str = "file", *, max_bytes: int = MAX_JSON_BYTES) -> bytes:
    """At most ``max_bytes`` of a regular file (``-`` is not special here): the product's one
    reader, :func:`pcd._files.read_bytes` (devices, FIFOs, folders and unreadable files are refused
    in one line without blocking; a file larger than ``max_bytes`` is refused from its size)."""
    from pcd import _files  # _files builds on this module

    return _files.read_bytes(path, kind="json", max_bytes=max_bytes, name=name)


def read_text(path: Any, name: str = "file", *, max_bytes: int = MAX_JSON_BYTES) -> str:
    """:func:`read_bytes` decoded as UTF-8 (a binary file is refused in one line)."""
    data = read_bytes(path, name, max_bytes=max_bytes)
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        raise Invalid(f"{name} {path}: not UTF-8 text") from None


_JSON_STRING = re.compile(r'"(?:[^"\\]|\\.)*"', re.S)  # a complete JSON string literal
_NOT_BRACKET = re.compile(r"[^\[\]{}]+")


def json_depth(text_: str) -> int:
    """The nesting depth of a JSON text (brackets outside strings), without parsing it. The string
    literals are cut out by a regular expression (an unterminated one runs to the end), so only
    the brackets are counted in Python: ~50x faster than a character loop on a 2 KB row."""
    if "[" not in text_ and "{" not in text_:
        return 0
    bare = _JSON_STRING.sub("", text_)
    quote = bare.find('"')
    if quote >= 0:  # an unterminated string: everything after its quote is inside it
        bare = bare[:quote]
    depth = best = 0
    for ch in _NOT_BRACKET.sub("", bare):
        if ch in "[{":
            depth += 1
            if depth > best:
                best = depth
        else:
            depth -= 1
    return best


def _no_constant(tok: str) -> Any:
    raise Invalid(f"JSON must not contain {tok} (not standard JSON); use a finite number or null")


def _parse_int(tok: str) -> int:
    if len(tok.lstrip("-")) > _MAX_NUMBER_CHARS:
        raise Invalid(f"JSON numbers must have at most {_MAX_NUMBER_CHARS} digits, got {len(tok)}")
    return int(tok)


def _parse_float(tok: str) -> float:
    if len(tok) > _MAX_NUMBER_CHARS:
        raise Invalid(f"JSON numbers must have at most {_MAX_NUMBER_CHARS} characters, got {len(tok)}")
    v = float(tok)
    if not math.isfinite(v):
        raise Invalid(f"JSON number {show(tok, 30)} is outside the float range")
    return v


def parse_json(text_: Any, name: str = "JSON", *, max_bytes: int = MAX_JSON_BYTES,
               max_depth: int = MAX_JSON_DEPTH) -> Any:
    """Strict JSON: at most ``max_bytes`` and ``max_depth`` levels; no NaN/Infinity; numbers of
    at most 100 characters and within the float range. One-line :class:`Invalid` otherwise."""
    if isinstance(text_, (bytes, bytearray)):
        try:
            text_ = bytes(text_).decode("utf-8")
        except UnicodeDecodeError:
            raise Invalid(f"{name} must be UTF-8 text") from None
    if not isinstance(text_, str):
        raise _fail(name, "JSON text", text_)
    if len(text_) > max_bytes:
        raise Invalid(f"{name} must be at most {max_bytes} bytes, got {len(text_)}")
    d = json_depth(text_)
    if d > max_depth:
        raise Invalid(f"{name} must nest at most {max_depth} levels, got {d}")
    try:
        return json.loads(text_, parse_constant=_no_constant, parse_int=_parse_int,
                          parse_float=_parse_float)
    except Invalid as exc:
        raise Invalid(f"{name}: {exc}") from None
    except json.JSONDecodeError as exc:
        raise Invalid(f"{name} is not valid JSON: {exc.msg} at line {exc.lineno} column {exc.colno}") from None
    except (ValueError, RecursionError) as exc:
        raise Invalid(f"{name} is not valid JSON: {show(str(exc), 80)}") from None


def load_json(path: Any, name: str = "JSON file", *, max_bytes: int = MAX_JSON_BYTES,
              max_depth: int = MAX_JSON_DEPTH) -> Any:
    """Read and parse a JSON file with both limits (:func:`read_text` + :func:`parse_json`)."""
    return parse_json(read_text(path, name, max_bytes=max_bytes), f"{name} {path}",
                      max_bytes=max_bytes, max_depth=max_depth)


def inside(path: Any, folder: Any, name: str = "path") -> Path:
    """``path`` resolved (symlinks followed; relative paths taken from ``folder``) if it lies
    inside ``folder`` (also resolved); otherwise :class:`Invalid`. Never touches the file."""
    if not isinstance(path, (str, os.PathLike)) or (isinstance(path, str) and (not path or "\x00" in path)):
        raise _fail(name, "a file path", path)
    base = Path(folder).resolve()
    p = Path(path)
    if not p.is_absolute():
        p = base / p
    try:
        rp = p.resolve()
    except (OSError, RuntimeError):
        raise Invalid(f"{name} {show(str(path))} cannot be resolved") from None
    if rp != base and base not in rp.parents:
        raise Invalid(f"{name} must be inside {base}, got {show(str(path))}")
    return rp


#: Folders that never hold user data (a data folder inside them is refused).
SYSTEM_FOLDERS = ("/bin", "/boot", "/dev", "/etc", "/lib", "/lib32", "/lib64", "/proc", "/run", "/sbin",
                  "/sys", "/usr", "/var/lib", "/var/log")


def data_folder(path: Any, name: str = "data_dir") -> str:
    """A data-folder path (it need not exist yet): a non-empty string without NUL, not a file,
    not the file-system root and not inside a system folder (``/etc``, ``/proc``, ``/sys``, ...)."""
    if isinstance(path, os.PathLike):
        path = os.fspath(path)
    p = text(path, name, max_len=4096)
    try:
        real = Path(p).expanduser().resolve()
    except (OSError, RuntimeError):
        raise Invalid(f"{name} {show(p)} cannot be resolved") from None
    r = str(real)
    if r == "/" or any(r == f or r.startswith(f + "/") for f in SYSTEM_FOLDERS):
        raise Invalid(f"{name} must be a folder for your data (not a system folder such as /etc or /proc), "
                      f"got {show(p)}")
    if real.exists() and not real.is_dir():
        raise Invalid(f"{name} {show(p)} exists and is not a folder")
    return p


#: errno -> (what it is, what to do): the storage faults named for what they are (never "damage").
_FAULTS = {
    errno.ENOSPC: ("the disk is full", "free some space on it"),
    errno.EDQUOT: ("the disk quota is used up", "free some space or raise the quota"),
    errno.EROFS: ("the file system is read-only", "remount it read-write, or use a writable data folder "
                                                  "(--data-dir / $PCD_DATA_DIR)"),
    errno.EACCES: ("permission denied", "give this user read and write access to it and its folder, or use "
                                        "another data folder (--data-dir / $PCD_DATA_DIR)"),
    errno.EPERM: ("operation not permitted", "give this user read and write access to it and its folder, or use "
                                             "another data folder (--data-dir / $PCD_DATA_DIR)"),
}


def _fault_errno(exc: BaseException, path: Any) -> int | None:
    """The errno of a storage fault behind ``exc`` (an ``OSError``, or SQLite's message for one)."""
    if isinstance(exc, OSError):
        return exc.errno if exc.errno in _FAULTS else None
    msg = str(exc).lower()
    if "disk is full" in msg or "database or disk is full" in msg:
        return errno.ENOSPC
    if "readonly database" in msg or "read-only" in msg or "unable to open database" in msg \
            or "disk i/o error" in msg:
        # SQLite does not keep the errno: ask the file system which fault it is
        p = Path(str(path))
        target = p if p.exists() else p.parent
        try:
            if os.statvfs(target).f_flag & os.ST_RDONLY:
                return errno.EROFS
        except OSError:
            pass
        if not os.access(target, os.W_OK) or not os.access(p.parent, os.W_OK | os.X_OK):
            return errno.EACCES
        # the file system allows the write: SQLite's own word (a read-only handle) is all there is
        return errno.EROFS if "readonly" in msg or "read-only" in msg else None
    return None


def storage_fault(exc: BaseException, path: Any) -> str | None:
    """One line naming a storage fault (disk full, read-only file system, permission denied) at
    ``path`` and what to do, or None when ``exc`` is not one. Such a fault is never called damage:
    the file itself is fine and nothing needs rebuilding."""
    code = _fault_errno(exc, path)
    if code is None:
        return None
    what, todo = _FAULTS[code]
    return f"cannot write {path}: {what} ({errno.errorcode.get(code, code)}); {todo}. The file itself is fine"


def writable_dir(path: Any, name: str = "folder", *, create: bool = True) -> Path:
    """A folder that exists (created when ``create``) and can be written; :class:`Invalid` otherwise."""
    if not isinstance(path, (str, os.PathLike)) or (isinstance(path, str) and (not path or "\x00" in path)):
        raise _fail(name, "a folder path", path)
    p = Path(path)
    if p.exists() and not p.is_dir():
        raise Invalid(f"{name} {p}: exists and is not a folder")
    if not p.exists():
        if not create:
            raise Invalid(f"{name} {p}: no such folder")
        try:
            p.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise Invalid(f"{name} {p}: cannot create ({exc.strerror or exc.__class__.__name__})") from None
    if not os.access(p, os.W_OK | os.X_OK):
        raise Invalid(f"{name} {p}: not writable")
    return p


def writable_file(path: Any, name: str = "output file") -> Path:
    """A regular-file target that can be written (``-`` is the caller's business): its folder
    exists and is writable, and the path is not a folder, device or other special file."""
    if not isinstance(path, (str, os.PathLike)) or (isinstance(path, str) and (not path or "\x00" in path)):
        raise _fail(name, "a file path", path)
    p = Path(path)
    parent = p.parent if str(p.parent) else Path(".")
    if not parent.is_dir():
        raise Invalid(f"cannot write {p}: folder {parent} does not exist")
    try:
        st = os.stat(p)
    except FileNotFoundError:
        st = None
    except OSError as exc:
        raise Invalid(f"cannot write {p}: {exc.strerror or exc.__class__.__name__}") from None
    if st is not None and not stat.S_ISREG(st.st_mode):
        raise Invalid(f"cannot write {p}: not a regular file")
    if st is not None and not os.access(p, os.W_OK):
        raise Invalid(f"cannot write {p}: not writable")
    if st is None and not os.access(parent, os.W_OK | os.X_OK):
        raise Invalid(f"cannot write {p}: folder {parent} is not writable")
    # /sys and /proc accept os.access but refuse new files: one probe settles it.
    if st is None:
        try:
            real = parent.resolve()
        except OSError:
            real = parent
        if str(real).startswith(("/sys", "/proc", "/dev")):
            raise Invalid(f"cannot write {p}: {real} is a system folder")
    return p


MAX_COORD = 1e6  # a map bound's magnitude


def box(value: Any, name: str = "map bounds", *, max_abs: float = MAX_COORD) -> tuple[tuple[float, float], tuple[float, float]]:
    """A 2-D box ``((xmin, xmax), (ymin, ymax))`` from text ``"xmin, xmax, ymin, ymax"`` (a query
    parameter), four numbers, or two ``(min, max)`` pairs: finite, ``|v| <= max_abs``, min < max."""
    allowed = f"four numbers 'xmin, xmax, ymin, ymax' with min < max and |v| <= {max_abs:g}"
    if isinstance(value, str):
        parts = [p for p in value.replace(";", ",").split(",") if p.strip()]
        if len(parts) != 4:
            raise _fail(name, allowed, value)
        vals = [number(p, name, low=-max_abs, high=max_abs, strict=False) for p in parts]
    else:
        try:
            flat = [v for pair in value for v in (pair if isinstance(pair, (list, tuple)) else [pair])]
        except TypeError:
            raise _fail(name, allowed, value) from None
        if len(flat) != 4:
            raise _fail(name, allowed, value)
        vals = [number(v, name, low=-max_abs, high=max_abs) for v in flat]
    x0, x1, y0, y1 = (float(v) for v in vals)
    if not (x0 < x1 and y0 < y1):
        raise _fail(name, allowed, value)
    return ((x0, x1), (y0, y1))
