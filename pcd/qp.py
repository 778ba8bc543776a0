"""The PCD quadratic programme, solved exactly from the Gram matrix alone.

PCD direction (PCD paper, arXiv 2606.29521, eq. (3); normalized gradients ``g~_i``):

    d~ = argmin_d ||d - g~_1||^2   s.t.   g~_j . d >= tau_j ||g~_j||^2,   j = 2..K.

By the KKT conditions ``d~ = g~_1 + sum_j mu_j g~_j`` with ``mu >= 0``: the primary's coefficient is
pinned to 1 and everything depends only on the K x K Gram matrix ``G = J J^T``. With
``S = G[1:, 1:]``, ``c = G[1:, 0]`` and ``b_j = tau_j G_jj`` the multipliers solve the dual

    min_{mu >= 0}  1/2 mu^T S mu + (c - b)^T mu,

a non-negative QP (an LCP ``w = S mu + c - b >= 0, mu >= 0, w^T mu = 0``).

Solvers (all exact up to floating point; none enumerates the 2^(K-1) subsets):

* K = 1: the primary, ``weights = [1]``.
* K = 2: the closed form ``mu = max(0, (tau ||g~_2||^2 - g~_1.g~_2) / ||g~_2||^2)`` (paper, Prop. 3.2).
* K = 3: Cramer's rule on the 2x2 active system, over the four candidate active sets, vectorized.
* any K: block principal pivoting (Judice & Pires, 1994) on the dual LCP -- a handful of Cholesky
  solves -- verified by the KKT conditions, with an exact Goldfarb-Idnani dual active-set method
  (Goldfarb & Idnani, 1983) in Gram coordinates as the fallback for rank-deficient or degenerate
  cases. Goldfarb-Idnani keeps the active constraint normals linearly independent and detects
  infeasibility (Farkas: ``sum_j mu_j g_j = 0`` with ``sum_j mu_j b_j > 0``).

Zero secondaries (``G_jj = 0``) are ignored. Mutually incompatible constraints (possible only
for K >= 3, e.g. anti-parallel secondaries with tau > 0) give ``feasible = False`` and the
primary's weights ``[1, 0, ..., 0]`` for that step. So do constraints that are compatible only by
a direction ~1e8 times longer than the gradients (:data:`_LONG`), or whose answer does not verify:
nearly dependent secondaries (``g_6 ~ -g_2``, three secondaries nearly in a plane) where Gram
arithmetic cannot resolve the slacks -- a flagged step, never a "feasible" direction that violates
a constraint. Every answer is checked by the KKT conditions with a rounding-aware tolerance
(:func:`_kkt_excess`); Goldfarb-Idnani's dependence test allows for the active set's condition
number in its cautious pass, and a constraint implied by the active ones is judged by its exact
implied slack (from the ``b``'s), not by a rounded one. With ``tau = 0`` (``d = 0`` feasible) the
answer is never flagged.

The same machinery projects any target ``sum_i u_i g_i`` onto a polyhedron of half-spaces in the
span of the gradients (:func:`project`), which is what UPGrad / DualProj need, and solves a
general non-negative QP (:func:`solve_nnqp`).
"""
from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
import scipy.linalg

import pcd._validate as V  # not "from pcd import": pcd/__init__ imports this module (no import cycle)
from pcd._fast import all_finite
from pcd._kernels import AVAILABLE, formula, jit, where

__all__ = ["QPResult", "solve_qp", "project", "solve_nnqp", "check_tau"]

# Relative tolerances (scaled by the largest diagonal entry of the Gram matrix).
_ZERO_REL = 1e-24  # G_jj <= _ZERO_REL * scale  =>  gradient j is treated as exactly zero
_FEAS_REL = 1e-10  # slack >= -_FEAS_REL * scale counts as satisfied
_DEP_REL = 1e-12  # ||z||^2 <= _DEP_REL * ||g_p||^2  =>  g_p depends linearly on the active normals
_EPS = float(np.finfo(np.float64).eps)
# A secondary's term mu_j g_j longer than _LONG times the largest gradient: the constraints (some
# b_j > 0) are compatible, if at all, only by a direction ~1e8 times longer than any gradient, whose
# slacks Gram arithmetic resolves no better than ~1e-8 relative. Reported as incompatible
# (feasible = False) rather than as a step of that length (PCD's gradients are normalized: |d| ~ 1).
_LONG = 1e8


@dataclass(frozen=True)
class QPResult:
    """Solution of the PCD QP for one Gram matrix or a batch.

    weights   ``[..., K]``; ``weights[..., 0] == 1``; the direction is ``d~ = weights @ J~``.
    mu        ``[..., K-1]`` multipliers of the secondaries (``weights[..., 1:]``).
    active_mask ``[..., K]`` bool; True where a secondary's constraint binds (``mu_j > 0``).
    feasible  bool or ``[...]`` bool; False when the constraints are mutually incompatible, or
              compatible only at a length floating point cannot resolve (see the module
              docstring); then ``weights`` is the primary, ``[1, 0, ..., 0]``.
    """

    weights: np.ndarray
    mu: np.ndarray
    active_mask: np.ndarray
    feasible: Any

    @property
    def active(self) -> Any:
        """Indices (>= 1) of the binding secondaries: a tuple, or an object array of tuples."""
        if self.active_mask.ndim == 1:
            return tuple(int(i) for i in np.flatnonzero(self.active_mask))
        out = np.empty(self.active_mask.shape[:-1], dtype=object)
        for idx in np.ndindex(out.shape):
            out[idx] = tuple(int(i) for i in np.flatnonzero(self.active_mask[idx]))
        return out


