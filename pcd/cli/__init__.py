"""Command line: ``python -m pcd <command> ...``.

Each command lives in its own module in this package and exposes
``register(subparsers) -> None`` which adds one sub-parser whose ``func`` attribute is called with
the parsed namespace and returns an exit code. Modules are discovered automatically, so adding a
command never touches this file.

Conventions shared by every command: bad input prints one line ``error: ...`` to stderr and exits
with code 2; results are written as JSON (``--json FILE``, ``-`` for stdout).
"""
from __future__ import annotations

import argparse
import importlib
import pkgutil
import sys
from collections.abc import Sequence
from typing import Any, NoReturn

from pcd import _validate as V
from pcd._json import dumps, jsonable


class UsageError(ValueError):
    """Raised by commands for bad user input; reported as one line and exit code 2."""


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:  # one line, exit code 2 (argparse's default prints usage)
        print(f"error: {message}", file=sys.stderr)
        raise SystemExit(2)


_jsonable = jsonable  # the one strict-JSON helper lives in pcd._json


def write_json(data: Any, path: str | None) -> None:
    """Write ``data`` as strict JSON (NaN/inf become null) to ``path`` or stdout for ``-``/None."""
    text = dumps(data, indent=2)
    if path in (None, "-"):
        print(text)
    else:
        with open(path, "w", encoding="utf-8") as fh:
            fh.write(text + "\n")


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(
        prog="python -m pcd",
        description="PCD Studio: Priority-Constrained Descent and its baselines from the command line.",
    )
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)
    for info in sorted(pkgutil.iter_modules(__path__), key=lambda m: m.name):
        if info.name.startswith("_"):
            continue
        module = importlib.import_module(f"{__name__}.{info.name}")
        register = getattr(module, "register", None)
        if register is not None:
            register(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if not getattr(args, "func", None):
        parser.print_help()
        return 0
    out = getattr(args, "json", None)
    if isinstance(out, str) and out not in ("", "-"):
        # Fail before the (possibly long) computation, not after it.
        try:
            V.writable_file(out, "--json")
        except ValueError as exc:
            print(f"error: {exc}", file=sys.stderr)
            return 2
    try:
        return int(args.func(args) or 0)
    except (UsageError, ValueError, FileNotFoundError) as exc:
        print(f"error: {_one_line(exc)}", file=sys.stderr)
        return 2
    except OSError as exc:  # a target that accepts the open but not the write (a full disk, /sys)
        where = f" {exc.filename}" if getattr(exc, "filename", None) else ""
        print(f"error: cannot read or write{where}: {exc.strerror or _one_line(exc)}", file=sys.stderr)
        return 2
    except (OverflowError, RecursionError) as exc:  # the validation layer should have caught it
        print(f"error: input too large or too deeply nested ({_one_line(exc)})", file=sys.stderr)
        return 2


def _one_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0] if text else exc.__class__.__name__


def read_input(path: str, what: str, max_bytes: int = V.MAX_JSON_BYTES) -> str:
    """The text of a file argument (``-`` = stdin), size-limited; one-line ``UsageError`` otherwise."""
    if path == "-":
        data = sys.stdin.read(max_bytes + 1)
        if len(data) > max_bytes:
            raise UsageError(f"{what}: stdin is larger than the {max_bytes}-byte limit")
        return data
    try:
        return V.read_text(path, what, max_bytes=max_bytes)
    except V.Invalid as exc:
        raise UsageError(str(exc)) from None


def read_json(path_or_text: str, what: str, inline: bool = False) -> Any:
    """JSON from a file argument (``-`` = stdin; inline JSON text too when ``inline``), with the
    size, nesting and number limits of :func:`pcd._validate.parse_json`."""
    s = path_or_text
    if inline and s != "-" and (s.lstrip().startswith(("[", "{", "-", '"')) or s.strip()[:1].isdigit()):
        text = s
    else:
        text = read_input(s, what)
    try:
        return V.parse_json(text, what)
    except V.Invalid as exc:
        raise UsageError(str(exc)) from None
