"""Engine speed: every registered method x 3 starts x 3000 steps on saddle2d (Adam, lr 0.01).

Goal (issue 3): < 1.0 s total on the 2-core dev machine (Nash-MTL may be the exception); the
reference per-step PyTorch loop takes ~2.4 s for ONE trajectory. Prints one line per method
(seconds in that method's batched weight calls) plus the engine's own overhead and the total.

    python benchmarks/bench_engine.py [--steps 3000] [--repeat 3] [--methods pcd,ws,...] [--json FILE]

Each configuration is run ``--repeat`` times and the fastest is reported (the machine is shared:
per-method figures are wall-clock; the CPU time of the whole run is printed too, as it is less
sensitive to other processes' load).
"""
from __future__ import annotations

import argparse
import json
import platform
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import numpy as np

import pcd.methods as registry
from pcd.engine import run


def bench(methods: list[str], steps: int, repeat: int) -> dict:
    best: dict | None = None
    for _ in range(repeat):
        t0, c0 = time.perf_counter(), time.process_time()
        res = run("saddle2d", methods, steps=steps, optimizer="adam", lr=0.01,
                  method_params={"pcd": {"tau": 0.3}} if "pcd" in methods else None, record=200)
        total = time.perf_counter() - t0
        cpu = time.process_time() - c0
        if best is None or total < best["total_s"]:
            per = dict(res.method_seconds)
            best = {"total_s": total, "cpu_s": cpu, "per_method_s": per,
                    "engine_overhead_s": total - sum(per.values()), "errors": res.errors}
    return best


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--steps", type=int, default=3000)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--methods", default=",".join(registry.available()))
    ap.add_argument("--json", default=None)
    a = ap.parse_args(argv)
    methods = [m.strip() for m in a.methods.split(",") if m.strip()]
    all_ = bench(methods, a.steps, a.repeat)
    print(f"saddle2d, {len(methods)} methods x 3 starts x {a.steps} steps (Adam), best of {a.repeat}")
    for m in methods:
        print(f"  {m:12s} {all_['per_method_s'][m]:7.3f} s  ({1e6 * all_['per_method_s'][m] / (a.steps + 1):6.1f} us/call)")
    print(f"  {'engine':12s} {all_['engine_overhead_s']:7.3f} s  (problem, Gram, d = w @ J, Adam, recording)")
    print(f"  {'TOTAL':12s} {all_['total_s']:7.3f} s wall, {all_['cpu_s']:.3f} s CPU (this process)   "
          f"goal < 1.0 s -> {'met' if all_['total_s'] < 1.0 else 'NOT met'}")
    no_nash = sum(v for k, v in all_["per_method_s"].items() if k != "nashmtl") + all_["engine_overhead_s"]
    print(f"  {'without nashmtl':12s} {no_nash:7.3f} s")
    if all_["errors"]:
        print(f"  errors: {all_['errors']}")
    if a.json:
        Path(a.json).write_text(json.dumps({"steps": a.steps, "methods": methods, **all_,
                                            "python": platform.python_version(), "numpy": np.__version__}, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
