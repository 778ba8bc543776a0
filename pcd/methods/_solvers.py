"""Small batched solvers shared by the baseline methods (float64 NumPy, batch axis first).

Every routine works on a batch of problems ``[B, ...]`` and is exact up to floating point:

* :func:`nnqp`        ``min_{mu >= 0} 1/2 mu^T S mu + q^T mu`` for positive definite ``S``
                      (K = 1, 2: closed forms; K <= 5: the KKT point found by enumerating the
                      2^K free sets, vectorized; larger K: block principal pivoting per
                      problem, Cholesky + NNLS as the fallback).
* :func:`simplex_min_norm`  ``min_{a in simplex} a^T G a`` (MGDA's problem; K = 2 closed form, K <= 5
                      enumeration, larger K block principal pivoting on the support).
* :func:`nash`        ``alpha > 0`` with ``alpha_i (G alpha)_i = p_i`` (Nash bargaining, Nash-MTL /
                      AuxiNash): K = 2 closed form, otherwise damped Newton on the self-concordant
                      ``1/2 a^T G a - sum_i p_i log a_i``.

Rank-deficient Gram matrices make the weights of these problems non-unique (the direction is
unique). We then return the limit of the ridge-regularized problem (see :func:`ridge`), which for
exact cancellations between equal-norm gradients is the same choice TorchJD's regularized projector
converges to.
"""
from __future__ import annotations

import itertools
from functools import lru_cache
from typing import Any, NamedTuple

import numpy as np

from pcd._kernels import NO_PARAMS, STEP_SIG, formula, jit, k2_batch, where
from pcd.methods.base import Method
from pcd.qp import principal_pivoting


class Support(NamedTuple):
    """Warm-start state of the active-set solvers (CAGrad, UPGrad, DualProj for K > 5): the last
    solution's support (bool, batch-first), the solver's first guess at the next call; None when
    there is none (K <= 5, or before the first step)."""

    free: np.ndarray | None = None


class WarmStarted(Method):
    """A method whose state is the active-set solver's last :class:`Support` (CAGrad, UPGrad,
    DualProj): empty before the first step."""

    def init(self, batch: int, K: int) -> Support:
        return Support()


