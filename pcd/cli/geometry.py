"""``python -m pcd geometry``: every method's update for two (or three) 2-D gradients.

The same computation as the Gradient geometry page (:func:`pcd.experiments.geometry.method_directions`).
"""
from __future__ import annotations

from pcd.cli import UsageError, write_json


def _run(args) -> int:
    from pcd.experiments.geometry import gradient_vectors, method_directions

    third = None
    if args.g3 is not None:
        try:
            a3, n3 = (float(v) for v in args.g3.split(","))
        except ValueError:
            raise UsageError("--g3 must be ANGLE,NORM (two numbers), e.g. --g3=-90,1") from None
        third = (a3, n3)
    J = gradient_vectors(args.angle, args.norm2, third=third)
    methods = [m for m in args.methods.split(",") if m.strip()]
    result = method_directions(J, methods, tau=args.tau)
    rows = []
    for r in result["rows"]:
        rows.append({"method": r["method"], "weights": r["weights"], "direction": r["direction"],
                     "progress": r["progress"], "conflicts": r["conflicts"], "norm": r["norm"],
                     "error": r["error"], **({"mu": r["mu"], "feasible": r["feasible"]} if "mu" in r else {})})
    write_json({"gradients": J, "tau": args.tau, "methods": rows}, args.json)
    return 0


def register(sub) -> None:
    p = sub.add_parser(
        "geometry",
        help="every method's update for two (or three) 2-D gradients (the Gradient geometry page)",
        description=("g1 = (1, 0); g2 at ANGLE degrees from g1 with length NORM2; optional g3. Prints, per "
                     "method, the weights, the update d, the progress g_i.d on each objective, whether it "
                     "conflicts with any objective, and ||d||."),
    )
    p.add_argument("--angle", type=float, default=150.0, help="angle between g1 and g2 in degrees, 0..180")
    p.add_argument("--norm2", type=float, default=1.0, help="||g2|| (||g1|| = 1)")
    p.add_argument("--g3", default=None, metavar="ANGLE,NORM", help="add g3 at ANGLE (-180..180) with length NORM")
    p.add_argument("--tau", type=float, default=0.3, help="PCD's tau in [0, 1]")
    p.add_argument("--methods", default="pcd,ws,mgda,pcgrad,cagrad,upgrad",
                   help="comma-separated registry names")
    p.add_argument("--json", default="-", metavar="FILE", help="output file (default: stdout)")
    p.set_defaults(func=_run)
