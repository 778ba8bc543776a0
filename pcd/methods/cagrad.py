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
objective over all supports is the minimizer (the objective is convex). K > 5: SLSQP per problem,
as the official implementation (``scipy.optimize.minimize``). ``c = 0`` is the mean.
"""
from __future__ import annotations

import itertools
from functools import lru_cache

import numpy as np

from pcd.methods._solvers import ridge, trace
from pcd.methods.base import Method, MethodOutput, Param, register


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


def _solve_k2(Gr: np.ndarray, b: np.ndarray, phi: np.ndarray) -> np.ndarray:
    """K = 2: the same three supports as :func:`_solve_enum`, with explicit 2x2 inverses."""
    a, o, c = Gr[:, 0, 0], Gr[:, 0, 1], Gr[:, 1, 1]
    b1, b2 = b[:, 0], b[:, 1]
    # singletons w = e_i: objective b_i + phi sqrt(G_ii)
    f1 = b1 + phi * np.sqrt(a)
    f2 = b2 + phi * np.sqrt(c)
    # full support: x = Gr^-1 1, y = Gr^-1 b (Gr is positive definite)
    det = a * c - o * o
    x1, x2 = (c - o) / det, (a - o) / det
    y1, y2 = (c * b1 - o * b2) / det, (a * b2 - o * b1) / det
    ox, oy = x1 + x2, y1 + y2
    disc = oy * oy - ox * (b1 * y1 + b2 * y2 - phi * phi)
    ok = (disc > 0) & (det > 0)
    sd = np.sqrt(np.where(ok, disc, 1.0))
    nu = (oy + sd) / ox
    w1 = (nu * x1 - y1) / sd
    w2 = (nu * x2 - y2) / sd
    ok &= (w1 >= -1e-10) & (w2 >= -1e-10)
    f3 = np.where(ok, b1 * w1 + b2 * w2 + phi * phi / sd, np.inf)
    use1 = (f1 <= f2) & (f1 <= f3)
    use2 = ~use1 & (f2 <= f3)
    t = np.where(use1, 1.0, np.where(use2, 0.0, np.clip(w1, 0.0, 1.0)))
    return np.stack([t, 1.0 - t], axis=-1)


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


def cagrad_weights(G: np.ndarray, c: float, norm_eps: float = 1e-4) -> np.ndarray:
    B, K = G.shape[0], G.shape[-1]
    tr = trace(G)
    zero = tr < norm_eps
    Gn = np.where(zero[:, None, None], 0.0, G / np.where(tr > 0, tr, 1.0)[:, None, None])
    b = Gn.sum(-1) / K
    phi = c * np.sqrt(np.maximum(Gn.sum((-1, -2)), 0.0)) / K
    Gr = ridge(Gn)
    if K == 2:
        w = _solve_k2(Gr, b, phi)
    elif K <= 5:
        w = _solve_enum(Gr, b, phi)
    else:
        w = np.stack([_solve_slsqp(Gn[i], b[i], float(phi[i])) if phi[i] > 0 else np.full(K, 1.0 / K)
                      for i in range(B)])
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
    return np.where(big[:, None], out, 0.0)


@register
class CAGrad(Method):
    name = "cagrad"
    display_name = "CAGrad"
    description = "Best worst-case improvement within a ball of radius c around the mean gradient."
    paper = "Liu et al., Conflict-Averse Gradient Descent for Multi-task Learning, NeurIPS 2021"
    params = (
        Param("c", 0.5, 0.0, 10.0, help="radius of the ball around the mean gradient (times its norm)"),
        Param("norm_eps", 1e-4, 0.0, 1e-1, help="below this (normalized) norm the weights are 0, as in TorchJD"),
    )

    def weights(self, gram, *, losses=None, jacobian=None, state=None, rng=None) -> MethodOutput:
        return MethodOutput(weights=cagrad_weights(gram, self.hparams["c"], self.hparams["norm_eps"]),
                            state=state)
