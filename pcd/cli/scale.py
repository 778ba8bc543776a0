"""``python -m pcd scale``: scale invariance -- the secondary multiplied by 10^k.

JSON object ``{"scales": [...], "exponents": [...], "methods": {name: {"endpoints": [...],
"drift": float, ...}}, ...}``; drift = max distance between operating points across scales.
See :func:`pcd.experiments.synthetic.scale`.
"""
from __future__ import annotations

import argparse

from pcd.cli import write_json
from pcd.cli.toy import add_common
from pcd.experiments.synthetic import SCALE_EXPONENTS, SCALE_METHODS, SCALE_STEPS

# The Scale invariance page's defaults (the page reads the same constants).
EXPONENTS = f"{min(SCALE_EXPONENTS)}:{max(SCALE_EXPONENTS)}:1"
METHODS = ",".join(SCALE_METHODS)


def _run(args: argparse.Namespace) -> int:
    from pcd.experiments.synthetic import parse_floats, parse_methods, scale
    from pcd.problems.base import check_float

    mp = None
    if args.eps is not None:
        if "pcd" not in parse_methods(args.methods):
            raise ValueError("--eps is PCD's normalizer epsilon: add pcd to --methods")
        mp = {"pcd": {"eps": check_float(args.eps, "--eps", 0.0, 1.0)}}
    write_json(scale(exponents=parse_floats(args.exponents, "--exponents"), methods=args.methods,
                     steps=args.steps, lr=args.lr, optimizer=args.optimizer, tau=args.tau,
                     average_last=args.average_last, method_params=mp, seed=args.seed), args.json)
    return 0


def register(subparsers) -> None:
    p = subparsers.add_parser("scale", help="scale invariance: operating points across secondary scales 10^k",
                              description=__doc__.splitlines()[0])
    p.add_argument("--exponents", default=EXPONENTS,
                   help=f"k values: list or range a:b:step; write --exponents=-5,0,5 when it starts with '-' (default {EXPONENTS})")
    p.add_argument("--methods", default=METHODS, help=f"comma-separated method names (default {METHODS})")
    p.add_argument("--eps", default=None, help="PCD's normalizer epsilon (default: PCD's own, 1e-8)")
    p.add_argument("--average-last", dest="average_last", default=0.2,
                   help="operating point = mean position over this last fraction of steps (default 0.2)")
    add_common(p, steps=SCALE_STEPS)
    p.set_defaults(func=_run)
