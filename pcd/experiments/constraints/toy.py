"""The non-convex 1-D example: a fixed penalty vs Lagrangian methods (GDA, augmented Lagrangian, nuPI)
vs PCD, per constraint level eps (see :mod:`pcd.experiments.constraints`)."""
from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any, cast

import numpy as np

from pcd.experiments.constraints._common import (
    DEFAULT_TOY_C,
    HALF_PI,
    PAPER_EPS,
    TOY_METHODS,
    _check_pos,
    _check_steps,
    _check_tau,
    _single_threaded,
    _torch,
    check_c,
    check_eps,
    run_label,
)

# =================================================================================================
# 1. The non-convex 1-D example
# =================================================================================================

def toy_solution(eps: Any) -> tuple[np.ndarray, np.ndarray]:
    """``x* = arcsin eps`` and ``lambda* = eps / sqrt(1 - eps^2)`` (paper, Example 1)."""
    e = check_eps(eps)
    return np.arcsin(e), e / np.sqrt(1.0 - e ** 2)


def penalty_objective(x: Any, c: float) -> np.ndarray:
    """``P_c(x) = cos x + c sin x`` -- concave on [0, pi/2] (``P_c'' = -P_c <= 0``) for every c >= 0."""
    if np.ndim(c) != 0:
        raise ValueError(f"c must be a single number >= 0, got {c!r}")
    cc = float(check_c(c)[0])
    x = np.asarray(x, dtype=np.float64)
    return np.cos(x) + cc * np.sin(x)


def penalty_endpoint(c: float, x0: float) -> float:
    """Where gradient descent on ``P_c`` from ``x0`` ends: 0 if ``x0 < arctan c`` (the penalty's
    maximum), pi/2 if ``x0 > arctan c``; ``x0`` itself at the (unstable) stationary point."""
    cc = float(check_c(c)[0])
    x0 = float(x0)
    if not 0.0 <= x0 <= HALF_PI:
        raise ValueError(f"start x0 must lie in [0, pi/2], got {x0!r}")
    top = math.atan(cc)
    if x0 < top:
        return 0.0
    if x0 > top:
        return HALF_PI
    return float(x0)


@dataclass
class ToyRun:
    """One method on the 1-D example, for every ``eps`` at once (batched, independent runs).

    ``x``/``lam`` are trajectories ``[steps + 1, B]`` (``lam``: the multiplier; the fixed ``c`` for
    a penalty; NaN for PCD, which has no multiplier). ``param`` is the method's knob (c, eta...).
    """

    method: str
    family: str
    param: float | None
    eps: np.ndarray
    x: np.ndarray
    lam: np.ndarray
    settings: dict = field(default_factory=dict)

    @property
    def x_final(self) -> np.ndarray:
        return self.x[-1]

    @property
    def lam_final(self) -> np.ndarray:
        return self.lam[-1]

    @property
    def label(self) -> str:
        """The display name (``"fixed penalty c = 0.5"``, ``"augmented Lagrangian"``)."""
        return run_label(self.family, self.param)

    @property
    def rel_error(self) -> np.ndarray:
        xs = np.arcsin(self.eps)
        return np.abs(self.x_final - xs) / xs


def _penalty_name(c: float) -> str:
    return f"penalty(c={c:g})"


def _toy_penalty(eps: np.ndarray, c: float, x0: float, steps: int, lr: float) -> ToyRun:
    """Projected gradient descent on ``cos x + c (sin x - eps)``: ``x <- clip(x - lr (c cos x - sin x))``."""
    B = eps.size
    x = np.full(B, x0)
    traj = np.empty((steps + 1, B))
    traj[0] = x
    for t in range(steps):
        x = np.clip(x - lr * (c * np.cos(x) - np.sin(x)), 0.0, HALF_PI)
        traj[t + 1] = x
    return ToyRun(_penalty_name(c), "penalty", c, eps, traj, np.full_like(traj, c),
                  {"x0": x0, "lr": lr, "steps": steps})


def _projected_sgd_class():
    torch: Any = _torch()  # a lazily imported module: its classes are values here (the base class below)

    class ProjectedSGD(torch.optim.SGD):
        """SGD followed by projection onto the box ``[lo, hi]`` (keeps x in [0, pi/2])."""

        def __init__(self, params: Iterable, lr: float, lo: float, hi: float) -> None:
            super().__init__(params, lr=lr)
            self.lo, self.hi = lo, hi

        @torch.no_grad()
        def step(self, closure=None):
            loss = super().step(closure)
            for group in self.param_groups:
                for p in group["params"]:
                    p.clamp_(self.lo, self.hi)
            return loss

    return ProjectedSGD


