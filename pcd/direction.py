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

import numpy as np

from pcd.qp import QPResult, solve_qp


@dataclass(frozen=True)
class PCDWeights:
    weights: np.ndarray      # [..., K] raw-space weights a (direction d = a @ J)
    qp: QPResult             # the QP solution in normalized space (w~, mu, active, feasible)
    scale_to_primary: np.ndarray  # [...] ||g_1|| / ||d~|| (0 when undefined)


def pcd_weights(gram: np.ndarray, scales: np.ndarray, tau) -> PCDWeights:
    """Deployed PCD weights for raw Gram ``[..., K, K]`` and normalization scales ``[..., K]``."""
    g = np.asarray(gram, dtype=np.float64)
    s = np.asarray(scales, dtype=np.float64)
    gn = g * s[..., :, None] * s[..., None, :]
    res = solve_qp(gn, tau)
    w = res.weights  # the primary's weights [1, 0, ..., 0] where the constraints are infeasible
    dn2 = np.einsum("...i,...ij,...j->...", w, gn, w)
    # ||d~||^2 computed from the Gram matrix carries a rounding error of order
    # eps * (sum_i |w_i| ||g~_i||)^2; below that, d~ is zero (e.g. exact cancellation with tau = 0).
    size2 = np.einsum("...i,...i->...", np.abs(w), np.sqrt(np.maximum(np.diagonal(gn, axis1=-2, axis2=-1), 0.0))) ** 2
    g1 = np.sqrt(np.maximum(g[..., 0, 0], 0.0))
    ok = (dn2 > 10 * np.finfo(np.float64).eps * size2) & (g1 > 0)
    factor = np.where(ok, g1 / np.sqrt(np.where(ok, dn2, 1.0)), 0.0)
    a = w * s * factor[..., None]
    return PCDWeights(weights=a, qp=res, scale_to_primary=factor)
