"""``python -m pcd tau``: PCD's tau trade-off curve on a 2-D problem.

JSON list, one object per tau: ``tau``, ``losses`` (mean final losses over the starts),
``ends``, ``start_losses``, ``diagnosis``, ``cms_fraction``. See
:func:`pcd.experiments.synthetic.tau_sweep`.
"""
from __future__ import annotations

import argparse
from typing import Any

from pcd.cli import UsageError, write_json
from pcd.cli.toy import add_animation_args, add_common, animation_targets, parse_starts


def _run(args: argparse.Namespace) -> int:
    from pcd.experiments.synthetic import parse_floats, tau_sweep

    targets = animation_targets(args)  # refused in one line before the sweep
    budgets: list[Any] | None = None  # ints where whole (a fractional budget is refused downstream)
    if args.budgets is not None:
        budgets = [int(b) if float(b) == int(float(b)) else b for b in parse_floats(args.budgets, "--budgets")]
    taus = parse_floats(args.taus, "--taus")
    write_json(tau_sweep(problem=args.problem, taus=taus, steps=args.steps,
                         lr=args.lr, optimizer=args.optimizer, method=args.method,
                         starts=parse_starts(args.starts), seed=args.seed, budgets=budgets), args.json)
    if targets:
        _write_animation(args, taus, budgets or [int(args.steps)], targets)
    return 0


def _write_animation(args: argparse.Namespace, taus: list[float], budgets: list[Any],
                     targets: dict[str, Any]) -> None:
    """The τ dial's budget curves played from step 0 to the largest budget (``--gif`` / ``--mp4``,
    :func:`pcd.viz.export.tau_animation`): PCD for every τ, the mean losses over the starts."""
    import numpy as np

    import pcd.problems as problems
    from pcd.experiments.animation import tau_budget_run
    from pcd.viz.export import tau_animation

    if args.method != "pcd":
        raise UsageError("--gif / --mp4: the budget-curve animation is PCD's (--method pcd)")
    if args.starts is not None:
        raise UsageError("--gif / --mp4: the budget-curve animation uses the problem's starts (drop --starts)")
    from pcd import _validate as V

    lr = V.number(args.lr, "--lr", low=0.0, open_low=True, strict=False)
    res = tau_budget_run(args.problem, taus, budgets, lr, frames=args.frames, optimizer=args.optimizer,
                         seed=V.seed(args.seed, strict=False))

    prob = problems.named(args.problem)  # as the page
    front = prob.pareto_front(200)
    settings = {"problem": args.problem, "method": "pcd", "τ": taus, "optimizer": args.optimizer, "lr": lr,
                "steps": [int(b) for b in sorted(budgets)]}
    for fmt, path in targets.items():
        tau_animation(res, taus, budgets, fmt, front=None if front is None else np.asarray(front),
                      log=args.problem == "saddle2d", size=args.size, settings=settings, max_frames=args.frames,
                      target=path)


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
    add_animation_args(p, "the budget curves played from step 0 to the largest budget")
    add_common(p, tau=False)
    p.set_defaults(func=_run)