def _toy_cooper(family: str, eps: np.ndarray, x0: float, steps: int, lr: float, dual_lr: float,
                rho: float, kp: float, ki: float) -> ToyRun:
    """GDA (simultaneous, Lagrangian), AL (alternating dual-primal, AugmentedLagrangian) or nuPI
    (alternating dual-primal, Lagrangian + nuPI dual optimizer), all via Cooper."""
    torch = _torch()
    import cooper

    B = eps.size
    x = torch.nn.Parameter(torch.full((B,), float(x0), dtype=torch.float64))
    e = torch.as_tensor(eps, dtype=torch.float64)
    formulation = cooper.formulations.AugmentedLagrangian if family == "auglag" else cooper.formulations.Lagrangian
    penalty = None
    if family == "auglag":
        penalty = cooper.penalty_coefficients.DensePenaltyCoefficient(torch.full((B,), rho, dtype=torch.float64))

    class SinConstrained(cooper.ConstrainedMinimizationProblem):
        """min sum_b cos x_b  s.t.  sin x_b - eps_b <= 0 (B independent problems)."""

        def __init__(self) -> None:
            super().__init__()
            self.sin_le_eps = cooper.Constraint(
                cooper.ConstraintType.INEQUALITY, formulation_type=formulation,
                multiplier=cooper.multipliers.DenseMultiplier(num_constraints=B, dtype=torch.float64),
                penalty_coefficient=penalty)

        def compute_cmp_state(self) -> cooper.CMPState:
            state = cooper.ConstraintState(violation=torch.sin(x) - e)
            return cooper.CMPState(loss=torch.cos(x).sum(), observed_constraints={self.sin_le_eps: state})

    cmp = SinConstrained()
    primal = _projected_sgd_class()([x], lr=lr, lo=0.0, hi=HALF_PI)
    opt: Any
    if family == "nupi":
        dual = cooper.optim.nuPI(cmp.dual_parameters(), lr=dual_lr, Kp=kp, Ki=ki,  # type: ignore[arg-type]
                                 maximize=True)  # nuPI takes float gains (converted inside)
        opt = cooper.optim.AlternatingDualPrimalOptimizer(cmp, primal, dual)
        param = kp
    elif family == "auglag":
        dual = torch.optim.SGD(cmp.dual_parameters(), lr=dual_lr, maximize=True)
        opt = cooper.optim.AlternatingDualPrimalOptimizer(cmp, primal, dual)
        param = rho
    else:
        dual = torch.optim.SGD(cmp.dual_parameters(), lr=dual_lr, maximize=True)
        opt = cooper.optim.SimultaneousOptimizer(cmp, primal, dual)
        param = dual_lr
    xs = np.empty((steps + 1, B))
    lams = np.empty((steps + 1, B))
    multiplier = cmp.sin_le_eps.multiplier
    assert multiplier is not None  # cooper.Constraint creates it
    weight = cast(Any, multiplier.weight)  # a Tensor (nn.Module attribute access is typed Tensor | Module)
    xs[0], lams[0] = x0, 0.0
    for step in range(steps):
        opt.roll()
        xs[step + 1] = x.detach().numpy()
        lams[step + 1] = weight.detach().numpy()
    settings = {"x0": x0, "lr": lr, "dual_lr": dual_lr, "steps": steps}
    if family == "auglag":
        settings["rho"] = rho
    if family == "nupi":
        settings.update(kp=kp, ki=ki)
    return ToyRun(family, family, param, eps, xs, lams, settings)


def _toy_pcd(eps: np.ndarray, x0: float, steps: int, lr: float, tau: float) -> ToyRun:
    """PCD with primary ``cos x`` and secondary ``relu(sin x - eps)`` (analytic gradients).

    ``g_1 = -sin x``, ``g_2 = cos x 1[sin x > eps]``; weights from :func:`pcd.pcd_weights` on the
    Gram matrix with EMA scales; ``x <- clip(x - lr (a_1 g_1 + a_2 g_2))``. In 1-D the QP's
    constraint pins ``d~ = tau g~_2`` whenever it binds, and the deployed step has length
    ``lr |g_1|``: PCD walks back towards the feasible set while violated and forwards once
    feasible, so it ends in a band of width ~``lr sin x*`` around ``x*`` (it chatters).
    """
    from pcd import EMANormalizer, pcd_weights

    B = eps.size
    x = np.full(B, x0)
    traj = np.empty((steps + 1, B))
    traj[0] = x
    norm = EMANormalizer()
    for t in range(steps):
        g1 = -np.sin(x)
        g2 = np.cos(x) * (np.sin(x) > eps)
        J = np.stack([g1, g2], axis=-1)[..., None]  # [B, 2, 1]
        G = J @ np.swapaxes(J, -1, -2)
        s = norm.update(np.stack([g1 ** 2, g2 ** 2], axis=-1))
        a = pcd_weights(G, s, tau).weights
        x = np.clip(x - lr * (a[:, 0] * g1 + a[:, 1] * g2), 0.0, HALF_PI)
        traj[t + 1] = x
    return ToyRun("pcd", "pcd", tau, eps, traj, np.full_like(traj, np.nan),
                  {"x0": x0, "lr": lr, "tau": tau, "steps": steps})


