"""A K-objective setting computed on the click, with and without the worker processes (issue 28 part 4).

    python benchmarks/bench_kbench_workers.py [--repeat 3] [--workers N]

What the page computes when a setting is not in its store yet: the default view (K = 2 ... 65, PCD, the
weighted sum and MGDA) at a learning rate and budget the warm-up does not compute (1000 steps), every K's
runs in one engine call (:func:`pcd.studio.kbench._run_ks`), side by side:

* ``this thread``: every K in the page's own thread, one after the other (``PCD_KBENCH_WORKERS=0``);
* ``+ N workers``: the Ks shared round-robin, largest first, between the page's thread and N worker
  processes (``--workers``, default :func:`pcd.studio.kbench.workers`: one fewer than the cores).

Each repetition uses a learning rate of its own (nothing is stored between them), both rows the same one,
alternating which goes first; the records of both are checked to be equal. The workers are started (and
timed) before the first repetition, as the server's warm-up does. Wall seconds, median, with
``os.getloadavg()`` beside (the machine is shared: compare within one run).
"""
from __future__ import annotations

import argparse
import logging
import os
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--repeat", type=int, default=3, help="repetitions of each row (default 3)")
    ap.add_argument("--workers", type=int, default=None, help="worker processes (default: one fewer than the cores)")
    args = ap.parse_args(argv)
    logging.getLogger("streamlit").setLevel(logging.ERROR)
    from pcd.studio import kbench as KB

    if not 1 <= args.repeat <= 20 or (args.workers is not None and not 1 <= args.workers <= KB.MAX_WORKERS):
        ap.error(f"--repeat must be 1..20 and --workers 1..{KB.MAX_WORKERS}")
    n = args.workers if args.workers is not None else max(1, KB.workers())
    todo = {K: list(KB.available(KB.METHODS)) for K in KB.KS}
    steps, tau, opt = 1000, KB.TAU, KB.OPT
    lrs = [0.0101 + 0.0003 * i for i in range(args.repeat)]  # none of the page's (nothing stored, nothing reused)

    t0 = time.perf_counter()
    os.environ["PCD_KBENCH_WORKERS"] = str(n)
    for w in KB._pool(n):  # the workers started, their imports done (as after the server's warm-up)
        w.call(KB.KDW_CALL, Ks=[2], methods=["ws"], budgets=[1]).result()
    start_s = time.perf_counter() - t0
    rows: dict[str, list[float]] = {"this thread": [], f"+ {n} worker{'s' if n > 1 else ''}": []}
    same = True
    for i, lr in enumerate(lrs):
        out = {}
        for name in (list(rows) if i % 2 == 0 else list(rows)[::-1]):
            os.environ["PCD_KBENCH_WORKERS"] = "0" if name == "this thread" else str(n)
            got: dict = {}
            t = time.perf_counter()
            KB._run_ks(todo, steps, lr, tau, opt, got.__setitem__)
            rows[name].append(time.perf_counter() - t)
            out[name] = dict(sorted(got.items()))
        a, b = out.values()
        same &= a == b
    KB.shutdown_workers()
    print(f"default view (K = {', '.join(map(str, KB.KS))}; {', '.join(todo[2])}), {steps} steps, {opt}, "
          f"{args.repeat} learning rates; workers started in {start_s:.2f} s; cores {os.cpu_count()}")
    print("| computed on the click | median s | each s | load (1 min) |")
    print("|---|---|---|---|")
    for name, ts in rows.items():
        print(f"| {name} | {statistics.median(ts):.2f} | {', '.join(f'{t:.2f}' for t in ts)} | "
              f"{os.getloadavg()[0]:.2f} |")
    print(f"records equal: {same}")
    return 0 if same else 1


if __name__ == "__main__":
    raise SystemExit(main())
