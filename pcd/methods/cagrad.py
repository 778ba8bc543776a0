"""CAGrad: conflict-averse gradient descent (Liu et al., "Conflict-Averse Gradient Descent for
Multi-task Learning", NeurIPS 2021, arXiv 2110.14048, Algorithm 1), with TorchJD 0.18's
``CAGradWeighting`` conventions.

With ``G~ = G / trace(G)`` (zero when ``trace(G) < norm_eps``), the mean gradient ``g0 = J~^T 1/K``
and ``phi = c ||g0||``, the dual problem is

    w* = argmin_{w in simplex}  g_w . g0 + phi ||g_w||,      g_w = J~^T w,

i.e. ``min_w b^T w + phi sqrt(w^T G~ w)`` with ``b = G~ 1 / K``; then

    weights = 1/K + (phi / ||g_w*||) w*      (0 when ||g_w*|| < norm_eps: "on the Pareto front").

Exact solver (K <= 5): for a support F, stationarity ``b_F + phi G_FF w_F / s = nu 1`` with
``s = ||g_w||`` and ``1^T w_F = 1`` has the closed form ``x = G_FF^-1 1``, ``y = G_FF^-1 b_F``,
``disc = (1^T y)^2 - (1^T x)(b^T y - phi^2)``, ``nu = (1^T y + sqrt(disc)) / 1^T x``,
``w_F = (nu x - y) / sqrt(disc)``, ``s = phi / sqrt(disc)``; the feasible candidate with the lowest
objective over all supports is the minimizer (the objective is convex). K > 5: block principal
pivoting over supports with the same closed form (exact, a few solves; started from every index,
else from the support of an approximate solution found through the perspective form
``phi ||g|| = min_r phi (||g||^2 / r + r) / 2``, which turns the inner problem into MGDA on a
shifted Gram matrix and leaves a convex 1-D search over r), falling back to SLSQP
(as the official implementation, ``scipy.optimize.minimize``) if it fails. ``c = 0`` is the mean.
"""
from __future__ import annotations

import itertools
from functools import lru_cache
from typing import Any

import numpy as np

from pcd._kernels import STEP_SIG, formula, jit, k2_batch, where
from pcd.methods._solvers import Support, WarmStarted, ridge, support_of, trace
from pcd.methods.base import Kernel, Param, Step, register
from pcd.qp import principal_pivoting


@lru_cache(maxsize=16)
def _supports(K: int) -> np.ndarray:
    return np.array([s for s in itertools.product((0.0, 1.0), repeat=K) if any(s)], dtype=np.float64)


def _solve_enum(Gr: np.ndarray, b: np.ndarray, phi: np.ndarray) -> np.ndarray:
    B, K = b.shape
    F = _supports(K)
    FF = F[:, :, None] * F[:, None, :]
    M = Gr[:, None] * FF[None] + (np.eye(K) * (1.0 - F)[:, None, :])[None]  # [B, P, K, K]
    rhs = np.stack([np.broadcast_to(F, (B,) + F.shape), b[:, None, :] * F[None]], axis=-1)  # [B,P,K,2]
    xy = np.linalg.solve(M, rhs)
    x, y = xy[..., 0], xy[..., 1]
    ox, oy = x.sum(-1), y.sum(-1)
    by = np.einsum("bk,bpk->bp", b, y)
    ph = phi[:, None]
    disc = oy * oy - ox * (by - ph * ph)
    ok = disc > 0
    sd = np.sqrt(np.where(ok, disc, 1.0))
    nu = (oy + sd) / ox
    w = (nu[..., None] * x - y) / sd[..., None]
    s = ph / sd
    feas = ok & (w.min(-1) >= -1e-10)
    obj = np.einsum("bk,bpk->bp", b, w) + ph * s
    obj = np.where(feas, obj, np.inf)
    best = np.argmin(obj, axis=1)
    out = np.maximum(w[np.arange(B), best], 0.0)
    return out / out.sum(-1, keepdims=True)


