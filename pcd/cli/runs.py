"""``python -m pcd runs submit|presets|summary|list|show|cluster|log|cancel|retry|delete``: the run queue from the
command line.

Headless users, tests and the Pruning lab page all read and write the same store
(``<data dir>/pcd.sqlite3``); ``cluster`` and ``log`` show where runs run (``pcd.jobs.placement``).
"""
from __future__ import annotations

import argparse
from typing import Any

from pcd import _validate as V
from pcd.cli import UsageError, read_json, write_json

LIST_PAGE = 50  # `runs list` shows the newest 50 runs unless told otherwise


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser("runs", help="queue, list and cancel pruning runs",
                              description="Queue, list, cancel, retry and delete runs of the run queue.")
    sub = p.add_subparsers(dest="runs_command", metavar="ACTION")

    def common(sp: argparse.ArgumentParser) -> None:
        sp.add_argument("--data-dir", default=None,
                        help="data folder (default: $PCD_DATA_DIR or ~/.local/share/pcd-studio)")

    def action(name: str, func: Any, helptext: str, *, data_dir: bool = True, **kw: Any) -> argparse.ArgumentParser:
        """The subcommand ``name`` running ``func``, with ``--data-dir`` unless told otherwise."""
        sp = sub.add_parser(name, help=helptext, **kw)
        if data_dir:
            common(sp)
        sp.set_defaults(func=func)
        return sp

    def json_option(sp: argparse.ArgumentParser, helptext: str | None = None) -> None:
        """``--json`` alone: JSON to stdout; ``--json FILE``: to that file."""
        sp.add_argument("--json", nargs="?", const="-", default=None, metavar="FILE", help=helptext)

    s = action("submit", _submit, "queue run(s) from a JSON config (the keys of `python -m pcd prune`) "
                                  "or a whole preset study")
    src = s.add_mutually_exclusive_group(required=True)
    src.add_argument("--config", help="JSON file ('-' = stdin) holding one config object or a list of them")
    src.add_argument("--preset", help="queue every run of a preset study (see `python -m pcd runs presets`)")
    s.add_argument("--seeds", default=None, help="with --preset: comma-separated seeds instead of the preset's")
    s.add_argument("--threads", type=int, default=None, help="with --preset: torch CPU threads per run")
    s.add_argument("--device", default=None, help="with --preset: device of every run (auto | cpu | cuda | cuda:N)")
    s.add_argument("--epochs", type=int, default=None, help="with --preset: a shorter (or longer) study")
    s.add_argument("--priority", type=int, default=0, help="higher runs first (default 0)")
    s.add_argument("--max-attempts", type=int, default=3,
                   help="how often a run whose worker died is retried (default 3)")
    s.add_argument("--no-validate", action="store_true", help="skip pcd.train's config validation")

    json_option(action("presets", _presets, "the preset studies with their runs and estimated time", data_dir=False))

    sm = action("summary", _summary, "mean ± std over seeds per (method, setting) of the finished runs, "
                                     "and the matched-sparsity comparison")
    sm.add_argument("--study", default=None, help="only runs whose study label contains this text")
    json_option(sm, "write the aggregated rows and the comparison as JSON to FILE or stdout")

    ls = action("list", _list, "list runs, newest first, one page at a time")
    ls.add_argument("--status", choices=["queued", "running", "done", "failed", "cancelled"], default=None)
    ls.add_argument("--limit", type=int, default=LIST_PAGE,
                    help=f"how many runs, newest first (default {LIST_PAGE})")
    ls.add_argument("--offset", type=int, default=0, help="skip this many of the newest runs (the next page)")
    ls.add_argument("--all", action="store_true", help="every run, newest first (read a page at a time)")
    json_option(ls, "write a JSON list (id, status, progress, config, result, error, ...) to FILE or stdout")

    sh = action("show", _show, "one run with its per-epoch metrics as JSON")
    sh.add_argument("id")
    sh.add_argument("--json", default="-", metavar="FILE")

    json_option(action("cluster", _cluster, "the nodes and slots the live supervisor serves (Ray: per node)"),
                "write the supervisor's cluster.json view to FILE or stdout")

    lg = action("log", _log, "the tail of a run's worker.log (where it ran, its output, tracebacks)")
    lg.add_argument("id")
    lg.add_argument("--lines", type=int, default=40, help="how many lines (default 40)")

    for name, helptext in (("cancel", "cancel a queued or running run"),
                           ("retry", "requeue a failed or cancelled run (resumes from its checkpoint)"),
                           ("delete", "delete a finished run and its files")):
        a = action(name, _action, helptext)
        a.add_argument("id", nargs="+")
        a.set_defaults(action=name)
    action("rebuild", _rebuild, "rebuild a lost or damaged run database from the run folders",
           description="Move the database aside (kept as pcd.sqlite3.damaged-<time>) and rebuild it "
                       "from runs/<id>/config.json + final.json + metrics.jsonl.")
    p.set_defaults(func=lambda args: (p.print_help(), 0)[1])


