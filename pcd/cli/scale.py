"""``python -m pcd scale``: scale invariance -- the secondary multiplied by 10^k.

JSON object ``{"scales": [...], "exponents": [...], "methods": {name: {"endpoints": [...],
"drift": float, ...}}, ...}``; drift = max distance between operating points across scales.
See :func:`pcd.experiments.synthetic.scale`.
"""
from __future__ import annotations

import argparse

from pcd.cli import write_json
from pcd.cli.toy import add_common


def _run(args: argparse.Namespace) -> int:
    from pcd.experiments.synthetic import parse_floats, scale

    write_json(scale(exponents=parse_floats(args.exponents, "--exponents"), methods=args.methods,
                     steps=args.steps, lr=args.lr, optimizer=args.optimizer, tau=args.tau,
                     average_last=args.average_last, seed=args.seed), args.json)
    return 0


def register(subparsers) -> None:
    p = subparsers.add_parser("scale", help="scale invariance: operating points across secondary scales 10^k",
                              description=__doc__.splitlines()[0])
    p.add_argument("--exponents", default="-5:5:1", help="k values: list or range a:b:step; write --exponents=-5,0,5 when it starts with '-' (default -5:5:1)")
    p.add_argument("--methods", default="ws,pcd", help="comma-separated method names (default ws,pcd)")
    p.add_argument("--average-last", dest="average_last", default=0.2,
                   help="operating point = mean position over this last fraction of steps (default 0.2)")
    add_common(p)
    p.set_defaults(func=_run)
