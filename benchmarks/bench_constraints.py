"""Wall time of the constrained (Cooper) training loop vs the fixed-penalty loop (seed 003).

The paper reports +5.2 % (rate-constrained classifier) and +1.6 % (L0 sparsity) on real training.
Cooper's extra work per step is fixed (a second Lagrangian, the dual backward and step, the
true-rate count), so the relative overhead depends on how expensive the step itself is:

1. the page's rate experiment (logistic model, 3 parameters): :func:`pcd.experiments.constraints.rate_cost`;
2. the same data and rate constraint with an MLP of growing width (2 -> H -> H -> 1), where the
   forward/backward pass takes a growing share of each step.

Both loops use the same model, data (400 points), primal SGD, surrogate and step count; runs are
interleaved and the median over repeats is reported.

    python benchmarks/bench_constraints.py [--steps 300] [--repeats 5] [--hidden 64 512]
"""
from __future__ import annotations

import argparse
import time

import numpy as np
import torch

from pcd.experiments import constraints as C


def _mlp(hidden: int, seed: int = 0) -> torch.nn.Module:
    torch.manual_seed(seed)
    return torch.nn.Sequential(torch.nn.Linear(2, hidden), torch.nn.ReLU(), torch.nn.Linear(hidden, hidden),
                               torch.nn.ReLU(), torch.nn.Linear(hidden, 1))


def mlp_loops(hidden: int, steps: int, target: float = 0.7, c: float = 2.0, eta: float = 0.1,
              lr: float = 0.05) -> tuple[float, float]:
    """Seconds for ``steps`` steps of the penalty loop and of Cooper's constrained loop (one MLP each)."""
    import cooper

    data = C.make_blobs()
    X = torch.as_tensor(data.X, dtype=torch.float32)
    Y = torch.as_tensor(data.y, dtype=torch.float32)

    model = _mlp(hidden)
    opt = torch.optim.SGD(model.parameters(), lr=lr)
    t0 = time.perf_counter()
    for _ in range(steps):
        opt.zero_grad(set_to_none=True)
        z = model(X).squeeze(-1)
        loss = torch.nn.functional.binary_cross_entropy_with_logits(z, Y) + c * (target - torch.sigmoid(-z).mean())
        loss.backward()
        opt.step()
    t_pen = time.perf_counter() - t0

    model = _mlp(hidden)

    class Rate(cooper.ConstrainedMinimizationProblem):
        def __init__(self) -> None:
            super().__init__()
            self.rate = cooper.Constraint(cooper.ConstraintType.INEQUALITY,
                                          multiplier=cooper.multipliers.DenseMultiplier(num_constraints=1))

        def compute_cmp_state(self) -> cooper.CMPState:
            z = model(X).squeeze(-1)
            state = cooper.ConstraintState(violation=(target - torch.sigmoid(-z).mean()).reshape(1),
                                           strict_violation=(target - (z.detach() < 0).float().mean()).reshape(1))
            return cooper.CMPState(loss=torch.nn.functional.binary_cross_entropy_with_logits(z, Y),
                                   observed_constraints={self.rate: state})

    cmp = Rate()
    copt = cooper.optim.AlternatingDualPrimalOptimizer(
        cmp, torch.optim.SGD(model.parameters(), lr=lr),
        torch.optim.SGD(cmp.dual_parameters(), lr=eta, maximize=True))
    t0 = time.perf_counter()
    for _ in range(steps):
        copt.roll()
    return t_pen, time.perf_counter() - t0


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--steps", type=int, default=300)
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--hidden", type=int, nargs="*", default=[64, 512])
    args = ap.parse_args()
    torch.set_num_threads(1)

    out = C.rate_cost(steps=args.steps, repeats=args.repeats)
    print(f"{'model':>22} {'penalty s':>10} {'constrained s':>14} {'overhead':>9}")
    print(f"{'logistic (3 params)':>22} {out['penalty_median_s']:>10.3f} {out['constrained_median_s']:>14.3f} "
          f"{out['overhead_pct']:>+8.1f}%")
    for h in args.hidden:
        pen, con = [], []
        for _ in range(args.repeats):
            p, c = mlp_loops(h, args.steps)
            pen.append(p)
            con.append(c)
        mp, mc = float(np.median(pen)), float(np.median(con))
        n = sum(p.numel() for p in _mlp(h).parameters())
        print(f"{f'MLP H={h} ({n} params)':>22} {mp:>10.3f} {mc:>14.3f} {100 * (mc - mp) / mp:>+8.1f}%")
    print(f"paper: +{C.PAPER_OVERHEAD_PCT['rate']} % (rate), +{C.PAPER_OVERHEAD_PCT['sparsity']} % (sparsity)")


if __name__ == "__main__":
    main()
