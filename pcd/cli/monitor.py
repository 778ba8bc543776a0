"""``python -m pcd monitor summary FILE``: what a training-geometry recorder file (:mod:`pcd.monitor`)
says, as JSON: per method the fraction of recorded steps in collapse, the longest stretch (steps
A-B), the median ``||d|| / ||g_1||``, the collapse rule's numbers and the plain-words finding."""
from __future__ import annotations

import argparse

from pcd.cli import UsageError, write_json


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser("monitor", help="summarise a training-geometry recorder file",
                              description="Training geometry (pcd.monitor): summarise a recorder file.")
    sub = p.add_subparsers(dest="monitor_command", metavar="ACTION")
    s = sub.add_parser("summary", help="per method: collapsed fraction, longest collapse, median ||d||/||g1|| (JSON)")
    s.add_argument("file", help="a recorder file (JSON lines written by pcd.monitor.Recorder or a pruning run's "
                                "monitor.jsonl)")
    s.add_argument("--json", default="-", metavar="FILE", help="write the summary to FILE (default: stdout)")
    s.set_defaults(func=_summary)
    p.set_defaults(func=lambda args: (p.print_help(), 0)[1])


def _summary(args: argparse.Namespace) -> int:
    from pcd import _validate as V
    from pcd import monitor

    try:
        trace = monitor.read(args.file)
    except V.Invalid as exc:
        raise UsageError(str(exc)) from None
    write_json(monitor.summary(trace), args.json)
    return 0
