"""Small batched solvers shared by the baseline methods (float64 NumPy, batch axis first).

Every routine works on a batch of problems ``[B, ...]`` and is exact up to floating point:

* :func:`nnqp`        ``min_{mu >= 0} 1/2 mu^T S mu + q^T mu`` for positive definite ``S``
                      (K = 1, 2: closed forms; K <= 5: the KKT point found by enumerating the
                      2^K free sets, vectorized; larger K: :func:`pcd.qp.solve_nnqp` per problem).
* :func:`simplex_min_norm`  ``min_{a in simplex} a^T G a`` (MGDA's problem).
* :func:`nash`        ``alpha > 0`` with ``alpha_i (G alpha)_i = p_i`` (Nash bargaining, Nash-MTL /
                      AuxiNash): K = 2 closed form, otherwise damped Newton on the self-concordant
                      ``1/2 a^T G a - sum_i p_i log a_i``.

Rank-deficient Gram matrices make the weights of these problems non-unique (the direction is
unique). We then return the limit of the ridge-regularized problem ``G + delta I`` with
``delta = RIDGE_REL * trace(G)`` -- the same choice TorchJD's regularized projector converges to,
so weights are comparable with TorchJD on rank-deficient and exactly cancelling inputs.
"""
from __future__ import annotations

import itertools
from functools import lru_cache

import numpy as np

RIDGE_REL = 1e-13  # ridge added to the diagonal, relative to the trace (uniqueness only)


def trace(G: np.ndarray) -> np.ndarray:
    return np.einsum("bii->b", G)


def ridge(G: np.ndarray, rel: float | np.ndarray = RIDGE_REL) -> np.ndarray:
    """``G + rel * trace(G) * I``; problems with ``trace(G) == 0`` get the identity instead.

    A zero Gram matrix means every gradient is zero: any weights give the zero direction, and the
    identity makes each solver return its neutral weights (finite, documented per method).
    """
    K = G.shape[-1]
    tr = trace(G)
    zero = tr <= 0.0
    delta = np.maximum(np.asarray(rel, dtype=np.float64), RIDGE_REL) * tr
    out = G + delta[:, None, None] * np.eye(K)
    if zero.any():
        out = np.where(zero[:, None, None], np.eye(K), out)
    return out


@lru_cache(maxsize=16)
def _free_sets(n: int, include_empty: bool) -> np.ndarray:
    rows = [s for s in itertools.product((0.0, 1.0), repeat=n) if include_empty or any(s)]
    return np.array(rows, dtype=np.float64)


def _nnqp_enum(S: np.ndarray, q: np.ndarray) -> np.ndarray:
    """KKT point by enumeration of the free sets (vectorized); S positive definite."""
    B, n = q.shape
    F = _free_sets(n, True)  # [P, n]
    P = F.shape[0]
    FF = F[:, :, None] * F[:, None, :]
    M = S[:, None] * FF[None] + (np.eye(n) * (1.0 - F)[:, None, :])[None]  # [B, P, n, n]
    rhs = -(q[:, None, :] * F[None])  # [B, P, n]
    mu = np.linalg.solve(M, rhs[..., None])[..., 0]
    scale = np.abs(mu).max(axis=-1)
    feas = mu.min(axis=-1) >= -1e-9 * scale - 1e-300
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


def nnqp(S: np.ndarray, q: np.ndarray) -> np.ndarray:
    """Batched ``argmin_{mu >= 0} 1/2 mu^T S mu + q^T mu`` for positive definite ``S [B, n, n]``."""
    B, n = q.shape
    if n == 1:
        return np.maximum(-q / S[:, :, 0], 0.0)
    if n == 2:
        return _nnqp2(S, q)
    if n <= 5:
        return _nnqp_enum(S, q)
    from pcd.qp import solve_nnqp

    return np.stack([solve_nnqp(S[i], q[i]) for i in range(B)]) if B else np.zeros((0, n))


def project_dual_cone(G: np.ndarray, U: np.ndarray, reg_eps: float = 0.0) -> np.ndarray:
    """Weights ``v`` of the projections of ``J^T u`` onto the dual cone ``{y : J y >= 0}``.

    By Proposition 1 of Jacobian Descent (arXiv 2406.16232), ``pi_J(J^T u) = J^T v`` with
    ``v = argmin_{v >= u} v^T G v``; with ``v = u + mu`` this is the non-negative QP
    ``min_{mu >= 0} 1/2 mu^T G mu + (G u)^T mu``. ``G [B, K, K]``, ``U [B, M, K]`` (M targets per
    problem) -> ``V [B, M, K]``. ``reg_eps`` adds ``reg_eps * trace(G) * I`` like TorchJD's
    projector (which solves on ``G / trace(G) + reg_eps I``).
    """
    B, M, K = U.shape
    Gr = ridge(G, reg_eps)
    S = np.repeat(Gr, M, axis=0)
    u = U.reshape(B * M, K)
    q = np.einsum("bij,bj->bi", S, u)
    mu = nnqp(S, q)
    return (u + mu).reshape(B, M, K)