@_single_threaded
def run_toy(eps: Any = PAPER_EPS, c: Any = DEFAULT_TOY_C, methods: Sequence[str] = TOY_METHODS, *,
            x0: float = 0.6, steps: int = 500, lr: float = 0.05, gda_dual_lr: float = 0.5,
            rho: float = 20.0, al_dual_lr: float = 1.0, kp: float = 20.0, ki: float = 0.5,
            nupi_lr: float = 1.0, tau: float = 0.1) -> list[ToyRun]:
    """Run the 1-D example ``min cos x on [0, pi/2] s.t. sin x <= eps`` for every ``eps``.

    Args:
      eps: constraint level(s), each in (0, 1).
      c: fixed penalty coefficient(s) ``>= 0`` (one ``penalty(c=...)`` run each).
      methods: any of ``penalty, gda, auglag, nupi, pcd``.
      x0: common start in [0, pi/2]. (0 is stationary for every method: cos'(0) = 0.)
      steps, lr: primal projected-gradient steps and step size.
      gda_dual_lr: GDA's dual step. rho, al_dual_lr: augmented Lagrangian penalty and dual step.
      kp, ki, nupi_lr: nuPI gains and step. tau: PCD's tolerance in [0, 1].

    Returns one :class:`ToyRun` per method (per c for penalties).
    """
    e = check_eps(eps)
    cs = check_c(c)
    methods = list(methods)
    unknown = [m for m in methods if m not in TOY_METHODS]
    if unknown or not methods:
        raise ValueError(f"unknown toy method(s) {unknown}; allowed: {', '.join(TOY_METHODS)}")
    try:
        x0 = float(x0)
    except (TypeError, ValueError):
        raise ValueError(f"start x0 must be a number in [0, pi/2], got {x0!r}") from None
    if not (0.0 <= x0 <= HALF_PI):
        raise ValueError(f"start x0 must lie in [0, pi/2] = [0, {HALF_PI:.4f}], got {x0!r}")
    steps = _check_steps(steps, 100_000)
    lr = _check_pos(lr, "lr", high=10.0)
    gda_dual_lr = _check_pos(gda_dual_lr, "gda_dual_lr", allow_zero=True)
    rho = _check_pos(rho, "rho")
    al_dual_lr = _check_pos(al_dual_lr, "al_dual_lr", allow_zero=True)
    kp = _check_pos(kp, "kp", allow_zero=True)
    ki = _check_pos(ki, "ki", allow_zero=True)
    nupi_lr = _check_pos(nupi_lr, "nupi_lr")
    tau = float(_check_tau(tau)[0])
    runs: list[ToyRun] = []
    for m in methods:
        if m == "penalty":
            runs.extend(_toy_penalty(e, float(cv), x0, steps, lr) for cv in cs)
        elif m == "pcd":
            runs.append(_toy_pcd(e, x0, steps, lr, tau))
        elif m == "gda":
            runs.append(_toy_cooper("gda", e, x0, steps, lr, gda_dual_lr, rho, kp, ki))
        elif m == "auglag":
            runs.append(_toy_cooper("auglag", e, x0, steps, lr, al_dual_lr, rho, kp, ki))
        else:
            runs.append(_toy_cooper("nupi", e, x0, steps, lr, nupi_lr, rho, kp, ki))
    return runs


def _endpoint_label(x: float, tol: float = 1e-3) -> str:
    if abs(x) <= tol:
        return "0"
    if abs(x - HALF_PI) <= tol:
        return "pi/2"
    return "interior"


def epsilon_table(runs: Sequence[ToyRun]) -> list[dict]:
    """One row per (eps, method): final x, arcsin eps, final multiplier, lambda*, relative error
    ``|x_T - x*| / x*``, violation ``sin x_T - eps`` and where it ended (0, pi/2, interior).
    Non-finite values are reported (as NaN), never raised."""
    rows = []
    for r in runs:
        xs, ls = toy_solution(r.eps)
        for i, e in enumerate(r.eps):
            x = float(r.x_final[i])
            lam = float(r.lam_final[i])
            rows.append({
                "eps": float(e), "method": r.method, "label": r.label, "family": r.family, "param": r.param,
                "x": x, "x_star": float(xs[i]), "lambda": lam, "lambda_star": float(ls[i]),
                "rel_error": abs(x - xs[i]) / xs[i] if math.isfinite(x) else float("nan"),
                "violation": math.sin(x) - float(e) if math.isfinite(x) else float("nan"),
                "endpoint": _endpoint_label(x) if math.isfinite(x) else "diverged",
            })
    return rows
