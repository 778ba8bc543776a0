"""``python -m pcd tau``: PCD's tau trade-off curve on a 2-D problem.

JSON list, one object per tau: ``tau``, ``losses`` (mean final losses over the starts),
``ends``, ``start_losses``, ``diagnosis``, ``cms_fraction``. See
:func:`pcd.experiments.synthetic.tau_sweep`.
"""
from __future__ import annotations

import argparse
from typing import Any

from pcd.cli import write_json
from pcd.cli.toy import add_common, parse_starts


def _run(args: argparse.Namespace) -> int:
    from pcd.experiments.synthetic import parse_floats, tau_sweep

    budgets: list[Any] | None = None  # ints where whole (a fractional budget is refused downstream)
    if args.budgets is not None:
        budgets = [int(b) if float(b) == int(float(b)) else b for b in parse_floats(args.budgets, "--budgets")]
    write_json(tau_sweep(problem=args.problem, taus=parse_floats(args.taus, "--taus"), steps=args.steps,
                         lr=args.lr, optimizer=args.optimizer, method=args.method,
                         starts=parse_starts(args.starts), seed=args.seed, budgets=budgets), args.json)
    return 0


def register(subparsers) -> None:
    p = subparsers.add_parser("tau", help="PCD's tau trade-off curve (final losses vs tau)",
                              description=__doc__.splitlines()[0])
    p.add_argument("--problem", default="saddle2d", help="problem name (see pcd.problems.available())")
    p.add_argument("--taus", default="0,0.01:0.09:0.01,0.1:1:0.1",
                   help="tau values: list and/or ranges a:b:step (default 0, 0.01..0.09, 0.1..1)")
    p.add_argument("--method", default="pcd", help="a method with a tau hyper-parameter (default pcd)")
    p.add_argument("--starts", default=None, help="start points 'x,y;x,y' (default: the problem's)")
    p.add_argument("--budgets", default=None,
                   help="step budgets, e.g. 100,300,1000 (the τ dial page's curves; overrides --steps): each record "
                        "gets budgets[b] = where the run is after b steps")
    add_common(p, tau=False)
    p.set_defaults(func=_run)
