"""Every method viewed as an *aggregator* ``A: J -> d`` and checked for the properties it claims.

The checker behind ``Method.claims`` (one shared test checks every method) and the Jacobian-descent
page's property table (Quinton & Rey, "Jacobian Descent for Multi-Objective Optimization",
arXiv 2406.16232; PCD paper, arXiv 2606.29521).

:func:`property_table` -- every registry method viewed as an *aggregator* ``A: J -> d`` and
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
"""
from __future__ import annotations

import math
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from pcd import _validate as V
from pcd import methods as _methods
from pcd.methods.base import Method

__all__ = [
    "PROPERTIES", "PAPER_PROPERTIES", "FAMILIES", "PAPER_TABLE", "sample_jacobians", "aggregate",
    "PropertyReport", "check_properties", "property_table", "property_rows",
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
    seed = V.seed(seed)
    names = list(_methods.available()) if methods is None else _methods.parse_names(methods, duplicates="drop")
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
