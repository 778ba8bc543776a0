"""Per-call cost of every registered method (microseconds per call), on random Gram matrices.

    python benchmarks/bench_methods.py [--repeat N] [--quick] [--methods uw,dwa,...]

Cases: B=3, K=2 (the toy engine: 3 starts); B=1000, K=2 (a dense grid of starts); B=1, K=16 and
B=1000, K=16 (many objectives). Stateful methods are called with their state carried along, as the
engine does; GradDrop gets J (n = K + 3 columns); FAMO gets positive losses.
"""
from __future__ import annotations

import argparse
import time

import numpy as np

import pcd.methods as methods

CASES = [(3, 2), (1000, 2), (1, 16), (1000, 16)]


def bench(name: str, B: int, K: int, repeat: int, rng: np.random.Generator, rounds: int = 5) -> float:
    """Best (lowest) mean time per call over ``rounds`` rounds of ``repeat`` calls, in microseconds
    (the machine is shared: the minimum is the least noisy estimate of the method's own cost)."""
    m = methods.make(name)
    J = rng.standard_normal((B, K, K + 3))
    G = J @ J.transpose(0, 2, 1)
    losses = rng.uniform(0.5, 2.0, (B, K))
    state = m.init_state(B, K)
    kw = dict(losses=losses, jacobian=J, rng=rng)
    out = m(G, state=state, **kw)  # warm-up (caches, first-call work)
    state = out.state
    best = float("inf")
    for _ in range(rounds):
        t0 = time.perf_counter()
        for _ in range(repeat):
            out = m(G, state=state, **kw)
            state = out.state
        best = min(best, (time.perf_counter() - t0) / repeat)
    return best * 1e6


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=200, help="calls per (method, case) for the small cases")
    ap.add_argument("--quick", action="store_true", help="skip the B=1000, K=16 case")
    ap.add_argument("--methods", default=None, help="comma-separated registry names (default: all)")
    args = ap.parse_args()
    rng = np.random.default_rng(0)
    cases = [c for c in CASES if not (args.quick and c == (1000, 16))]
    header = f"{'method':<12}" + "".join(f"{f'B={B},K={K}':>16}" for B, K in cases)
    print("microseconds per call")
    print(header)
    for name in methods.parse_names(args.methods) if args.methods else methods.available():
        row = f"{name:<12}"
        for B, K in cases:
            small = B * K <= 64
            rep = args.repeat if small else max(1, args.repeat // 100)
            row += f"{bench(name, B, K, rep, rng, rounds=5 if small else 2):>16.1f}"
        print(row, flush=True)


if __name__ == "__main__":
    main()
