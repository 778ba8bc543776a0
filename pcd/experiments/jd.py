"""Jacobian descent (seed 002; Quinton & Rey, "Jacobian Descent for Multi-Objective
Optimization", arXiv 2406.16232, the TorchJD library) next to PCD, as plain data.

Three experiments, each a function returning JSON-able dictionaries (used by ``python -m pcd jd``,
``pages/06_Jacobian_descent.py`` and the tests):

1. :func:`property_table` -- every registry method viewed as an *aggregator* ``A: J -> d`` and
   checked on sampled Jacobians (random, rows scaled by ``diag(c)``, rank-deficient, exactly
   cancelling) for the paper's three properties (Sec. 2.2, Definitions 1-3):

   * **non-conflicting**: ``J . A(J) >= 0`` componentwise;
   * **linear under scaling**: ``c -> A(diag(c) J)`` is linear on ``c > 0``;
   * **weighted**: ``A(J) = J^T w`` for some ``w``;

   and PCD's own two (PCD paper, arXiv 2606.29521, eq. (3)), stated for any aggregator:

   * **primary-anchored**: written in normalized gradients ``g~_i = g_i / ||g_i||`` the direction is
     ``omega_1 (g~_1 + sum_j mu_j g~_j)`` with the primary's coefficient pinned (``omega_1 > 0``)
     and the secondaries' coefficients independent of their scale. Checked as (a) *pass-through*:
     when ``g_1`` already gives every secondary its share (``cos(g_1, g_j) >= tau``) the update is
     ``g_1`` itself, and (b) *secondary-scale invariance*: ``A(diag(1, c_2..c_K) J) = A(J)``;
   * **per-secondary progress**: with the primary's coefficient pinned to 1 (``d~ = d / omega_1``),
     ``g~_j . d~ >= tau ||g~_j||^2`` for every secondary, on every sample where these constraints
     are compatible (PCD reports ``feasible = False`` otherwise; those samples are skipped).

   A violation is a scale-free number (0 = holds exactly); a property "holds" when the worst
   violation over all samples is below ``tol``. Stateful methods (PCD's EMA, FAMO, Nash-MTL) start
   from a fresh state for every evaluation; stochastic ones (PCGrad's order, RGW) reuse the same
   seed for every evaluation within one check, i.e. the property is checked for a fixed draw.

2. :func:`run_iwrm` -- instance-wise risk minimization (paper Sec. 5): every sample's loss in a
   batch of ``B`` is its own objective (``K = B``), a tiny CNN on scikit-learn's digits is trained
   with an aggregator at a fixed learning rate, and training loss, test accuracy and the cosine
   between each update and the SGD gradient (the mean of the rows) are recorded.
   ``ws`` (Mean) is plain SGD / ERM. PCD's variant: primary = the batch's mean loss, secondaries =
   the ``B`` per-sample losses (``K = B + 1``), so PCD follows SGD and bends it only where a sample
   would not get its ``tau`` share of progress.

3. :func:`measure_gramian_memory` -- peak memory and time of one step that (a) materializes the
   per-sample Jacobian (ours: ``torch.func.vmap(grad)``) and forms ``G = J J^T``, versus (b)
   TorchJD's ``torchjd.autogram.Engine`` computing ``G`` without the Jacobian (the paper's
   Gramian reverse accumulation, Sec. 6), plus (c) a plain ERM backward for reference.
"""
from __future__ import annotations

import ctypes
import gc
import math
import os
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from pcd import methods as _methods
from pcd.methods.base import Method

__all__ = [
    "PROPERTIES", "FAMILIES", "PAPER_TABLE", "sample_jacobians", "aggregate", "PropertyReport",
    "check_properties", "property_table",
    "TinyCNN", "IWRMConfig", "run_iwrm", "IWRM_DEFAULT_METHODS",
    "measure_gramian_memory", "torchjd_available", "MEMORY_MODES",
]

PROPERTIES = ("non_conflicting", "linear_under_scaling", "weighted", "primary_anchored",
              "per_secondary_progress")
PAPER_PROPERTIES = PROPERTIES[:3]  # the three of arXiv 2406.16232, Sec. 2.2
FAMILIES = ("random", "scaled", "rank_deficient", "cancelling")

# The paper's Table 1 (arXiv 2406.16232) for the aggregators we have, as (non-conflicting,
# linear under scaling, weighted). Shown next to the live result; never used to produce it.
PAPER_TABLE: dict[str, tuple[bool, bool, bool]] = {
    "ws": (False, True, True),          # Mean
    "mgda": (True, False, True),
    "dualproj": (True, False, True),
    "pcgrad": (False, True, True),
    "graddrop": (False, False, False),
    "imtlg": (False, False, True),
    "cagrad": (False, False, True),
    "rgw": (False, True, True),
    "nashmtl": (True, False, True),
    "alignedmtl": (False, False, True),
    "upgrad": (True, True, True),
}

_N_DIM = 12  # dimension of the sampled gradients (n > K so "weighted" is a real constraint)


# ============================================================================ samplers


def _check_int(value: Any, name: str, low: int, high: int | None = None) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
        raise ValueError(f"{name} must be an integer, got {value!r}")
    v = int(value)
    if v < low or (high is not None and v > high):
        hi = "" if high is None else f" and <= {high}"
        raise ValueError(f"{name} must be >= {low}{hi}, got {v}")
    return v


