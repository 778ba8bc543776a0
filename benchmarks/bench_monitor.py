"""Overhead of the training-geometry recorder (:mod:`pcd.monitor`) on a plain two-loss loop.

ResNet-18 (the pruning runs' model, ``pcd.train.models``) on CIFAR-shaped random batches, the loop
``(CE + w * GL).backward(); Adam.step()`` (GL = the filter group lasso via autograd), K = 2. Two
copies of the loop run side by side, in blocks of ``every`` steps interleaved (bare, monitored, bare,
...), so machine load hits both alike; the monitored copy calls ``Recorder.step([ce, gl])`` every
step, which records every ``every``-th step (an extra ``autograd.grad`` per objective, the Gram
matrix, and every method's weights). Printed: median process CPU time per block and the ratio
monitored / bare (issue 25's goal: <= 1.05 at every = 10), plus the cost of ``record_gram`` alone
(what a Gram-based pruning run pays: its Gram matrix is already computed) relative to a bare step.

    python benchmarks/bench_monitor.py --batch 32 --blocks 3 --threads 2
"""
from __future__ import annotations

import argparse
import json
import statistics
import tempfile
import time
from pathlib import Path

import torch
import torch.nn.functional as F

from pcd.monitor import Recorder
from pcd.train.models import build_model
from pcd.train.objectives import GroupLasso, build_groups


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--arch", default="resnet18")
    ap.add_argument("--batch", type=int, default=128)
    ap.add_argument("--every", type=int, default=10)
    ap.add_argument("--blocks", type=int, default=3, help="timed blocks of `every` steps per variant")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--json", default=None)
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    torch.manual_seed(0)
    x = torch.randn(args.batch, 3, 32, 32)
    y = torch.randint(0, 10, (args.batch,))
    tmp = Path(tempfile.mkdtemp())
    loops = {}
    for name in ("bare", "monitored", "from_grad"):
        torch.manual_seed(0)
        model = build_model(args.arch)
        gl = GroupLasso(build_groups(model, "filter"))
        rec = None if name == "bare" else Recorder(tmp / f"{name}.jsonl", model.parameters(), every=args.every)
        loops[name] = (model, torch.optim.Adam(model.parameters(), 1e-3), gl, rec)
    rec_s: dict[str, list[float]] = {"monitored": [], "from_grad": []}

    def block(name: str) -> float:
        model, opt, gl, rec = loops[name]
        c = time.process_time()
        for _ in range(args.every):
            ce = F.cross_entropy(model(x), y)
            g = gl.value()
            t = time.process_time()
            if rec is not None:
                rec.step([ce, g], weights=[1.0, 0.01] if name == "from_grad" else None)
            extra = time.process_time() - t
            opt.zero_grad(set_to_none=False)
            (ce + 0.01 * g).backward()
            t = time.process_time()
            if rec is not None:
                rec.after_backward()
                rec_s[name].append(extra + time.process_time() - t)
            opt.step()
        return time.process_time() - c

    for k in loops:  # warm-up (the monitored one records its first step here)
        block(k)
    for v in rec_s.values():
        v.clear()
    cpu: dict[str, list[float]] = {k: [] for k in loops}
    for _ in range(args.blocks):
        for k in loops:
            cpu[k].append(block(k))
    med = {k: statistics.median(v) for k, v in cpu.items()}
    rec = loops["monitored"][3]
    G = rec.path.read_text().splitlines()[-1]
    gram = json.loads(G)["gram"]
    t = time.process_time()
    n = 20
    for i in range(n):
        rec.record_gram(gram, [1.0, 1.0], step=10**6 + i)
    gram_only = (time.process_time() - t) / n
    bare_step = med["bare"] / args.every
    out = {"arch": args.arch, "batch": args.batch, "threads": args.threads, "every": args.every, "K": 2,
           "data": "CIFAR-shaped random batches", "median_block_cpu_s": med,
           "ratio_monitored_over_bare": med["monitored"] / med["bare"],
           "ratio_from_grad_over_bare": med["from_grad"] / med["bare"],
           "recorded_step_extra_cpu_s": {k: max(v) for k, v in rec_s.items()},
           "recorder_calls_over_bare": {k: sum(v) / args.blocks / med["bare"] for k, v in rec_s.items()},
           "bare_step_cpu_s": bare_step,
           "record_gram_cpu_s": gram_only,
           "pruning_run_overhead_at_every": gram_only / (args.every * bare_step), "blocks_cpu_s": cpu}
    print(json.dumps(out, indent=2))
    if args.json:
        Path(args.json).write_text(json.dumps(out, indent=2) + "\n")


if __name__ == "__main__":
    main()