def softmax(x: np.ndarray) -> np.ndarray:
    """``softmax`` over the last axis (``exp(x - max x)``, normalized): FAMO's and ExcessMTL's weights."""
    e = np.exp(x - x.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


def support_of(state: object) -> np.ndarray | None:
    """The warm-start support carried by ``state`` (a :class:`Support`), or None."""
    free = getattr(state, "free", None)
    return free if isinstance(free, np.ndarray) and free.dtype == bool else None

RIDGE_REL = 1e-13  # ridge added to each diagonal entry, relative to that entry (uniqueness only)


def trace(G: np.ndarray) -> np.ndarray:
    return np.einsum("bii->b", G)


def ridge(G: np.ndarray, rel: float | np.ndarray = 0.0) -> np.ndarray:
    """``G + diag(rel * trace(G) + RIDGE_REL * G_ii + 1e-30 * trace(G))``; the identity when G = 0.

    ``rel`` is TorchJD's ``reg_eps`` (its projector solves on ``G / trace(G) + reg_eps I``). The
    ``RIDGE_REL * G_ii`` part only makes singular problems' weights unique (it is relative to each
    objective's own scale, so badly scaled gradients are not distorted). A zero Gram matrix means
    every gradient is zero: any weights give the zero direction, and the identity makes each
    solver return its neutral weights (finite, documented per method).
    """
    K = G.shape[-1]
    diag = np.diagonal(G, axis1=1, axis2=2)
    tr = diag.sum(-1, keepdims=True)
    delta = (float(rel) + 1e-30) * tr + RIDGE_REL * diag
    out = G + np.einsum("bi,ij->bij", delta, np.eye(K))
    zero = tr[:, 0] <= 0.0
    if zero.any():
        out = np.where(zero[:, None, None], np.eye(K), out)
    return out


def ridge2(G: np.ndarray, rel: float = 0.0) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """:func:`ridge` for K = 2 on flat arrays: ``(a, b, c)`` = ridged ``(G11, G12, G22)``."""
    g11, g12, g22 = G[:, 0, 0], G[:, 0, 1], G[:, 1, 1]
    tr = g11 + g22
    z = tr <= 0.0
    f = (float(rel) + 1e-30) * tr
    return g11 + f + RIDGE_REL * g11 + z, g12, g22 + f + RIDGE_REL * g22 + z


@lru_cache(maxsize=16)
def _free_sets(n: int, include_empty: bool) -> np.ndarray:
    rows = [s for s in itertools.product((0.0, 1.0), repeat=n) if include_empty or any(s)]
    return np.array(rows, dtype=np.float64)


def _nnqp_enum(S: np.ndarray, q: np.ndarray) -> np.ndarray:
    """KKT point by enumeration of the free sets (vectorized); S positive definite."""
    B, n = q.shape
    F = _free_sets(n, True)  # [P, n]
    FF = F[:, :, None] * F[:, None, :]
    M = S[:, None] * FF[None] + (np.eye(n) * (1.0 - F)[:, None, :])[None]  # [B, P, n, n]
    rhs = -(q[:, None, :] * F[None])  # [B, P, n]
    mu = np.linalg.solve(M, rhs[..., None])[..., 0]
    # per-component tolerance: the size of the terms of equation i over S_ii (components can differ
    # by many orders of magnitude when the gradients' norms do)
    diag = np.diagonal(S, axis1=1, axis2=2)[:, None, :]
    terms = np.abs(q)[:, None, :] + np.einsum("bij,bpj->bpi", np.abs(S), np.abs(mu))
    feas = np.all(mu >= -1e-9 * terms / diag - 1e-300, axis=-1)
    obj = 0.5 * np.einsum("bn,bpn->bp", q, mu)  # = 1/2 mu^T S mu + q^T mu at a stationary point
    obj = np.where(feas, obj, np.inf)
    best = np.argmin(obj, axis=1)
    return np.maximum(mu[np.arange(B), best], 0.0)


def _nnqp2(S: np.ndarray, q: np.ndarray) -> np.ndarray:
    """Closed form for n = 2 (the four free sets, compared by objective value)."""
    a, b, c = S[:, 0, 0], S[:, 0, 1], S[:, 1, 1]
    q1, q2 = q[:, 0], q[:, 1]
    m1 = np.maximum(-q1 / a, 0.0)
    m2 = np.maximum(-q2 / c, 0.0)
    o1 = -0.5 * m1 * m1 * a  # objective of (m1, 0): -q1^2 / (2a) when m1 > 0, else 0
    o2 = -0.5 * m2 * m2 * c
    det = a * c - b * b
    with np.errstate(divide="ignore", invalid="ignore"):
        f1 = (b * q2 - c * q1) / det
        f2 = (b * q1 - a * q2) / det
    okf = (det > 0) & (f1 >= 0) & (f2 >= 0)
    o3 = np.where(okf, 0.5 * (q1 * f1 + q2 * f2), np.inf)
    out = np.zeros_like(q)
    use1 = (o1 <= o2) & (o1 <= o3)
    use2 = ~use1 & (o2 <= o3)
    use3 = ~use1 & ~use2
    out[:, 0] = np.where(use1, m1, np.where(use3, f1, 0.0))
    out[:, 1] = np.where(use2, m2, np.where(use3, f2, 0.0))
    return np.where(np.isfinite(out), out, 0.0)


def nnqp(S: np.ndarray, q: np.ndarray, free0: np.ndarray | None = None) -> np.ndarray:
    """Batched ``argmin_{mu >= 0} 1/2 mu^T S mu + q^T mu`` for positive definite ``S [B, n, n]``.

    ``free0`` ``[B, n]`` (bool, optional, n > 5 only): first guess of the set where ``mu > 0``
    (e.g. the previous step's), which saves pivoting steps along a trajectory.
    """
    B, n = q.shape
    if n == 1:
        return np.maximum(-q / S[:, :, 0], 0.0)
    if n == 2:
        return _nnqp2(S, q)
    if n <= 5:
        return _nnqp_enum(S, q)
    out = np.zeros((B, n))
    use0 = free0 is not None and free0.shape == (B, n)
    for i in range(B):
        mu = _nnqp_bpp(S[i], q[i], free=free0[i] if use0 and free0 is not None else None)
        out[i] = _nnqp_nnls(S[i], q[i]) if mu is None else mu
    return out


def _nnqp_bpp(S: np.ndarray, q: np.ndarray, maxiter: int = 60, free: np.ndarray | None = None) -> np.ndarray | None:
    """Block principal pivoting (Judice & Pires 1994) for the LCP ``w = S mu + q >= 0``,
    ``mu >= 0``, ``mu . w = 0`` with S positive definite: guess the free set, solve on it, flip every
    infeasible index (Murty's single flip when that stops improving). Typically a few Cholesky
    solves. Returns None if it does not terminate (the caller then uses NNLS)."""
    import scipy.linalg

    n = q.shape[0]
    scale = max(float(np.abs(np.diagonal(S)).max()), 1e-300)
    tol = 1e-12 * np.sqrt(scale * np.maximum(np.diagonal(S), 1e-300))

    def subproblem(free: np.ndarray) -> tuple[np.ndarray, np.ndarray] | None:
        mu = np.zeros(n)
        if free.any():
            try:
                cf = scipy.linalg.cho_factor(S[np.ix_(free, free)], check_finite=False)
            except np.linalg.LinAlgError:
                return None
            mu[free] = scipy.linalg.cho_solve(cf, -q[free], check_finite=False)
        w = S @ mu + q
        return mu, (free & (mu < 0)) | (~free & (w < -tol * (1.0 + np.abs(mu).max())))

    mu = principal_pivoting(q < 0 if free is None else free, subproblem, maxiter)
    return None if mu is None else np.maximum(mu, 0.0)


def _nnqp_nnls(S: np.ndarray, q: np.ndarray) -> np.ndarray:
    """One problem, any n: with ``S = L L^T`` (Cholesky), ``1/2 mu^T S mu + q^T mu =
    1/2 ||L^T mu + L^-1 q||^2 + const``, a non-negative least-squares problem (Lawson-Hanson,
    :func:`scipy.optimize.nnls`), polished by one exact solve on the free set found."""
    import scipy.linalg
    from scipy.optimize import nnls

    L = np.linalg.cholesky(S)
    rhs = -scipy.linalg.solve_triangular(L, q, lower=True)
    mu, _ = nnls(L.T, rhs, maxiter=50 * S.shape[0])
    free = mu > 0
    if free.any():
        sol = np.linalg.solve(S[np.ix_(free, free)], -q[free])
        if np.all(sol >= 0):
            mu = np.zeros_like(mu)
            mu[free] = sol
    return mu


def project_dual_cone(G: np.ndarray, U: np.ndarray, reg_eps: float = 0.0,
                      free0: np.ndarray | None = None) -> np.ndarray:
    """Weights ``v`` of the projections of ``J^T u`` onto the dual cone ``{y : J y >= 0}``.

    By Proposition 1 of Jacobian Descent (arXiv 2406.16232), ``pi_J(J^T u) = J^T v`` with
    ``v = argmin_{v >= u} v^T G v``; with ``v = u + mu`` this is the non-negative QP
    ``min_{mu >= 0} 1/2 mu^T G mu + (G u)^T mu``. ``G [B, K, K]``, ``U [B, M, K]`` (M targets per
    problem) -> ``V [B, M, K]``. ``reg_eps`` adds ``reg_eps * trace(G) * I`` like TorchJD's
    projector (which solves on ``G / trace(G) + reg_eps I``). ``free0`` ``[B, M, K]``: optional
    first guess of where ``v > u`` (K > 5), e.g. ``V > U`` from the previous step.
    """
    B, M, K = U.shape
    Gr = ridge(G, reg_eps)
    S = np.repeat(Gr, M, axis=0)
    u = U.reshape(B * M, K)
    q = np.einsum("bij,bj->bi", S, u)
    f0 = None if free0 is None or free0.shape != (B, M, K) else free0.reshape(B * M, K)
    mu = nnqp(S, q, f0)
    return (u + mu).reshape(B, M, K)


def simplex_min_norm(G: np.ndarray) -> np.ndarray:
    """``argmin_{a >= 0, sum a = 1} a^T G a`` for ``G [B, K, K]`` (MGDA, Desideri 2012).

    K = 2: ``a_1 = clip((G22 - G12) / (G11 + G22 - 2 G12), 0, 1)``. 3 <= K <= 5: on the ridged
    (positive definite) ``Gr``, the bordered KKT system of every support, vectorized
    (:func:`_simplex_enum`). K > 5: block principal pivoting on the support (:func:`_simplex_bpp`)
    per problem, with the non-negative QP form ``beta = argmin_{beta >= 0} 1/2 beta^T Gr beta -
    1^T beta``, ``a = beta / sum(beta)`` as the fallback.
    """
    B, K = G.shape[0], G.shape[-1]
    if K == 1:
        return np.ones((B, 1))
    if K == 2:  # exact closed form on the raw Gram matrix (no ridge: a zero g_1 gives a = e_1)
        return k2_batch(G, min_norm_k2, min_norm_k2_rows, NO_PARAMS)
    Gr = ridge(G)
    if K <= 5:
        return _simplex_enum(Gr)
    out = np.empty((B, K))
    for i in range(B):
        a_bpp = _simplex_bpp(Gr[i])
        if a_bpp is None:  # fall back to the non-negative QP form
            beta = _nnqp_nnls(Gr[i], -np.ones(K))
            a_bpp = beta / beta.sum() if beta.sum() > 0 else np.full(K, 1.0 / K)
        out[i] = a_bpp
    return out


@formula
def min_norm_k2(a: Any, b: Any, c: Any, p: Any) -> Any:
    """MGDA's K = 2 closed form, written once (NumPy arrays, or one row compiled): for
    ``a = G11, b = G12, c = G22``, ``t = clip((c - b) / (a + c - 2 b), 0, 1)`` (1/2 when the
    denominator is not positive), weights ``(t, 1 - t)``. ``p``: no parameters."""
    den = a + c - 2.0 * b
    pos = den > 0
    t = np.minimum(np.maximum(where(pos, (c - b) / where(pos, den, 1.0), 0.5), 0.0), 1.0)
    return t, 1.0 - t


_min_norm_k2_c = jit(min_norm_k2, inline=True)  # the formula, compiled into the row loop below


@jit
def min_norm_k2_rows(a: Any, b: Any, c: Any, p: Any, W: Any) -> Any:
    for i in range(a.shape[0]):
        W[0, i], W[1, i] = _min_norm_k2_c(a[i], b[i], c[i], p)


@jit(sig=STEP_SIG)
def min_norm_k2_step(t: Any, L: Any, G: Any, W: Any, S: Any, p: Any) -> None:
    """MGDA's fast-path step (:class:`pcd.methods.base.Kernel`), compiled for :func:`pcd._kernels.trajectory`."""
    min_norm_k2_rows(G[0], G[1], G[2], p, W)


def _simplex_enum(G: np.ndarray) -> np.ndarray:
    """Vectorized over the batch and all 2^K - 1 supports F: the bordered KKT system
    ``[G_FF 1; 1^T 0] [a_F; -nu] = [0; 1]`` (``nu = a^T G a`` at its solution); the feasible
    (``a_F >= 0``) candidate with the smallest ``nu`` is the minimizer. G positive definite."""
    B, K = G.shape[0], G.shape[-1]
    F = _free_sets(K, False)  # [P, K]
    P = F.shape[0]
    M = np.zeros((B, P, K + 1, K + 1))
    M[..., :K, :K] = G[:, None] * (F[:, :, None] * F[:, None, :])[None] + (np.eye(K) * (1.0 - F)[:, None, :])[None]
    M[..., :K, K] = F[None]
    M[..., K, :K] = F[None]
    rhs = np.zeros((B, P, K + 1))
    rhs[..., K] = 1.0
    sol = np.linalg.solve(M, rhs[..., None])[..., 0]
    a, nu = sol[..., :K], -sol[..., K]
    feas = a.min(axis=-1) >= -1e-12
    best = np.argmin(np.where(feas, nu, np.inf), axis=1)
    a = np.maximum(a[np.arange(B), best], 0.0)
    return a / a.sum(axis=-1, keepdims=True)


def _simplex_bpp(G: np.ndarray, maxiter: int = 60) -> np.ndarray | None:
    """``argmin_{a in simplex} a^T G a`` for positive definite G by block principal pivoting on the
    support F: solve the bordered KKT system ``[G_FF 1; 1^T 0] [a_F; -nu] = [0; 1]``, then flip
    support indices with ``a_i < 0`` and outside indices with ``(G a)_i < nu`` (well conditioned even
    when the min norm is 0, unlike the non-negative QP form). None if it does not terminate."""
    K = G.shape[0]
    diag = np.diagonal(G)
    tol = 1e-12 * float(diag.max())

    def subproblem(free: np.ndarray) -> tuple[np.ndarray, np.ndarray] | None:
        if not free.any():
            free[int(np.argmin(diag))] = True
        idx = np.flatnonzero(free)
        m = idx.size
        M = np.zeros((m + 1, m + 1))
        M[:m, :m] = G[np.ix_(idx, idx)]
        M[:m, m] = M[m, :m] = 1.0
        rhs = np.zeros(m + 1)
        rhs[m] = 1.0
        try:
            sol = np.linalg.solve(M, rhs)
        except np.linalg.LinAlgError:
            return None
        a = np.zeros(K)
        a[idx] = sol[:m]
        w = G @ a + sol[m]  # (G a)_i - nu with nu = -sol[m]
        return a, (free & (a < 0)) | (~free & (w < -tol))

    a = principal_pivoting(np.ones(K, dtype=bool), subproblem, maxiter)
    if a is None:
        return None
    a = np.maximum(a, 0.0)
    return a / a.sum()


def nash(G: np.ndarray, p: np.ndarray, alpha0: np.ndarray | None = None, *, max_iter: int = 100,
         tol: float = 1e-12) -> tuple[np.ndarray, np.ndarray]:
    """Solve ``alpha_i (G alpha)_i = p_i``, ``alpha > 0`` (Nash bargaining with powers ``p``).

    This is the stationarity condition of the strictly convex, self-concordant
    ``phi(a) = 1/2 a^T G a - sum_i p_i log a_i`` (Nash-MTL, Navon et al. 2022, eq. (4):
    ``G alpha = 1 / alpha``; AuxiNash, Shamsian et al. 2023: ``G alpha = p / alpha``).

    * K = 2: with ``r = a_2 / a_1``, ``c p_1 r^2 + b (p_1 - p_2) r - a p_2 = 0`` has exactly one
      positive root; ``a_1 = sqrt(p_1 / (G11 + G12 r))``, ``a_2 = r a_1``; two Newton polishing steps.
    * K >= 3: damped Newton ``a <- a - step / (1 + lambda)`` (lambda = Newton decrement), which
      converges from any positive start for self-concordant functions, then full Newton steps.

    When G is singular with a positive null vector (e.g. an exact cancellation) there is no
    solution (phi is unbounded below, alpha -> infinity while the direction ``J^T alpha`` -> 0);
    those problems are re-solved with ``Gr = G + diag(1e-14 G_ii + 1e-16 trace(G) / K)`` (the
    identity when ``G = 0``), which keeps alpha finite.
    Returns ``(alpha [B, K], residual [B])`` with residual ``max_i |a_i (G a)_i / p_i - 1|`` for the
    matrix actually used.
    """
    B, K = p.shape
    if K == 2:  # closed form (:func:`nash_k2`): the plain and the ridged problem, elementwise
        with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
            x, y, res = nash_k2(G[:, 0, 0], G[:, 0, 1], G[:, 1, 1], p.T)
        return np.stack([x, y], axis=-1), res
    diag = np.diagonal(G, axis1=1, axis2=2)
    tr = diag.sum(-1, keepdims=True)
    zero = tr[:, 0] <= 0
    G0 = np.where(zero[:, None, None], np.eye(K), G) if zero.any() else G
    # warm-started regular problems converge in a few Newton steps; don't spend long on singular ones
    alpha, res = _nash_solve(G0, p, alpha0, max_iter if alpha0 is None else min(max_iter, 20), tol)
    bad = ~(res <= 1e-9) | ~np.isfinite(alpha).all(-1)
    if bad.any():
        Gr = G0[bad] + np.einsum("bi,ij->bij", 1e-14 * diag[bad] + 1e-16 * tr[bad] / K, np.eye(K))
        a0 = None if alpha0 is None else alpha0[bad]
        alpha[bad], res[bad] = _nash_solve(Gr, p[bad], a0, max_iter, tol)
    return alpha, res


def _nash_solve(Gr: np.ndarray, p: np.ndarray, alpha0: np.ndarray | None, max_iter: int,
                tol: float) -> tuple[np.ndarray, np.ndarray]:
    B, K = p.shape
    if K == 1:
        alpha = np.sqrt(p[:, 0] / Gr[:, 0, 0])[:, None]
    else:
        if alpha0 is None or alpha0.shape != (B, K) or not np.all(np.isfinite(alpha0)) or np.any(alpha0 <= 0):
            # start on the right scale: a = t * 1 minimizes phi along the ray when t^2 = sum(p) / 1^T G 1
            s = np.maximum(np.einsum("bij->b", Gr), np.einsum("bii->b", Gr) / K)
            alpha = np.sqrt(p.sum(-1) / s)[:, None] * np.ones((1, K))
        else:
            alpha = alpha0.copy()
        active = np.ones(B, dtype=bool)
        for _ in range(max_iter):
            Ga = np.einsum("bij,bj->bi", Gr[active], alpha[active])
            grad = Ga - p[active] / alpha[active]
            H = Gr[active] + np.einsum("bi,ij->bij", p[active] / alpha[active] ** 2, np.eye(K))
            try:
                step = np.linalg.solve(H, grad[..., None])[..., 0]
            except np.linalg.LinAlgError:  # alpha ran off to infinity (singular G): give up here
                alpha[active] = np.inf
                break
            lam = np.sqrt(np.maximum(np.einsum("bi,bi->b", grad, step), 0.0))
            damp = np.where(lam > 0.25, 1.0 / (1.0 + lam), 1.0)
            new = alpha[active] - damp[:, None] * step
            # keep positivity (guaranteed in exact arithmetic for the damped step)
            new = np.where(new > 0, new, 0.5 * alpha[active])
            alpha[active] = new
            done = lam < tol
            idx = np.flatnonzero(active)
            active[idx[done]] = False
            if not active.any():
                break
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        Ga = np.einsum("bij,bj->bi", Gr, alpha)
        res = np.abs(alpha * Ga / p - 1.0).max(axis=-1)
    return alpha, np.where(np.isfinite(res), res, np.inf)


@formula
def _nash2_solve(a: Any, b: Any, c: Any, p1: Any, p2: Any) -> Any:
    """The K = 2 solution ``(alpha_1, alpha_2)`` of ``alpha_i (G alpha)_i = p_i`` for
    ``(a, b, c) = (G11, G12, G22)``, written once (NumPy arrays, or one row compiled): with
    ``r = a_2 / a_1``, the positive root of ``c p_1 r^2 + b (p_1 - p_2) r - a p_2 = 0`` (the
    numerically stable form), ``a_1 = sqrt(p_1 / (G11 + G12 r))``, then two Newton steps on
    ``phi`` (explicit 2x2 inverse), each kept only where it stays positive and finite."""
    A2, A1, A0 = c * p1, b * (p1 - p2), -a * p2
    disc = np.sqrt(A1 * A1 - 4.0 * A2 * A0)
    # numerically stable positive root of A2 r^2 + A1 r + A0 = 0 (A2 > 0 > A0)
    r = where(A1 >= 0, -2.0 * A0 / (A1 + disc), (disc - A1) / (2.0 * A2))
    x = np.sqrt(p1 / (a + b * r))
    y = r * x
    for _ in range(2):  # polish with Newton steps on phi (explicit 2x2 inverse)
        g1 = a * x + b * y - p1 / x
        g2 = b * x + c * y - p2 / y
        h11, h22 = a + p1 / (x * x), c + p2 / (y * y)
        det = h11 * h22 - b * b
        nx, ny = x - (h22 * g1 - b * g2) / det, y - (h11 * g2 - b * g1) / det
        good = (nx > 0) & (ny > 0) & np.isfinite(nx) & np.isfinite(ny)
        x, y = where(good, nx, x), where(good, ny, y)
    return x, y


@formula
def _nash2_residual(a: Any, b: Any, c: Any, p1: Any, p2: Any, x: Any, y: Any) -> Any:
    """``max_i |alpha_i (G alpha)_i / p_i - 1|``, inf where it is not finite (:func:`_nash_solve`)."""
    res = np.maximum(np.abs(x * (a * x + b * y) / p1 - 1.0), np.abs(y * (b * x + c * y) / p2 - 1.0))
    return where(np.isfinite(res), res, np.inf)


@formula
def nash_k2(g00: Any, g01: Any, g11: Any, p: Any) -> Any:
    """:func:`nash` for K = 2, written once (NumPy arrays, or one row compiled; ``p = (p_1, p_2)``):
    ``G = 0`` -> the identity; the plain solve (:func:`_nash2_solve`), replaced by the solve on the
    ridged ``G + diag(1e-14 G_ii + 1e-16 trace(G) / 2)`` where its residual is not ``<= 1e-9`` or
    alpha is not finite. Returns ``(alpha_1, alpha_2, residual)``."""
    p1, p2 = p[0], p[1]
    tr = g00 + g11
    zero = tr <= 0
    a, b, c = where(zero, 1.0, g00), where(zero, 0.0, g01), where(zero, 1.0, g11)
    x, y = _nash2_solve(a, b, c, p1, p2)
    res = _nash2_residual(a, b, c, p1, p2, x, y)
    f0, f1 = 1e-14 * g00 + 1e-16 * tr / 2, 1e-14 * g11 + 1e-16 * tr / 2
    ar, br, cr = a + f0, b + f0 * 0.0, c + f1  # G0 + diag(f) as nash()'s einsum with the identity
    xr, yr = _nash2_solve(ar, br, cr, p1, p2)
    rr = _nash2_residual(ar, br, cr, p1, p2, xr, yr)
    ok = (res <= 1e-9) & np.isfinite(x) & np.isfinite(y)
    return where(ok, x, xr), where(ok, y, yr), where(ok, res, rr)


@formula
def nash_clip_k2(x: Any, y: Any, g00: Any, g01: Any, g10: Any, g11: Any, max_norm: Any) -> Any:
    """Nash-MTL's clipping for K = 2, written once (NumPy arrays, or one row compiled): alpha
    rescaled to ``||J^T alpha|| = sqrt(alpha^T G alpha) = max_norm`` where it is longer (the terms of
    ``np.einsum("bi,bij,bj->b", ...)`` in its order: the same bits)."""
    norm = np.sqrt(np.maximum(x * g00 * x + x * g01 * y + y * g10 * x + y * g11 * y, 0.0))
    clip = norm > max_norm
    n = where(clip, norm, 1.0)
    return where(clip, x / n * max_norm, x), where(clip, y / n * max_norm, y)


_nash_k2_c = jit(nash_k2, inline=True)  # the formulas, compiled into the row loop below
_nash_clip_k2_c = jit(nash_clip_k2, inline=True)


@jit
def nash_k2_rows(G: Any, p: Any, max_norm: float, A: Any, W: Any, R: Any) -> Any:
    """:func:`nash_k2` for every row of ``G [B, 2, 2]``: ``A [B, 2]`` = alpha, ``R [B]`` = residual,
    ``W [B, 2]`` = alpha clipped by :func:`nash_clip_k2` (``max_norm > 0``; else alpha)."""
    for i in range(G.shape[0]):
        g00, g01, g10, g11 = G[i, 0, 0], G[i, 0, 1], G[i, 1, 0], G[i, 1, 1]
        x, y, R[i] = _nash_k2_c(g00, g01, g11, p)
        A[i, 0], A[i, 1] = x, y
        if max_norm > 0:
            x, y = _nash_clip_k2_c(x, y, g00, g01, g10, g11, max_norm)
        W[i, 0], W[i, 1] = x, y
