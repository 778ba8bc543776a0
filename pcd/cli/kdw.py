"""``python -m pcd kdw``: the K-objective double well (conflict-equilibrium residual law).

JSON list, one object per (K, method): ``K``, ``method``, ``primary_grad_norm`` (final),
``losses``, ``law`` (= 1.536 sqrt(K-1)), ``stalled`` (+ ``ratio``, ``cms_residual``,
``pareto_residual``, ``diagnosis``, ``end_mean``). See :func:`pcd.experiments.synthetic.kdw`.
"""
from __future__ import annotations

import argparse

from pcd.cli import UsageError, write_json
from pcd.cli.toy import add_common


def _run(args: argparse.Namespace) -> int:
    from pcd.experiments.synthetic import kdw

    try:
        Ks = [int(v) for v in str(args.K).split(",") if v.strip()]
    except ValueError:
        raise UsageError(f"--K: expected integers like 2,3,5, got {args.K!r}") from None
    write_json(kdw(Ks=Ks, methods=args.methods, steps=args.steps, lr=args.lr, optimizer=args.optimizer,
                   tau=args.tau, seed=args.seed), args.json)
    return 0


def register(subparsers) -> None:
    p = subparsers.add_parser("kdw", help="K-objective double well: residual vs the 1.536 sqrt(K-1) law",
                              description=__doc__.splitlines()[0])
    p.add_argument("--K", default="2,3,5,9,17,33,65", help="comma-separated K values (each >= 2)")
    p.add_argument("--methods", default="pcd,mgda,cagrad,ws,upgrad", help="comma-separated method names")
    add_common(p)
    p.set_defaults(func=_run)
