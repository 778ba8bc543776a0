"""The rate-constrained logistic classifier: penalty, Lagrangian (Cooper) and PCD sweeps, the penalty
bisection (see :mod:`pcd.experiments.constraints`)."""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from pcd.experiments.constraints._common import (
    DEFAULT_TAUS,
    PAPER_C,
    PAPER_ETA,
    _as_1d,
    _check_pos,
    _check_steps,
    _check_target,
    _check_tau,
    _single_threaded,
    _torch,
    check_c,
    run_label,
)
from pcd.experiments.constraints.toy import _penalty_name

# =================================================================================================
# 2. Rate-constrained logistic classifier
# =================================================================================================

@dataclass(frozen=True)
class RateData:
    """Two Gaussian blobs: ``X`` ``[n, 2]``, labels ``y`` in {0, 1} (half each)."""

    X: np.ndarray
    y: np.ndarray
    seed: int
    sep: float


def make_blobs(n: int = 400, seed: int = 0, sep: float = 2.0) -> RateData:
    """``n`` points (``n/2`` per class), unit-variance blobs centred at ``(-sep, -sep)`` (class 0)
    and ``(sep, sep)`` (class 1), drawn with ``numpy.random.default_rng(seed)``."""
    try:
        n_i = int(n)
    except (TypeError, ValueError):
        raise ValueError(f"n must be an even integer >= 4, got {n!r}") from None
    if n_i != n or n_i < 4 or n_i % 2:
        raise ValueError(f"n must be an even integer >= 4, got {n!r}")
    sep = _check_pos(sep, "sep")
    rng = np.random.default_rng(int(seed))
    y = np.r_[np.zeros(n_i // 2), np.ones(n_i // 2)]
    X = rng.normal(size=(n_i, 2)) + np.where(y[:, None] == 0, -sep, sep)
    return RateData(X=X, y=y, seed=int(seed), sep=float(sep))


@dataclass
class RateRun:
    """One trained classifier: final class-0 rate and accuracy (in %), weights ``w`` ``[2]`` and
    bias ``b`` (decision boundary ``w.x + b = 0``, class 1 where positive), final multiplier
    (``c`` for a penalty, NaN for PCD) and the class-0 rate every ``hist_every`` steps."""

    method: str
    family: str
    param: float
    rate: float
    accuracy: float
    w: np.ndarray
    b: float
    lam: float
    rate_hist: np.ndarray
    hist_every: int
    surrogate: float = float("nan")  # the differentiable surrogate rate 100 mean sigma(-z) (%)

    @property
    def label(self) -> str:
        """The display name (``"fixed penalty c = 2.15"``, ``"Lagrangian (GDA) η = 0.1"``, ``"PCD τ = 0.5"``)."""
        return run_label(self.family, self.param)


def _metrics(data: RateData, W: np.ndarray, surrogate: bool = False):
    """True class-0 rate and accuracy in % per run (NaN for a diverged run); optionally also the
    surrogate rate ``100 mean sigma(-z)``."""
    z = data.X @ W[:, :2].T + W[:, 2]  # [n, R]
    with np.errstate(invalid="ignore", over="ignore"):
        pred = (z > 0).astype(float)
        rate = 100.0 * (z < 0).mean(axis=0)
        acc = 100.0 * (pred == data.y[:, None]).mean(axis=0)
        sur = 100.0 * _sigmoid(-z).mean(axis=0)
    bad = ~np.isfinite(W).all(axis=1)
    rate[bad] = np.nan
    acc[bad] = np.nan
    sur[bad] = np.nan
    return (rate, acc, sur) if surrogate else (rate, acc)


def _sigmoid(z: np.ndarray) -> np.ndarray:
    return 0.5 * (1.0 + np.tanh(0.5 * z))


def _grads(data: RateData, W: np.ndarray, target: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per-run gradients of BCE and of the surrogate violation ``g~ = target - mean sigma(-z)``;
    also ``g~`` itself. ``W`` ``[R, 3]`` -> ``[R, 3], [R, 3], [R]``."""
    X1 = np.c_[data.X, np.ones(len(data.y))]  # [n, 3]
    z = X1 @ W.T  # [n, R]
    p = _sigmoid(z)
    n = len(data.y)
    g_bce = (p - data.y[:, None]).T @ X1 / n
    g_viol = (p * (1.0 - p)).T @ X1 / n  # d/dW of (target - mean(1 - p))
    viol = target - (1.0 - p).mean(axis=0)
    return g_bce, g_viol, viol


def _check_rate_args(target: Any, steps: Any, lr: Any, hist_every: Any) -> tuple[float, int, float, int]:
    target = _check_target(target)
    steps = _check_steps(steps, 100_000)
    lr = _check_pos(lr, "lr", high=100.0)
    hist_every = min(_check_steps(hist_every, 100_000, "hist_every"), steps)
    return target, steps, lr, hist_every


def train_penalty(data: RateData, c: Any, *, target: float = 0.7, steps: int = 3000, lr: float = 0.1,
                  hist_every: int = 50) -> list[RateRun]:
    """Fixed penalties: gradient descent on ``BCE(w) + c (target - r~(w))`` for each ``c``
    (seed 003, ``P(x) = f(x) + c g(x)``; the linear penalty also *rewards* exceeding the target,
    exactly as a weighted sum does). Batched over ``c``; W starts at 0."""
    cs = check_c(c)
    target, steps, lr, hist_every = _check_rate_args(target, steps, lr, hist_every)
    W = np.zeros((cs.size, 3))
    hist = []
    with np.errstate(all="ignore"):
        for t in range(steps):
            g_bce, g_viol, _ = _grads(data, W, target)
            W = W - lr * (g_bce + cs[:, None] * g_viol)
            if (t + 1) % hist_every == 0:
                hist.append(_metrics(data, W)[0])
    rate, acc, sur = _metrics(data, W, surrogate=True)
    H = np.array(hist).T if hist else np.zeros((cs.size, 0))
    return [RateRun(_penalty_name(float(cv)), "penalty", float(cv), float(rate[i]), float(acc[i]),
                    W[i, :2].copy(), float(W[i, 2]), float(cv), H[i], hist_every, float(sur[i]))
            for i, cv in enumerate(cs)]


@_single_threaded
def train_penalty_torch(data: RateData, c: Any, *, target: float = 0.7, steps: int = 3000,
                        lr: float = 0.1) -> np.ndarray:
    """The same penalty loop written in torch (autograd, ``torch.optim.SGD``): the baseline of the
    wall-time comparison. Returns the final ``W`` ``[R, 3]``."""
    torch = _torch()
    cs = check_c(c)
    target = _check_target(target)
    steps = _check_steps(steps, 100_000)
    lr = _check_pos(lr, "lr", high=100.0)
    X = torch.as_tensor(data.X)
    Y = torch.as_tensor(data.y)[:, None].expand(len(data.y), cs.size)
    cc = torch.as_tensor(cs)
    W = torch.nn.Parameter(torch.zeros(cs.size, 3, dtype=torch.float64))
    opt = torch.optim.SGD([W], lr=lr)
    for _ in range(steps):
        opt.zero_grad(set_to_none=True)
        z = X @ W[:, :2].T + W[:, 2]
        bce = torch.nn.functional.binary_cross_entropy_with_logits(z, Y, reduction="none").mean(0)
        surrogate = torch.sigmoid(-z).mean(0)
        (bce + cc * (target - surrogate)).sum().backward()
        opt.step()
    return W.detach().numpy().copy()


def _lagrangian_problem(data: RateData, W, eta: np.ndarray, target: float, init: np.ndarray | None = None):
    """Cooper CMP: ``min sum_r BCE(w_r) s.t. target - r(w_r) <= 0`` (one constraint entry per run).

    Primal: differentiable surrogate ``target - r~(w_r)``; dual: ``eta_r (target - r(w_r))`` with the
    true rate (``strict_violation``), so that Cooper's dual SGD step (lr 1) is
    ``lambda_r <- [lambda_r + eta_r (target - r(w_r))]_+``.
    """
    torch = _torch()
    import cooper

    X = torch.as_tensor(data.X)
    R = eta.size
    Y = torch.as_tensor(data.y)[:, None].expand(len(data.y), R)
    et = torch.as_tensor(eta, dtype=torch.float64)
    mult_init = None if init is None else torch.as_tensor(init, dtype=torch.float64)

    class RateConstrained(cooper.ConstrainedMinimizationProblem):
        def __init__(self) -> None:
            super().__init__()
            self.rate = cooper.Constraint(
                cooper.ConstraintType.INEQUALITY,
                formulation_type=cooper.formulations.Lagrangian,
                multiplier=cooper.multipliers.DenseMultiplier(num_constraints=R, init=mult_init,
                                                              dtype=torch.float64))

        def compute_cmp_state(self) -> cooper.CMPState:
            z = X @ W[:, :2].T + W[:, 2]
            bce = torch.nn.functional.binary_cross_entropy_with_logits(z, Y, reduction="none").mean(0)
            surrogate = torch.sigmoid(-z).mean(0)
            true_rate = (z.detach() < 0).to(torch.float64).mean(0)
            state = cooper.ConstraintState(violation=target - surrogate,
                                           strict_violation=et * (target - true_rate))
            return cooper.CMPState(loss=bce.sum(), observed_constraints={self.rate: state})

    return RateConstrained()


@_single_threaded
def train_lagrangian(data: RateData, eta: Any, *, target: float = 0.7, steps: int = 3000, lr: float = 0.1,
                     hist_every: int = 50, lambda0: Any = 0.0) -> list[RateRun]:
    """Plain GDA on the (proxy-)Lagrangian with Cooper, one run per dual step ``eta >= 0``:
    primal SGD (lr) on ``BCE + lambda (target - r~)``, dual ``lambda <- [lambda + eta (target - r)]_+``
    (alternating: dual first, Cooper's ``AlternatingDualPrimalOptimizer``). lambda starts at
    ``lambda0`` (default 0). With ``eta = 0`` and ``lambda0 = c`` this *is* the fixed penalty c:
    a penalty is a Lagrangian whose multiplier is frozen."""
    torch = _torch()
    import cooper

    etas = _as_1d(eta, "dual step eta")
    if (etas < 0).any():
        raise ValueError(f"dual step eta must be >= 0, got {etas.tolist()}")
    target, steps, lr, hist_every = _check_rate_args(target, steps, lr, hist_every)
    lam0 = _as_1d(lambda0, "lambda0")
    if (lam0 < 0).any():
        raise ValueError(f"lambda0 (initial multiplier) must be >= 0, got {lam0.tolist()}")
    if lam0.size == 1:
        lam0 = np.full(etas.size, lam0[0])
    elif lam0.size != etas.size:
        raise ValueError(f"lambda0 must be one number or one per eta ({etas.size}), got {lam0.size}")
    W = torch.nn.Parameter(torch.zeros(etas.size, 3, dtype=torch.float64))
    cmp = _lagrangian_problem(data, W, etas, target, init=lam0)
    primal = torch.optim.SGD([W], lr=lr)
    dual = torch.optim.SGD(cmp.dual_parameters(), lr=1.0, maximize=True)
    opt = cooper.optim.AlternatingDualPrimalOptimizer(cmp, primal, dual)
    hist = []
    for t in range(steps):
        opt.roll()
        if (t + 1) % hist_every == 0:
            hist.append(_metrics(data, W.detach().numpy())[0])
    Wn = W.detach().numpy().copy()
    lam = cmp.rate.multiplier.weight.detach().numpy().copy()
    rate, acc, sur = _metrics(data, Wn, surrogate=True)
    H = np.array(hist).T if hist else np.zeros((etas.size, 0))
    return [RateRun("gda", "gda", float(ev), float(rate[i]), float(acc[i]), Wn[i, :2].copy(),
                    float(Wn[i, 2]), float(lam[i]), H[i], hist_every, float(sur[i]))
            for i, ev in enumerate(etas)]


def train_pcd(data: RateData, tau: Any, *, target: float = 0.7, steps: int = 3000, lr: float = 0.1,
              hist_every: int = 50) -> list[RateRun]:
    """PCD with primary BCE and secondary ``relu(target - r~(w))`` (the surrogate: PCD needs a
    gradient, it never sees the true rate), one run per ``tau``; SGD on the deployed direction.
    """
    from pcd import EMANormalizer

    taus = _check_tau(tau)
    target, steps, lr, hist_every = _check_rate_args(target, steps, lr, hist_every)
    R = taus.size
    W = np.zeros((R, 3))
    norm = EMANormalizer()
    hist = []
    with np.errstate(all="ignore"):
        for t in range(steps):
            g_bce, g_viol, viol = _grads(data, W, target)
            g_sec = g_viol * (viol > 0)[:, None]
            J = np.stack([g_bce, g_sec], axis=1)  # [R, 2, 3]
            if not np.isfinite(J).all():
                W[:] = np.nan
                break
            G = J @ np.swapaxes(J, -1, -2)
            s = norm.update(np.diagonal(G, axis1=-2, axis2=-1))
            a = _pcd_weights_per_run_tau(G, s, taus)
            step = np.einsum("rk,rkn->rn", a, J)
            W = W - lr * step
            if (t + 1) % hist_every == 0:
                hist.append(_metrics(data, W)[0])
    rate, acc, sur = _metrics(data, W, surrogate=True)
    H = np.array(hist).T if hist else np.zeros((R, 0))
    return [RateRun("pcd", "pcd", float(tv), float(rate[i]), float(acc[i]), W[i, :2].copy(),
                    float(W[i, 2]), float("nan"), H[i], hist_every, float(sur[i]))
            for i, tv in enumerate(taus)]


def _pcd_weights_per_run_tau(G: np.ndarray, s: np.ndarray, taus: np.ndarray) -> np.ndarray:
    """:func:`pcd.pcd_weights` for a batch of K = 2 problems with one tau per run, in one call.

    ``solve_qp`` takes one tau per secondary, not per batch element. For K = 2 and tau_r > 0,
    scaling the secondary's normalization by ``k_r = tau_r / tau_0`` turns the constraint
    ``(k g~_2).d >= tau_0 ||k g~_2||^2`` into ``g~_2.d >= tau_r ||g~_2||^2``: same QP, same
    direction, same deployed weights (``mu' = mu / k``). tau_r = 0 runs are solved separately.
    """
    from pcd import pcd_weights

    a = np.empty_like(s)
    pos = taus > 0
    if pos.any():
        t0 = float(taus[pos].max())
        sp = s[pos].copy()
        sp[:, 1] *= taus[pos] / t0
        a[pos] = pcd_weights(G[pos], sp, t0).weights
    if (~pos).any():
        a[~pos] = pcd_weights(G[~pos], s[~pos], 0.0).weights
    return a


@dataclass
class RateSweep:
    """All rate-experiment runs plus a dense penalty curve (rate and accuracy vs c)."""

    data: RateData
    target: float
    runs: list[RateRun]
    curve_c: np.ndarray
    curve_rate: np.ndarray
    curve_acc: np.ndarray
    settings: dict

    def rows(self) -> list[dict]:
        """``{"method", "family", "param", "rate", "accuracy", "lambda"}`` per run (rates in %)."""
        return [{"method": r.method, "label": r.label, "family": r.family, "param": r.param, "rate": r.rate,
                 "accuracy": r.accuracy, "surrogate_rate": r.surrogate, "lambda": r.lam} for r in self.runs]

    def family(self, name: str) -> list[RateRun]:
        return [r for r in self.runs if r.family == name]


def rate_sweep(c_grid: Any = PAPER_C, eta_grid: Any = PAPER_ETA, tau_grid: Any = DEFAULT_TAUS, *,
               target: float = 0.7, steps: int = 3000, lr: float = 0.1, n: int = 400, seed: int = 0,
               curve_points: int = 41, hist_every: int = 50) -> RateSweep:
    """Fixed penalties over ``c_grid``, GDA (Cooper) over ``eta_grid``, PCD over ``tau_grid`` on the
    same blobs, same primal optimizer (SGD, ``lr``, ``steps``) and start (W = 0); plus a dense
    log-spaced penalty curve over c in [1e-3, 1e2] (``curve_points`` runs)."""
    data = make_blobs(n, seed)
    target, steps, lr, hist_every = _check_rate_args(target, steps, lr, hist_every)
    cp = _check_steps(curve_points, 1000, "curve_points")
    runs = train_penalty(data, c_grid, target=target, steps=steps, lr=lr, hist_every=hist_every)
    runs += train_lagrangian(data, eta_grid, target=target, steps=steps, lr=lr, hist_every=hist_every)
    if len(np.atleast_1d(tau_grid)):
        runs += train_pcd(data, tau_grid, target=target, steps=steps, lr=lr, hist_every=hist_every)
    curve_c = np.logspace(-3, 2, cp)
    curve = train_penalty(data, curve_c, target=target, steps=steps, lr=lr, hist_every=steps)
    return RateSweep(data, target, runs, curve_c, np.array([r.rate for r in curve]),
                     np.array([r.accuracy for r in curve]),
                     {"steps": steps, "lr": lr, "n": n, "seed": seed, "optimizer": "SGD"})


def penalty_bisection(target: float = 0.7, tol: float = 1.0, *, c_lo: float = 1e-3, c_hi: float = 100.0,
                      max_runs: int = 20, steps: int = 3000, lr: float = 0.1, n: int = 400,
                      seed: int = 0) -> dict:
    """Search a fixed penalty ``c`` that meets the target rate, one full training per probe.

    Log-bisection (as in the paper's L0 ablation): train at ``c_lo`` and ``c_hi``, then at the
    geometric midpoint of the bracket until a run's class-0 rate is within ``tol`` percentage
    points of the target (``|rate - 100 target| <= tol``) or ``max_runs`` trainings were spent.
    Returns ``{"runs": [{"run", "c", "rate", "accuracy"}], "n_runs", "hit", "c"}``.
    """
    target = _check_target(target)
    tol = _check_pos(tol, "tol (percentage points)")
    c_lo = _check_pos(c_lo, "c_lo")
    c_hi = _check_pos(c_hi, "c_hi")
    if not c_lo < c_hi:
        raise ValueError(f"need c_lo < c_hi, got {c_lo} and {c_hi}")
    max_runs = _check_steps(max_runs, 100, "max_runs")
    data = make_blobs(n, seed)
    goal = 100.0 * target
    log: list[dict] = []

    def train(c: float) -> float:
        run = train_penalty(data, c, target=target, steps=steps, lr=lr, hist_every=steps)[0]
        log.append({"run": len(log) + 1, "c": c, "rate": run.rate, "accuracy": run.accuracy})
        return run.rate

    hit = None
    lo, hi = c_lo, c_hi
    for c in (lo, hi):
        if len(log) < max_runs and abs(train(c) - goal) <= tol:
            hit = c
            break
    while hit is None and len(log) < max_runs:
        mid = math.sqrt(lo * hi)
        rate = train(mid)
        if abs(rate - goal) <= tol:
            hit = mid
        elif not math.isfinite(rate) or rate < goal:
            lo = mid
        else:
            hi = mid
    return {"runs": log, "n_runs": len(log), "hit": hit is not None, "c": hit, "target": goal, "tol": tol}
