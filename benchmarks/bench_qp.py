"""Median wall time of one exact PCD QP solve (``pcd.solve_qp``) at K = 16, 64, 256.

Problems: K gradients in R^(2K) with the secondaries pulled against the primary
(``g_j <- g_j - 0.3 g_1``) so that a large share of the constraints binds (the hard case for an
active-set method), tau = 0.2, plus a rank-deficient family that exercises the exact fallback.

    python benchmarks/bench_qp.py [--repeats 200]
"""
from __future__ import annotations

import argparse
import time

import numpy as np

from pcd import solve_qp


def problems(K: int, count: int, rank_deficient: bool = False):
    rng = np.random.default_rng(K)
    out = []
    for _ in range(count):
        if rank_deficient:
            r = max(2, K // 4)
            J = rng.standard_normal((K, r)) @ rng.standard_normal((r, 2 * K))
        else:
            J = rng.standard_normal((K, 2 * K))
        J[1:] -= 0.3 * J[0]
        out.append(J @ J.T)
    return out


def median_ms(grams, tau: float, repeats: int) -> tuple[float, float]:
    times, active = [], []
    for i in range(repeats):
        G = grams[i % len(grams)]
        t0 = time.perf_counter()
        res = solve_qp(G, tau)
        times.append(time.perf_counter() - t0)
        active.append(len(res.active))
    return 1e3 * float(np.median(times)), float(np.mean(active))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeats", type=int, default=200)
    args = ap.parse_args()
    goals = {16: 0.2, 64: 1.0, 256: 5.0}
    print(f"{'K':>5} {'family':>15} {'median ms':>10} {'goal ms':>8} {'mean #active':>13}")
    for K, goal in goals.items():
        for fam, rd in (("full rank", False), ("rank deficient", True)):
            reps = args.repeats if K < 256 else max(20, args.repeats // 4)
            ms, act = median_ms(problems(K, 10, rd), 0.0 if rd else 0.2, reps)
            print(f"{K:>5} {fam:>15} {ms:>10.3f} {goal:>8.1f} {act:>13.1f}")


if __name__ == "__main__":
    main()
