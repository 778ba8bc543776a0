"""``python -m pcd constrained``: constraints vs fixed penalties (seed 003, arXiv 2505.20628).

Writes ``{"epsilon_table": [{"eps", "method", "x", "lambda", "rel_error", ...}],
"rate_sweep": [{"method", "param", "rate", "accuracy", ...}], "penalty_curve": [...],
"bisection": {...}, "cost": {...}}`` (rates and accuracies in %). Methods: ``penalty(c=...)``,
``gda``, ``auglag``, ``nupi``, ``pcd``. Bad input (eps outside (0, 1), c < 0, ...) prints one line
``error: ...`` and exits with code 2.

    python -m pcd constrained --json out.json
    python -m pcd constrained --eps 0.3 0.5 --c 0 0.5 2 --no-cost --json -
"""
from __future__ import annotations

import argparse
import sys

from pcd.cli import write_json


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser(
        "constrained", help="constraints vs fixed penalties: 1-D example, rate-constrained classifier, PCD",
        description="Fixed penalties vs Lagrangian methods (Cooper: GDA, augmented Lagrangian, nuPI) vs PCD "
                    "on the 1-D example min cos x s.t. sin x <= eps and on a rate-constrained classifier.")
    p.add_argument("--eps", type=float, nargs="+", default=None,
                   help="constraint levels in (0, 1) (default: 0.1 ... 0.8)")
    p.add_argument("--c", type=float, nargs="+", default=None,
                   help="fixed penalty coefficients >= 0 for the 1-D example (default: 0 0.3 1 3)")
    p.add_argument("--x0", type=float, default=0.6, help="start of every 1-D run, in [0, pi/2] (default 0.6)")
    p.add_argument("--tau", type=float, default=0.1, help="PCD's tau in [0, 1] for the 1-D example (default 0.1)")
    p.add_argument("--toy-steps", type=int, default=500, help="steps of the 1-D runs (default 500)")
    p.add_argument("--rate-steps", type=int, default=3000, help="steps of each classifier training (default 3000)")
    p.add_argument("--no-cost", action="store_true", help="skip the wall-time comparison")
    p.add_argument("--no-bisection", action="store_true", help="skip the penalty bisection")
    p.add_argument("--json", default="-", metavar="FILE", help="output file ('-' = stdout, the default)")
    p.set_defaults(func=_run)


def _run(args: argparse.Namespace) -> int:
    from pcd.experiments import constraints as C

    eps = C.PAPER_EPS if args.eps is None else args.eps
    c = C.DEFAULT_TOY_C if args.c is None else args.c
    # Validate the cheap things first so that bad input fails fast, before any training.
    C.check_eps(eps)
    C.check_c(c)
    out = C.run_all(eps, c, toy_steps=args.toy_steps, rate_steps=args.rate_steps, x0=args.x0, tau=args.tau,
                    cost=not args.no_cost, bisection=not args.no_bisection)
    write_json(out, args.json)
    if args.json not in (None, "-"):
        n_al = [r for r in out["epsilon_table"] if r["family"] in ("auglag", "nupi")]
        worst = max((r["rel_error"] for r in n_al), default=float("nan"))
        print(f"wrote {args.json}: {len(out['epsilon_table'])} epsilon rows (AL/nuPI worst rel. error {worst:.2e}), "
              f"{len(out['rate_sweep'])} rate rows", file=sys.stderr)
    return 0