def check_tau(tau: Any, K: int) -> np.ndarray:
    """Validate tau: a scalar or one value per secondary, each in [0, 1]. Returns ``[K-1]``.
    Typed: a string (``"0.1"``) is not a number."""
    if type(tau) is float and 0.0 <= tau <= 1.0:  # the common case, ~1 us instead of ~7 (NaN fails the test)
        return np.full(max(K - 1, 0), tau)
    if isinstance(tau, (str, bytes)) or (isinstance(tau, (list, tuple))
                                         and any(isinstance(t, (str, bytes, bool)) for t in tau)):
        raise ValueError(f"tau must be a number or a list of numbers in [0, 1], got {V.show(tau)}")
    try:
        arr = np.asarray(tau, dtype=np.float64)
    except (TypeError, ValueError):
        raise ValueError(f"tau must be a number or a list of numbers in [0, 1], got {tau!r}") from None
    if arr.ndim == 0:
        arr = np.full(max(K - 1, 0), float(arr))
    elif arr.ndim != 1 or arr.shape[0] != K - 1:
        raise ValueError(f"tau must be a scalar or have one value per secondary ({K - 1}), got shape {arr.shape}")
    if not np.isfinite(arr).all() or (arr < 0).any() or (arr > 1).any():
        raise ValueError(f"tau must lie in [0, 1] (one value per secondary allowed), got {np.asarray(tau).tolist()}")
    return arr


def _diag_max(g: np.ndarray) -> np.ndarray:
    """``max(0, max_i G_ii)`` per matrix (``[...]``), exactly. For a few objectives and a large batch
    a running ``np.maximum`` over the K diagonal columns (contiguous ``[B]`` operations) replaces the
    reduction along the short, strided last axis, which costs ~20x more at B = 1024, K = 2."""
    diag = np.diagonal(g, axis1=-2, axis2=-1)
    K = diag.shape[-1]
    if 1 <= K <= 8 and diag.size > 64:
        top = np.maximum(diag[..., 0], 0.0)
        for i in range(1, K):
            np.maximum(top, diag[..., i], out=top)
        return top
    return diag.max(axis=-1, initial=0.0) if diag.size else np.zeros(g.shape[:-2])


_NOT_PSD = ("Gram matrix is not positive semi-definite (an entry |G_ij| is far larger than sqrt(G_ii G_jj)); "
            "it must be G = J J^T")