def _store(args: argparse.Namespace):
    """The data folder's run store, handed training's read-back check of a stored config (the queue
    itself knows no run config)."""
    from pcd.jobs.store import RunStore
    from pcd.train.queue import check_stored
    return RunStore(args.data_dir, check=check_stored)


def _public(run: dict) -> dict:
    from pcd.jobs.store import eta_seconds
    keys = ("id", "status", "progress", "epoch", "epochs", "config", "result", "error", "priority", "label",
            "attempts", "max_attempts", "device", "created_at", "started_at", "finished_at", "heartbeat",
            "cancel_requested", "placement", "pid", "worker")
    out = {k: run.get(k) for k in keys}
    out["eta_s"] = eta_seconds(run)
    return out


def _preset_configs(args: argparse.Namespace) -> tuple[list[dict], list[str]]:
    from pcd.jobs.sweep import describe, parse_numbers
    from pcd.train import presets

    pre = presets.get(args.preset)
    seeds = parse_numbers(args.seeds, name="--seeds", low=0, integer=True) if args.seeds else None
    over = {k: v for k, v in (("threads", args.threads), ("device", args.device), ("epochs", args.epochs))
            if v is not None}
    configs = pre.configs(seeds, **over)
    return configs, [f"{pre.name} · {describe(c)}" for c in configs]


def _submit(args: argparse.Namespace) -> int:
    from pcd.train.queue import validate_for_queue
    if args.preset is not None:
        configs, labels = _preset_configs(args)
        with _store(args) as store:
            ids = store.submit_many(configs, priority=args.priority, max_attempts=args.max_attempts, labels=labels,
                                    check=validate_for_queue)
        for i in ids:
            print(i)
        return 0
    if any(v is not None for v in (args.seeds, args.threads, args.device, args.epochs)):
        raise UsageError("--seeds, --threads, --device and --epochs go with --preset")
    data = read_json(args.config, "config file")
    configs = data if isinstance(data, list) else [data]
    if len(configs) > V.LIMITS["runs"]:
        raise UsageError(f"--config holds {len(configs)} configs; at most {V.LIMITS['runs']} per submit")
    for i, c in enumerate(configs):
        if not isinstance(c, dict):
            raise UsageError(f"--config: config #{i} must be a JSON object, got {V.show(c)}")
    with _store(args) as store:
        ids = store.submit_many(configs, priority=args.priority, max_attempts=args.max_attempts,
                                check=None if args.no_validate else validate_for_queue)
    for i in ids:
        print(i)
    return 0


