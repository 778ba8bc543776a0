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

import numpy as np

from pcd.methods.base import Method, MethodOutput, Param, register


def balance_weights(G: np.ndarray, w: np.ndarray, scale_mode: str = "min") -> np.ndarray:
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


@register
class AlignedMTL(Method):
    name = "alignedmtl"
    display_name = "Aligned-MTL"
    description = "Rescales the gradients' principal components to equal size, then averages."
    paper = "Senushkin et al., Independent Component Alignment for Multi-Task Learning, CVPR 2023"
    params = (Param("scale_mode", "min", kind="choice", choices=("min", "median", "rmse"),
                    help="eigenvalue that sets the scale of the aligned gradients"),)

    def weights(self, gram, *, losses=None, jacobian=None, state=None, rng=None) -> MethodOutput:
        B, K = gram.shape[0], gram.shape[-1]
        w = np.full((B, K), 1.0 / K)
        return MethodOutput(weights=balance_weights(gram, w, self.hparams["scale_mode"]), state=state)
