"""GradDrop: gradient sign dropout (Chen et al., "Just Pick a Sign: Optimizing Deep Multitask Models
with Gradient Sign Dropout", NeurIPS 2020, arXiv 2010.06808, Algorithm 1 lines 10-15), as TorchJD
0.18's ``GradDrop`` aggregator (``f`` = identity).

Per coordinate k, the positive sign purity ``P_k = 1/2 (1 + sum_i J_ik / sum_i |J_ik|)``; with
``U_k ~ Uniform(0, 1)`` each objective keeps its coordinate when its sign wins the draw:

    M_ik = [P_k > U_k][J_ik > 0] + [P_k < U_k][J_ik < 0],
    d_k  = sum_i (leak_i + (1 - leak_i) M_ik) J_ik.

A :class:`~pcd.methods.base.DirectionMethod` (**needs the Jacobian J**): the mask acts per
coordinate, so the update is *not* a combination ``weights @ J`` of the gradients. The exact
update ``[B, n]`` is the step's ``exact`` field, which :meth:`Step.direction` returns. ``weights`` holds the
least-squares weights ``argmin_w ||J^T w - d||`` (``w = pinv(G) J d``): ``weights @ J`` is the
projection of the GradDrop update onto the span of the gradients, for plots of weights only.
Not non-conflicting, not linear under scaling, not weighted (Jacobian Descent, Table 1).
K = 2 with a small batch (:func:`pcd._fast.small_batch`) and n <= 8 (the toy engine) runs the K = 2
formulas (:func:`graddrop_k2`, :func:`graddrop_k2_weights`) compiled row by row: the same draw and
the same direction bits; weights by closed forms where they match ``pinv``.
"""
from __future__ import annotations

from typing import Any

import numpy as np

from pcd._fast import small_batch
from pcd._kernels import AVAILABLE, formula, jit, where
from pcd.methods.base import DirectionMethod, Param, Step, check_jacobian, register


def graddrop_direction(J: np.ndarray, U: np.ndarray, leak: np.ndarray) -> np.ndarray:
    """``J [B, K, n]``, ``U [B, n]`` uniform draws, ``leak [K]`` -> direction ``[B, n]`` (K = 2:
    :func:`graddrop_k2` on the batch's arrays, the same operations)."""
    if J.shape[1] == 2:
        with np.errstate(divide="ignore", invalid="ignore"):
            return graddrop_k2(J[:, 0, :], J[:, 1, :], U, leak[0], leak[1])
    with np.errstate(divide="ignore", invalid="ignore"):
        P = 0.5 * (1.0 + J.sum(axis=1) / np.abs(J).sum(axis=1))  # NaN where the column is all zero
    M = ((P > U)[:, None, :] & (J > 0)) | ((P < U)[:, None, :] & (J < 0))
    coef = leak[None, :, None] + (1.0 - leak[None, :, None]) * M
    return np.einsum("bkn,bkn->bn", coef, J)


@register("graddrop", "GradDrop", "gradient aggregation")
class GradDrop(DirectionMethod):
    claims = frozenset()
    description = "Per coordinate, randomly keeps only the gradients whose sign wins a purity-weighted draw."
    paper = "Chen et al., Just Pick a Sign: Gradient Sign Dropout, NeurIPS 2020 (arXiv 2010.06808)"
    params = (Param("leak", 0.0, 0.0, 1.0, per_objective=True,
                    help="fraction of each gradient always let through (one value per objective allowed)"),)
    stochastic = True

    def update(self, gram: np.ndarray, state: Any = None, *, losses: Any = None, jacobian: Any = None,
               rng: Any = None) -> Step:
        B, K = gram.shape[0], gram.shape[-1]
        J = check_jacobian(jacobian, B, K, "graddrop")
        leak = self.hparams["leak"]
        if K == 2 and small_batch(B) and J.shape[-1] <= _SCALAR_MAX_N and (isinstance(leak, float) or np.shape(leak) == (2,)):
            l0, l1 = (leak, leak) if isinstance(leak, float) else (float(leak[0]), float(leak[1]))
            rng = rng if rng is not None else np.random.default_rng()
            U = rng.random((B, J.shape[-1]))  # the same draw as below
            d, w = _graddrop_k2(J, U, l0, l1)
            return Step(weights=w, state=state, exact=d)
        leak = np.asarray(leak, dtype=np.float64)
        leak = np.full(K, float(leak)) if leak.ndim == 0 else leak
        if leak.shape != (K,):
            raise ValueError(f"graddrop: leak needs one value or {K} values (one per objective), got {leak.size}")
        rng = rng if rng is not None else np.random.default_rng()
        U = rng.random((B, J.shape[-1]))
        d = graddrop_direction(J, U, leak)
        w = least_squares_weights(J, d)
        return Step(weights=w, state=state, exact=d)


