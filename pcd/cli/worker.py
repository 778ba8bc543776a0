"""``python -m pcd worker``: the run-queue supervisor in the foreground (see ``pcd.jobs.supervisor``)."""
from __future__ import annotations

import argparse
import os
import sys

from pcd.cli import UsageError
from pcd.jobs.executors import BACKENDS
from pcd.train.queue import RUNNER


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser(
        "worker", help="run the queue supervisor in the foreground (one per data folder)",
        description="Serve the run queue of a data folder: one slot per GPU (or one CPU slot), each run "
                    "in a fresh child process. Stops on Ctrl-C / SIGTERM; running runs go back to the "
                    "queue and resume from their checkpoints.")
    p.add_argument("--data-dir", default=None, help="data folder (default: $PCD_DATA_DIR or ~/.local/share/pcd-studio)")
    p.add_argument("--slots", type=int, default=_env_int("PCD_WORKER_SLOTS"),
                   help="number of concurrent runs (default: one per GPU, else 1; on Ray: the cluster's slots, "
                        "this caps them)")
    p.add_argument("--backend", choices=list(BACKENDS), default=os.environ.get("PCD_BACKEND") or "local",
                   help="where runs execute: local child processes (default), tasks on a Ray cluster, ... "
                        "(pcd.jobs.executors.BACKENDS; $PCD_BACKEND)")
    p.add_argument("--runner", default=None,
                   help=f"module:function executing a run (default: $PCD_RUNNER or {RUNNER}, the pruning runs)")
    p.add_argument("--poll", type=float, default=0.5, help="seconds between queue polls (default 0.5)")
    p.add_argument("--stall-timeout", type=float, default=float(os.environ.get("PCD_STALL_TIMEOUT", 900)),
                   help="fail a run that reports no progress for this many seconds (default 900)")
    p.add_argument("--cancel-grace", type=float, default=5.0,
                   help="seconds a cancelled run may take to stop before it is killed (default 5)")
    p.add_argument("--idle-exit", type=float, default=None,
                   help="exit after this many idle seconds with an empty queue (default: never)")
    p.add_argument("--cpus-per-run", type=float, default=None,
                   help="Ray backend: CPUs each run takes on a CPU-only node, i.e. CPU // this = its slots "
                        "(default: $PCD_RAY_CPUS_PER_RUN or 1); GPU nodes get one slot per GPU")
    p.add_argument("--parent-pid", type=int, default=None,
                   help="stop (runs go back to the queue) as soon as this process is gone "
                        "(what the app passes; omit for a standalone supervisor)")
    p.add_argument("--quiet-if-running", action="store_true",
                   help="exit 0 silently when another supervisor already serves the folder")
    p.set_defaults(func=_run)


def _env_int(name: str) -> int | None:
    v = os.environ.get(name)
    return int(v) if v and v.isdigit() else None


def _run(args: argparse.Namespace) -> int:
    from pcd.jobs.supervisor import Supervisor, SupervisorRunning

    if args.slots is not None and not 1 <= args.slots <= 64:
        raise UsageError(f"--slots must be in [1, 64], got {args.slots}")
    if args.cpus_per_run is not None and not 0 < args.cpus_per_run <= 1024:
        raise UsageError(f"--cpus-per-run must be in (0, 1024], got {args.cpus_per_run:g}")
    if args.parent_pid is not None and args.parent_pid < 1:
        raise UsageError(f"--parent-pid must be a process id >= 1, got {args.parent_pid}")
    if args.parent_pid is not None and os.getppid() != args.parent_pid:
        return 0  # the process that started us is already gone
    # the worker entry point hands the queue training's runner (pcd.jobs never imports pcd.train)
    runner = args.runner or os.environ.get("PCD_RUNNER") or RUNNER
    options = {} if args.cpus_per_run is None else {"cpus_per_run": args.cpus_per_run}
    sup = Supervisor(args.data_dir, slots=args.slots, runner=runner, backend=args.backend,
                     poll_s=args.poll, stall_timeout_s=args.stall_timeout, cancel_grace_s=args.cancel_grace,
                     parent_pid=args.parent_pid, options=options)
    try:
        return sup.run(idle_exit_s=args.idle_exit)
    except SupervisorRunning as exc:
        if args.quiet_if_running:
            return 0
        print(f"error: {exc}", file=sys.stderr)
        return 2


def main(argv: list[str] | None = None) -> int:
    """The ``worker`` command alone, without importing the other commands (keeps the supervisor
    process light: it never imports torch on a machine without GPUs). Used by
    :func:`pcd.jobs.ensure_supervisor`: ``python -c "from pcd.cli.worker import main; main()" ...``."""
    from pcd.cli import _Parser

    parser = _Parser(prog="python -m pcd")
    register(parser.add_subparsers(dest="command", parser_class=_Parser))
    args = parser.parse_args(["worker", *(sys.argv[1:] if argv is None else argv)])
    try:
        return int(args.func(args) or 0)
    except ValueError as exc:  # UsageError included
        msg = str(exc).strip().splitlines()[0] if str(exc).strip() else exc.__class__.__name__
        print(f"error: {msg}", file=sys.stderr)
        return 2
