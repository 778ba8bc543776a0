"""Constraints vs fixed penalties (seed 003: "Position: Adopt Constraints Over Fixed Penalties in
Deep Learning", arXiv 2505.20628), with PCD on the same problems.

Three ways of treating a requirement ``g(x) <= 0`` next to an objective ``f``:

* **fixed penalty** (weighted sum): minimize ``P_c(x) = f(x) + c g(x)`` for a fixed ``c >= 0``
  (paper, Sec. 2: ``P(x) = f(x) + c_g^T g(x)``). ``c`` redefines the problem being solved.
* **Lagrangian** (primal-dual): ``min_x max_{lambda >= 0} L(x, lambda) = f(x) + lambda g(x)``
  (paper, eq. for ``L``), solved with Cooper (``cooper-optim`` 1.0.1): plain gradient
  descent-ascent (GDA, ``lambda <- [lambda + eta g(x)]_+``), the augmented Lagrangian
  (``L_rho = f + (1/(2 rho)) ([lambda + rho g]_+^2 - lambda^2)``, Cooper's ``AugmentedLagrangian``)
  and nuPI (a PI controller on the multiplier, Cooper's ``nuPI``; equivalent to an augmented
  Lagrangian, paper Sec. 3.2).
* **PCD** (arXiv 2606.29521): the requirement as a *secondary objective* ``s(x) = relu(g(x))``;
  direction from PCD's QP on the EMA-normalized Gram matrix (:func:`pcd.pcd_weights`). PCD is a
  descent method with a progress requirement (``g~_s . d >= tau ||g~_s||^2`` while ``s > 0``), not
  a feasibility method: it stops pushing as soon as ``s = 0`` and it enforces the differentiable
  surrogate it is given, never a non-differentiable target.

Experiments (plain data out; the CLI ``python -m pcd constrained``, the page and the tests use them):

1. :func:`run_toy` / :func:`epsilon_table` -- the non-convex 1-D example (paper, Example 1):
   ``min cos x on [0, pi/2] s.t. sin x <= eps``; ``x* = arcsin eps``,
   ``lambda* = eps / sqrt(1 - eps^2)``. ``P_c(x) = cos x + c sin x`` has ``P_c'' = -P_c < 0``: it is
   concave, so every fixed penalty ends at an endpoint (0 or pi/2; gradient descent goes to 0 from
   a start above ``arctan c`` and to pi/2 from below -- ``arctan c`` is the penalty's *maximum*).
   The Lagrangian is concave in x at ``x*`` as well, so plain GDA is repelled from ``x*`` and is
   absorbed at an endpoint; the augmented term ``rho cos^2 x`` restores local convexity when
   ``rho > (1 - eps^2)^(-3/2)``, so AL and nuPI converge to ``x*``. At ``pi/2`` the constraint's
   gradient ``cos x`` vanishes: a run that reaches ``pi/2`` stays there whatever ``lambda`` is.
2. :func:`rate_sweep` -- a rate-constrained logistic classifier (paper, Sec. 4, Table 2): two
   Gaussian blobs (400 points), requirement "at least 70 % of points predicted class 0". Primal
   gradients use the differentiable surrogate ``r~(w) = mean sigma(-z)``; the dual update uses the
   true rate ``r(w) = mean 1[z < 0]`` (Cooper's ``strict_violation``, the proxy-Lagrangian).
3. :func:`penalty_bisection` -- how many full trainings a log-bisection on ``c`` needs to hit the
   target rate, vs one constrained run.
4. :func:`rate_cost` -- wall time of the Cooper (constrained) loop vs the plain penalty loop.

Implementation notes. Independent runs are *batched*: every run owns its own parameters (a row
of ``W``) and its own loss, the total loss is the sum of the runs' losses and every optimizer used
is element-wise (SGD, nuPI), so each row follows exactly the trajectory of a separate run. In the
GDA sweep each run also has its own dual step ``eta_r``: Cooper's dual optimizer uses ``lr = 1`` on
the strict violation ``eta_r (0.7 - r(w_r))``, i.e. ``lambda_r <- [lambda_r + eta_r g_r]_+``.
Penalty and PCD runs use closed-form gradients in NumPy (float64); Cooper runs use torch autograd
on the same model -- :func:`train_penalty_torch` is the torch twin of the penalty loop, used for the
wall-time comparison and checked against the NumPy loop in the tests.

The package: :mod:`~pcd.experiments.constraints._common` (published figures, validation),
:mod:`~pcd.experiments.constraints.toy` (1), :mod:`~pcd.experiments.constraints.rates` (2),
:mod:`~pcd.experiments.constraints.cost` (3); every name is importable from here.
"""
from __future__ import annotations