def least_squares_weights(J: np.ndarray, d: np.ndarray) -> np.ndarray:
    """``argmin_w ||J^T w - d||`` = ``pinv(J J^T) J d`` per problem (``J [B, K, n]``, ``d [B, n]``).

    ``w`` is invariant to ``(J, d) -> (s J, s d)``: both are scaled by an exact power of two per
    problem first, so tiny (1e-160) or huge gradients give the same weights as at scale 1."""
    top = np.abs(J).max(axis=(1, 2), initial=0.0)
    if ((top > 0) & ((top < 2.0**-200) | (top > 2.0**200))).any():
        e = np.where(top > 0, np.frexp(np.where(top > 0, top, 1.0))[1], 0)
        J = np.ldexp(J, -e[:, None, None])
        d = np.ldexp(d, -e[:, None])
    Gj = np.einsum("bkn,bln->bkl", J, J)
    Jd = np.einsum("bkn,bn->bk", J, d)
    return np.einsum("bij,bj->bi", np.linalg.pinv(Gj, hermitian=True), Jd)


_SCALAR_MAX_N = 8  # scalar path for K = 2, a small batch and at most this many coordinates (the toys)


@formula
def graddrop_k2(a: Any, b: Any, u: Any, l0: Any, l1: Any) -> Any:
    """GradDrop's K = 2 direction for one coordinate, written once (NumPy arrays, or one coordinate
    compiled): ``a, b`` the two gradients' entries, ``u`` the uniform draw, ``l0, l1`` the leaks;
    :func:`graddrop_direction`'s operations (NaN purity where both entries are 0: no sign wins)."""
    P = 0.5 * (1.0 + (a + b) / (np.abs(a) + np.abs(b)))
    m0 = ((P > u) & (a > 0)) | ((P < u) & (a < 0))
    m1 = ((P > u) & (b > 0)) | ((P < u) & (b < 0))
    return (l0 + (1.0 - l0) * where(m0, 1.0, 0.0)) * a + (l1 + (1.0 - l1) * where(m1, 1.0, 0.0)) * b


