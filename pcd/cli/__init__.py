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
import os
import pkgutil
import sys
from collections.abc import Sequence
from typing import Any, NoReturn

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
        parent = os.path.dirname(os.path.abspath(out))
        if not os.path.isdir(parent):
            print(f"error: cannot write {out}: folder {parent} does not exist", file=sys.stderr)
            return 2
        if not os.access(parent, os.W_OK) or os.path.isdir(out):
            print(f"error: cannot write {out}: not a writable file path", file=sys.stderr)
            return 2
    try:
        return int(args.func(args) or 0)
    except (UsageError, ValueError, FileNotFoundError) as exc:
        msg = str(exc).strip().splitlines()[0] if str(exc).strip() else exc.__class__.__name__
        print(f"error: {msg}", file=sys.stderr)
        return 2
