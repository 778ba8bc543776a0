"""FairGrad: alpha-fair resource allocation among the tasks (Ban & Ji, "Fair Resource Allocation in
Multi-Task Learning", ICML 2024, arXiv 2402.15638, eq. 4 / Algorithm 1), as TorchJD 0.18's
``FairGradWeighting``.

The update ``d = J^T x`` maximizes the alpha-fair utility of the tasks' improvements ``g_i . d``;
its weights solve

    G x = x^(-1/alpha),        x > 0                                             (eq. 4)

(``alpha = 0``: the mean, ``1/K`` each, as TorchJD; ``alpha = 1``: proportional fairness, the
Nash-MTL equation ``G x = 1 / x``; ``alpha -> infinity``: max-min fairness). Non-conflicting:
``g_i . d = (G x)_i = x_i^(-1/alpha) > 0``.

Exact solver. Eq. 4 is the stationarity condition of two strictly convex problems:

    phi(x) = 1/2 x^T G x - sum_i x_i^(1 - 1/alpha) / (1 - 1/alpha)      on x > 0      (weights)
    chi(c) = 1/2 c^T G c - sum_i s_i^(1 - alpha) / (1 - alpha),  s = G c,  on G c > 0  (improvements)

(``chi`` is the fair utility of the improvements ``s = J d`` of ``d = J^T c``, minus ``||d||^2 / 2``;
at the optimum ``c = x = s^-alpha``). Newton's method with a backtracking (Armijo) line search that
stays in the domain minimizes ``phi`` for ``alpha < 1`` (from the solution for the diagonal of G,
``x_i = G_ii^(-alpha / (1 + alpha))``) and ``chi`` for ``alpha > 1`` (from MGDA's min-norm point,
scaled to the best point on its ray): large alpha gives the least-served tasks astronomically
small weights (1e-90 at alpha = 20 on badly scaled G) but ordinary improvements. G is first scaled
by a power of two to a largest ``||g_i||^2`` in [1, 2) (exact; ``x`` scales back by
``c^(-alpha / (1 + alpha))``). The iterations stop at a backward error (residual of eq. 4 relative to
the size of its terms) <= 1e-15 K (1 + max(alpha, 1/alpha)) or when a step no longer moves the
iterate. ``alpha = 1`` uses the Nash-MTL solver (:func:`pcd.methods._solvers.nash`, closed form for
K = 2). The range of alpha is [0, 20]: beyond, on badly scaled G, the weights underflow.

TorchJD solves eq. 4 approximately with ``scipy.optimize.least_squares`` from the uniform start
(tolerances 1e-8, at most ``max_iters`` evaluations, ``100 K`` by default), which on badly scaled G
often stops far from the solution; our ``max_iters`` has no counterpart (the solve runs to
convergence) and is not a hyper-parameter. TorchJD requires ``alpha``; our default 2 is the
official code's (its QM9 script). When G has a non-negative null vector (MGDA's min norm is 0,
e.g. ``g_2 = -g_1`` or a zero gradient) eq. 4 has no solution (``x`` runs off to infinity along it);
those problems are solved, as for Nash-MTL, with ``G + diag(1e-14 G_ii + 1e-16 trace(G) / K)``
(the identity when G = 0), which keeps ``x`` finite and gives the limit direction.

Scaling: ``x(c G) = c^(-alpha / (1 + alpha)) x(G)``, applied exactly (powers of two) around the
solve; ``gram_scaling`` is None because its exponent depends on alpha (a per-instance value the
class attribute cannot hold).
"""
from __future__ import annotations

from typing import Any

import numpy as np

from pcd.methods._solvers import nash, simplex_min_norm
from pcd.methods.base import Method, Param, Step, register


def _residual(G: np.ndarray, x: np.ndarray, q: float) -> np.ndarray:
    """``max_i |x_i^q (G x)_i - 1|`` (inf where not finite)."""
    with np.errstate(all="ignore"):
        r = np.abs(x**q * np.einsum("bij,bj->bi", G, x) - 1.0).max(axis=-1)
    return np.where(np.isfinite(r), r, np.inf)


def _backward_error(G: np.ndarray, x: np.ndarray, q: float) -> np.ndarray:
    """``max_i |(G x)_i - x_i^-q| / (sum_j |G_ij| x_j + x_i^-q)``: eq. 4's residual relative to the
    size of its terms (what round-off allows when ``G x`` cancels; inf where not finite)."""
    with np.errstate(all="ignore"):
        p = x ** (-q)
        r = np.abs(np.einsum("bij,bj->bi", G, x) - p) / (np.einsum("bij,bj->bi", np.abs(G), x) + p)
        r = r.max(axis=-1)
    return np.where(np.isfinite(r), r, np.inf)


