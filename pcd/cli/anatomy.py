"""``python -m pcd anatomy RUN``: inside a finished pruning run -- its whole accuracy-vs-sparsity
trade-off curve from the final group norms (each point physically exported, reloaded and
evaluated; no retraining) and, with budgets, the most accurate setting that meets them."""
from __future__ import annotations

import argparse
import sys

from pcd.cli import UsageError, write_json


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser(
        "anatomy", help="a finished run's trade-off curve (threshold -> accuracy, params, FLOPs, latency, size)",
        description="Sweep the export threshold of a finished run over its channel norms' quantiles; export, "
                    "reload and measure each point. Budgets pick the most accurate point that meets them.")
    p.add_argument("run", help="a run folder (runs/<id>, or a `python -m pcd prune --out` folder) or a run id")
    p.add_argument("--data-dir", default=None, help="data folder of the run queue, when RUN is an id")
    p.add_argument("--points", type=int, default=8, help="thresholds on the curve, 2..64 (default 8)")
    p.add_argument("--device", default="cpu", help="cpu | cuda | cuda:N (default cpu)")
    p.add_argument("--batch", type=int, default=1, help="latency batch size (default 1)")
    p.add_argument("--repeats", type=int, default=10, help="latency rounds per point, 3..10000 (default 10)")
    p.add_argument("--threads", type=int, default=None, help="pin torch's threads while timing")
    p.add_argument("--max-mflops", type=float, default=None, help="budget: at most this many MFLOPs (batch 1)")
    p.add_argument("--max-params", type=float, default=None, help="budget: at most this many parameters")
    p.add_argument("--max-ms", type=float, default=None, help="budget: at most this latency (ms)")
    p.add_argument("--max-bytes", type=float, default=None, help="budget: at most this file size (bytes)")
    p.add_argument("--json", default=None, help="write the whole result as JSON to this file ('-' = stdout)")
    p.set_defaults(func=_run)


def _folder(args: argparse.Namespace) -> str:
    from pcd import _files

    if args.run.isascii() and args.run.isdigit():
        from pcd.jobs.store import RunStore

        with RunStore(args.data_dir) as store:
            return str(_files.run_folder(store.data_dir, store.get(args.run)["id"]))
    return args.run


def _run(args: argparse.Namespace) -> int:
    from pcd.train import anatomy as A

    mflops = None if args.max_mflops is None else args.max_mflops * 1e6
    budget = {"max_flops": mflops, "max_params": args.max_params, "max_latency_ms": args.max_ms,
              "max_bytes": args.max_bytes}
    try:
        A.meets_budget([], **budget)  # validates the budgets before the (long) sweep
        out = A.inspect_run(_folder(args), points=args.points, device=args.device, latency_batch=args.batch,
                            repeats=args.repeats, threads=args.threads,
                            progress=lambda i, n: print(f"point {i}/{n}", file=sys.stderr))
    except (ValueError, FileNotFoundError) as exc:
        raise UsageError(str(exc)) from None
    if any(v is not None for v in budget.values()):
        out["budget"] = {"limits": budget, "best": A.meets_budget(out["curve"], **budget)}
    print(f"threshold  removed  params      MFLOPs    acc %   ms (b={args.batch})  speed-up  bytes")
    for r in out["curve"]:
        print(f"{r['threshold']:<10.3g} {r['channels_removed']:>4}/{r['channels_total']:<4} {r['params']:>9,} "
              f"{r['flops'] / 1e6:>9.3f} {r['test_acc']:>7.2f} {r['latency_ms']:>10.3f} {r['speedup']:>8.2f}x "
              f"{r['bytes']:>9,}")
    if "budget" in out:
        best = out["budget"]["best"]
        print("budget met by: " + ("no point" if best is None else f"threshold {best['threshold']:.3g} "
                                   f"({best['test_acc']:.2f} %, {best['params']:,} params)"))
    if args.json:
        write_json(out, args.json)
    return 0
