"""Measure which methods follow the 1.536·√(K−1) law on the K-objective double well, with the
K-objective page's default settings (``pcd.studio.kbench``: Adam, 800 steps, lr 0.03, K = 2…65),
and write the table the page shows (``pcd/experiments/kdw_law.json``).

    python benchmarks/kdw_law.py                       # the 13 methods of issue 27 (~6 min, 1 core)
    python benchmarks/kdw_law.py --methods all         # every registered method
    python benchmarks/kdw_law.py --methods uw,dwa --out /tmp/t.json
"""
from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

NEW = "uw,dwa,gls,stch,config,fairgrad,gradvac,excessmtl,crmogm,modo,sdmgrad,krum,trimmedmean"


def main(argv: list[str] | None = None) -> int:
    import pcd.methods as registry
    from pcd.experiments import kdw_law
    from pcd.studio import kbench as W

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--methods", default=NEW, help="comma-separated names, or 'all' (default: issue 27's 13)")
    ap.add_argument("--out", default=str(kdw_law.TABLE), help="JSON file to write (default: the page's table)")
    args = ap.parse_args(argv)
    methods = registry.available() if args.methods == "all" else args.methods
    t = time.perf_counter()
    data = kdw_law.measure(methods, W.KS, W.STEPS, W.LR, W.OPT, W.TAU)
    cmd = kdw_law.COMMAND + ("" if args.methods == NEW else f" --methods {args.methods}")
    out = {"command": cmd, "settings": data["settings"], "records": data["records"]}
    Path(args.out).write_text(json.dumps(out, indent=1) + "\n", encoding="utf-8")
    for v in data["verdicts"]:
        print(f"{v['method']:12s} ratio {v['ratio_min']:.3g} … {v['ratio_max']:.3g}  {v['verdict']}")
    print(f"{len(data['records'])} runs in {time.perf_counter() - t:.0f} s -> {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