def _list(args: argparse.Namespace) -> int:
    if not args.all:
        V.integer(args.limit, "--limit", low=1, high=V.LIMITS["run_id"])
    V.integer(args.offset, "--offset", low=0, high=V.LIMITS["run_id"])
    with _store(args) as store:
        counts = store.counts()
        total = counts[args.status] if args.status else sum(counts.values())
        runs = (store.iter_runs(args.status, newest_first=True) if args.all else
                store.list(args.status, limit=args.limit, offset=args.offset, newest_first=True))
        if args.json is not None:
            _write_json_rows((_public(r) for r in runs), args.json)
            return 0
        from pcd.jobs.placement import where
        print(f"{'id':>5}  {'status':<10} {'progress':>8}  {'device':<9} {'method':<10} {'tau':>6}  "
              f"{'where':<34} error")
        shown = 0
        for r in runs:
            cfg = r["config"] or {}
            print(f"{r['id']:>5}  {r['status']:<10} {100 * (r['progress'] or 0):7.0f}%  {str(r['device'] or ''):<9} "
                  f"{str(cfg.get('method', '')):<10} {str(cfg.get('tau', '')):>6}  {where(r):<34} {r['error'] or ''}")
            shown += 1
    if shown < total:
        first = args.offset + 1 if shown else args.offset
        print(f"runs {first}-{args.offset + shown} of {total:,}, newest first; more with --offset "
              f"{args.offset + shown}, or --all")
    return 0


def _write_json_rows(rows: Any, path: str | None) -> None:
    """A JSON list written one run at a time (``--all`` over 200,000 runs never holds them all)."""
    import sys

    from pcd._json import dumps

    fh = sys.stdout if path in (None, "-") else open(path, "w", encoding="utf-8")
    try:
        fh.write("[")
        for i, r in enumerate(rows):
            fh.write(("," if i else "") + "\n" + dumps(r))
        fh.write("\n]\n")
    finally:
        if fh is not sys.stdout:
            fh.close()


def _cluster(args: argparse.Namespace) -> int:
    from pcd.jobs.placement import cluster_rows, cluster_summary, read_cluster
    from pcd.jobs.store import default_data_dir
    from pcd.jobs.supervisor import supervisor_pid

    data_dir = args.data_dir or default_data_dir()
    info = read_cluster(data_dir, supervisor_pid(data_dir))
    if args.json is not None:
        write_json(info, args.json)
        return 0
    if info is None:
        print(f"no supervisor serves {data_dir}")
        return 0
    print(cluster_summary(info))
    for row in cluster_rows(info):
        print(f"  {str(row['host']):<16} node {row['node'] or '-':<8}  {row['gpus'] or 0} GPU  "
              f"{row['cpus'] or 0:g} CPU  {row['slots']} slot(s)  {row['state']}"
              + ("  (supervisor here)" if row["supervisor here"] else "") + (f"  {row['reason']}" if row["reason"] else ""))
    return 0


def _log(args: argparse.Namespace) -> int:
    from pcd.jobs.placement import log_tail

    if not 1 <= args.lines <= 100_000:
        raise UsageError(f"--lines must be in [1, 100000], got {args.lines}")
    with _store(args) as store:
        run = store.get(args.id)
        text = log_tail(store, run["id"], args.lines)
    print(text if text else f"run {run['id']} has no worker.log yet")
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


def _presets(args: argparse.Namespace) -> int:
    from pcd.train import presets

    out: list[dict[str, Any]] = []
    for name in presets.names():
        p = presets.get(name)
        est = presets.nominal_seconds(p)
        out.append({"name": name, "title": p.title, "description": p.description, "runs": len(p.configs()),
                    "seeds": list(p.seeds), "needs_gpu": p.needs_gpu, "base": dict(p.base),
                    "grid": [[m, dict(s)] for m, s in p.grid], "estimate": est})
    if args.json is not None:
        write_json(out, args.json)
        return 0
    for row in out:
        t = row["estimate"]["total"]
        when = f"~{t / 3600:.1f} h" if t >= 3600 else f"~{t / 60:.0f} min"
        print(f"{row['name']:<24} {row['runs']:>4} runs  {when:<9} {row['title']}")
    return 0


