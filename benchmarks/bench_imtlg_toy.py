"""IMTL-G's K = 2 small-batch path when some rows are not ``ok`` (ill-conditioned or singular Gram):
those rows only to the pseudo-inverse (now) vs the whole batch (before), side by side in one process.

    python benchmarks/bench_imtlg_toy.py [--reps 7]

1. The method call (``IMTLG.update``) on B = 1, 3, 9, 16 Gram matrices with one singular row (an exact
   cancellation), best of ``reps`` x 2000 calls. ``np.linalg.pinv`` costs ~15-25 us per call whatever the
   rows (one SVD gufunc call + NumPy overhead; ~1.5 us more per 2x2 row), so sending only the bad
   row pays from B ~ 4 on; below that the masks cost ~1 us more than they save.
2. The toy engine (saddle2d, Adam, 3000 steps) with its 3 default starts (one sits on the axis where
   the gradients cancel: a singular Gram at every step) and with 16 starts (the largest small
   batch). Now every start's trajectory is the one it has when run alone (checked here, bit for bit);
   before, the other starts of a mixed batch took the pseudo-inverse's bits (1e-16 apart), which a
   start near the saddle can amplify into another valley, so the 16-start end points differ.
The load average is printed beside the figures (a shared 2-core machine).
"""
from __future__ import annotations

import os
import statistics
import sys
import time
import timeit
from pathlib import Path
from unittest import mock

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))


def main() -> None:
    import numpy as np

    from pcd.engine import run
    from pcd.methods import imtlg
    from pcd.problems import make

    reps = int(sys.argv[sys.argv.index("--reps") + 1]) if "--reps" in sys.argv else 7

    def before(G):  # the former rule: one row not ok -> the whole batch to the pseudo-inverse
        w = imtlg._imtlg_k2_inverse(G)
        return imtlg._imtlg(G) if w is None else w

    def patched(old: bool):
        return mock.patch.object(imtlg, "_imtlg_k2", before if old else imtlg._imtlg_k2)

    m = imtlg.IMTLG()
    rng = np.random.default_rng(0)
    sing = np.array([[[1.0, -1.0], [-1.0, 1.0]]])
    print(f"1. IMTLG.update, one singular row (load average {os.getloadavg()[0]:.2f} on {os.cpu_count()} cores):")
    for B in (1, 3, 9, 16):
        J = rng.standard_normal((B - 1, 2, 3))
        G = np.concatenate([J @ J.transpose(0, 2, 1), sing])
        us = {}
        for name in ("before", "now"):
            with patched(name == "before"):
                m.update(G, None)
                us[name] = min(timeit.repeat(lambda G=G: m.update(G, None), number=2000, repeat=reps)) / 2000 * 1e6
        print(f"   B = {B:2d}: before {us['before']:5.1f} us, now {us['now']:5.1f} us, "
              f"speed-up {us['before'] / us['now']:.2f}x")

    prob = make("saddle2d")
    default = prob.default_starts()
    lo, hi = (np.array([b[i] for b in prob.bounds]) for i in (0, 1))
    sixteen = np.concatenate([default, lo + (hi - lo) * rng.random((16 - len(default), 2))])
    print("2. toy engine, IMTL-G, saddle2d, Adam, 3000 steps:")
    for starts in (default, sixteen):
        times: dict[str, list[float]] = {"before": [], "now": []}
        ends = {}
        for _ in range(max(3, reps // 2)):
            for name in ("before", "now"):
                with patched(name == "before"):
                    t = time.perf_counter()
                    res = run("saddle2d", ["imtlg"], starts=starts, steps=3000, record=200)
                    times[name].append(time.perf_counter() - t)
                    ends[name] = res.end[0]
        alone = np.concatenate([run("saddle2d", ["imtlg"], starts=s[None], steps=3000, record=200).end[0]
                                for s in starts])
        b, n = statistics.median(times["before"]), statistics.median(times["now"])
        print(f"   {len(starts):2d} starts: before {b:.3f} s, now {n:.3f} s (medians), speed-up {b / n:.2f}x, load average "
              f"{os.getloadavg()[0]:.2f}; now == each start alone: {bool(np.array_equal(ends['now'], alone))}; "
              f"before == now: {bool(np.array_equal(ends['before'], ends['now']))} "
              f"(max |difference| {float(np.abs(ends['before'] - ends['now']).max()):.3g})")


if __name__ == "__main__":
    main()
