"""Per-call cost of PCD's core (microseconds) at B = 1, 3, 1024 and K = 2, 3, 16.

Columns: ``pcd_weights(..., trusted=True)`` (the method's hot path), ``pcd_weights`` with its input
checks, the registry method call ``methods.make("pcd")(G, state=...)`` and ``solve_qp`` on the
normalized Gram matrix. Each figure is the minimum over 300 rounds of 10-50 calls (B=1024, K=16:
7 rounds of one call): on a shared machine the minimum is the least noisy estimate.

    PYTHONPATH=. python benchmarks/bench_pcd.py
"""
import sys
import timeit
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import numpy as np

import pcd.methods as methods
from pcd.direction import pcd_weights
from pcd.qp import solve_qp

rng = np.random.default_rng(0)
print(f"{'case':<13}{'pcd_w trusted':>14}{'pcd_w':>10}{'method':>10}{'solve_qp':>10}")
for K in (2, 3, 16):
    for B in (1, 3, 1024):
        J = rng.standard_normal((B, K, K + 3))
        G = J @ J.transpose(0, 2, 1)
        s = 1 / np.sqrt(np.diagonal(G, axis1=1, axis2=2)) * rng.uniform(0.8, 1.2, (B, K))
        Gn = G * s[:, :, None] * s[:, None, :]
        tau = np.full(K - 1, 0.3)
        m = methods.make("pcd", tau=0.3)
        st = m.init_state(B, K)
        ns = dict(pcd_weights=pcd_weights, solve_qp=solve_qp, G=G, s=s, tau=tau, m=m, st=st, Gn=Gn)
        out = []
        for stmt in ["pcd_weights(G, s, tau, trusted=True)", "pcd_weights(G, s, 0.3)", "m(G, state=st)", "solve_qp(Gn, 0.3)"]:
            if B == 1024 and K == 16:
                n, r = 1, 7
            else:
                n, r = (10 if B * K > 100 else 50), (300 if K < 16 else 60)
            out.append(min(timeit.repeat(stmt, globals=ns, number=n, repeat=r)) / n * 1e6)
        print(f"{f'B={B},K={K}':<13}" + "".join(f"{x:>{w}.1f}" for x, w in zip(out, (14, 10, 10, 10))), flush=True)