def _solve_bpp(Gr: np.ndarray, b: np.ndarray, phi: float, maxiter: int = 60,
               free: np.ndarray | None = None) -> np.ndarray | None:
    """One problem, any K: block principal pivoting on the support with the closed-form candidate
    of :func:`_solve_enum` (flip support indices with ``w_i < 0`` and outside indices whose partial
    derivative ``b_i + phi (G w)_i / s`` is below ``nu``). None when it does not terminate or a
    support has no stationary point (the caller then uses SLSQP)."""
    K = b.shape[0]
    tol = 1e-11 * (np.abs(b).max() + phi * np.sqrt(np.diagonal(Gr).max()))

    def subproblem(free: np.ndarray) -> tuple[np.ndarray, np.ndarray] | None:
        if not free.any():
            free[int(np.argmin(b + phi * np.sqrt(np.diagonal(Gr))))] = True
        idx = np.flatnonzero(free)
        try:
            xy = np.linalg.solve(Gr[np.ix_(idx, idx)], np.stack([np.ones(idx.size), b[idx]], axis=-1))
        except np.linalg.LinAlgError:
            return None
        x, y = xy[:, 0], xy[:, 1]
        ox, oy = x.sum(), y.sum()
        disc = oy * oy - ox * (b[idx] @ y - phi * phi)
        if not disc > 0:
            return None
        sd = np.sqrt(disc)
        nu = (oy + sd) / ox
        w = np.zeros(K)
        w[idx] = (nu * x - y) / sd
        grad = b + sd * (Gr @ w)  # b + phi G w / s with s = phi / sd
        return w, (free & (w < 0)) | (~free & (grad < nu - tol))

    w = principal_pivoting(np.ones(K, dtype=bool) if free is None else free, subproblem, maxiter)
    if w is None:
        return None
    w = np.maximum(w, 0.0)
    return w / w.sum()


def _support_by_perspective(Gr: np.ndarray, b: np.ndarray, phi: float, iters: int = 15) -> np.ndarray:
    """Approximate minimizer's support via ``phi ||g|| = min_r phi (||g||^2 / r + r) / 2``:
    for fixed r the problem is ``min_w (phi / 2r) ||J^T w + (r / phi) g0||^2`` over the simplex, i.e.
    MGDA on the shifted Gram matrix ``G + t (b 1^T + 1 b^T) + t^2 |g0|^2 1 1^T`` (``t = r / phi``,
    ``b = J g0``); the outer value is convex in r (partial minimization of a perspective), so a
    golden-section search on log r finds it."""
    from pcd.methods._solvers import simplex_min_norm

    K = b.shape[0]
    one = np.ones(K)
    g0sq = max(float(b.sum()) / K, 0.0)  # |g0|^2 = 1^T G 1 / K^2 = sum(b) / K

    def inner(r: float) -> tuple[float, np.ndarray]:
        t = r / phi
        Gs = Gr + t * (np.outer(b, one) + np.outer(one, b)) + t * t * g0sq * np.outer(one, one)
        w = simplex_min_norm(Gs[None])[0]
        return phi / (2 * r) * float(w @ Gs @ w) - r * g0sq / (2 * phi) + phi * r / 2, w

    hi = np.log(np.sqrt(np.diagonal(Gr).max()))
    lo = hi - 30.0
    g = (np.sqrt(5.0) - 1) / 2
    x1, x2 = hi - g * (hi - lo), lo + g * (hi - lo)
    f1, f2 = inner(np.exp(x1))[0], inner(np.exp(x2))[0]
    for _ in range(iters):
        if f1 <= f2:
            hi, x2, f2 = x2, x1, f1
            x1 = hi - g * (hi - lo)
            f1 = inner(np.exp(x1))[0]
        else:
            lo, x1, f1 = x1, x2, f2
            x2 = lo + g * (hi - lo)
            f2 = inner(np.exp(x2))[0]
    w = inner(np.exp(0.5 * (lo + hi)))[1]
    return w > 1e-9 * w.max()


def _solve_slsqp(G: np.ndarray, b: np.ndarray, phi: float) -> np.ndarray:
    from scipy.optimize import minimize

    K = b.shape[0]

    def f(w: np.ndarray) -> float:
        return float(b @ w + phi * np.sqrt(max(w @ G @ w, 0.0) + 1e-30))

    def jac(w: np.ndarray) -> np.ndarray:
        n = np.sqrt(max(w @ G @ w, 0.0) + 1e-30)
        return b + phi * (G @ w) / n

    res = minimize(f, np.full(K, 1.0 / K), jac=jac, method="SLSQP", bounds=[(0.0, 1.0)] * K,
                   constraints=({"type": "eq", "fun": lambda w: w.sum() - 1.0, "jac": lambda w: np.ones(K)},),
                   options={"ftol": 1e-14, "maxiter": 500})
    w = np.maximum(res.x, 0.0)
    return w / w.sum()