from typing import Any

from pcd.experiments.constraints._common import (
    DEFAULT_TAUS,
    DEFAULT_TOY_C,
    FAMILY_LABELS,
    PAPER_BISECTION_RUNS,
    PAPER_C,
    PAPER_EPS,
    PAPER_ETA,
    PAPER_LAGRANGIAN_ACC,
    PAPER_LAGRANGIAN_RATE,
    PAPER_OVERHEAD_PCT,
    PAPER_PENALTY_ACC,
    PAPER_PENALTY_RATE,
    TOY_METHODS,
    _check_steps,
    check_c,
    check_eps,
    run_label,
)
from pcd.experiments.constraints.cost import rate_cost
from pcd.experiments.constraints.rates import (
    RateData,
    RateRun,
    RateSweep,
    make_blobs,
    penalty_bisection,
    rate_sweep,
    train_lagrangian,
    train_pcd,
    train_penalty,
    train_penalty_torch,
)
from pcd.experiments.constraints.toy import (
    ToyRun,
    epsilon_table,
    penalty_endpoint,
    penalty_objective,
    run_toy,
    toy_solution,
)

__all__ = [
    "PAPER_EPS", "PAPER_C", "PAPER_ETA", "PAPER_PENALTY_RATE", "PAPER_PENALTY_ACC",
    "PAPER_LAGRANGIAN_RATE", "PAPER_LAGRANGIAN_ACC", "PAPER_BISECTION_RUNS", "PAPER_OVERHEAD_PCT",
    "TOY_METHODS", "DEFAULT_TOY_C", "DEFAULT_TAUS", "FAMILY_LABELS", "run_label",
    "check_eps", "check_c", "toy_solution", "penalty_objective", "penalty_endpoint",
    "ToyRun", "run_toy", "epsilon_table",
    "RateData", "make_blobs", "RateRun", "RateSweep", "train_penalty", "train_penalty_torch",
    "train_lagrangian", "train_pcd", "rate_sweep", "penalty_bisection", "rate_cost",
    "run_all",
]


# =================================================================================================
# everything at once (the CLI)
# =================================================================================================

def run_all(eps: Any = PAPER_EPS, c: Any = DEFAULT_TOY_C, *, toy_steps: int = 500, rate_steps: int = 3000,
            x0: float = 0.6, tau: float = 0.1, cost: bool = True, bisection: bool = True) -> dict:
    """The JSON the CLI writes: ``epsilon_table`` and ``rate_sweep`` rows (issue 5), plus the dense
    penalty curve, the bisection count and (optionally) the wall-time comparison."""
    _check_steps(rate_steps, 100_000)  # fail fast, before the 1-D runs
    runs = run_toy(eps, c, x0=x0, steps=toy_steps, tau=tau)
    sweep = rate_sweep(steps=rate_steps)
    out: dict[str, Any] = {
        "epsilon_table": epsilon_table(runs),
        "rate_sweep": sweep.rows(),
        "penalty_curve": [{"c": float(cv), "rate": float(r), "accuracy": float(a)}
                          for cv, r, a in zip(sweep.curve_c, sweep.curve_rate, sweep.curve_acc)],
        "settings": {"toy": {"x0": x0, "steps": toy_steps, "tau": tau}, "rate": sweep.settings},
    }
    if bisection:
        out["bisection"] = penalty_bisection(steps=rate_steps)
    if cost:
        out["cost"] = rate_cost()
    return out
