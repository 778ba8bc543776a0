"""``python -m pcd prune``: one structured-pruning training run (see :mod:`pcd.train.run`)."""
from __future__ import annotations

import argparse
import json
import sys

from pcd.cli import UsageError, write_json


def _methods_text() -> str:
    import pcd.methods as M
    from pcd.train.catalog import SPECIAL_METHOD_NAMES

    return ", ".join(M.available() + list(SPECIAL_METHOD_NAMES))


def _preset_names() -> list[str]:
    from pcd.train.presets import names

    return names()


def register(subparsers) -> None:
    from pcd.train.catalog import ARCH_HELP

    archs = "; ".join(f"{k}: {v}" for k, v in ARCH_HELP.items())
    p = subparsers.add_parser(
        "prune",
        help="train a network with a pruning secondary (group lasso / L1+nuclear) and export the pruned model",
        description=(
            "One pruning run: primary = cross-entropy, secondary = group lasso over conv filters (K=2) or "
            "L1 + nuclear norm (K=3), combined by METHOD, then physical pruning with Torch-Pruning. "
            f"Architectures: {archs}. Methods: {_methods_text()}."
        ),
    )
    p.add_argument("--preset", default=None,
                   help=f"start from a study's training settings ({', '.join(_preset_names())}); explicit options win")
    p.add_argument("--dataset", default=None, choices=["digits", "cifar10", "cifar100"], help="default digits")
    p.add_argument("--arch", default=None, help="architecture (default: smallcnn for digits, resnet18 for CIFAR)")
    p.add_argument("--method", default="pcd", help="registry method or prox | lagrangian (default pcd)")
    p.add_argument("--method-params", default="{}", help='JSON object of hyper-parameters, e.g. \'{"w": 0.01}\'')
    p.add_argument("--tau", type=float, default=None, help="PCD tolerance tau in [0, 1] (default 0.02)")
    p.add_argument("--secondary", default=None, choices=["group_lasso", "l1+nuclear"], help="default group_lasso")
    p.add_argument("--grouping", default=None, choices=["filter", "filter+bn", "coupled"],
                   help="group lasso groups: paper's filters, filters + their BN gamma/beta, or Torch-Pruning-coupled channels")
    p.add_argument("--epochs", type=int, default=None, help="default 2")
    p.add_argument("--batch-size", type=int, default=None, help="default 128")
    p.add_argument("--optimizer", default=None, choices=["adam", "sgd"], help="default adam")
    p.add_argument("--lr", type=float, default=None, help="default 1e-3")
    p.add_argument("--schedule", default=None, choices=["cosine", "none"], help="default cosine")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--device", default=None, help="auto | cpu | cuda | cuda:N (default auto)")
    p.add_argument("--data-dir", default=None, help="folder with the CIFAR archives (default $PCD_DATA_DIR or ~/.cache/pcd-studio/data)")
    p.add_argument("--download", action="store_true", help="download CIFAR (MD5-checked) when it is missing")
    p.add_argument("--max-train-samples", type=int, default=None, help="train on a fixed random subset (CPU runs)")
    p.add_argument("--max-test-samples", type=int, default=None)
    p.add_argument("--export-threshold", type=float, default=1e-4, help="remove channels whose filters' L2 norm is below this")
    p.add_argument("--target-reduction", type=float, default=None,
                   help="instead: remove the weakest channels until this parameter reduction (0..1)")
    p.add_argument("--no-export", action="store_true", help="skip physical pruning")
    p.add_argument("--latency-repeats", type=int, default=None, help="default 10")
    p.add_argument("--threads", type=int, default=None, help="torch CPU threads (default: torch's)")
    p.add_argument("--out", required=True, help="run folder (config.json, metrics.jsonl, checkpoint.pt, final.json, model)")
    p.add_argument("--json", default=None, help="write the result JSON here (- for stdout)")
    p.add_argument("--quiet", action="store_true", help="no per-epoch line on stderr")
    p.set_defaults(func=run)


def config_from_args(args: argparse.Namespace) -> dict:
    try:
        mp = json.loads(args.method_params)
    except json.JSONDecodeError as exc:
        raise UsageError(f"--method-params must be a JSON object: {exc}") from None
    if not isinstance(mp, dict):
        raise UsageError("--method-params must be a JSON object")
    cfg = {
        "dataset": args.dataset, "arch": args.arch, "method": args.method, "method_params": mp, "tau": args.tau,
        "secondary": args.secondary, "grouping": args.grouping, "epochs": args.epochs, "batch_size": args.batch_size,
        "optimizer": args.optimizer, "lr": args.lr, "schedule": args.schedule, "seed": args.seed,
        "device": args.device, "data_dir": args.data_dir, "download": args.download,
        "max_train_samples": args.max_train_samples, "max_test_samples": args.max_test_samples,
        "export": not args.no_export, "export_threshold": args.export_threshold,
        "target_reduction": args.target_reduction, "latency_repeats": args.latency_repeats, "threads": args.threads,
    }
    explicit = {k: v for k, v in cfg.items() if v is not None or k in ("method_params",)}
    if args.preset is None:
        return explicit
    from pcd.train import presets

    return presets.get(args.preset).run_config(**explicit)


def run(args: argparse.Namespace) -> int:
    from pcd.train.run import train, validate_config

    cfg = validate_config(config_from_args(args))

    def progress(p: dict) -> None:
        row = p.get("metrics")
        if row and not args.quiet:
            print(f"epoch {p['epoch']}/{p['epochs']}: acc {row.get('test_acc')} group sparsity "
                  f"{row.get('group_sparsity')} % loss {row.get('train_loss')}", file=sys.stderr)

    result = train(cfg, out_dir=args.out, on_progress=progress)
    if not args.quiet:
        from pcd.train.studies import export_report

        print(f"export: {export_report(result)['message']}", file=sys.stderr)
    if args.json:
        write_json(result, args.json)
    return 0