@formula
def cagrad_k2(g11: Any, g12: Any, g22: Any, p: Any) -> Any:
    """CAGrad's K = 2 solution, written once (NumPy arrays, or one row compiled), for
    ``p = (c, norm_eps)``: the same dual as :func:`_cagrad` (K > 2) in closed form. The Gram matrix
    is normalized by its trace (weights 0 below ``norm_eps``); the dual ``min_t b.w + phi ||w||_G``
    over ``w = (t, 1 - t)`` is the best of its two vertices and the stationary point of the ridged
    problem (a quadratic in closed form); ``phi = 0`` (a linear objective) takes the centre of the
    optimal face. Weights ``1/2 + phi / ||g_w|| (t, 1 - t)``, zero when ``||g_w|| < norm_eps``."""
    c, norm_eps = p[0], p[1]
    tr = g11 + g22
    keep = tr >= norm_eps
    inv = where(keep, 1.0, 0.0) / where(tr > 0, tr, 1.0)
    a, o, e = g11 * inv, g12 * inv, g22 * inv  # normalized Gram entries (0 when trace < norm_eps)
    b1, b2 = 0.5 * (a + o), 0.5 * (o + e)
    phi = 0.5 * c * np.sqrt(np.maximum(a + 2.0 * o + e, 0.0))
    # ridge (uniqueness only; see pcd.methods._solvers.ridge); identity when the trace is 0
    z = where(keep, 0.0, 1.0)
    ar, er = a * (1.0 + 1e-13) + 1e-30 + z, e * (1.0 + 1e-13) + 1e-30 + z
    f1 = b1 + phi * np.sqrt(ar)
    f2 = b2 + phi * np.sqrt(er)
    det = ar * er - o * o
    x1, x2 = (er - o) / det, (ar - o) / det
    y1, y2 = (er * b1 - o * b2) / det, (ar * b2 - o * b1) / det
    ox, oy = x1 + x2, y1 + y2
    disc = oy * oy - ox * (b1 * y1 + b2 * y2 - phi * phi)
    sd = np.sqrt(np.maximum(disc, 1e-300))
    w1 = ((oy + sd) / ox * x1 - y1) / sd
    ok = (disc > 0) & (det > 0) & (w1 >= -1e-10) & (w1 <= 1.0 + 1e-10)
    f3 = where(ok, b1 * w1 + b2 * (1.0 - w1) + phi * phi / sd, np.inf)
    t = where((f1 <= f2) & (f1 <= f3), 1.0, where(f2 <= f3, 0.0, np.minimum(np.maximum(w1, 0.0), 1.0)))
    # phi = 0: linear objective, centre of the optimal face
    tie = np.abs(b1 - b2) <= 1e-12 * np.maximum(np.abs(b1), np.abs(b2))
    t = where(phi <= 1e-15, where(tie, 0.5, where(b1 < b2, 1.0, 0.0)), t)
    u = 1.0 - t
    gw = np.sqrt(np.maximum(t * t * a + 2.0 * t * u * o + u * u * e, 0.0))
    big = gw >= norm_eps
    coef = phi / where(big, gw, 1.0)
    return where(big, 1.0, 0.0) * (0.5 + coef * t), where(big, 1.0, 0.0) * (0.5 + coef * u)




_cagrad_k2_c = jit(cagrad_k2, inline=True)  # the formula, compiled into the row loop below


@jit
def _cagrad_k2_rows(a: Any, b: Any, c: Any, p: Any, W: Any) -> Any:
    for i in range(a.shape[0]):
        W[0, i], W[1, i] = _cagrad_k2_c(a[i], b[i], c[i], p)


@jit(sig=STEP_SIG)
def _cagrad_k2_step(t: Any, L: Any, G: Any, W: Any, S: Any, p: Any) -> None:
    """The fast path's step (:class:`pcd.methods.base.Kernel`), compiled for :func:`pcd._kernels.trajectory`."""
    _cagrad_k2_rows(G[0], G[1], G[2], p, W)


