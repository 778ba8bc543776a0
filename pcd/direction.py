"""From raw Gram matrix to PCD's deployed update weights (shared by the batched method and torch).

Given raw gradients ``g_i`` (Gram ``G``), scales ``s_i`` (:class:`pcd.EMANormalizer`) and tau:

    G~ = diag(s) G diag(s),   w~ = solve_qp(G~, tau).weights,   d~ = sum_i w~_i s_i g_i,
    d  = d~ ||g_1|| / ||d~||   (zero when d~ = 0 or g_1 = 0),

so the deployed update is ``d = a @ J`` with raw-space weights ``a_i = w~_i s_i ||g_1|| / ||d~||``
(PCD paper, arXiv 2606.29521, Alg. 1). Rescaling to ``||g_1||`` keeps standard step sizes and
schedules meaningful; a known limitation (paper, Sec. 6): ``g_1 = 0`` halts the deployed update
even where secondaries are not stationary.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from pcd._kernels import formula, where
from pcd.qp import QPResult, solve_qp


@dataclass(frozen=True)
class PCDWeights:
    weights: np.ndarray      # [..., K] raw-space weights a (direction d = a @ J)
    qp: QPResult             # the QP solution in normalized space (w~, mu, active, feasible)
    scale_to_primary: np.ndarray  # [...] ||g_1|| / ||d~|| (0 when undefined)


def pcd_weights(gram: np.ndarray, scales: np.ndarray, tau: Any, *, trusted: bool = False) -> PCDWeights:
    """Deployed PCD weights for raw Gram ``[..., K, K]`` and normalization scales ``[..., K]``.

    The QP goes through :func:`pcd.qp.solve_qp` for every K (it picks the closed form for K = 2).
    ``trusted=True`` only skips the input checks (the caller has validated the Gram matrix and
    tau: the batched method on its hot path); the computation is the same either way.
    """
    g = np.asarray(gram, dtype=np.float64)
    s = np.asarray(scales, dtype=np.float64)
    gn = _normalized_gram(g, s)
    res = solve_qp(gn, tau, trusted=trusted)
    w = res.weights  # the primary's weights [1, 0, ..., 0] where the constraints are infeasible
    factor = _rescale(w, gn, g[..., 0, 0])
    weights = w * s
    weights *= factor[..., None]
    return PCDWeights(weights=weights, qp=res, scale_to_primary=factor)


def _normalized_gram(g: np.ndarray, s: np.ndarray) -> np.ndarray:
    """``G~ = diag(s) G diag(s)``, entry by entry ``(G_ij s_i) s_j`` (that rounding order).

    For K <= 3 and a large batch it is computed batch-last (in a ``[K, K, ...]`` buffer, so each
    multiplication runs over the batch in one contiguous stretch instead of ``B K`` loops of
    length K: ~2x faster at B = 1024, K = 2) and returned as a ``[..., K, K]`` view; for K = 2 the
    entries ``a, c, e`` are then contiguous ``[B]`` vectors for the closed form. For K = 3 the
    result is made C-contiguous, the layout :func:`_rescale`'s ``einsum`` has always summed in
    (same bits). Below ~64 problems (``g.size < 256``) or for K > 3 the plain broadcast is faster.
    """
    K, nb = g.shape[-1], g.ndim - 2
    if nb <= 0 or K > 3 or g.size < 256 or s.shape != g.shape[:-1]:  # (s may broadcast)
        return g * s[..., :, None] * s[..., None, :]
    batch = tuple(range(nb))
    gt = g.transpose((nb, nb + 1) + batch)  # [K, K, ...]
    st = s.transpose((nb,) + batch)         # [K, ...]
    out = np.empty(gt.shape)  # C order: the batch is the contiguous axis
    np.multiply(gt, st[:, None], out=out)
    out *= st[None, :]
    gn = out.transpose(tuple(range(2, nb + 2)) + (0, 1))
    return gn if K <= 2 else np.ascontiguousarray(gn)


def _rescale(w: np.ndarray, gn: np.ndarray, g11: np.ndarray) -> np.ndarray:
    """``||g_1|| / ||d~||``, or 0 where d~ is zero up to rounding or g_1 = 0 (K = 2:
    :func:`rescale_k2`, the formula PCD's compiled K = 2 step runs too)."""
    if w.shape[-1] == 2:
        return rescale_k2(gn[..., 0, 0], gn[..., 0, 1], gn[..., 1, 1], w[..., 1], g11)
    dn2 = np.einsum("...i,...ij,...j->...", w, gn, w)
    # ||d~||^2 computed from the Gram matrix carries a rounding error of order
    # eps * (sum_i |w_i| ||g~_i||)^2; below that, d~ is zero (e.g. exact cancellation with tau = 0).
    size2 = np.einsum("...i,...i->...", np.abs(w), np.sqrt(np.maximum(np.diagonal(gn, axis1=-2, axis2=-1), 0.0))) ** 2
    return rescale_factor(dn2, size2, g11)


_EPS10 = 10 * float(np.finfo(np.float64).eps)


@formula
def rescale_k2(a: Any, c: Any, e: Any, mu: Any, g11: Any) -> Any:
    """K = 2 (``w~ = [1, mu]`` on the normalized entries ``a, c, e``), written once (NumPy arrays, or
    one row compiled): ``||d~||^2 = a + 2 mu c + mu^2 e``, its rounding scale
    ``(sqrt(a) + mu sqrt(e))^2``, then :func:`rescale_factor`."""
    dn2 = a + 2.0 * mu * c + mu * mu * e
    size = np.sqrt(np.maximum(e, 0.0)) * mu + np.sqrt(np.maximum(a, 0.0))
    return rescale_factor(dn2, size * size, g11)


@formula
def rescale_factor(dn2: Any, size2: Any, g11: Any) -> Any:
    """``||g_1|| / ||d~||`` from ``||d~||^2``, 0 where ``||d~||^2 <= 10 eps size2`` or ``g_1 = 0``."""
    g1 = np.sqrt(np.maximum(g11, 0.0))
    ok = (dn2 > _EPS10 * size2) & (g1 > 0)
    return where(ok, g1 / np.sqrt(where(ok, dn2, 1.0)), 0.0)
