"""``python -m pcd jd``: Jacobian descent (arXiv 2406.16232) next to PCD.

Writes ``{"properties": {method: {"non_conflicting": bool, "linear_under_scaling": bool,
"weighted": bool, "primary_anchored": bool, "per_secondary_progress": bool, "worst_violation":
{...}, ...}}, "iwrm": {...}}`` and, with ``--memory``, ``"memory": {...}`` (see
:mod:`pcd.experiments.jd`). A one-screen summary goes to stderr.
"""
from __future__ import annotations

import sys
from typing import Any

from pcd.cli import UsageError, write_json


def _ints(text: str, what: str) -> list[int]:
    try:
        vals = [int(v) for v in str(text).split(",") if v.strip()]
    except ValueError:
        raise UsageError(f"{what} must be comma-separated integers, got {text!r}") from None
    if not vals:
        raise UsageError(f"{what} must list at least one integer")
    return vals


def _names(text: str | None) -> list[str] | None:
    if text is None:
        return None
    names = [v.strip().lower() for v in str(text).split(",") if v.strip()]
    if not names:
        raise UsageError("a method list must name at least one method")
    return names


def _summary(data: dict[str, Any]) -> str:
    from pcd.experiments.jd import PROPERTIES

    lines = []
    if "properties" in data:
        short = {"non_conflicting": "non-confl", "linear_under_scaling": "linear", "weighted": "weighted",
                 "primary_anchored": "anchored", "per_secondary_progress": "progress"}
        lines.append(f"{'method':12s} " + " ".join(f"{short[p]:>10s}" for p in PROPERTIES))
        for name, rep in data["properties"].items():
            lines.append(f"{name:12s} " + " ".join(f"{'yes' if rep[p] else 'no':>10s}" for p in PROPERTIES))
    if "iwrm" in data:
        lines.append("IWRM (digits): method  final train loss  final test acc  early cosine with SGD")
        for name, r in data["iwrm"]["methods"].items():
            lines.append(f"  {name:10s} {r['final_train_loss']:8.4f} {100 * r['final_test_acc']:8.2f} % "
                         f"{r['early_cosine']:8.3f}")
    if "memory" in data:
        m = data["memory"]
        lines.append(f"Gramian memory ({m['device']}, {m['n_params']} parameters, {m['memory_source']}):")
        for mode, r in m["modes"].items():
            peaks = ", ".join("n/a" if v is None else f"{v:.1f}" for v in r["peak_mb"])
            lines.append(f"  {mode:9s} peak MB [{peaks}] at batch {m['batch_sizes']}")
    return "\n".join(lines)


def _run(args) -> int:
    from pcd.experiments import jd

    if args.no_properties and args.no_iwrm and not args.memory:
        raise UsageError("nothing to do: drop --no-properties or --no-iwrm, or add --memory")
    out: dict[str, Any] = {}
    if not args.no_properties:
        out["properties"] = jd.property_table(_names(args.methods), samples=args.samples, seed=args.seed,
                                              tau=args.tau, tol=args.tol)
    if not args.no_iwrm:
        cfg = jd.IWRMConfig(methods=tuple(_names(args.iwrm_methods) or jd.IWRM_DEFAULT_METHODS),
                            seeds=tuple(_ints(args.seeds, "--seeds")), steps=args.steps,
                            batch_size=args.batch_size, lr=args.lr, n_train=args.n_train,
                            eval_every=args.eval_every, tau=args.tau)
        out["iwrm"] = jd.run_iwrm(cfg)
    if args.memory:
        out["memory"] = jd.measure_gramian_memory(_ints(args.batch_sizes, "--batch-sizes"), width=args.width,
                                                  repeats=args.repeats, device=args.device)
    write_json(out, args.json)
    if not args.quiet:
        print(_summary(out), file=sys.stderr)
    return 0


def register(sub) -> None:
    p = sub.add_parser(
        "jd",
        help="Jacobian descent: aggregator properties table, IWRM on digits, Gramian memory (TorchJD)",
        description=("Checks every registry method for the properties of arXiv 2406.16232 (non-conflicting, "
                     "linear under scaling, weighted) and PCD's (primary-anchored, per-secondary progress) on "
                     "sampled Jacobians; trains a tiny CNN on digits with instance-wise risk minimization; "
                     "optionally measures the memory of the Gramian (TorchJD autogram) vs a materialized Jacobian."),
    )
    p.add_argument("--json", default="-", metavar="FILE", help="output file (default: stdout)")
    p.add_argument("--quiet", action="store_true", help="no summary on stderr")
    g = p.add_argument_group("properties")
    g.add_argument("--no-properties", action="store_true", help="skip the properties table")
    g.add_argument("--methods", default=None, help="comma-separated registry names (default: all)")
    g.add_argument("--samples", type=int, default=4, help="Jacobians per family and per K (default 4)")
    g.add_argument("--tau", type=float, default=0.02, help="PCD's share tau in [0, 1] (default 0.02)")
    g.add_argument("--tol", type=float, default=1e-5, help="a property holds when the worst violation < tol")
    g.add_argument("--seed", type=int, default=0, help="sampling seed (default 0)")
    g = p.add_argument_group("IWRM (instance-wise risk minimization on digits)")
    g.add_argument("--no-iwrm", action="store_true", help="skip the IWRM training runs")
    g.add_argument("--iwrm-methods", default=None, help="comma-separated (default: ws,upgrad,mgda,pcgrad,pcd)")
    g.add_argument("--seeds", default="0,1", help="comma-separated training seeds (default 0,1)")
    g.add_argument("--steps", type=int, default=100, help="SGD steps per run (default 100)")
    g.add_argument("--batch-size", type=int, default=32, help="objectives per step = batch size (default 32)")
    g.add_argument("--lr", type=float, default=0.05, help="fixed learning rate (default 0.05; PCGrad: lr / batch)")
    g.add_argument("--n-train", type=int, default=1024, help="training images used (default 1024, max 1437)")
    g.add_argument("--eval-every", type=int, default=10, help="evaluate every N steps (default 10)")
    g = p.add_argument_group("Gramian memory")
    g.add_argument("--memory", action="store_true", help="measure peak memory / time per step")
    g.add_argument("--batch-sizes", default="8,16,32,64,128", help="comma-separated (default 8,16,32,64,128)")
    g.add_argument("--width", type=int, default=16, help="CNN width (default 16: 9,930 parameters)")
    g.add_argument("--repeats", type=int, default=3, help="timed steps per point (default 3)")
    g.add_argument("--device", default="cpu", choices=("cpu", "cuda"), help="cpu (default) or cuda")
    p.set_defaults(func=_run)
