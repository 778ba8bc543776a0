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

import itertools
import math
from typing import Any

import numpy as np

from pcd._fast import small_batch
from pcd.methods.base import Method, Param, Step, register


def balance_weights(G: np.ndarray, w: np.ndarray, scale_mode: str = "min") -> np.ndarray:
    """``B w`` for ``G [B, K, K]``, ``w [B, K]`` (``B`` the balancing matrix above)."""
    if G.shape[-1] == 2 and G.ndim == 3 and small_batch(G.shape[0]) and np.shape(w) == G.shape[:2]:
        out = _balance_k2_scalar(G, w, scale_mode)  # a few problems: scalar math beats tiny NumPy
        if out is not None:
            return out
    return _balance(G, w, scale_mode)


_EPS = float(np.finfo(np.float64).eps)


def _balance_k2_scalar(G: np.ndarray, w: np.ndarray | None, scale_mode: str) -> np.ndarray | None:
    """K = 2, a handful of problems: the same ``np.linalg.eigh`` as :func:`_balance`, then its
    arithmetic (rank cut-off, scale, ``B = sqrt(scale) V diag(lambda^-1/2) V^T``, ``B w``) in Python
    floats, in the same order: the same bits (checked in tests/methods/test_scalar_paths_b.py) for
    every input, ill-conditioned and rank-deficient ones included. For K = 2 the lower median of
    the kept eigenvalues is the smallest one. ``w = None``: the uniform weights ``1/2``."""
    if scale_mode not in ("min", "median", "rmse"):
        return None
    rmse = scale_mode == "rmse"
    lam, V = np.linalg.eigh(G)  # ascending; descending order below: index 0 <- ascending index 1
    rows = []
    ws = itertools.repeat((0.5, 0.5)) if w is None else w.tolist()  # None: the uniform 1/K
    for (l0, l1), ((v00, v01), (v10, v11)), (w0, w1) in zip(lam.tolist(), V.tolist(), ws):
        tol = l1 * 2 * _EPS
        k0, k1 = l1 > tol, l0 > tol
        rank = k0 + k1
        if rank == 0:  # B = I
            rows.append((1.0 * w0 + 0.0 * w1, 0.0 * w0 + 1.0 * w1))
            continue
        i0 = 1.0 / math.sqrt(l1) if k0 else 0.0
        i1 = 1.0 / math.sqrt(l0) if k1 else 0.0
        if rmse:
            scale = ((l1 if k0 else 0.0) + (l0 if k1 else 0.0)) / rank
        else:
            scale = l0 if rank == 2 else l1
        sq = math.sqrt(max(scale, 0.0))
        b00 = sq * (v01 * i0 * v01 + v00 * i1 * v00)
        b01 = sq * (v01 * i0 * v11 + v00 * i1 * v10)
        b10 = sq * (v11 * i0 * v01 + v10 * i1 * v00)
        b11 = sq * (v11 * i0 * v11 + v10 * i1 * v10)
        rows.append((b00 * w0 + b01 * w1, b10 * w0 + b11 * w1))
    return np.array(rows)


def _balance(G: np.ndarray, w: np.ndarray, scale_mode: str = "min") -> np.ndarray:
    """The vectorized :func:`balance_weights` (any B, K)."""
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
        if K == 2 and gram.ndim == 3 and small_batch(B):  # a few start points: scalar math after eigh
            out = _balance_k2_scalar(gram, None, self.hparams["scale_mode"])
            if out is not None:
                return Step(weights=out, state=state)
        w = np.full((B, K), 1.0 / K)
        return Step(weights=balance_weights(gram, w, self.hparams["scale_mode"]), state=state)
