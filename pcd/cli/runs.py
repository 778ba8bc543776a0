"""``python -m pcd runs submit|list|show|cancel|retry|delete``: the run queue from the command line.

Headless users, tests and the Pruning lab page all read and write the same store
(``<data dir>/pcd.sqlite3``).
"""
from __future__ import annotations

import argparse
import json
import sys

from pcd.cli import UsageError, write_json


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser("runs", help="queue, list and cancel pruning runs",
                              description="Queue, list, cancel, retry and delete runs of the run queue.")
    sub = p.add_subparsers(dest="runs_command", metavar="ACTION")

    def common(sp: argparse.ArgumentParser) -> None:
        sp.add_argument("--data-dir", default=None,
                        help="data folder (default: $PCD_DATA_DIR or ~/.local/share/pcd-studio)")

    s = sub.add_parser("submit", help="queue run(s) from a JSON config (the keys of `python -m pcd prune`)")
    common(s)
    s.add_argument("--config", required=True,
                   help="JSON file ('-' = stdin) holding one config object or a list of them")
    s.add_argument("--priority", type=int, default=0, help="higher runs first (default 0)")
    s.add_argument("--max-attempts", type=int, default=3,
                   help="how often a run whose worker died is retried (default 3)")
    s.add_argument("--no-validate", action="store_true", help="skip pcd.train's config validation")
    s.set_defaults(func=_submit)

    ls = sub.add_parser("list", help="list runs")
    common(ls)
    ls.add_argument("--status", choices=["queued", "running", "done", "failed", "cancelled"], default=None)
    ls.add_argument("--json", nargs="?", const="-", default=None, metavar="FILE",
                    help="write a JSON list (id, status, progress, config, result, error, ...) to FILE or stdout")
    ls.set_defaults(func=_list)

    sh = sub.add_parser("show", help="one run with its per-epoch metrics as JSON")
    common(sh)
    sh.add_argument("id")
    sh.add_argument("--json", default="-", metavar="FILE")
    sh.set_defaults(func=_show)

    for name, helptext in (("cancel", "cancel a queued or running run"),
                           ("retry", "requeue a failed or cancelled run (resumes from its checkpoint)"),
                           ("delete", "delete a finished run and its files")):
        a = sub.add_parser(name, help=helptext)
        common(a)
        a.add_argument("id", nargs="+")
        a.set_defaults(func=_action, action=name)
    p.set_defaults(func=lambda args: (p.print_help(), 0)[1])


def _store(args: argparse.Namespace):
    from pcd.jobs.store import RunStore
    return RunStore(args.data_dir)


def _public(run: dict) -> dict:
    from pcd.jobs.store import eta_seconds
    keys = ("id", "status", "progress", "epoch", "epochs", "config", "result", "error", "priority", "label",
            "attempts", "max_attempts", "device", "created_at", "started_at", "finished_at", "heartbeat",
            "cancel_requested")
    out = {k: run.get(k) for k in keys}
    out["eta_s"] = eta_seconds(run)
    return out


def _submit(args: argparse.Namespace) -> int:
    from pcd.jobs import validate_for_queue
    try:
        text = sys.stdin.read() if args.config == "-" else open(args.config, encoding="utf-8").read()
    except OSError as exc:
        raise UsageError(f"cannot read config file {args.config!r}: {exc.strerror}") from None
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise UsageError(f"config file {args.config!r} is not valid JSON: {exc}") from None
    configs = data if isinstance(data, list) else [data]
    if not args.no_validate:
        configs = [validate_for_queue(c) for c in configs]
    with _store(args) as store:
        ids = store.submit_many(configs, priority=args.priority, max_attempts=args.max_attempts)
    for i in ids:
        print(i)
    return 0


def _list(args: argparse.Namespace) -> int:
    with _store(args) as store:
        runs = [_public(r) for r in store.list(args.status)]
    if args.json is not None:
        write_json(runs, args.json)
        return 0
    print(f"{'id':>5}  {'status':<10} {'progress':>8}  {'device':<9} {'method':<10} {'tau':>6}  error")
    for r in runs:
        cfg = r["config"] or {}
        print(f"{r['id']:>5}  {r['status']:<10} {100 * (r['progress'] or 0):7.0f}%  {str(r['device'] or ''):<9} "
              f"{str(cfg.get('method', '')):<10} {str(cfg.get('tau', '')):>6}  {r['error'] or ''}")
    return 0


def _show(args: argparse.Namespace) -> int:
    with _store(args) as store:
        run = _public(store.get(args.id))
        run["metrics"] = store.metrics(args.id)
        run["run_dir"] = str(store.run_dir(run["id"]))
    write_json(run, args.json)
    return 0


def _action(args: argparse.Namespace) -> int:
    with _store(args) as store:
        for rid in args.id:
            if args.action == "cancel":
                print(f"{rid}: {store.cancel(rid)}")
            elif args.action == "retry":
                store.retry(rid)
                print(f"{rid}: queued")
            else:
                store.delete(rid)
                print(f"{rid}: deleted")
    return 0