def rescale_gram(g: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``(g * 2**-e, e)`` with ``e`` (``[...]``, one per matrix) chosen so the largest diagonal
    entry of each matrix lies in ``[0.5, 1)``; a zero matrix keeps ``e = 0``.

    Scaling by a power of two is exact in floating point (no rounding, denormals become normal
    numbers), so every answer that is invariant to ``G -> c G`` comes out bit-identical at ordinary
    scales and right at the ends of the float range (1e-300 ... 1e300), where products such as
    ``G_jj * G_kk`` would otherwise overflow or underflow. Raises ``ValueError`` when an entry does
    not fit after scaling (then ``|G_ij| >> sqrt(G_ii G_jj)``: not a Gram matrix).

    The scaling is a multiplication by the factor ``2**-e`` (itself exact): an IEEE product is
    correctly rounded, so it has the bits of ``np.ldexp(g, -e)`` (also where the result is
    subnormal) at a fraction of its cost; ``np.ldexp`` remains for ``e < -1022``, where ``2**-e``
    is not a float. Overflow is possible only where a matrix is scaled up (``e < 0``), so only then
    are the entries checked. A single matrix (``[K, K]``, the training loop and the pivoting solver)
    takes the same steps in Python floats: ~2 us instead of ~15 us at K = 16.
    """
    if g.ndim == 2:
        return _rescale_one(g)
    if g.ndim == 3 and g.shape[0] == 1:  # a batch of one (the engine's one trajectory): the same steps, in floats
        out, e1 = _rescale_one(g[0])
        return out[None], e1[None]
    top = _diag_max(g)
    pos = top > 0
    _, e = np.frexp(np.where(pos, top, 1.0))
    e = np.where(pos, e, 0).astype(np.int64)
    if not e.any():
        return g, e
    with np.errstate(over="ignore", under="ignore"):
        if e.min() >= -1022:
            out = g * np.ldexp(1.0, -e)[..., None, None]
        else:
            out = np.ldexp(g, -e[..., None, None])
    if e.min() < 0 and not np.isfinite(out).all():
        raise ValueError(_NOT_PSD)
    return out, e


def _unit_factor(top: float) -> tuple[int, float | None]:
    """:func:`rescale_gram`'s rule for one matrix whose largest diagonal entry is ``top``, in Python
    floats: the exponent ``e`` (0 for a zero, NaN or inf ``top``) and the exact factor ``2^-e``, or
    None where ``2^-e`` is not a float (``e < -1022``: scale with ``ldexp`` instead)."""
    e = math.frexp(top)[1] if top > 0.0 else 0
    return e, (math.ldexp(1.0, -e) if e >= -1022 else None)


def _rescale_one(g: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """:func:`rescale_gram` for one ``[K, K]`` matrix (same bits, same refusal)."""
    top = float(np.diagonal(g).max(initial=0.0)) if g.size else 0.0  # NaN propagates: no scaling, as above
    e, f = _unit_factor(top)
    if e == 0:
        return g, np.zeros((), dtype=np.int64)
    with np.errstate(over="ignore", under="ignore"):
        out = g * f if f is not None else np.ldexp(g, -e)
    if e < 0 and not np.isfinite(out).all():
        raise ValueError(_NOT_PSD)
    return out, np.array(e, dtype=np.int64)


def _check_gram(gram: Any) -> np.ndarray:
    try:
        g = np.asarray(gram, dtype=np.float64)
    except (TypeError, ValueError):
        raise ValueError("Gram matrix must be a numeric array of shape [..., K, K]") from None
    if g.ndim < 2 or g.shape[-1] != g.shape[-2] or g.shape[-1] < 1:
        raise ValueError(f"Gram matrix must have shape [..., K, K] with K >= 1, got {g.shape}")
    if not all_finite(g):
        raise ValueError("Gram matrix contains NaN or inf (a gradient diverged); no direction can be computed")
    diag = np.diagonal(g, axis1=-2, axis2=-1)
    scale = np.maximum(_diag_max(g), np.finfo(float).tiny)
    if (diag < -1e-12 * scale[..., None]).any():
        raise ValueError("Gram matrix has a negative diagonal entry; it must be G = J J^T (positive semi-definite)")
    # any |G_ij - G_ji| above the threshold (one flat pass, not a max over each small matrix)
    if (np.abs(g - np.swapaxes(g, -1, -2)) > 1e-8 * scale[..., None, None]).any():
        raise ValueError("Gram matrix must be symmetric (G = J J^T)")
    return g


# ---------------------------------------------------------------------------------------------
# closed forms (vectorized over the batch)
# ---------------------------------------------------------------------------------------------

@formula
def k2_mu(a: Any, c: Any, e: Any, tau: Any, top: Any) -> Any:
    """THE K = 2 closed form (PCD on normalized gradients, DBGD on raw ones), written once (NumPy
    arrays, or one row compiled, :func:`pcd._kernels.formula`): for ``a = ||g1||^2``, ``c = g1.g2``,
    ``e = ||g2||^2`` and ``top = max(a, e)``, ``mu = max(0, (tau e - c) / e)``, and 0 where g2 = 0
    (``e <= _ZERO_REL top``). The divisor is ``e > 0`` or 1, so finite input raises no
    floating-point warning."""
    nz = e > _ZERO_REL * top
    return where(nz, np.maximum((tau * e - c) / where(nz, e, 1.0), 0.0), 0.0)


# The K = 2 closed form is solved unscaled when the batch lies in this range (see _solve_k2).
_K2_LO, _K2_HI = 2.0 ** -256, 2.0 ** 256


def k2_mu_small(g: np.ndarray, tau: float) -> np.ndarray | None:
    """The K = 2 closed form's ``mu`` ``[B]`` for a small batch of 2x2 Gram matrices ``g [B, 2, 2]``
    (DBGD's toy hot path): each matrix scaled by :func:`rescale_gram`'s exact power of two, then
    :func:`k2_mu`, compiled row by row -- the bits of :func:`_solve_k2` on the rescaled batch (tested).
    None without numba (the caller then uses :func:`solve_qp`)."""
    if not AVAILABLE:
        return None
    mu = np.empty(g.shape[0])
    _k2_mu_rows(g[:, 0, 0], g[:, 0, 1], g[:, 1, 1], tau, mu)
    return mu


_k2_mu_c = jit(k2_mu, inline=True)  # the formula, compiled into the row loop below


@jit
def _k2_mu_rows(A: Any, C: Any, E: Any, tau: Any, mu: Any) -> Any:
    for i in range(A.shape[0]):
        a, c, e = A[i], C[i], E[i]
        top = np.maximum(a, e)
        x = math.frexp(top)[1] if top > 0.0 else 0  # rescale_gram's rule (_unit_factor)
        if x >= -1022:
            f = math.ldexp(1.0, -x)
            a, c, e = a * f, c * f, e * f
        else:
            a, c, e = math.ldexp(a, -x), math.ldexp(c, -x), math.ldexp(e, -x)
        mu[i] = _k2_mu_c(a, c, e, tau, np.maximum(a, e))


def _solve_k2(g: np.ndarray, tau: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """K = 2: :func:`k2_mu` on the Gram matrix; always feasible. Takes the *unscaled* matrix.

    The closed form ``mu = max(0, (tau e - c) / e)`` (zero test ``e > _ZERO_REL max(a, e)``) is
    homogeneous of degree 0 in ``G``, and for ``G -> 2^k G`` every operation in it -- the products
    with ``tau`` and ``_ZERO_REL``, the difference, the quotient, the comparisons -- commutes with the
    exact power-of-two scaling as long as no value overflows or is subnormal. So
    :func:`rescale_gram` could not change its bits, and it is skipped when the largest diagonal
    entry of every matrix is 0 or at least ``2^-256`` and no entry exceeds ``2^256`` in magnitude
    (then nothing can overflow, and ``_ZERO_REL max(a, e)`` is a normal number in both
    computations). Outside that range (or for a non-Gram matrix with ``|c| > 2^256``) the batch is
    rescaled first, exactly as for K >= 3, which keeps finite answers up to 1e308 and
    :func:`rescale_gram`'s refusal of non-Gram matrices.

    So in that range the result is bit-identical to the closed form on the rescaled matrix (and
    to K = 2 before this shortcut), except where an entry, ``tau e`` or ``tau e - c`` has
    magnitude below ``2^-765`` (~1e-230; subnormal in one of the two computations, which needs
    ``tau`` or ``|c| / e`` below ~1e-200): there the two ``mu`` differ by less than 1e-220 (tested).
    """
    a, c, e = g[..., 0, 0], g[..., 0, 1], g[..., 1, 1]
    top = np.maximum(a, e)
    if not _k2_in_range(top, c):
        g, _ = rescale_gram(g)
        a, c, e = g[..., 0, 0], g[..., 0, 1], g[..., 1, 1]
        top = np.maximum(a, e)
    mu = k2_mu(a, c, e, tau[0], top)
    return mu[..., None], np.ones(g.shape[:-2], dtype=bool)


def _k2_in_range(top: np.ndarray, c: np.ndarray) -> bool:
    """True when every 2x2 matrix (``top = max(a, e)``, off-diagonal ``c``) may skip the rescaling."""
    if top.size == 0:
        return True
    if top.max() > _K2_HI or np.abs(c).max() > _K2_HI:
        return False
    if top.min() >= _K2_LO:
        return True
    return not ((top < _K2_LO) & (top > 0)).any()  # zero matrices need no scaling


def _solve_k3(g: np.ndarray, tau: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """K = 3: the KKT point among the active sets {}, {2}, {3}, {2,3} (Cramer on the 2x2 system)."""
    a, e, c = g[..., 1, 1], g[..., 2, 2], g[..., 1, 2]
    scale = np.maximum(np.maximum(g[..., 0, 0], a), e)
    scale = np.maximum(scale, np.finfo(float).tiny)
    # Per-constraint tolerance, relative to ||g_j|| ||g_max||: a tiny secondary gets a tiny tolerance.
    tol1, tol2 = _FEAS_REL * np.sqrt(a * scale), _FEAS_REL * np.sqrt(e * scale)
    # Dual linear terms q_j = g1.gj - tau_j ||gj||^2 (the slack of constraint j at mu = 0).
    q1 = g[..., 0, 1] - tau[0] * a
    q2 = g[..., 0, 2] - tau[1] * e
    nz1, nz2 = a > _ZERO_REL * scale, e > _ZERO_REL * scale
    with np.errstate(divide="ignore", invalid="ignore"):
        m1 = np.where(nz1, -q1 / np.where(nz1, a, 1.0), 0.0)  # {2}: only constraint 2 active
        m2 = np.where(nz2, -q2 / np.where(nz2, e, 1.0), 0.0)  # {3}
        det = a * e - c * c
        ok_det = nz1 & nz2 & (det > 1e-12 * np.maximum(a * e, np.finfo(float).tiny))
        safe = np.where(ok_det, det, 1.0)
        p1 = np.where(ok_det, (c * q2 - e * q1) / safe, np.nan)  # Cramer's rule
        p2 = np.where(ok_det, (c * q1 - a * q2) / safe, np.nan)
    # Each candidate is valid when its multipliers are >= 0 and the other constraint holds.
    v0 = (q1 >= -tol1) & (q2 >= -tol2)
    v1 = (m1 >= 0) & (q2 + c * m1 >= -tol2)
    v2 = (m2 >= 0) & (q1 + c * m2 >= -tol1)
    v3 = ok_det & (p1 >= 0) & (p2 >= 0)
    # The earliest valid candidate wins; any valid KKT point gives the (unique) optimal direction.
    zero = np.zeros_like(q1)
    mu1 = np.select([v0, v1, v2, v3], [zero, m1, zero, np.maximum(p1, 0.0)], default=0.0)
    mu2 = np.select([v0, v1, v2, v3], [zero, zero, m2, np.maximum(p2, 0.0)], default=0.0)
    # too long only where some b_j > 0 (with tau = 0, d = 0 is feasible: never flagged)
    too_long = (_too_long(mu1, a, scale) | _too_long(mu2, e, scale)) & ((tau[0] * a > 0) | (tau[1] * e > 0))
    feasible = (v0 | v1 | v2 | v3) & ~too_long
    mu = np.stack([np.where(feasible, mu1, 0.0), np.where(feasible, mu2, 0.0)], axis=-1)
    return mu, feasible


def _too_long(mu: Any, norm2: Any, scale: Any) -> Any:
    """``mu_j ||g_j|| > _LONG ||g_max||`` (see :data:`_LONG`); arrays or floats."""
    return mu * mu * norm2 > (_LONG * _LONG) * scale


# ---------------------------------------------------------------------------------------------
# general K: block principal pivoting with a Goldfarb-Idnani fallback
# ---------------------------------------------------------------------------------------------

def _tol(G: np.ndarray, C: np.ndarray, scale: float) -> np.ndarray:
    """Slack tolerance per constraint, relative to ||g_j|| * sqrt(scale)."""
    return _FEAS_REL * np.sqrt(np.maximum(G[C, C], 0.0) * scale)


def _rounding(absGC: np.ndarray, absw: np.ndarray, b: np.ndarray) -> np.ndarray:
    """A bound on the rounding error of the slacks ``G[C] @ w - b`` (``absGC = |G[C]|``): a sum of
    K products carries at most ~K eps of the sum of their magnitudes. Large multipliers (nearly
    dependent constraints) make this exceed the fixed tolerance; a slack within it is zero."""
    return (2 * _EPS * absGC.shape[-1]) * (absGC @ absw + np.abs(b))


def _kkt_excess(G: np.ndarray, u: np.ndarray, C: np.ndarray, b: np.ndarray, mu: np.ndarray, scale: float) -> float:
    """How far ``mu`` is from a KKT point, in units of the tolerance (<= 1: it is one): the largest
    negative slack and slack of a binding constraint (``|slack_j| min(mu_j, 1)``: complementary
    slackness ``mu_j slack_j ~ 0``, relative for large ``mu_j``), each over the fixed tolerance plus
    the slack's rounding bound; inf for a negative multiplier."""
    if mu.size and mu.min() < 0:
        return math.inf
    w = u.copy()
    w[C] += mu
    GC = G[C]
    slack = GC @ w - b
    viol = np.maximum(-slack, np.abs(slack) * np.minimum(mu, 1.0))
    tol = 10 * _tol(G, C, scale)
    excess = float((viol / tol).max(initial=0.0))
    if excess <= 1.0:  # verified without the rounding allowance (the common case: skip computing it)
        return excess
    return float((viol / (tol + _rounding(np.abs(GC), np.abs(w), b))).max(initial=0.0))


def principal_pivoting(free: np.ndarray, subproblem: Callable[[np.ndarray], tuple[np.ndarray, np.ndarray] | None],
                       maxiter: int = 50) -> np.ndarray | None:
    """Block principal pivoting driver (Judice & Pires, 1994) shared by every pivoting solver.

    ``subproblem(free)`` solves the problem with the variables in the boolean mask ``free`` as the
    free (basic) set and returns ``(x, bad)``: the candidate and the mask of indices that violate
    their sign or complementarity condition -- or None when that free set is singular. It may
    mutate ``free`` in place (e.g. to keep it non-empty). Every infeasible index is flipped while
    that reduces their number; after three non-improving tries, Murty's single flip of the largest
    infeasible index guarantees finite termination for P-matrices. Returns ``x`` or None.
    """
    free = free.copy()
    best, backup = free.size + 1, 3
    for _ in range(maxiter):
        out = subproblem(free)
        if out is None:
            return None
        x, bad = out
        nbad = int(bad.sum())
        if nbad == 0:
            return x
        if nbad < best:
            best, backup = nbad, 3
            free ^= bad
        elif backup > 0:
            backup -= 1
            free ^= bad
        else:
            j = int(np.flatnonzero(bad)[-1])
            free[j] = ~free[j]
    return None


def _bpp(S: np.ndarray, q: np.ndarray, tol: np.ndarray, maxiter: int = 50) -> np.ndarray | None:
    """Block principal pivoting for ``w = S mu + q >= 0, mu >= 0, w.mu = 0`` (S positive definite)."""

    def subproblem(free: np.ndarray) -> tuple[np.ndarray, np.ndarray] | None:
        mu = np.zeros(q.shape[0])
        if free.any():
            Sf = S[np.ix_(free, free)]
            try:
                cf = scipy.linalg.cho_factor(Sf, check_finite=False)
            except np.linalg.LinAlgError:
                return None
            if np.diag(cf[0]).min() <= 1e-7 * np.sqrt(max(np.diag(Sf).max(), np.finfo(float).tiny)):
                return None  # (nearly) singular principal submatrix: leave it to Goldfarb-Idnani
            mu[free] = scipy.linalg.cho_solve(cf, -q[free], check_finite=False)
        w = S @ mu + q
        return mu, (free & (mu < 0)) | (~free & (w < -tol))

    # warm start: the constraints violated at mu = 0
    mu = principal_pivoting(q < -tol, subproblem, maxiter)
    return None if mu is None else np.maximum(mu, 0.0)


def _cond1(S: np.ndarray, active: list[int], Minv: np.ndarray) -> float:
    """``||M||_1 ||M^-1||_1`` for the active normals' Gram matrix ``M = S[active, active]``."""
    if not active:
        return 1.0
    return float(np.abs(S[np.ix_(active, active)]).sum(axis=0).max() * np.abs(Minv).sum(axis=0).max())


def _goldfarb_idnani(G: np.ndarray, u: np.ndarray, C: np.ndarray, b: np.ndarray, scale: float,
                     cautious: bool = False) -> tuple[np.ndarray, bool]:
    """Dual active-set method for ``min ||d - sum_i u_i g_i||^2 s.t. g_j.d >= b_j (j in C)``.

    Works on inner products only. Keeps the active normals linearly independent (their Gram
    submatrix positive definite, inverse updated by rank-one formulas) and returns the
    multipliers of the constraints ``mu`` (aligned with ``C``) and ``feasible``.
    """
    m = C.shape[0]
    mu = np.zeros(m)
    active: list[int] = []  # positions into C
    Minv = np.zeros((0, 0))
    norms2 = np.maximum(G[C, C], np.finfo(float).tiny)
    tol = _tol(G, C, scale)
    GC = G[C]
    base = GC @ u - b  # slack at mu = 0
    S = G[np.ix_(C, C)]
    kappa = 1.0  # 1-norm condition number of the active normals' Gram matrix M (1 when none is active)
    # constraints that depend on the active normals and hold wherever those are tight (their slack
    # there is fixed by the b's alone); set aside until a constraint leaves the active set
    implied = np.zeros(m, dtype=bool)
    any_implied = False
    for _ in range(10 * m + 10):
        slack = base + S @ mu
        cand = slack / np.sqrt(norms2)
        if any_implied:
            cand[implied] = np.inf
        if active:
            cand[active] = np.inf
        p = int(np.argmin(cand))
        # satisfied up to the fixed tolerance and the slack's own rounding error (which grows with mu)
        sp = slack[p]
        if sp >= -tol[p]:
            return mu, True
        # (a violation beyond 1e7 tol needs sum(mu) > ~1e10 / m to be rounding: not worth checking)
        if sp > -1e7 * tol[p] and sp >= -(tol[p] + float(_rounding(np.abs(GC[p]), np.abs(u), b[p]))
                                          + 2 * _EPS * m * float(np.abs(S[p]) @ mu)):
            return mu, True
        while True:  # add constraint p, possibly dropping others on the way
            Sp = S[active, p] if active else np.zeros(0)
            r = Minv @ Sp if active else np.zeros(0)
            zz = S[p, p] - Sp @ r if active else S[p, p]
            sp = base[p] + S[p] @ mu
            # g_p depends on the active normals when zz (the squared distance to their span) is below
            # what rounding leaves of 0: r = Minv Sp carries a relative error ~ eps * kappa, so zz can
            # come out ~ eps * kappa * |Sp|.|r| for a g_p inside the span; a step on such a zz gives
            # multipliers ~1 / zz (~1e15) and a "feasible" answer that violates a constraint
            dep = _DEP_REL * S[p, p]
            if cautious and active:
                dep = max(dep, _EPS * kappa * float(np.abs(Sp) @ np.abs(r)))
            t1 = -sp / zz if zz > dep else np.inf
            t2, k = np.inf, -1
            if active:
                pos = r > 1e-14 * np.abs(r).max(initial=0.0)
                if pos.any():
                    ratios = np.where(pos, mu[active] / np.where(pos, r, 1.0), np.inf)
                    k = int(np.argmin(ratios))
                    t2 = float(ratios[k])
            if not np.isfinite(t1) and not np.isfinite(t2):
                # g_p = sum_a r_a g_a with r <= 0: where the active constraints are tight, g_p . d =
                # r . b_active, so its slack is y . b with y = (r, -1) -- computed from the b's, free
                # of the rounding in mu. Negative: Farkas (sum y_j g_j = 0, y <= 0): infeasible.
                # Otherwise the violation seen was rounding: p holds; set it aside.
                implied_slack = float(r @ b[active]) - b[p] if active else -b[p]
                if implied_slack < -tol[p]:
                    return mu, False
                implied[p] = any_implied = True
                break
            t = min(t1, t2)
            if active:
                mu[active] -= t * r
            mu[p] += t
            if t2 < t1:  # partial step: drop the blocking constraint and try again
                i = k
                mu[active[i]] = 0.0
                keep = [j for j in range(len(active)) if j != i]
                piv = Minv[i, i]
                Minv = Minv[np.ix_(keep, keep)] - np.outer(Minv[keep, i], Minv[i, keep]) / piv
                active.pop(i)
                kappa = _cond1(S, active, Minv) if cautious else 1.0
                if any_implied:  # the span shrank: what it implied may no longer hold
                    implied[:] = any_implied = False
                continue
            # full step: add p
            a = len(active)
            new = np.empty((a + 1, a + 1))
            new[:a, :a] = Minv + np.outer(r, r) / zz
            new[:a, a] = -r / zz
            new[a, :a] = -r / zz
            new[a, a] = 1.0 / zz
            Minv = new
            active.append(p)
            kappa = _cond1(S, active, Minv) if cautious else 1.0
            break
    return mu, True  # iteration cap (not reached in practice); caller verifies KKT


def _cone_nnls(G: np.ndarray, u: np.ndarray, C: np.ndarray) -> np.ndarray | None:
    """``argmin_{mu >= 0} ||sum_i u_i g_i + sum_j mu_j g_j||`` (the dual of projecting onto the cone
    ``g_j . d >= 0``, ``j in C``) from ``G`` alone: with ``F F^T = G`` (eigendecomposition, the
    numerically zero directions dropped) the gradients are the rows of ``F`` up to a rotation."""
    try:
        lam, V = np.linalg.eigh(G)
    except np.linalg.LinAlgError:
        return None
    keep = lam > _EPS * G.shape[0] * max(float(lam[-1]), 0.0)
    if not keep.any():
        return np.zeros(C.size)
    F = V[:, keep] * np.sqrt(lam[keep])
    from scipy.optimize import nnls  # here: the rare path (importing scipy.optimize costs ~0.1 s)

    try:
        mu, _ = nnls(F[C].T, -(u @ F), maxiter=50 * max(C.size, 1))
    except RuntimeError:  # no convergence within maxiter
        return None
    return mu


def _solve_one(G: np.ndarray, u: np.ndarray, C: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, bool]:
    """Multipliers ``mu`` (aligned with C) of one projection problem; feasible flag.

    Pivoting first; its answer is kept when the KKT conditions verify. Otherwise Goldfarb-Idnani,
    then its cautious mode, each polished on its final active set; the first answer that verifies
    wins, else the one closest to verifying (for a cone, ``b = 0``, also :func:`_cone_nnls`'s).
    When some ``b_j > 0`` (so ``d = 0`` is not feasible),
    an answer that does not verify, or one with a term longer than :data:`_LONG`, is reported as
    incompatible."""
    scale = max(float(np.diagonal(G).max(initial=0.0)), np.finfo(float).tiny)
    if C.size == 0:
        return np.zeros(0), True
    q = G[C] @ u - b
    tol = _tol(G, C, scale)
    if not (q < -tol).any():
        # every constraint holds at mu = 0 (the common step): pivoting would start and end there, and its
        # KKT check passes by construction (the slacks are q, within 1/10 of the tolerance it allows)
        return np.zeros(q.shape[0]), True
    S = G[np.ix_(C, C)]
    mu = _bpp(S, q, tol)
    excess = math.inf if mu is None else _kkt_excess(G, u, C, b, mu, scale)
    feasible = True
    cautious = False
    while excess > 1.0:
        cand, ok = _goldfarb_idnani(G, u, C, b, scale, cautious=cautious)
        if not ok:
            mu, feasible = cand, False
            break
        e = math.inf
        act = cand > 0  # polish on the final active set (one exact solve) when it is well posed
        if act.any():
            try:
                sol = np.linalg.solve(S[np.ix_(act, act)], -q[act])
            except np.linalg.LinAlgError:
                sol = None
            if sol is not None and (sol >= 0).all():
                polished = np.zeros_like(cand)
                polished[act] = sol
                e = _kkt_excess(G, u, C, b, polished, scale)
                if e <= 1.0:
                    cand = polished
        if e > 1.0:
            e = _kkt_excess(G, u, C, b, cand, scale)
        if mu is None or e < excess:
            mu, excess = cand, e
        if cautious:
            break
        # an answer that does not verify came from a near-dependent constraint taken as
        # independent: again, treating every g_p rounding cannot tell from the active span as dependent
        cautious = True
    assert mu is not None
    if feasible and excess > 1.0 and not b.any():
        # a cone projection (b = 0: d = 0 is feasible) that does not verify: the same dual as a
        # non-negative least-squares problem on a factor F of G (F F^T = G; F carries half of G's
        # condition number), solved by Lawson-Hanson; the better-verified answer wins
        cone = _cone_nnls(G, u, C)
        if cone is not None:
            e = _kkt_excess(G, u, C, b, cone, scale)
            if e < excess:
                mu, excess = cone, e
    # (mu_j > _LONG is necessary for a term to be too long, as G_jj <= scale: the cheap test first)
    if feasible and (excess > 1.0 or mu.max(initial=0.0) > _LONG) and (b > 0).any() and (
            excess > 1.0 or _too_long(mu, np.diagonal(G)[C], scale).any()):
        # compatible, if at all, only by a direction so long that Gram arithmetic cannot resolve its
        # slacks: incompatible rather than a direction that violates them (with b <= 0, d = 0 is
        # feasible and the best effort stands)
        return np.zeros_like(mu), False
    return mu, feasible


def solve_qp(gram: Any, tau: Any = 0.02, *, trusted: bool = False) -> QPResult:
    """Solve PCD's QP ``min ||d - g~_1||^2 s.t. g~_j.d >= tau_j ||g~_j||^2`` from the Gram matrix.

    The one place that picks the solver from K: closed forms for K <= 3 (:func:`k2_mu` for K = 2,
    Cramer for K = 3), pivoting beyond. K >= 3 is solved on :func:`rescale_gram`'s exactly scaled
    matrix; K = 2 is scale-invariant as it stands and skips that step at ordinary scales (see
    :func:`_solve_k2`); K = 1 needs no solve.

    Args:
      gram: ``[K, K]`` or batched ``[..., K, K]`` Gram matrix of the (normalized) gradients,
        primary first. Must be finite, symmetric, with a non-negative diagonal.
      tau: scalar or one value per secondary (``K - 1`` values), each in ``[0, 1]``.
      trusted: the caller has already checked ``gram`` (a float64 array as above) and ``tau``
        (e.g. with :func:`check_tau`): the checks are skipped; the algorithm is the same.

    Returns:
      :class:`QPResult` with ``weights[..., 0] == 1`` (direction ``d~ = weights @ J~``).

    Raises:
      ValueError: bad shape, NaN/inf, not symmetric, or tau outside [0, 1].
    """
    if trusted:
        g = gram
        K = g.shape[-1]
        t = np.asarray(tau, dtype=np.float64)
        if t.ndim == 0:
            t = np.full(K - 1, float(t))
    else:
        g = _check_gram(gram)
        K = g.shape[-1]
        t = check_tau(tau, K)
    batch = g.shape[:-2]
    mu: np.ndarray
    feasible: np.ndarray
    if K == 1:
        mu = np.zeros(batch + (0,))
        feasible = np.ones(batch, dtype=bool)
    elif K == 2:  # before any rescaling: the closed form needs it only at extreme scales
        mu, feasible = _solve_k2(g, t)
    elif K == 3:
        g, _ = rescale_gram(g)  # the answer is invariant to G -> c G; solve at scale ~1
        mu, feasible = _solve_k3(g, t)
    else:
        g, _ = rescale_gram(g)
        flat = g.reshape((-1, K, K))
        mu = np.zeros((flat.shape[0], K - 1))
        feasible = np.ones(flat.shape[0], dtype=bool)
        u = np.zeros(K)
        u[0] = 1.0
        tiny = np.finfo(float).tiny
        for i, Gi in enumerate(flat):
            diag = np.diagonal(Gi)
            scale = max(float(diag.max()), tiny)
            C = np.flatnonzero(diag[1:] > _ZERO_REL * scale) + 1  # zero secondaries ignored
            b = t[C - 1] * diag[C]
            m, ok = _solve_one(Gi, u, C, b)
            feasible[i] = ok
            if ok:
                mu[i, C - 1] = m
        mu = mu.reshape(batch + (K - 1,))
        feasible = feasible.reshape(batch)
    weights = np.empty(batch + (K,))
    weights[..., 0] = 1.0
    weights[..., 1:] = mu
    active = np.empty(batch + (K,), dtype=bool)
    active[..., 0] = False
    np.greater(mu, 0.0, out=active[..., 1:])
    feas = bool(feasible) if not batch else feasible
    return QPResult(weights=weights, mu=mu, active_mask=active, feasible=feas)


def project(gram: Any, target: Any, lower: Any = None, constraints: Any = None) -> tuple[np.ndarray, bool]:
    """Weights of the projection of ``sum_i target_i g_i`` onto ``{d : g_j.d >= lower_j, j in constraints}``.

    Returns ``(weights [K], feasible)`` with ``d = weights @ J``. ``lower`` defaults to 0 (the dual
    cone of the gradients, as in UPGrad/DualProj, arXiv 2406.16232 eq. 5) and ``constraints`` to
    every row. Zero rows are ignored. Single problem (``[K, K]``).
    """
    G = _check_gram(gram)
    if G.ndim != 2:
        raise ValueError("project takes a single [K, K] Gram matrix")
    K = G.shape[0]
    u = np.asarray(target, dtype=np.float64).reshape(-1)
    if u.shape[0] != K or not np.isfinite(u).all():
        raise ValueError(f"target must be {K} finite weights")
    C = np.arange(K) if constraints is None else np.asarray(constraints, dtype=int).reshape(-1)
    b = np.zeros(C.shape[0]) if lower is None else np.broadcast_to(np.asarray(lower, float), C.shape).copy()
    if not np.isfinite(b).all():
        raise ValueError("lower bounds must be finite")
    G, e = rescale_gram(G)  # G -> G 2^-e and lower -> lower 2^-e leave the weights unchanged
    b = np.ldexp(b, -int(e))
    scale = max(float(np.diagonal(G).max()), np.finfo(float).tiny)
    keep = np.diagonal(G)[C] > _ZERO_REL * scale
    C, b = C[keep], b[keep]
    mu, ok = _solve_one(G, u, C, b)
    w = u.copy()
    if ok:
        np.add.at(w, C, mu)
    return w, ok


def solve_nnqp(S: Any, q: Any) -> np.ndarray:
    """Exact solution of ``min_{mu >= 0} 1/2 mu^T S mu + q^T mu`` for a PSD ``S`` (bounded problem).

    Written as the projection of 0 onto ``{d : a_j.d >= -q_j}`` where ``S = A^T A``; raises
    ``ValueError`` when the problem is unbounded below.
    """
    S = _check_gram(S)
    q = np.asarray(q, dtype=np.float64).reshape(-1)
    if S.ndim != 2 or q.shape[0] != S.shape[0] or not np.isfinite(q).all():
        raise ValueError("solve_nnqp takes S [n, n] and q [n], finite")
    n = S.shape[0]
    S, e = rescale_gram(S)  # (S, q) -> (S, q) 2^-e has the same minimizer
    q = np.ldexp(q, -int(e))
    mu, ok = _solve_one(S, np.zeros(n), np.arange(n), -q)
    if not ok:
        raise ValueError("the non-negative QP is unbounded below (no minimizer)")
    return mu
