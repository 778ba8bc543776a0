"""Correctness under stress: many random draws of the hard cases for Gram arithmetic, each answer checked.

    python benchmarks/stress_qp.py [--draws 20000] [--seed 1] [--kmin 2] [--kmax 8] [--nmax 6]

Draws Jacobians ``J [K, n]`` like the property tests do (entries in [-10, 10] rounded to 2 decimals,
sparse integer rows, rank-deficient products, a last row that repeats or nearly opposes the second)
and ``tau`` in {0, 1, uniform}, then checks every :func:`pcd.qp.solve_qp` answer:

* feasible: the KKT conditions hold to 1e-7 of the largest ||g||^2 times max(1, |w|) (the property
  test's tolerance);
* infeasible: never with tau = 0 (d = 0 is feasible); an exact Farkas certificate (an LP on J), or
  the constraints are compatible only for directions at least 1e4 x longer than the largest gradient
  (``min ||J^T mu|| / ||g||max <= 1e-4`` over ``mu >= 0, b . mu = 1``: "numerically incompatible").

The oracles are the property tests' own (``tests/test_qp.py``: ``kkt_violation``, ``incompatible``,
``farkas_distance``), so this script and the tests check the same thing.

and :func:`pcd.qp.project` (UPGrad / DualProj's step) against scipy's NNLS on J itself. Prints the
number of failures per check and the largest Farkas distance among the flagged draws. Session 21
(issue 11's QP note): 308 of 20 000 draws failed before the fix, 0 after (K = 2..8); 0 of 15 000 at
K = 8..16.
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import numpy as np
from scipy.optimize import nnls

from pcd.qp import project, solve_qp
from tests.test_qp import farkas_distance, incompatible, kkt_violation  # the property tests' oracles


def draw(rng: np.random.Generator, kmin: int, kmax: int, nmax: int) -> tuple[np.ndarray, float]:
    K, n = int(rng.integers(kmin, kmax + 1)), int(rng.integers(1, nmax + 1))
    kind = int(rng.integers(0, 4))
    if kind == 0:
        J = np.round(rng.uniform(-10, 10, (K, n)), 2)
    elif kind == 1:  # sparse small integers (what the property tests shrink to)
        J = rng.integers(-7, 8, (K, n)).astype(float) * (rng.random((K, n)) < 0.4)
    elif kind == 2:  # rank-deficient
        r = int(rng.integers(1, max(2, n)))
        J = np.round(rng.standard_normal((K, r)) @ rng.standard_normal((r, n)), 2)
    else:  # the last secondary repeats, doubles or nearly opposes the second row
        J = np.round(rng.uniform(-10, 10, (K, n)), 2)
        if K > 2:
            J[-1] = J[1] * rng.choice([1.0, -1.0, 2.0]) + rng.choice([0.0, 0.01], size=n)
    tau = float(rng.choice([0.0, 1.0, float(rng.random())]))
    return J, tau


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--draws", type=int, default=20000)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--kmin", type=int, default=2)
    ap.add_argument("--kmax", type=int, default=8)
    ap.add_argument("--nmax", type=int, default=6)
    a = ap.parse_args(argv)
    rng = np.random.default_rng(a.seed)
    fails = {"feasible but KKT violated": 0, "infeasible with tau = 0": 0, "infeasible without certificate": 0,
             "project() off NNLS": 0}
    flagged, worst = 0, 0.0
    for _ in range(a.draws):
        J, tau = draw(rng, a.kmin, a.kmax, a.nmax)
        G = J @ J.T
        res = solve_qp(G, tau)
        if res.feasible:
            scale = max(1.0, float(np.sqrt(np.diag(G)).max())) ** 2 * max(1.0, float(np.abs(res.weights).max()))
            fails["feasible but KKT violated"] += kkt_violation(G, res.weights, tau) > 1e-7 * scale
        elif tau == 0:
            fails["infeasible with tau = 0"] += 1
        else:
            dist = farkas_distance(J, tau)
            flagged += dist > 0
            worst = max(worst, dist if np.isfinite(dist) else worst)
            fails["infeasible without certificate"] += not incompatible(J, tau)
        i = int(rng.integers(0, J.shape[0]))
        w, ok = project(G, np.eye(J.shape[0])[i])
        mu, _ = nnls(J.T, -J[i])
        off = np.linalg.norm(w @ J - (J[i] + J.T @ mu)) > 1e-6 * max(1.0, float(np.linalg.norm(J[i])))
        fails["project() off NNLS"] += (not ok) or bool(off)
    print(f"{a.draws} draws, K = {a.kmin}..{a.kmax}, n <= {a.nmax}, seed {a.seed}")
    for k, v in fails.items():
        print(f"  {k:32s} {v}")
    print(f"  flagged numerically incompatible {flagged} (largest Farkas distance {worst:.2g}, allowed 1e-4)")
    return 1 if any(fails.values()) else 0


if __name__ == "__main__":
    raise SystemExit(main())
