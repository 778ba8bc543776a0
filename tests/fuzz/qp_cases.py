"""Extreme-scale invariance of ``solve_qp``: the answer for ``c G`` equals the one for ``G``.

:func:`sweep` draws Gram matrices for K = 3..64 (random, anti-parallel secondaries, nearly
parallel) and compares ``solve_qp(c G)`` with ``solve_qp(G)`` for ``c`` from 1e-300 to 1e300;
returns ``(tried, failures)``.
"""
from __future__ import annotations

import numpy as np

from pcd.qp import solve_qp

SCALES = (1e-300, 1e-250, 1e-200, 1e-160, 1e-100, 1e100, 1e154, 1e200, 1e250, 1e300)
KS = (3, 4, 5, 8, 16, 32, 64)


def grams(K: int, rng: np.random.Generator) -> list[np.ndarray]:
    out = []
    for kind in range(3):
        J = rng.standard_normal((K, K + 3))
        if kind == 1:
            J[2] = -J[1]  # anti-parallel secondaries: infeasible for tau > 0
        elif kind == 2:
            J[1:] -= 0.9 * J[0]  # secondaries conflicting with the primary
        out.append(J @ J.T)
    return out


def sweep(Ks=KS, tau: float = 0.1, seed: int = 0) -> tuple[int, list[str]]:
    rng = np.random.default_rng(seed)
    tried, failures = 0, []
    for K in Ks:
        for i, G in enumerate(grams(K, rng)):
            ref = solve_qp(G, tau)
            for c in SCALES:
                tried += 1
                try:
                    with np.errstate(all="ignore"):
                        r = solve_qp(G * c, tau)
                except ValueError as exc:
                    failures.append(f"K={K} #{i} c={c:g}: ValueError {exc}")
                    continue
                if not np.isfinite(r.weights).all():
                    failures.append(f"K={K} #{i} c={c:g}: non-finite weights")
                elif bool(r.feasible) != bool(ref.feasible) or not np.allclose(r.weights, ref.weights,
                                                                                 rtol=1e-6, atol=1e-8):
                    failures.append(f"K={K} #{i} c={c:g}: {np.round(r.weights[:3], 4)} feasible={r.feasible} "
                                    f"instead of {np.round(ref.weights[:3], 4)} feasible={ref.feasible}")
    return tried, failures