def sample_jacobians(family: str, K: int, count: int, *, n: int = _N_DIM, seed: int = 0) -> np.ndarray:
    """``count`` Jacobians ``[count, K, n]`` (float64) of one family.

    * ``random``: i.i.d. standard normal rows;
    * ``scaled``: random rows scaled by ``diag(c)`` with ``c`` log-uniform in ``[1e-2, 1e2]``;
    * ``rank_deficient``: ``rank(J) = max(1, K // 2)`` (rows are combinations of a few directions);
    * ``cancelling``: the rows sum to exactly zero (``g_K = -sum_{i<K} g_i``): a conflict
      equilibrium for Mean, MGDA and friends;
    * ``aligned``: every row within a narrow cone around ``g_1`` (``cos >= 0.5``), used for PCD's
      pass-through check.
    """
    if family not in FAMILIES + ("aligned",):
        raise ValueError(f"unknown Jacobian family {family!r}; allowed: {', '.join(FAMILIES + ('aligned',))}")
    K = _check_int(K, "K", 2, 64)
    count = _check_int(count, "count", 1, 10_000)
    n = _check_int(n, "n", K + 1, 100_000)
    rng = np.random.default_rng([seed, FAMILIES.index(family) if family in FAMILIES else 9, K])
    J = rng.standard_normal((count, K, n))
    if family == "scaled":
        J *= 10.0 ** rng.uniform(-2.0, 2.0, size=(count, K, 1))
    elif family == "rank_deficient":
        r = max(1, K // 2)
        J = rng.standard_normal((count, K, r)) @ rng.standard_normal((count, r, n))
    elif family == "cancelling":
        J[:, -1] = -J[:, :-1].sum(axis=1)
    elif family == "aligned":
        g1 = J[:, :1] / np.linalg.norm(J[:, :1], axis=-1, keepdims=True)
        noise = rng.standard_normal((count, K, n))
        noise /= np.linalg.norm(noise, axis=-1, keepdims=True)
        J = (g1 + 0.4 * noise) * rng.uniform(0.5, 2.0, size=(count, K, 1))  # cos(g_1, g_j) >= ~0.55
        J[:, 0] = g1[:, 0] * rng.uniform(0.5, 2.0, size=(count, 1))
    return J


# ============================================================================ one aggregation


def _as_method(method: str | Method, hparams: dict | None = None) -> Method:
    return _methods.resolve(method, hparams)  # losses and J are both provided here


def aggregate(method: str | Method, J: Any, *, losses: Any = None, seed: int = 0,
              hparams: dict | None = None) -> tuple[np.ndarray, np.ndarray]:
    """One step of ``method`` as an aggregator on a single Jacobian ``J [K, n]``.

    Returns ``(direction [n], weights [K])``; the direction is the step's (:meth:`Step.direction`:
    the method's own for a direction method such as GradDrop, ``weights @ J`` otherwise). Fresh state; ``rng`` seeded with ``seed``;
    ``losses`` (needed by FAMO) default to ones.
    """
    m = _as_method(method, hparams)
    J = np.asarray(J, dtype=np.float64)
    if J.ndim != 2 or J.shape[0] < 1 or J.shape[1] < 1:
        raise ValueError(f"J must have shape [K, n] with K, n >= 1, got {J.shape}")
    if not np.isfinite(J).all():
        raise ValueError("J contains NaN or inf")
    K = J.shape[0]
    loss = np.ones(K) if losses is None else np.asarray(losses, dtype=np.float64).reshape(-1)
    if loss.shape != (K,):
        raise ValueError(f"losses must have {K} entries (one per row of J), got {loss.shape}")
    G = J @ J.T
    out = m(G[None], losses=loss[None], jacobian=J[None], state=m.init(1, K),
            rng=np.random.default_rng(seed))
    w = np.asarray(out.weights, dtype=np.float64)[0]
    return out.direction(J[None])[0], w


# ============================================================================ property checks


@dataclass
class PropertyReport:
    """Outcome of the property checks for one method (plain data)."""

    method: str
    display_name: str
    holds: dict[str, bool]
    worst: dict[str, dict[str, Any]]  # property -> {"value", "family", "K", "sample"}
    checked: dict[str, int]           # property -> number of samples checked
    tol: float
    tau: float
    seconds: float = 0.0
    paper: tuple[bool, bool, bool] | None = None
    notes: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        d: dict[str, Any] = {p: bool(self.holds[p]) for p in PROPERTIES}
        d["worst_violation"] = {p: dict(self.worst[p]) for p in PROPERTIES}
        d["checked"] = dict(self.checked)
        d["display_name"] = self.display_name
        d["paper"] = None if self.paper is None else dict(zip(PAPER_PROPERTIES, self.paper))
        d["notes"] = list(self.notes)
        return d


def _floor(J: np.ndarray, w: np.ndarray | None = None) -> float:
    """Round-off level of a direction built from ``J`` (and weights ``w``): directions shorter
    than this (1e-6 of the gradients) are numerically zero (e.g. huge weights cancelling on a rank-deficient ``J``)."""
    mags = float(np.linalg.norm(J))
    if w is not None:
        mags = max(mags, float(np.abs(w) @ np.linalg.norm(J, axis=1)))
    return 1e-6 * max(mags, 1e-300)


def _v_nonconflict(J: np.ndarray, d: np.ndarray, w: np.ndarray | None = None) -> float:
    """``max_i max(0, -g_i.d) / (||g_i|| ||d||)`` (a negative cosine); ~0 when d is round-off."""
    norms = np.linalg.norm(J, axis=1)
    dn = max(float(np.linalg.norm(d)), _floor(J, w))
    ok = norms > 0
    if not ok.any():
        return 0.0
    return float(max(0.0, np.max(-(J[ok] @ d) / (norms[ok] * dn))))


def _v_weighted(J: np.ndarray, d: np.ndarray, w: np.ndarray | None = None) -> float:
    """Relative distance of ``d`` from the row space of ``J`` (numerical rank from the SVD)."""
    _, s, vt = np.linalg.svd(J, full_matrices=False)
    r = int(np.sum(s > 1e-10 * max(float(s[0]), 1e-300)))
    resid = d - vt[:r].T @ (vt[:r] @ d)
    return float(np.linalg.norm(resid) / max(float(np.linalg.norm(d)), _floor(J, w)))


def _rel(a: np.ndarray, b: np.ndarray, J: np.ndarray) -> float:
    return float(np.linalg.norm(a - b) / max(float(np.linalg.norm(a)), float(np.linalg.norm(b)), _floor(J)))


def _normalized_weights(J: np.ndarray, d: np.ndarray, w: np.ndarray, direct: bool) -> np.ndarray:
    """Coefficients ``omega`` of ``d`` in the unit gradients ``g_i / ||g_i||``."""
    if direct:  # the method gave d itself: recover weights by least squares
        w, *_ = np.linalg.lstsq(J.T, d, rcond=None)
    return w * np.linalg.norm(J, axis=1)


def _v_progress(J: np.ndarray, d: np.ndarray, omega: np.ndarray, tau: float) -> float:
    """Shortfall ``max_j (tau - g~_j . d~)`` with ``d~ = d / omega_1``; 1 when ``omega_1 <= 0``."""
    norms = np.linalg.norm(J, axis=1)
    if omega[0] <= 1e-12 * max(float(np.abs(omega).max()), 1e-300):
        return 1.0 if np.linalg.norm(d) > _floor(J) or tau > 0 else 0.0
    prog = (J[1:] @ d) / (norms[1:] * omega[0])
    return float(max(0.0, np.max(tau - prog)))


def _feasible(J: np.ndarray, tau: float) -> bool:
    from pcd.qp import solve_qp

    Jn = J / np.linalg.norm(J, axis=1, keepdims=True)
    return bool(np.all(solve_qp(Jn @ Jn.T, tau).feasible))


def check_properties(method: str | Method, *, K_values: Sequence[int] = (2, 3, 5), samples: int = 4,
                     seed: int = 0, tau: float = 0.02, tol: float = 1e-5,
                     hparams: dict | None = None) -> PropertyReport:
    """Check the five properties of ``method`` on sampled Jacobians (see the module docstring).

    ``samples`` Jacobians per family and per ``K``; ``tau`` is the share used by the
    pass-through and per-secondary-progress checks (PCD's default 0.02; PCD itself is evaluated
    with its own ``tau`` hyper-parameter, set it through ``hparams`` to match).
    """
    m = _as_method(method, hparams)
    samples = _check_int(samples, "samples", 1, 200)
    if not isinstance(tau, (int, float)) or not (0.0 <= float(tau) <= 1.0):
        raise ValueError(f"tau must be a number in [0, 1], got {tau!r}")
    if not isinstance(tol, (int, float)) or not (0.0 < float(tol) < 1.0):
        raise ValueError(f"tol must be a number in (0, 1), got {tol!r}")
    Ks = [_check_int(k, "K", 2, 32) for k in K_values]
    if not Ks:
        raise ValueError("K_values must list at least one K")
    t0 = time.perf_counter()
    rng = np.random.default_rng([seed, 7])
    worst: dict[str, dict[str, Any]] = {p: {"value": -1.0, "family": None, "K": None, "sample": None}
                                        for p in PROPERTIES}
    checked = {p: 0 for p in PROPERTIES}
    notes: list[str] = []
    direct = False

    def record(p: str, v: float, fam: str, K: int, i: int) -> None:
        checked[p] += 1
        if not math.isfinite(v):
            v = float("inf")
        if v > worst[p]["value"]:
            worst[p] = {"value": v, "family": fam, "K": K, "sample": i}

    def agg(J: np.ndarray, losses: np.ndarray, s: int) -> tuple[np.ndarray, np.ndarray]:
        nonlocal direct
        d, w = aggregate(m, J, losses=losses, seed=s)
        if not np.allclose(d, w @ J, rtol=1e-9, atol=_floor(J)):
            direct = True
        return d, w

    skipped = 0
    for K in Ks:
        for fam in FAMILIES:
            Js = sample_jacobians(fam, K, samples, seed=seed)
            for i, J in enumerate(Js):
                s = int(rng.integers(2**31))
                base_loss = rng.uniform(0.5, 2.0, size=K)
                d, w = agg(J, base_loss, s)
                wf = None if direct else w
                record("non_conflicting", _v_nonconflict(J, d, wf), fam, K, i)
                record("weighted", _v_weighted(J, d, wf), fam, K, i)
                # linear under scaling: A(diag(a c1 + b c2) J) = a A(diag(c1) J) + b A(diag(c2) J)
                c1, c2 = rng.uniform(0.1, 10.0, size=(2, K))
                a, b = rng.uniform(0.2, 2.0, size=2)
                c3 = a * c1 + b * c2
                d1, _ = agg(c1[:, None] * J, c1 * base_loss, s)
                d2, _ = agg(c2[:, None] * J, c2 * base_loss, s)
                d3, _ = agg(c3[:, None] * J, c3 * base_loss, s)
                record("linear_under_scaling", _rel(d3, a * d1 + b * d2, J), fam, K, i)
                # primary-anchored (b): the secondaries' scales do not move the update
                cs = np.concatenate([[1.0], rng.uniform(0.1, 10.0, size=K - 1)])
                ds, _ = agg(cs[:, None] * J, cs * base_loss, s)
                record("primary_anchored", _rel(ds, d, J), fam, K, i)
                # per-secondary progress with the primary's coefficient pinned to 1
                if _feasible(J, tau):
                    omega = _normalized_weights(J, d, w, direct)
                    record("per_secondary_progress", _v_progress(J, d, omega, tau), fam, K, i)
                else:
                    skipped += 1
        # primary-anchored (a): pass-through when g_1 already gives every secondary its share
        for i, J in enumerate(sample_jacobians("aligned", K, samples, seed=seed)):
            base_loss = rng.uniform(0.5, 2.0, size=K)
            s = int(rng.integers(2**31))
            un = J / np.linalg.norm(J, axis=1, keepdims=True)
            if np.min(un[1:] @ un[0]) < tau:  # g_1 does not give every secondary its share here
                continue
            d, _ = agg(J, base_loss, s)
            record("primary_anchored", _rel(d, J[0], J), "aligned", K, i)
    if skipped:
        notes.append(f"per-secondary progress: {skipped} sample(s) with mutually incompatible "
                     f"secondary constraints (tau = {tau}) skipped")
    if direct:
        notes.append("the method returns its direction directly (not weights @ J)")
    for p in PROPERTIES:
        if checked[p] == 0:
            worst[p]["value"] = None
            notes.append(f"{p}: no sample could be checked")
    holds = {p: checked[p] > 0 and worst[p]["value"] < tol for p in PROPERTIES}
    cls = type(m)
    return PropertyReport(method=cls.name, display_name=cls.display_name or cls.name, holds=holds,
                          worst=worst, checked=checked, tol=float(tol), tau=float(tau),
                          seconds=time.perf_counter() - t0, paper=PAPER_TABLE.get(cls.name), notes=notes)


def property_table(methods: Sequence[str] | None = None, *, samples: int = 4, seed: int = 0,
                   tau: float = 0.02, tol: float = 1e-5, K_values: Sequence[int] = (2, 3, 5),
                   progress: Callable[[float, str], None] | None = None) -> dict[str, dict[str, Any]]:
    """``{method: PropertyReport.to_dict()}`` for ``methods`` (default: every registry method).

    PCD is evaluated with ``tau`` as its hyper-parameter, so its QP and the checks agree.
    """
    names = list(_methods.available()) if methods is None else [str(x).strip().lower() for x in methods]
    if not names:
        raise ValueError("give at least one method")
    known = set(_methods.available())
    bad = [x for x in names if x not in known]
    if bad:
        raise ValueError(f"unknown method(s) {bad}; available: {', '.join(_methods.available())}")
    out: dict[str, dict[str, Any]] = {}
    for i, name in enumerate(names):
        if progress is not None:
            progress(i / len(names), f"checking {name}")
        knob = _methods.get(name).primary_knob
        hp = {knob: float(tau)} if knob == "tau" else None
        out[name] = check_properties(name, samples=samples, seed=seed, tau=tau, tol=tol,
                                     K_values=K_values, hparams=hp).to_dict()
    if progress is not None:
        progress(1.0, "done")
    return out


# ============================================================================ IWRM

IWRM_DEFAULT_METHODS = ("ws", "upgrad", "mgda", "pcgrad", "pcd")


def _torch():
    import torch

    return torch


def TinyCNN(width: int = 8, num_classes: int = 10):
    """A tiny CNN for 8x8 digits without BatchNorm.

    ``conv3x3(1 -> w)-ReLU-conv3x3(w -> 2w)-ReLU-maxpool2-linear(2w*16 -> 10)`` (``width = 8``:
    3,802 parameters). No BatchNorm on purpose: in IWRM every sample's loss must depend on that
    sample alone, and TorchJD's autogram engine with ``batch_dim=0`` rejects BatchNorm (the
    pruning models' :class:`pcd.train.models.SmallCNN` uses BatchNorm, so it is not reused here).
    """
    from torch import nn

    w = _check_int(width, "width", 1, 256)
    return nn.Sequential(
        nn.Conv2d(1, w, 3, padding=1), nn.ReLU(),
        nn.Conv2d(w, 2 * w, 3, padding=1), nn.ReLU(),
        nn.MaxPool2d(2), nn.Flatten(),
        nn.Linear(2 * w * 16, _check_int(num_classes, "num_classes", 2, 1000)),
    )


@dataclass(frozen=True)
class IWRMConfig:
    """Settings of one IWRM comparison (validated on construction).

    ``n_train`` samples of the digits training split (the paper uses 1024-image subsets), batches
    of ``batch_size`` objectives, ``steps`` SGD steps at the fixed ``lr`` for every method (the
    paper tunes one fixed lr per method; we use one shared lr), metrics every ``eval_every`` steps.
    ``tau`` is PCD's share. ``lr_overrides`` sets a method's own lr as ``(name, lr)`` pairs; by
    default PCGrad's lr is ``lr / batch_size`` because PCGrad *sums* the B projected gradients
    (its definition in the paper and TorchJD) while Mean, UPGrad, MGDA and PCD are on the scale of
    one averaged gradient -- with the shared lr PCGrad diverges.
    """

    methods: tuple[str, ...] = IWRM_DEFAULT_METHODS
    seeds: tuple[int, ...] = (0, 1)
    steps: int = 100
    batch_size: int = 32
    lr: float = 0.05
    n_train: int = 1024
    width: int = 8
    eval_every: int = 10
    tau: float = 0.02
    lr_overrides: tuple[tuple[str, float], ...] | None = None

    def lr_for(self, name: str) -> float:
        """The learning rate used for method ``name``."""
        if self.lr_overrides is None:
            return float(self.lr) / self.batch_size if name == "pcgrad" else float(self.lr)
        return float(dict(self.lr_overrides).get(name, self.lr))

    def __post_init__(self) -> None:
        methods = tuple(str(m).strip().lower() for m in self.methods)
        if not methods:
            raise ValueError("give at least one method")
        known = set(_methods.available())
        bad = [m for m in methods if m not in known]
        if bad:
            raise ValueError(f"unknown method(s) {bad}; available: {', '.join(_methods.available())}")
        object.__setattr__(self, "methods", methods)
        seeds = tuple(self.seeds)
        if not seeds or len(seeds) > 20:
            raise ValueError(f"give 1 to 20 seeds, got {len(seeds)}")
        object.__setattr__(self, "seeds", tuple(_check_int(s, "seed", 0, 2**31 - 1) for s in seeds))
        _check_int(self.steps, "steps", 1, 5000)
        _check_int(self.batch_size, "batch_size", 2, 128)
        _check_int(self.n_train, "n_train", 16, 1437)
        if self.batch_size > self.n_train:
            raise ValueError(f"batch_size ({self.batch_size}) must not exceed n_train ({self.n_train})")
        _check_int(self.width, "width", 1, 64)
        _check_int(self.eval_every, "eval_every", 1, 5000)
        if isinstance(self.lr, bool) or not isinstance(self.lr, (int, float)) or not (0.0 < float(self.lr) <= 10.0):
            raise ValueError(f"lr must be a number in (0, 10], got {self.lr!r}")
        if isinstance(self.tau, bool) or not isinstance(self.tau, (int, float)) or not (0.0 <= float(self.tau) <= 1.0):
            raise ValueError(f"tau must be a number in [0, 1], got {self.tau!r}")
        if self.lr_overrides is not None:
            pairs = []
            for item in (self.lr_overrides.items() if isinstance(self.lr_overrides, dict) else self.lr_overrides):
                try:
                    name, lr = item
                    lr = float(lr)
                except (TypeError, ValueError):
                    raise ValueError(f"lr_overrides must be (method, lr) pairs, got {item!r}") from None
                if not (0.0 < lr <= 10.0):
                    raise ValueError(f"lr for {name} must be in (0, 10], got {lr}")
                pairs.append((str(name).lower(), lr))
            object.__setattr__(self, "lr_overrides", tuple(pairs))


def _digits(n_train: int):
    torch = _torch()
    from pcd.train.data import load_digits_arrays

    xtr, ytr, xte, yte = load_digits_arrays()
    keep = np.sort(np.random.default_rng(0).permutation(len(ytr))[:n_train])
    xtr, ytr = xtr[keep], ytr[keep]
    mean, std = float(xtr.mean()), float(xtr.std())
    f = lambda a: torch.from_numpy((a.astype(np.float32) - mean) / std)  # noqa: E731
    return f(xtr), torch.from_numpy(ytr), f(xte), torch.from_numpy(yte)


def _per_sample_jacobian(model, x, y):
    """Per-sample losses ``[B]`` and Jacobian ``[B, n]`` (``torch.func.vmap`` of ``grad``)."""
    torch = _torch()
    from torch.func import functional_call, grad_and_value, vmap

    params = {k: v.detach() for k, v in model.named_parameters()}

    def loss_one(p, xi, yi):
        out = functional_call(model, p, (xi[None],))
        return torch.nn.functional.cross_entropy(out, yi[None])

    grads, losses = vmap(grad_and_value(loss_one), in_dims=(None, 0, 0))(params, x, y)
    J = torch.cat([grads[k].reshape(x.shape[0], -1) for k in params], dim=1)
    return losses, J


def run_iwrm(config: IWRMConfig | None = None, *,
             progress: Callable[[float, str], None] | None = None) -> dict[str, Any]:
    """Instance-wise risk minimization on digits (see the module docstring).

    Returns ``{"config", "steps" [E], "methods": {name: {"train_loss" [S, E], "test_acc" [S, E],
    "cosine" [S, T], "final_train_loss", "final_test_acc" (mean over seeds), "seconds"}}}`` with
    ``E`` evaluation points (step 0 included), ``T = steps`` and ``S`` seeds, as lists.
    ``cosine[t]`` is the cosine between step ``t``'s update and the SGD gradient (the batch mean).
    """
    cfg = config if config is not None else IWRMConfig()
    torch = _torch()
    F = torch.nn.functional
    xtr, ytr, xte, yte = _digits(cfg.n_train)
    eval_steps = sorted(set([0] + list(range(cfg.eval_every, cfg.steps + 1, cfg.eval_every)) + [cfg.steps]))
    total = len(cfg.methods) * len(cfg.seeds)
    result: dict[str, Any] = {"config": {k: (list(v) if isinstance(v, tuple) else v)
                                         for k, v in cfg.__dict__.items()},
                              "steps": eval_steps, "methods": {}}

    def evaluate(model) -> tuple[float, float]:
        with torch.no_grad():
            tl = float(F.cross_entropy(model(xtr), ytr))
            acc = float((model(xte).argmax(1) == yte).float().mean())
        return tl, acc

    done = 0
    for name in cfg.methods:
        t0 = time.perf_counter()
        losses_all, accs_all, cos_all, diverged_at = [], [], [], []
        for seed in cfg.seeds:
            if progress is not None:
                progress(done / total, f"{name}, seed {seed}")
            torch.manual_seed(seed)
            model = TinyCNN(cfg.width)
            knob = _methods.get(name).primary_knob
            hp = {knob: float(cfg.tau)} if knob == "tau" else {}
            method = _methods.make(name, **hp)
            hier = method.hierarchical
            K = cfg.batch_size + (1 if hier else 0)
            state = method.init(1, K)
            rng = np.random.default_rng(seed)
            gen = torch.Generator().manual_seed(seed)
            perm = torch.randperm(cfg.n_train, generator=gen)
            pos = 0
            lr = cfg.lr_for(name)
            tl, acc = evaluate(model)
            curve_l, curve_a, cosines = [tl], [acc], []
            diverged = None
            for step in range(1, cfg.steps + 1):
                if pos + cfg.batch_size > cfg.n_train:  # drop the last partial batch: K stays fixed
                    perm, pos = torch.randperm(cfg.n_train, generator=gen), 0
                idx = perm[pos:pos + cfg.batch_size]
                pos += cfg.batch_size
                losses, J = _per_sample_jacobian(model, xtr[idx], ytr[idx])
                if not (torch.isfinite(J).all() and torch.isfinite(losses).all()):
                    diverged = step  # the rest of the curves stay NaN (null in JSON)
                    break
                Jn = J.double().numpy()
                ln = losses.detach().double().numpy()
                if hier:  # primary = the mean loss, secondaries = the per-sample losses
                    Jn = np.vstack([Jn.mean(axis=0, keepdims=True), Jn])
                    ln = np.concatenate([[ln.mean()], ln])
                G = Jn @ Jn.T
                out = method(G[None], losses=ln[None], jacobian=Jn[None], state=state, rng=rng)
                state = out.state
                d = out.direction(Jn[None])[0]
                sgd = Jn[1:].mean(axis=0) if hier else Jn.mean(axis=0)
                nd, ns = np.linalg.norm(d), np.linalg.norm(sgd)
                cosines.append(float(d @ sgd / (nd * ns)) if nd > 0 and ns > 0 else 0.0)
                if not np.isfinite(d).all():
                    diverged = step
                    break
                with torch.no_grad():
                    off = 0
                    dt = torch.from_numpy(d).float()
                    for p in model.parameters():
                        k = p.numel()
                        p -= lr * dt[off:off + k].view_as(p)
                        off += k
                if step in eval_steps:
                    tl, acc = evaluate(model)
                    curve_l.append(tl)
                    curve_a.append(acc)
            if diverged is not None:
                diverged_at.append(diverged)
            pad = len(eval_steps) - len(curve_l)
            losses_all.append(curve_l + [math.nan] * pad)
            accs_all.append(curve_a + [math.nan] * pad)
            cos_all.append(cosines + [math.nan] * (cfg.steps - len(cosines)))
            done += 1
        result["methods"][name] = {
            "display_name": _methods.get(name).display_name or name,
            "train_loss": losses_all, "test_acc": accs_all, "cosine": cos_all,
            "final_train_loss": float(np.mean([c[-1] for c in losses_all])),
            "final_test_acc": float(np.mean([c[-1] for c in accs_all])),
            "early_cosine": float(np.mean([np.mean(c[: max(1, len(c) // 5)]) for c in cos_all])),
            "late_cosine": float(np.mean([np.mean(c[-max(1, len(c) // 5):]) for c in cos_all])),
            "lr": cfg.lr_for(name),
            "diverged_at": diverged_at,
            "seconds": time.perf_counter() - t0,
        }
    if progress is not None:
        progress(1.0, "done")
    return result


# ============================================================================ Gramian memory

MEMORY_MODES = ("erm", "jacobian", "autojac", "autogram")
_TORCHJD_MODES = ("autojac", "autogram")
_MODE_LABELS = {
    "erm": "ERM: one backward of the mean loss (reference)",
    "jacobian": "materialized per-sample Jacobian J [B, n], then G = J J^T (ours, torch.func vmap)",
    "autojac": "TorchJD autojac.backward: materialized Jacobian (the paper's plain SSJD), then G",
    "autogram": "TorchJD autogram Engine: G without materializing J (Gramian reverse accumulation)",
}


def torchjd_available() -> bool:
    """True when ``torchjd`` (with ``torchjd.autogram``) can be imported."""
    try:
        from torchjd.autogram import Engine  # noqa: F401
    except Exception:
        return False
    return True


_LIBC = None


def _rss_tools() -> bool:
    """Make RSS track live memory (glibc: fixed mmap threshold, so big blocks go back to the OS)
    and check that the peak RSS can be reset (Linux ``/proc/self/clear_refs``)."""
    global _LIBC
    if not os.path.exists("/proc/self/clear_refs"):
        return False
    try:
        if _LIBC is None:
            _LIBC = ctypes.CDLL("libc.so.6")
            _LIBC.mallopt(-3, 128 * 1024)  # M_MMAP_THRESHOLD: disables glibc's dynamic threshold
            _LIBC.mallopt(-1, 128 * 1024)  # M_TRIM_THRESHOLD
        with open("/proc/self/clear_refs", "w") as fh:
            fh.write("5")
    except OSError:
        return False
    return True


def _status_kb(key: str) -> int:
    with open("/proc/self/status") as fh:
        for line in fh:
            if line.startswith(key + ":"):
                return int(line.split()[1])
    raise OSError(f"{key} not in /proc/self/status")


def _one_step(mode: str, model, engine, x, y) -> Any:
    torch = _torch()
    F = torch.nn.functional
    if mode == "erm":
        model.zero_grad(set_to_none=True)
        F.cross_entropy(model(x), y).backward()
        return None
    if mode == "jacobian":
        _, J = _per_sample_jacobian(model, x, y)
        G = J @ J.T
        d = J.mean(dim=0)  # the update itself: weights @ J (Mean weights; any aggregator would do)
        return G, d
    losses = F.cross_entropy(model(x), y, reduction="none")
    if mode == "autojac":
        from torchjd.autojac import backward

        params = list(model.parameters())
        backward(losses, inputs=params)
        J = torch.cat([p.jac.reshape(losses.shape[0], -1) for p in params], dim=1)
        for p in params:
            del p.jac
        return J @ J.T, J.mean(dim=0)
    G = engine.compute_gramian(losses)
    model.zero_grad(set_to_none=True)
    losses.backward(torch.full_like(losses, 1.0 / losses.shape[0]))  # the same update, by backward
    return G, None


def measure_gramian_memory(batch_sizes: Sequence[int] = (8, 16, 32, 64, 128), *, width: int = 16,
                           image_size: int = 8, repeats: int = 3, device: str = "cpu",
                           modes: Sequence[str] = MEMORY_MODES, seed: int = 0,
                           progress: Callable[[float, str], None] | None = None) -> dict[str, Any]:
    """Peak memory and time of one step per mode and batch size (see the module docstring).

    Memory on CPU: growth of the process's peak resident set over the step (Linux: the peak is
    reset through ``/proc/self/clear_refs`` and glibc's mmap threshold is fixed so freed tensors
    leave the resident set); on CUDA: ``torch.cuda.max_memory_allocated`` over the step. Both
    are taken above the memory held before the step (model, inputs). Time: median over
    ``repeats`` steps after one warm-up. Returns ``{"batch_sizes", "n_params", "device",
    "memory_source", "modes": {mode: {"peak_mb" [..], "seconds" [..], "label"}},
    "reduction_vs_autojac" / "reduction_vs_jacobian" [..] (1 - autogram peak / that peak),
    "gram_rel_max_diff" [..] (largest relative difference between the modes' Gram matrices)}``.
    ``autojac`` and ``autogram`` need ``torchjd``; they are skipped (listed in ``"skipped"``)
    when it is not installed.
    """
    torch = _torch()
    bs = [_check_int(b, "batch size", 1, 4096) for b in batch_sizes]
    if not bs:
        raise ValueError("give at least one batch size")
    width = _check_int(width, "width", 1, 256)
    image_size = _check_int(image_size, "image_size", 4, 64)
    repeats = _check_int(repeats, "repeats", 1, 50)
    modes = [str(m).lower() for m in modes]
    bad = [m for m in modes if m not in MEMORY_MODES]
    if bad or not modes:
        raise ValueError(f"unknown mode(s) {bad}; allowed: {', '.join(MEMORY_MODES)}")
    if device not in ("cpu", "cuda"):
        raise ValueError(f"device must be 'cpu' or 'cuda', got {device!r}")
    if device == "cuda" and not torch.cuda.is_available():
        raise ValueError("device 'cuda' requested but no CUDA GPU is available")
    skipped = []
    if any(m in _TORCHJD_MODES for m in modes) and not torchjd_available():
        skipped = [f"{m} (torchjd is not installed: pip install torchjd==0.18.0)" for m in modes
                   if m in _TORCHJD_MODES]
        modes = [m for m in modes if m not in _TORCHJD_MODES]
        if not modes:
            raise ValueError("every requested mode needs torchjd, which is not installed "
                             "(pip install torchjd==0.18.0)")
    if device == "cpu":
        rss_ok = _rss_tools()
        source = ("peak resident set growth (Linux /proc, glibc)" if rss_ok
                  else "not available on this platform (needs Linux /proc/self/clear_refs)")
    else:
        rss_ok, source = False, "torch.cuda.max_memory_allocated"
    dev = torch.device(device)
    torch.manual_seed(seed)
    model = TinyCNN(width).to(dev)
    n_params = sum(p.numel() for p in model.parameters())
    engine, model_ag = None, None
    if "autogram" in modes:
        import copy

        from torchjd.autogram import Engine

        # The engine hooks its model's forward passes, so it gets its own copy (same weights):
        # forwards of the other modes must not be recorded by it.
        model_ag = copy.deepcopy(model)
        engine = Engine(model_ag, batch_dim=0)
    out: dict[str, Any] = {"batch_sizes": bs, "n_params": int(n_params), "device": device, "width": width,
                           "image_size": image_size, "memory_source": source, "skipped": skipped,
                           "modes": {m: {"label": _MODE_LABELS[m], "peak_mb": [], "seconds": []} for m in modes}}
    gen = torch.Generator().manual_seed(seed)
    diffs = []
    total, done = len(bs) * len(modes), 0
    for b in bs:
        x = torch.randn(b, 1, image_size, image_size, generator=gen).to(dev)
        y = torch.randint(0, 10, (b,), generator=gen).to(dev)
        grams = {}
        for mode in modes:
            if progress is not None:
                progress(done / total, f"{mode}, batch {b}")
            net = model_ag if mode == "autogram" else model
            res = _one_step(mode, net, engine, x, y)  # warm-up (and the Gram for the cross-check)
            if res is not None:
                grams[mode] = res[0].detach().double().cpu()
            del res
            times, peaks = [], []
            for _ in range(repeats):
                gc.collect()
                if device == "cuda":
                    torch.cuda.synchronize()
                    torch.cuda.reset_peak_memory_stats()
                    base = torch.cuda.memory_allocated()
                elif rss_ok:
                    _rss_tools()
                    base = _status_kb("VmRSS") * 1024
                t0 = time.perf_counter()
                res = _one_step(mode, net, engine, x, y)
                if device == "cuda":
                    torch.cuda.synchronize()
                times.append(time.perf_counter() - t0)
                if device == "cuda":
                    peaks.append((torch.cuda.max_memory_allocated() - base) / 2**20)
                elif rss_ok:
                    peaks.append(max(0, _status_kb("VmHWM") * 1024 - base) / 2**20)
                del res
            out["modes"][mode]["seconds"].append(float(np.median(times)))
            out["modes"][mode]["peak_mb"].append(float(np.median(peaks)) if peaks else None)
            done += 1
        if len(grams) >= 2:  # every mode must give the same Gram matrix
            ref = next(iter(grams.values()))
            diffs.append(max(float((g - ref).abs().max() / max(float(ref.abs().max()), 1e-30))
                             for g in grams.values()))
    out["gram_rel_max_diff"] = diffs
    if "autogram" in out["modes"] and (rss_ok or device == "cuda"):
        a = out["modes"]["autogram"]["peak_mb"]
        for ref in ("jacobian", "autojac"):
            if ref in out["modes"]:
                j = out["modes"][ref]["peak_mb"]
                out[f"reduction_vs_{ref}"] = [1.0 - ai / ji if ji else None for ji, ai in zip(j, a)]
    if progress is not None:
        progress(1.0, "done")
    return out


# ============================================================================ rows for tables / CSV


def property_rows(table: dict[str, dict[str, Any]]) -> list[dict[str, Any]]:
    """One flat row per method (for a data frame / CSV): verdicts, worst violations, paper's verdict."""
    if not isinstance(table, dict):
        raise ValueError("properties table must be a {method: report} dict")
    rows = []
    for name, rep in table.items():
        row: dict[str, Any] = {"method": name, "display_name": rep.get("display_name", name)}
        for p in PROPERTIES:
            row[p] = bool(rep[p])
            row[f"{p}_worst"] = rep["worst_violation"][p]["value"]
            row[f"{p}_where"] = (f"{rep['worst_violation'][p]['family']}, K={rep['worst_violation'][p]['K']}"
                                 if rep["worst_violation"][p]["family"] else "")
        pp = rep.get("paper")
        row["all_three_jd"] = all(row[p] for p in PAPER_PROPERTIES)
        row["paper_all_three"] = None if not pp else all(pp.values())
        row["matches_paper"] = None if not pp else all(pp[p] == row[p] for p in PAPER_PROPERTIES)
        rows.append(row)
    return rows


def iwrm_rows(result: dict[str, Any]) -> list[dict[str, Any]]:
    """One row per IWRM method: final training loss / test accuracy (mean over seeds), cosines."""
    if not isinstance(result, dict) or "methods" not in result:
        raise ValueError("IWRM result must be the dict returned by run_iwrm")
    return [{"method": name, "display_name": r["display_name"], "lr": r["lr"],
             "final_train_loss": r["final_train_loss"], "final_test_acc_pct": 100.0 * r["final_test_acc"],
             "early_cosine": r["early_cosine"], "late_cosine": r["late_cosine"],
             "diverged_runs": len(r["diverged_at"]), "seconds": r["seconds"]}
            for name, r in result["methods"].items()]


def memory_rows(mem: dict[str, Any]) -> list[dict[str, Any]]:
    """One row per (mode, batch size): peak MB and seconds per step."""
    if not isinstance(mem, dict) or "modes" not in mem:
        raise ValueError("memory result must be the dict returned by measure_gramian_memory")
    return [{"mode": mode, "batch_size": b, "peak_mb": pk, "seconds_per_step": t}
            for mode, r in mem["modes"].items()
            for b, pk, t in zip(mem["batch_sizes"], r["peak_mb"], r["seconds"])]