def _summary(args: argparse.Namespace) -> int:
    from pcd.train import studies as R
    from pcd.train.studies import summary_rows

    with _store(args) as store:  # streamed: memory stays bounded however many runs are done
        rows = summary_rows(store, args.study)
    studies = list(dict.fromkeys(r["study"] for r in rows))
    comps = {st: R.paired_comparison([r for r in rows if r["study"] == st]) for st in studies}
    if args.json is not None:
        write_json({"rows": rows, "comparisons": comps}, args.json)
        return 0
    if not rows:
        print("no finished runs")
        return 0

    def f(v, spec=".1f"):
        return "—" if v is None else format(v, spec)

    def pm(r, k, spec=".1f"):
        return f(r[k], spec) + ("" if r[k + "_std"] is None else " ± " + f(r[k + "_std"], spec))

    for st in studies:
        sub = [r for r in rows if r["study"] == st]
        ref = next((r["test_acc"] for r in sub if r["method"] == "unpruned"), None)
        print(f"study: {st}")
        print("| method | setting | seeds | accuracy % | param. reduction % | params after | FLOPs after | "
              "file KB | train s / run | wall s / run | where it lands |")
        print("|---|---|---|---|---|---|---|---|---|---|---|")
        for r in sub:
            kb = None if r["file_bytes_after"] is None else r["file_bytes_after"] / 1024
            print(f"| {r['method']} | {r['setting']} | {r['n']} | {pm(r, 'test_acc')} | {pm(r, 'param_reduction')} | "
                  f"{f(r['params_after'], ',.0f')} | {f(r['flops_after'], ',.0f')} | {f(kb)} | "
                  f"{f(r['seconds'], '.0f')} | {f(r['wall_seconds'], '.0f')} | {R.landing(r, ref)} |")
        if "l1+nuclear" in st:  # K = 3: the measures the paper's K = 3 table reports, with their definitions
            from pcd.train.metrics import K3_MEASURES

            print(f"K = 3 measures: {K3_MEASURES}")
            print("| method | setting | seeds | accuracy % | parameter sparsity % | effective rank |")
            print("|---|---|---|---|---|---|")
            for r in sub:
                print(f"| {r['method']} | {r['setting']} | {r['n']} | {pm(r, 'test_acc')} | {pm(r, 'param_sparsity')} | "
                      f"{pm(r, 'effective_rank', '.2f')} |")
            hv = R.hypervolume_by_method([{**r, "secondary": "l1+nuclear"} for r in sub])  # the seeds' means
            if hv["methods"]:
                print("dominated hypervolume per method, of its settings' mean points: " + ", ".join(
                    f"{m} {v:.3f}" for m, v in sorted(hv["methods"].items(), key=lambda kv: -kv[1])))
                print(f"({hv['normalization']})")
        c = comps[st]
        print(R.pairs_line(c) if c["n"] else c.get("nothing") or "no PCD / baseline pairs")
        for line in R.findings(sub):
            print(f"- {line}")
        print()
    return 0


def _rebuild(args: argparse.Namespace) -> int:
    from pcd.jobs.store import default_data_dir, rebuild
    from pcd.jobs.supervisor import supervisor_pid

    folder = V.data_folder(args.data_dir, "--data-dir") if args.data_dir else str(default_data_dir())
    pid = supervisor_pid(folder)
    if pid:
        raise UsageError(f"a worker (pid {pid}) serves {folder}; stop it before rebuilding its database")
    out = rebuild(folder)
    print(f"rebuilt {folder}: {out['runs']} run(s) ({out['done']} done, {out['queued']} queued; "
          f"{out['kept']} row(s) kept from the old database)"
          + (f"; old database kept as {out['backup']}" if out["backup"] else ""))
    for line in out["skipped"]:
        print(f"note: {line}")
    return 0
