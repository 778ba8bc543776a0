"""Animation export speed: the Toy landscapes page's default animation (saddle2d, 6 methods x 3 starts,
1000 steps; the map with the objective-space panel beside it and the gradient inset of S1 under it) and the τ dial's budget curves
(quadratic, 11 τ, budgets 100/300/1000), 100 frames, as GIF (Pillow) and MP4 (PyAV, H.264 yuv420p) at
both slide sizes (pcd.viz.export).

Goal (issue 28): a 100-frame 1280 x 720 export in <= 20 s on the 2-core dev machine, file <= 10 MB.
Prints, per view x size x format: seconds per frame for drawing alone, the whole export (draw +
encode; MP4 encodes frame by frame as they are drawn), the total and the file size; the load
average (``uptime``) before and after.

    python benchmarks/bench_export.py [--views toy,tau] [--sizes 1280x720,1920x1080] [--formats gif,mp4]
                                      [--frames 100] [--repeat 2] [--out DIR]

The fastest of ``--repeat`` runs is reported (the machine is shared).
"""
from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import numpy as np

from pcd.experiments.animation import tau_budget_run
from pcd.experiments.synthetic import toy_run
from pcd.experiments.toy import objective_space, trajectory_gradients
from pcd.viz import toy as toy_map
from pcd.viz.export import SLIDE_SIZES, encode, mp4_missing, tau_frames, tau_palette, toy_frames, toy_palette

METHODS = "pcd,ws,mgda,pcgrad,cagrad,famo"
TAUS = (0.0, 0.005, 0.01, 0.02, 0.05, 0.1, 0.2, 0.3, 0.5, 0.7, 1.0)
BUDGETS = (100, 300, 1000)


def _uptime() -> str:
    try:
        return subprocess.run(["uptime"], capture_output=True, text=True, timeout=5).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return "load average: " + ", ".join(f"{v:.2f}" for v in os.getloadavg())


def _views(frames: int) -> dict:
    """view -> (frames(size) generator factory, GIF palette): the data computed once, outside the timing."""
    import pcd.problems as problems

    out = {}
    prob = problems.make("saddle2d")
    res = toy_run("saddle2d", METHODS, 1000, 0.02, "adam", 0.02, None, seed=0, record=200)
    bg = toy_map.toy_background(prob, toy_map.fit_bounds(res, prob.bounds))
    space = objective_space(prob, res, bg["grid"])
    grads = trajectory_gradients(prob, res, 0)  # the page's default inset: S1
    toy_settings = {"problem": "saddle2d", "methods": res.methods, "tau": 0.02, "optimizer": "adam", "lr": 0.02,
                    "steps": 1000}
    out["toy"] = (lambda size: toy_frames(res, bg, size=size, settings=toy_settings, max_frames=frames, space=space,
                                          grads=grads), toy_palette(list(res.methods)))
    tres = tau_budget_run("quadratic", TAUS, BUDGETS, 0.02, frames=frames)
    front = np.asarray(problems.named("quadratic").pareto_front(200))
    tau_settings = {"problem": "quadratic", "method": "pcd", "τ": list(TAUS), "optimizer": "adam", "lr": 0.02,
                    "steps": list(BUDGETS)}
    out["tau"] = (lambda size: tau_frames(tres, TAUS, BUDGETS, front=front, size=size, settings=tau_settings,
                                          max_frames=frames), tau_palette(TAUS))
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--views", default="toy,tau")
    ap.add_argument("--sizes", default=",".join(SLIDE_SIZES))
    ap.add_argument("--formats", default="gif,mp4")
    ap.add_argument("--frames", type=int, default=100)
    ap.add_argument("--repeat", type=int, default=2)
    ap.add_argument("--out", default=None, help="keep the files in this folder")
    args = ap.parse_args()
    formats = [f for f in args.formats.split(",") if f]
    if "mp4" in formats and mp4_missing():
        print(f"skipping MP4: {mp4_missing()}")
        formats.remove("mp4")
    if args.out:
        Path(args.out).mkdir(parents=True, exist_ok=True)
    print(f"before: {_uptime()}; {os.cpu_count()} CPUs")
    views = _views(args.frames)
    rows = []
    for view in args.views.split(","):
        make, keep = views[view]
        for size_name in args.sizes.split(","):
            size = SLIDE_SIZES[size_name]
            t0 = time.perf_counter()  # drawing alone
            n = sum(1 for _ in make(size))
            draw = time.perf_counter() - t0
            for fmt in formats:
                best = None
                for _ in range(max(1, args.repeat)):
                    target = Path(args.out) / f"{view}_{size_name}.{fmt}" if args.out else None
                    t0 = time.perf_counter()
                    data = encode(make(size), fmt, target, keep=keep)
                    took = time.perf_counter() - t0
                    best = (took, len(data)) if best is None or took < best[0] else best
                total, nbytes = best  # type: ignore[misc]
                rows.append((view, size_name, fmt, n, draw / n, total / n, total, nbytes / 1e6))
                print(f"{view:4s} {size_name:9s} {fmt:4s} {n} frames: draw {1000 * draw / n:6.1f} ms/frame, "
                      f"export {total / n:.3f} s/frame, total {total:5.2f} s, file {nbytes / 1e6:5.2f} MB "
                      f"(goal <= 20 s, <= 10 MB at 1280x720)", flush=True)
    print(f"after:  {_uptime()}")
    print("\n| view | size | format | frames | draw s/frame | export s/frame | total s | MB |")
    print("|---|---|---|---|---|---|---|---|")
    for v, s, f, n, d, e, t, mb in rows:
        print(f"| {v} | {s} | {f} | {n} | {d:.3f} | {e:.3f} | {t:.2f} | {mb:.2f} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
