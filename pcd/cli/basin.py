"""``python -m pcd basin``: basin maps -- every method from a grid x grid grid of starts on a 2-D problem.

Writes ``{"elapsed_s": compute seconds, "grid": {...}, "methods": {name: {"fractions": {...},
"ends": [[x, y], ...] (one per start, row-major), "outcome": [...]}}}``. Outcomes: ``cms``,
``conflict_equilibrium``, ``single_objective_minimum``, ``moving``, ``diverged``
(see :mod:`pcd.experiments.basin`). The Basin maps page draws the same data.
"""
from __future__ import annotations

import argparse

from pcd.cli import UsageError, write_json


def _run(args: argparse.Namespace) -> int:
    import pcd.problems as problems
    from pcd.experiments.basin import basin

    if args.problem != "custom" and (args.f1 is not None or args.f2 is not None):
        raise UsageError("--f1/--f2 are for --problem custom only")
    formulas = {"primary": args.f1, "secondaries": None if args.f2 is None else [args.f2]}
    prob = problems.named(args.problem, **{k: v for k, v in formulas.items() if v is not None})
    res = basin(prob, methods=args.methods, grid=args.grid, steps=args.steps, lr=args.lr, tau=args.tau,
                optimizer=args.optimizer, seed=args.seed)
    write_json(res.to_json(), args.json)
    return 0


def register(subparsers) -> None:
    from pcd.experiments.basin import BASIN_METHODS, DEFAULT_GRID, MAX_GRID

    p = subparsers.add_parser("basin", help="basin maps: outcome of every method from a dense grid of starts",
                              description=__doc__.splitlines()[0])
    p.add_argument("--problem", default="saddle2d",
                   help="saddle2d (default), double_well, scale, two_task, quadratic, quadratic_torchjd or custom")
    p.add_argument("--f1", default=None, help="custom: the primary f1(x, y)")
    p.add_argument("--f2", default=None, help="custom: the secondary f2(x, y)")
    p.add_argument("--grid", default=DEFAULT_GRID, help=f"starts per side (2..{MAX_GRID}, default {DEFAULT_GRID})")
    p.add_argument("--methods", default=",".join(BASIN_METHODS), help="comma-separated method names")
    p.add_argument("--steps", default=1000, help="optimizer steps (>= 1, default 1000)")
    p.add_argument("--lr", default=0.01, help="learning rate (> 0, default 0.01)")
    p.add_argument("--tau", default=0.3, help="PCD's tau in [0, 1] (default 0.3)")
    p.add_argument("--optimizer", default="adam", help="adam (default) or sgd")
    p.add_argument("--seed", default=0, help="seed of the stochastic methods (default 0)")
    p.add_argument("--json", default="-", metavar="FILE", help="output file ('-' = stdout, default)")
    p.set_defaults(func=_run)
