"""Python time per redraw while a start point is dragged on the toy map (issue 28 part 4), at the page's
default: saddle2d, PCD/WS/MGDA/PCGrad/CAGrad/FAMO, Adam lr 0.02, 1000 steps, 3 starts.

    python benchmarks/bench_drag.py [--repeat 15]

Side by side, each at a NEW start point every repetition (nothing served from a cache):

* live path -- what the toy page's live fragment computes per drag event (pcd.studio.toy.live_answer:
  validation + ONE pcd.engine.run_paths call for the moved start, all methods, the compiled path -- each
  method's whole trajectory in one compiled call (pcd._kernels.trajectory; FAMO's a Python loop) +
  the JSON for the browser), side by side: the map's paths alone, and with the objective-space panel's
  points (the losses recorded in the same engine call, placed on the panel's log axes, float32: the
  answer the page sends); the answer's JSON size beside each; also the same paths with the NumPy loop
  (engine.run, one call), and one run per method (what the page's cached runs do), and the live path
  with the methods in the thread pool (what run_ends did at any batch before
  ``pcd._fastpath.POOL_MIN_ROWS``), and with a Python loop over the compiled steps (what it did before
  ``pcd._fastpath.TRAJECTORY_MAX_ROWS``, measured interleaved with the live path);
* full rerun -- the whole toy page run once (AppTest, the same script the server runs) with the moved
  start typed in: six new cached runs, the map, the loss and objective-space figures, the table.

Medians in ms, with os.getloadavg() beside (the machine is shared: compare within one run).
The browser's side (round trip, drawing) is measured by tests/pages/test_browser_drag.py.
"""
from __future__ import annotations

import json
import logging
import os
import statistics
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def _median_ms(fn, repeat: int) -> float:
    ts = []
    for i in range(repeat):
        t = time.perf_counter()
        fn(i)
        ts.append(time.perf_counter() - t)
    return 1000 * statistics.median(ts)


def main() -> None:
    logging.getLogger("streamlit").setLevel(logging.ERROR)  # "no runtime found": st caches run bare here
    os.environ.setdefault("PCD_NO_WARMUP", "1")
    os.environ.setdefault("PCD_NO_AUTOSTART", "1")
    repeat = int(sys.argv[sys.argv.index("--repeat") + 1]) if "--repeat" in sys.argv else 15
    from pcd.engine import run
    from pcd.studio import toy as T

    problem = T.make_problem(T.PROBLEM)
    methods = T.available(T.METHODS)
    starts = problem.default_starts()
    view = ((-3.5, 3.5), (-2.0, 2.0))
    rng = np.random.default_rng(0)
    pts = rng.uniform([-3.0, -1.5], [0.0, 1.5], size=(repeat + 1, 2))
    mp = {"pcd": {"tau": T.TAU}}

    # the panel's axes as the page draws them (its figure's layout.meta: log axes, shifts, floor)
    from pcd.experiments.toy import objective_space
    from pcd.viz.objective import objective_space_figure

    page_run = run(problem, methods, starts=starts, steps=T.STEPS, optimizer=T.OPT, lr=T.LR, method_params=mp,
                   record=T.LIVE_RECORD)
    objective = dict(objective_space_figure(objective_space(problem, page_run), log=T.OBJ_LOG, animate=False).layout.meta)
    size: dict[str, int] = {}

    def answer(i: int, obj: dict | None, name: str) -> None:
        req = {"kind": "start", "seq": i, "s": 0, "x": float(pts[i, 0]), "y": float(pts[i, 1]), "tau": T.TAU, "lr": T.LR}
        size[name] = len(json.dumps(T.live_answer(req, problem, methods, {}, T.OPT, T.STEPS, starts, view, obj)))

    def live(i: int) -> None:
        answer(i, None, "map")

    def live_obj(i: int) -> None:
        answer(i, objective, "obj")

    def numpy_one_call(i: int) -> None:
        run(problem, methods, starts=pts[i:i + 1], steps=T.STEPS, optimizer=T.OPT, lr=T.LR, method_params=mp,
            record=T.LIVE_RECORD)

    def pooled(i: int) -> None:  # what run_ends did before POOL_MIN_ROWS: one thread per core at any batch
        from unittest import mock

        import pcd._fastpath as fastpath
        with mock.patch.object(fastpath, "POOL_MIN_ROWS", 1):
            live(i)

    def per_method(i: int) -> None:
        for m in methods:
            run(problem, [m], starts=pts[i:i + 1], steps=T.STEPS, optimizer=T.OPT, lr=T.LR,
                method_params={m: mp[m]} if m in mp else None, record=T.LIVE_RECORD)

    def stepwise(i: int) -> None:  # before the whole trajectory ran in one compiled call: a Python loop of kernels
        from unittest import mock

        import pcd._fastpath as fastpath
        with mock.patch.object(fastpath, "TRAJECTORY_MAX_ROWS", 0):
            live(i)

    live(repeat)  # the first call compiles/loads the kernels
    live_obj(repeat)
    # interleaved (rotating which goes first), so all see the same load; a new start point each time
    t_map, t_obj, t_step = [], [], []

    def once(fn, i: int) -> float:
        t = time.perf_counter()
        fn(i)
        return 1000 * (time.perf_counter() - t)

    for i in range(repeat):
        rows = [(live, t_map), (live_obj, t_obj), (stepwise, t_step)]
        for fn, ts in rows[i % 3:] + rows[:i % 3]:
            ts.append(once(fn, i))
    out = {f"live path: live_answer, map paths only, one run_paths call (compiled) + JSON ({size['map'] / 1e3:.0f} kB)":
           statistics.median(t_map),
           f"live path: the same + the objective panel's points (losses, same call) ({size['obj'] / 1e3:.0f} kB)":
           statistics.median(t_obj),
           "  live path, map paths only, a Python loop over the compiled steps (before the one-call trajectory)":
           statistics.median(t_step),
           "  the same paths, engine.run NumPy loop, one call": _median_ms(numpy_one_call, repeat),
           "  the same paths, engine.run one call per method": _median_ms(per_method, max(3, repeat // 3)),
           "  live path, map paths only, the methods in the thread pool (the former path)": _median_ms(pooled, repeat)}
    load_live = os.getloadavg()

    from streamlit.testing.v1 import AppTest

    page = str(ROOT / "pages" / "02_Toy_landscapes.py")

    def full(i: int) -> None:
        at = AppTest.from_file(page, default_timeout=300)
        at.query_params.update({"starts": "typed", "typed": f"{pts[i, 0]:.3f}, {pts[i, 1]:.3f}\n-1.0, 1.5\n-1.65, -0.55"})
        at.run()
        if at.exception:
            raise RuntimeError(at.exception[0].value)

    full(repeat)  # imports, the background image (cached per view box)
    n_full = max(3, repeat // 3)
    out["full rerun: the toy page run with the moved start typed in (AppTest)"] = _median_ms(full, n_full)
    print(f"toy page default: {len(methods)} methods x {T.STEPS} steps, {len(starts)} starts; "
          f"median of {repeat} (full rerun: {n_full})")
    for k, v in out.items():
        print(f"{v:8.1f} ms  {k}")
    print(f"load avg during the live part {load_live[0]:.2f}, at the end {os.getloadavg()[0]:.2f} (2 cores)")


if __name__ == "__main__":
    main()