def simplex_min_norm(G: np.ndarray) -> np.ndarray:
    """``argmin_{a >= 0, sum a = 1} a^T G a`` for ``G [B, K, K]`` (MGDA, Desideri 2012).

    K = 2: ``a_1 = clip((G22 - G12) / (G11 + G22 - 2 G12), 0, 1)``. K >= 3: with ``Gr = G + delta I``
    positive definite, ``beta = argmin_{beta >= 0} 1/2 beta^T Gr beta - 1^T beta`` and
    ``a = beta / sum(beta)`` (the KKT conditions ``(Gr a)_i >= a^T Gr a`` coincide).
    """
    B, K = G.shape[0], G.shape[-1]
    if K == 1:
        return np.ones((B, 1))
    if K == 2:  # exact closed form on the raw Gram matrix (no ridge: a zero g_1 gives a = e_1)
        a, b, c = G[:, 0, 0], G[:, 0, 1], G[:, 1, 1]
        den = a + c - 2.0 * b
        with np.errstate(divide="ignore", invalid="ignore"):
            t = np.where(den > 0, (c - b) / den, 0.5)
        t = np.clip(t, 0.0, 1.0)
        return np.stack([t, 1.0 - t], axis=-1)
    beta = nnqp(ridge(G), -np.ones((B, K)))
    s = beta.sum(axis=-1, keepdims=True)
    return np.where(s > 0, beta / np.where(s > 0, s, 1.0), 1.0 / K)


def nash(G: np.ndarray, p: np.ndarray, alpha0: np.ndarray | None = None, *, max_iter: int = 100,
         tol: float = 1e-12) -> tuple[np.ndarray, np.ndarray]:
    """Solve ``alpha_i (G alpha)_i = p_i``, ``alpha > 0`` (Nash bargaining with powers ``p``).

    This is the stationarity condition of the strictly convex, self-concordant
    ``phi(a) = 1/2 a^T Gr a - sum_i p_i log a_i`` with ``Gr = G + delta I`` (Nash-MTL, Navon et al.
    2022, eq. (4): ``G alpha = 1 / alpha``; AuxiNash, Shamsian et al. 2023: ``G alpha = p / alpha``).

    * K = 2: with ``r = a_2 / a_1``, ``c p_1 r^2 + b (p_1 - p_2) r - a p_2 = 0`` has exactly one
      positive root; ``a_1 = sqrt(p_1 / (G11 + G12 r))``, ``a_2 = r a_1``.
    * K >= 3: damped Newton ``a <- a - step / (1 + lambda)`` (lambda = Newton decrement), which
      converges from any positive start for self-concordant functions, then full Newton steps.

    Returns ``(alpha [B, K], residual [B])`` with residual ``max_i |a_i (G a)_i / p_i - 1|``.
    """
    B, K = p.shape
    Gr = ridge(G)
    if K == 1:
        alpha = np.sqrt(p[:, 0] / Gr[:, 0, 0])[:, None]
    elif K == 2:
        a, b, c = Gr[:, 0, 0], Gr[:, 0, 1], Gr[:, 1, 1]
        p1, p2 = p[:, 0], p[:, 1]
        A2, A1, A0 = c * p1, b * (p1 - p2), -a * p2
        disc = np.sqrt(A1 * A1 - 4.0 * A2 * A0)
        # numerically stable positive root of A2 r^2 + A1 r + A0 = 0 (A2 > 0 > A0)
        r = np.where(A1 >= 0, -2.0 * A0 / (A1 + disc), (disc - A1) / (2.0 * A2))
        a1 = np.sqrt(p1 / (a + b * r))
        alpha = np.stack([a1, r * a1], axis=-1)
    else:
        if alpha0 is None or alpha0.shape != (B, K) or not np.all(np.isfinite(alpha0)) or np.any(alpha0 <= 0):
            # start on the right scale: a = t * 1 minimizes phi along the ray when t^2 = sum(p) / 1^T G 1
            s = np.einsum("bij->b", Gr)
            alpha = np.sqrt(p.sum(-1) / s)[:, None] * np.ones((1, K))
        else:
            alpha = alpha0.copy()
        active = np.ones(B, dtype=bool)
        for _ in range(max_iter):
            Ga = np.einsum("bij,bj->bi", Gr[active], alpha[active])
            grad = Ga - p[active] / alpha[active]
            H = Gr[active] + np.einsum("bi,ij->bij", p[active] / alpha[active] ** 2, np.eye(K))
            step = np.linalg.solve(H, grad[..., None])[..., 0]
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
    Ga = np.einsum("bij,bj->bi", Gr, alpha)
    with np.errstate(divide="ignore", invalid="ignore"):
        res = np.abs(alpha * Ga / p - 1.0).max(axis=-1)
    return alpha, res