def cagrad_weights(G: np.ndarray, c: float, norm_eps: float = 1e-4,
                   support: np.ndarray | None = None) -> np.ndarray:
    """CAGrad weights ``[B, K]``. ``support`` ``[B, K]`` (bool, optional; K > 5 only) is a first guess
    of the dual solution's support, e.g. the previous step's (see :meth:`CAGrad.weights`)."""
    return _cagrad(G, c, norm_eps, support)[0]


def _cagrad(G: np.ndarray, c: float, norm_eps: float,
            support: np.ndarray | None) -> tuple[np.ndarray, np.ndarray | None]:
    B, K = G.shape[0], G.shape[-1]
    if K == 2:
        return k2_batch(G, cagrad_k2, _cagrad_k2_rows, np.array([c, norm_eps])), None
    tr = trace(G)
    zero = tr < norm_eps
    Gn = np.where(zero[:, None, None], 0.0, G / np.where(tr > 0, tr, 1.0)[:, None, None])
    b = Gn.sum(-1) / K
    phi = c * np.sqrt(np.maximum(Gn.sum((-1, -2)), 0.0)) / K
    Gr = ridge(Gn)
    if K <= 5:
        w = _solve_enum(Gr, b, phi)
    else:
        w = np.full((B, K), 1.0 / K)
        for i in range(B):
            if phi[i] > 0:
                p = float(phi[i])
                wi = None
                if support is not None and support.shape == (B, K) and support[i].any():
                    wi = _solve_bpp(Gr[i], b[i], p, free=support[i])
                if wi is None:
                    wi = _solve_bpp(Gr[i], b[i], p)
                if wi is None:  # start from the support of an approximate solution instead
                    wi = _solve_bpp(Gr[i], b[i], p, free=_support_by_perspective(Gr[i], b[i], p))
                w[i] = _solve_slsqp(Gn[i], b[i], p) if wi is None else wi
    # phi = 0 (c = 0, or a zero mean gradient): a linear objective, minimized on a whole face of the
    # simplex; take the centre of that face (what TorchJD's interior-point solver returns)
    lin = phi <= 1e-15
    if lin.any():
        tie = b <= b.min(axis=1, keepdims=True) + 1e-12 * np.abs(b).max(axis=1, keepdims=True)
        w = np.where(lin[:, None], tie / tie.sum(axis=1, keepdims=True), w)
    gw = np.sqrt(np.maximum(np.einsum("bi,bij,bj->b", w, Gn, w), 0.0))
    big = gw >= norm_eps
    coef = np.where(big, phi / np.where(big, gw, 1.0), 0.0)
    out = 1.0 / K + coef[:, None] * w
    return np.where(big[:, None], out, 0.0), (w > 0 if K > 5 else None)


@register("cagrad", "CAGrad", "gradient aggregation")
class CAGrad(WarmStarted):
    claims = frozenset({"weighted"})
    zero_where_primary_vanishes = True  # the dual then selects g_1 = 0
    description = "Best worst-case improvement within a ball of radius c around the mean gradient."
    paper = "Liu et al., Conflict-Averse Gradient Descent for Multi-task Learning, NeurIPS 2021"
    params = (
        Param("c", 0.5, 0.0, 10.0, help="radius of the ball around the mean gradient (times its norm)"),
        Param("norm_eps", 1e-4, 0.0, 1e-1, help="below this (normalized) norm the weights are 0, as in TorchJD"),
    )

    def update(self, gram: np.ndarray, state: Any = None, *, losses: Any = None, jacobian: Any = None,
               rng: Any = None) -> Step:
        w, support = _cagrad(gram, self.hparams["c"], self.hparams["norm_eps"], support_of(state))
        # state: the dual solution's support (K > 5), the first guess at the next call
        return Step(weights=w, state=Support(support))

    def kernel(self) -> Kernel:
        """The K = 2 solution, compiled (:func:`cagrad_k2`)."""
        p = np.array([[self.hparams["c"], self.hparams["norm_eps"]]])
        return Kernel(rows=_cagrad_k2_step, params=lambda steps: p)