def _phi(G: np.ndarray, x: np.ndarray, q: float) -> np.ndarray:
    """``1/2 x^T G x - sum_i x_i^(1-q) / (1-q)`` (inf outside ``x > 0``)."""
    with np.errstate(all="ignore"):
        v = 0.5 * np.einsum("bi,bij,bj->b", x, G, x) - (x ** (1.0 - q)).sum(-1) / (1.0 - q)
    return np.where(np.all(x > 0, axis=-1) & np.isfinite(v), v, np.inf)


def _chi(G: np.ndarray, c: np.ndarray, alpha: float) -> np.ndarray:
    """``1/2 c^T G c - sum_i s_i^(1-alpha) / (1-alpha)``, ``s = G c`` (inf outside ``G c > 0``)."""
    with np.errstate(all="ignore"):
        s = np.einsum("bij,bj->bi", G, c)
        v = 0.5 * np.einsum("bi,bi->b", c, s) - (s ** (1.0 - alpha)).sum(-1) / (1.0 - alpha)
    return np.where(np.all(s > 0, axis=-1) & np.isfinite(v), v, np.inf)


def _damped_newton(G: np.ndarray, z: np.ndarray, alpha: float, dual: bool, max_iter: int) -> np.ndarray:
    """Newton's method with backtracking on ``phi`` (``dual=False``: in the weights ``x``) or on
    ``chi`` (``dual=True``: in coefficients ``c`` of the update ``J^T c``, whose improvements
    ``s = G c`` give ``x = s^-alpha``), from ``z``. Both Hessians are ``G + diag(alpha^-1 s^(1+alpha))``
    with ``s = x^(-1/alpha)`` resp. ``G c``. Stops at a backward error (:func:`_backward_error`)
    <= 1e-15 K (1 + max(alpha, 1/alpha)) or when the step no longer moves ``z`` (round-off level).
    Returns ``x``."""
    B, K = G.shape[0], G.shape[-1]
    q = 1.0 / alpha
    eye = np.eye(K)
    f = _chi if dual else (lambda Ga, xa, _: _phi(Ga, xa, q))
    z = z.copy()

    def weights_of(Ga: np.ndarray, za: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        with np.errstate(all="ignore"):
            if dual:
                s = np.einsum("bij,bj->bi", Ga, za)
                return s ** (-alpha), s
            return za, za ** (-q)

    tol = 1e-15 * K * (1.0 + max(alpha, q))  # the powers amplify round-off max(alpha, 1/alpha) times
    active = np.ones(B, dtype=bool)
    for _ in range(max_iter):
        x, _s = weights_of(G, z)
        active &= ~(_backward_error(G, x, q) <= tol)
        if not active.any():
            break
        idx = np.flatnonzero(active)
        Ga, za = G[idx], z[idx]
        xa, sa = weights_of(Ga, za)
        with np.errstate(all="ignore"):
            dinv = q * sa ** (1.0 + alpha)  # 1 / (second derivative of the barrier term)
            H = Ga + np.einsum("bi,ij->bij", dinv, eye)
            if dual:  # gradient G (c - x); Newton step H^-1 diag(dinv) (c - x)
                rhs = dinv * (za - xa)
            else:     # gradient G x - s
                rhs = np.einsum("bij,bj->bi", Ga, xa) - sa
        try:
            step = np.linalg.solve(H, rhs[..., None])[..., 0]
        except np.linalg.LinAlgError:
            break
        if dual:
            slope = np.einsum("bi,bi->b", np.einsum("bij,bj->bi", Ga, za - xa), step)
        else:
            slope = np.einsum("bi,bi->b", rhs, step)
        f0 = f(Ga, za, alpha)
        t = np.ones(len(idx))
        for _ in range(60):  # backtracking: stay in the domain and decrease f (up to its round-off)
            ok = f(Ga, za - t[:, None] * step, alpha) <= f0 - 1e-4 * t * slope + 1e-14 * np.abs(f0)
            if ok.all():
                break
            t = np.where(ok, t, 0.5 * t)
        move = t[:, None] * step
        zn = za - move
        good = np.isfinite(f(Ga, zn, alpha))
        z[idx] = np.where(good[:, None], zn, za)
        active[idx[~good | np.all(np.abs(move) <= 4e-16 * np.abs(za), axis=-1)]] = False
    return weights_of(G, z)[0]


def _solve(G: np.ndarray, alpha: float, max_iter: int, ridged: bool = False) -> np.ndarray:
    """Eq. 4 for matrices for which it has a solution (positive definite on the simplex)."""
    q = 1.0 / alpha
    if alpha < 1.0 or ridged:
        # weight space: the barrier x^(1-q) is strong where x is small; on a ridged matrix the
        # solution lies far out along a (near) null direction, where G c would cancel
        diag = np.diagonal(G, axis1=1, axis2=2)
        with np.errstate(all="ignore"):
            x0 = np.where(diag > 0, diag, 1.0) ** (-1.0 / (1.0 + q))  # G_ii x_i = x_i^-q
        return _damped_newton(G, x0, alpha, False, max_iter)
    # alpha > 1: improvement space (the weights of the least-served tasks are tiny, s is not),
    # from MGDA's min-norm point a (G a >= a^T G a > 0), scaled to the best point on its ray
    a = simplex_min_norm(G)
    s = np.einsum("bij,bj->bi", G, a)
    m = np.einsum("bi,bi->b", a, s)
    with np.errstate(all="ignore"):
        logt = (np.log(np.exp((1.0 - alpha) * (np.log(s) - np.log(s).min(-1, keepdims=True))).sum(-1))
                + (1.0 - alpha) * np.log(s).min(-1) - np.log(m)) / (1.0 + alpha)
    return _damped_newton(G, a * np.exp(logt)[:, None], alpha, True, max_iter)


def fairgrad_weights(G: np.ndarray, alpha: float, max_iter: int = 100) -> np.ndarray:
    """The solution ``x [B, K]`` of ``G x = x^(-1/alpha)`` (see the module docstring)."""
    B, K = G.shape[0], G.shape[-1]
    if alpha == 0.0:
        return np.full((B, K), 1.0 / K)
    if alpha == 1.0:
        return nash(G, np.ones((B, K)))[0]
    diag = np.diagonal(G, axis1=1, axis2=2)
    top = diag.max(-1)
    zero = top <= 0.0
    # x(c G) = c^(-alpha / (1 + alpha)) x(G): solve at a largest ||g_i||^2 in [1, 2) (a power of two)
    e = np.frexp(np.where(zero, 1.0, top))[1] - 1
    Gn = np.where(zero[:, None, None], np.eye(K), np.ldexp(G, -e[:, None, None]))
    dn = np.diagonal(Gn, axis1=1, axis2=2)
    # no solution when G has a non-negative null vector (min over the simplex of a^T G a is 0)
    try:
        a = simplex_min_norm(Gn)
        singular = np.einsum("bi,bij,bj->b", a, Gn, a) <= 1e-14
    except np.linalg.LinAlgError:  # G not positive semi-definite (round-off in subnormal entries)
        singular = np.ones(B, dtype=bool)
    Gr = Gn + np.einsum("bi,ij->bij", 1e-14 * dn + 1e-16 * dn.sum(-1, keepdims=True) / K, np.eye(K))
    x = np.ones((B, K))
    if not singular.all():
        x[~singular] = _solve(Gn[~singular], alpha, max_iter)
    bad = singular | ~(_backward_error(Gn, x, 1.0 / alpha) <= 1e-8)
    if bad.any():  # no solution, or not converged on a nearly singular G: ridged, as for Nash-MTL
        x[bad] = _solve(Gr[bad], alpha, max_iter, ridged=True)
    return x * np.exp2(-e * alpha / (1.0 + alpha))[:, None]


@register("fairgrad", "FairGrad", "gradient aggregation")
class FairGrad(Method):
    claims = frozenset({"non_conflicting", "weighted"})
    description = "Shares the improvement among the tasks by alpha-fairness: G x = x^(-1/alpha)."
    paper = "Ban & Ji, Fair Resource Allocation in Multi-Task Learning, ICML 2024 (arXiv 2402.15638), eq. 4"
    params = (Param("alpha", 2.0, 0.0, 20.0,
                    help="fairness: 0 the mean, 1 proportional (Nash-MTL), large -> max-min"),)
    # x(c G) = c^(-alpha / (1 + alpha)) x(G): the exponent depends on alpha, which a class attribute
    # cannot say; the solve is at unit scale already (power-of-two normalization), so no retry is needed
    gram_scaling = None

    def update(self, gram: np.ndarray, state: Any = None, *, losses: Any = None, jacobian: Any = None,
               rng: Any = None) -> Step:
        return Step(weights=fairgrad_weights(gram, self.hparams["alpha"]), state=state)
