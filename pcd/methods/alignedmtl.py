"""Aligned-MTL (Senushkin et al., "Independent Component Alignment for Multi-Task Learning",
CVPR 2023, Algorithm 1), as TorchJD 0.18's ``AlignedMTLWeighting``:

    G = V diag(lambda) V^T (eigen-decomposition, the r = rank(G) largest eigenvalues kept,
    rank tolerance max(lambda) * K * eps),
    B = sqrt(lambda_scale) V_r diag(lambda_r^{-1/2}) V_r^T,      weights = B (1/K * 1)

so the aligned gradients ``B J`` have orthogonal, equal-norm principal components (condition
number 1). ``scale_mode``: ``min`` (smallest kept eigenvalue, default), ``median`` (lower median,
as ``torch.median``), ``rmse`` (mean, the original implementation). ``G = 0`` gives ``B = I``.
"""
from __future__ import annotations

from typing import Any

import numpy as np

from pcd._fast import small_batch
from pcd._kernels import AVAILABLE, formula, jit, where
from pcd.methods.base import Method, Param, Step, register

_MODES = ("min", "median", "rmse")


def balance_weights(G: np.ndarray, w: np.ndarray, scale_mode: str = "min") -> np.ndarray:
    """``B w`` for ``G [B, K, K]``, ``w [B, K]`` (``B`` the balancing matrix above). K = 2: the
    eigen-decomposition, then :func:`balance_k2` (compiled per row for a small batch, else on the
    batch's arrays); any K: :func:`_balance`."""
    if scale_mode not in _MODES:
        raise ValueError(f"scale_mode must be 'min', 'median' or 'rmse', got {scale_mode!r}")
    if G.shape[-1] != 2 or G.ndim != 3 or np.shape(w) != G.shape[:2]:
        return _balance(G, w, scale_mode)
    lam, V = np.linalg.eigh(G)  # ascending; balance_k2 takes them in this order
    p = np.array([1.0 if scale_mode == "rmse" else 0.0])
    w = np.asarray(w, dtype=np.float64)
    if AVAILABLE and small_batch(G.shape[0]):
        out = np.empty((2, G.shape[0]))
        _balance_k2_rows(lam, V, w, p, out)
        return out.T.copy()
    b0, b1 = balance_k2(lam[:, 0], lam[:, 1], V[:, 0, 0], V[:, 0, 1], V[:, 1, 0], V[:, 1, 1], w[:, 0], w[:, 1], p)
    return np.stack([b0, b1], axis=-1)


_EPS = float(np.finfo(np.float64).eps)


@formula
def balance_k2(l0: Any, l1: Any, v00: Any, v01: Any, v10: Any, v11: Any, w0: Any, w1: Any, p: Any) -> Any:
    """``B w`` for K = 2, written once (NumPy arrays, or one row compiled), from ``np.linalg.eigh``'s
    ascending eigenvalues ``l0 <= l1`` and eigenvectors ``V = [[v00, v01], [v10, v11]]`` (columns);
    ``p = (rmse,)``: 1 for ``scale_mode="rmse"``, 0 for ``min`` / ``median`` (for K = 2 the lower
    median of the kept eigenvalues is the smallest one). :func:`_balance`'s operations in its order
    (rank cut-off, scale, ``B = sqrt(scale) V diag(lambda^-1/2) V^T`` in descending order, ``B w``):
    the same bits (tested). ``G = 0`` (rank 0): ``B = I``."""
    tol = l1 * 2 * _EPS
    k0, k1 = l1 > tol, l0 > tol
    rank = where(k0, 1.0, 0.0) + where(k1, 1.0, 0.0)
    i0 = where(k0, 1.0 / np.sqrt(where(k0, l1, 1.0)), 0.0)
    i1 = where(k1, 1.0 / np.sqrt(where(k1, l0, 1.0)), 0.0)
    rmse = (where(k0, l1, 0.0) + where(k1, l0, 0.0)) / np.maximum(rank, 1.0)
    scale = where(p[0] != 0.0, rmse, where(rank == 2.0, l0, l1))
    sq = np.sqrt(np.maximum(scale, 0.0))
    b00 = sq * (v01 * i0 * v01 + v00 * i1 * v00)
    b01 = sq * (v01 * i0 * v11 + v00 * i1 * v10)
    b10 = sq * (v11 * i0 * v01 + v10 * i1 * v00)
    b11 = sq * (v11 * i0 * v11 + v10 * i1 * v10)
    eye = rank == 0.0
    return (where(eye, 1.0 * w0 + 0.0 * w1, b00 * w0 + b01 * w1),
            where(eye, 0.0 * w0 + 1.0 * w1, b10 * w0 + b11 * w1))


_balance_k2_c = jit(balance_k2, inline=True)  # the formula, compiled into the row loop below


@jit
def _balance_k2_rows(lam: Any, V: Any, w: Any, p: Any, out: Any) -> Any:
    for i in range(lam.shape[0]):
        out[0, i], out[1, i] = _balance_k2_c(lam[i, 0], lam[i, 1], V[i, 0, 0], V[i, 0, 1], V[i, 1, 0], V[i, 1, 1],
                                             w[i, 0], w[i, 1], p)


def _balance(G: np.ndarray, w: np.ndarray, scale_mode: str = "min") -> np.ndarray:
    """:func:`balance_weights` for any B, K (K = 2 goes through :func:`balance_k2` there)."""
    B, K = G.shape[0], G.shape[-1]
    lam, V = np.linalg.eigh(G)  # ascending
    lam, V = lam[:, ::-1], V[:, :, ::-1]  # descending, as TorchJD after argsort
    tol = lam[:, 0] * K * np.finfo(G.dtype).eps
    keep = lam > tol[:, None]
    rank = keep.sum(axis=1)
    lam_safe = np.where(keep, lam, 1.0)
    inv_sqrt = np.where(keep, 1.0 / np.sqrt(lam_safe), 0.0)
    rows = np.arange(B)
    r1 = np.maximum(rank, 1)
    if scale_mode == "min":
        scale = lam[rows, r1 - 1]
    elif scale_mode == "median":  # lower median of the kept eigenvalues (torch.median semantics)
        asc_index = (r1 - 1) // 2  # in ascending order of the kept ones
        scale = lam[rows, r1 - 1 - asc_index]
    elif scale_mode == "rmse":
        scale = np.where(keep, lam, 0.0).sum(axis=1) / r1
    else:
        raise ValueError(f"scale_mode must be 'min', 'median' or 'rmse', got {scale_mode!r}")
    Bm = np.sqrt(np.maximum(scale, 0.0))[:, None, None] * np.einsum("bik,bk,bjk->bij", V, inv_sqrt, V)
    Bm = np.where((rank == 0)[:, None, None], np.eye(K), Bm)
    return np.einsum("bij,bj->bi", Bm, w)


@register("alignedmtl", "Aligned-MTL", "gradient aggregation")
class AlignedMTL(Method):
    claims = frozenset({"weighted"})
    description = "Rescales the gradients' principal components to equal size, then averages."
    paper = "Senushkin et al., Independent Component Alignment for Multi-Task Learning, CVPR 2023"
    params = (Param("scale_mode", "min", kind="choice", choices=("min", "median", "rmse"),
                    help="eigenvalue that sets the scale of the aligned gradients"),)

    def update(self, gram: np.ndarray, state: Any = None, *, losses: Any = None, jacobian: Any = None,
               rng: Any = None) -> Step:
        B, K = gram.shape[0], gram.shape[-1]
        w = np.full((B, K), 1.0 / K)
        return Step(weights=balance_weights(gram, w, self.hparams["scale_mode"]), state=state)