@formula
def graddrop_k2_weights(g00: Any, g01: Any, g11: Any, j0: Any, j1: Any, p: Any) -> Any:
    """The least-squares weights ``pinv(G) J d`` for K = 2 in closed form, written once (NumPy
    arrays, or one row compiled), from ``G = J J^T`` and ``J d`` (each summed coordinate by
    coordinate); ``p = (n <= 4,)``. Where this agrees with :func:`least_squares_weights`
    (``np.linalg.pinv``) to ~1e-13 of ``||w||``:

    * well conditioned, ``det G >= 1e-4 trace^2`` (and ``>= 1e-3 G11 G22``): the 2x2 inverse;
    * numerically rank one, computed ``det G <= 1e-20 trace^2`` (e.g. cancelling gradients, one
      zero gradient, the saddle's gradients along one axis): the exact smallest eigenvalue of G is
      then a few eps x lambda_1, under pinv's 1e-15 cutoff, so pinv is ``v v^T / lambda_1`` with
      the top eigenpair in closed form (n <= 4 only: einsum may sum G's n terms in another order,
      and n eps must stay well under the cutoff);
    * zero G: pinv(0) = 0, weights 0.

    Returns ``(w_1, w_2, ok)``; ``ok = 0`` (weights 0) for the rows in between (where pinv itself
    carries errors of eps x condition number) or a non-finite result: those take
    :func:`least_squares_weights`."""
    det = g00 * g11 - g01 * g01
    tr = g00 + g11
    zero = tr == 0.0
    well = (det >= 1e-4 * tr * tr) & (det >= 1e-3 * g00 * g11)
    dw = where(well, det, 1.0)
    h = g00 - g11
    lam = 0.5 * (tr + np.sqrt(h * h + 4.0 * g01 * g01))
    top = g00 >= g11
    v0, v1 = where(top, lam - g11, g01), where(top, g01, lam - g00)
    nv = v0 * v0 + v1 * v1
    one = (det <= 1e-20 * tr * tr) & (p[0] != 0.0) & (lam > 0.0) & (nv > 0.0)
    c = (v0 * j0 + v1 * j1) / where(one, lam * nv, 1.0)
    w0 = where(zero, 0.0, where(well, (g11 * j0 - g01 * j1) / dw, where(one, v0 * c, np.nan)))
    w1 = where(zero, 0.0, where(well, (g00 * j1 - g01 * j0) / dw, where(one, v1 * c, np.nan)))
    ok = np.isfinite(w0) & np.isfinite(w1)
    return where(ok, w0, 0.0), where(ok, w1, 0.0), where(ok, 1.0, 0.0)


_graddrop_k2_c = jit(graddrop_k2, inline=True)  # the formulas, compiled into the row loop below
_graddrop_k2_weights_c = jit(graddrop_k2_weights, inline=True)


@jit
def _graddrop_k2_rows(J: Any, U: Any, l0: float, l1: float, p: Any, D: Any, W: Any) -> Any:
    for i in range(J.shape[0]):
        g00 = g01 = g11 = j0 = j1 = 0.0
        for k in range(J.shape[2]):
            a, b = J[i, 0, k], J[i, 1, k]
            D[i, k] = _graddrop_k2_c(a, b, U[i, k], l0, l1)
            g00 += a * a
            g01 += a * b
            g11 += b * b
        for k in range(J.shape[2]):
            j0 += J[i, 0, k] * D[i, k]
            j1 += J[i, 1, k] * D[i, k]
        W[0, i], W[1, i], W[2, i] = _graddrop_k2_weights_c(g00, g01, g11, j0, j1, p)


def _graddrop_k2(J: np.ndarray, U: np.ndarray, l0: float, l1: float) -> tuple[np.ndarray, np.ndarray]:
    """K = 2, few problems and coordinates: the direction (:func:`graddrop_k2`, the same bits as
    :func:`graddrop_direction` for the same draws ``U``; ``l0, l1`` = leak) and the weights
    (:func:`graddrop_k2_weights`, else :func:`least_squares_weights` for that row), the formulas
    compiled row by row (with numba) or on the batch's arrays, coordinate by coordinate."""
    B, n = U.shape
    p = np.array([1.0 if n <= 4 else 0.0])
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        if AVAILABLE:
            D, W = np.empty((B, n)), np.empty((3, B))
            _graddrop_k2_rows(J, U, l0, l1, p, D, W)
        else:
            a, b = J[:, 0, :], J[:, 1, :]
            D = graddrop_k2(a, b, U, l0, l1)
            g00 = g01 = g11 = j0 = j1 = np.zeros(B)
            for k in range(n):
                g00, g01, g11 = g00 + a[:, k] * a[:, k], g01 + a[:, k] * b[:, k], g11 + b[:, k] * b[:, k]
            for k in range(n):
                j0, j1 = j0 + a[:, k] * D[:, k], j1 + b[:, k] * D[:, k]
            W = np.stack(graddrop_k2_weights(g00, g01, g11, j0, j1, p))
    w = W[:2].T.copy()
    bad = W[2] != 1.0
    if bad.any():
        w[bad] = least_squares_weights(J[bad], D[bad])
    return D, w
