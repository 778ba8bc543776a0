"""Run-store scale: seconds and peak memory of ``runs list``, ``runs summary`` and the Pruning lab's
queue-tab data function at 1k, 10k and 200k runs.

    python benchmarks/bench_store_scale.py [--rows 1000,10000,200000] [--keep DIR]

Each store is built fast by inserting realistic rows directly (``executemany``: a validated config,
and for finished runs a result with an export report and a 3-epoch history, ~2.5 KB a row; 80 %
done, 1 % queued, a few running, the rest failed / cancelled). Each measure runs in its own fresh
Python process (``python -c``), so its peak resident memory (``VmHWM``) is its own; the time
is wall time of the call inside that process (imports excluded). ``runs list`` is the default page
(newest 50) as JSON; ``--all`` streams every run; ``runs summary`` streams the finished runs. The
first open of a store in a process runs SQLite's quick_check (once per file version and process,
included in the CLI rows); the queue-tab rows are timed on an open store, as in the app's server.
"""
from __future__ import annotations

import argparse
import json
import random
import sqlite3
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(HERE))

# name -> (set-up, not timed; the timed call)
MEASURES = {
    "runs list (newest 50)": ("", "assert main(['runs', 'list', '--data-dir', D, '--json', OUT]) == 0"),
    "runs list --all": ("", "assert main(['runs', 'list', '--all', '--data-dir', D, '--json', OUT]) == 0"),
    "runs summary": ("", "assert main(['runs', 'summary', '--data-dir', D, '--json', OUT]) == 0"),
    "open the store (quick_check)": ("", "s = RunStore(D)"),
    "queue tab data": ("s = RunStore(D)", "p = queue_page(s); e = estimate_basis(s); assert len(p.runs) == 50"),
    "queue tab refresh, unchanged": ("s = RunStore(D); p = queue_page(s)", "assert queue_page(s, previous=p) is p"),
    "results tab: studies + newest study": ("s = RunStore(D)", "m, st = done_studies(s); "
                                            "pts, rows = study_points(s, next(iter(st.values())))"),
}

PROBE = """
import sys, time
sys.path.insert(0, {here!r})
D = {data!r}
OUT = D + '/bench-out.json'
from pcd.cli import main
from pcd.jobs.store import RunStore
from pcd.jobs.queue_view import estimate_basis, queue_page
from pcd.train.studies import done_studies, study_points
import pcd.cli.runs, pcd.train.studies, pcd.train.catalog  # imports are not timed
{setup}
T0 = time.perf_counter()
{code}
dt = time.perf_counter() - T0
# VmHWM: this process's own peak (ru_maxrss would carry the parent's over fork + exec)
hwm = next(int(ln.split()[1]) for ln in open("/proc/self/status") if ln.startswith("VmHWM:"))
print(dt, hwm / 1024)
"""


def build(data: Path, n: int, seed: int = 0) -> None:
    """A store of ``n`` runs, written with executemany (seconds for 200k)."""
    from pcd.jobs.store import RunStore
    from pcd.train.queue import validate_for_queue

    RunStore(data).close()  # schema, WAL
    rng = random.Random(seed)
    methods = ["pcd", "ws", "mgda", "pcgrad", "cagrad"]
    now = time.time() - n
    rows = []
    for i in range(1, n + 1):
        m = methods[i % len(methods)]
        cfg = validate_for_queue({"dataset": "digits", "method": m, "seed": i % 5,
                                  **({"tau": [0.01, 0.02, 0.05][i % 3]} if m == "pcd" else {})})
        u = rng.random()
        status = ("done" if u < 0.80 else "failed" if u < 0.90 else "cancelled" if u < 0.98 else "queued")
        if i > n - 3:
            status = "running"
        res = None
        if status == "done":
            acc = 90 + rng.random() * 5
            hist = [{"epoch": e, "test_acc": acc - 3 + e, "train_loss": 1.0 / e, "secondary_1": 2.0 / e,
                     "group_sparsity": 10.0 * e, "mu": 0.1, "cosine": -0.2, "seconds": 1.5 * e} for e in (1, 2, 3)]
            res = {"config": cfg, "test_acc": acc, "group_sparsity": 40 + rng.random() * 20,
                   "param_sparsity": 1.0, "effective_rank": 3.2, "seconds": 4.5, "epochs_completed": 2,
                   "diverged": False, "history": hist,
                   "export": {"params_before": 24000, "params_after": 9000 + rng.randrange(4000),
                              "flops_before": 1.2e6, "flops_after": 5e5, "latency_ms_before": 0.4,
                              "latency_ms_after": 0.3, "file_bytes_before": 100_000, "file_bytes_after": 40_000,
                              "test_acc": acc - 0.1, "path": "model_pruned.pt"}}
        created = now + i
        rows.append((i, json.dumps(cfg), status, created, created + 1 if status != "queued" else None,
                     created + 60 if status in ("done", "failed", "cancelled") else None,
                     1.0 if status == "done" else 0.0, json.dumps(res) if res else None,
                     "boom" if status == "failed" else None))
    c = sqlite3.connect(data / "pcd.sqlite3")
    with c:
        c.executemany("INSERT INTO runs (id, config, status, created_at, started_at, finished_at, progress, result, "
                      "error) VALUES (?,?,?,?,?,?,?,?,?)", rows)
    c.execute("PRAGMA wal_checkpoint(TRUNCATE)")  # the steady state: the rows in the main file
    c.close()


def measure(data: Path, setup: str, code: str) -> tuple[float, float]:
    probe = PROBE.format(here=str(HERE), data=str(data), setup=setup, code=code)
    out = subprocess.run([sys.executable, "-c", probe],
                         capture_output=True, text=True, timeout=1800)
    if out.returncode != 0:
        raise SystemExit(f"probe failed:\n{out.stderr}")
    dt, mb = out.stdout.strip().splitlines()[-1].split()
    return float(dt), float(mb)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", default="1000,10000,200000")
    ap.add_argument("--keep", default=None, help="build the stores in this folder (kept) instead of a temporary one")
    args = ap.parse_args()
    sizes = [int(x) for x in args.rows.split(",")]
    base = Path(args.keep) if args.keep else Path(tempfile.mkdtemp(prefix="pcd-scale-"))
    print(f"{'rows':>8}  {'measure':<38} {'seconds':>8} {'peak MB':>8}")
    for n in sizes:
        data = base / f"store-{n}"
        if not (data / "pcd.sqlite3").exists():
            t0 = time.perf_counter()
            build(data, n)
            print(f"{n:>8}  {'(build with executemany)':<38} {time.perf_counter() - t0:8.1f}")
        for name, (setup, code) in MEASURES.items():
            dt, mb = measure(data, setup, code)
            print(f"{n:>8}  {name:<38} {dt:8.2f} {mb:8.0f}", flush=True)
    if not args.keep:
        import shutil
        shutil.rmtree(base, ignore_errors=True)


if __name__ == "__main__":
    main()
