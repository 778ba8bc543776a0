"""IMTL-G: impartial multi-task learning, gradient part (Liu et al., "Towards Impartial Multi-task
Learning", ICLR 2021), generalized to linearly dependent gradients as in Jacobian Descent
(arXiv 2406.16232) and TorchJD 0.18's ``IMTLGWeighting``:

    v = pinv(G) sqrt(diag(G)),      weights = v / sum(v)   (0 when |sum(v)| < 1e-12)

For independent gradients the direction has equal projections onto every unit gradient
(``d . g_i / ||g_i||`` is the same for all i). Not non-conflicting and not linear under scaling in
general; at an exact cancellation ``g_1 = -g_2`` the weights are 0. The pseudo-inverse uses the
relative cut-off ``K * eps`` of ``torch.linalg.pinv``.
"""
from __future__ import annotations

import math
from typing import Any

import numpy as np

from pcd._fast import small_batch
from pcd.methods.base import Method, Step, register


@register("imtlg", "IMTL-G", "gradient aggregation")
class IMTLG(Method):
    claims = frozenset({"weighted"})
    description = "Weights that give the update equal projections onto every normalized gradient."
    paper = "Liu et al., Towards Impartial Multi-task Learning, ICLR 2021"

    def update(self, gram: np.ndarray, state: Any = None, *, losses: Any = None, jacobian: Any = None,
               rng: Any = None) -> Step:
        if gram.shape[-1] == 2 and gram.ndim == 3 and small_batch(gram.shape[0]):
            # a few start points: scalar math beats tiny-array NumPy
            w = _imtlg_k2_scalar(gram)
            return Step(weights=_imtlg_k2_pinv(gram) if w is None else w, state=state)
        return Step(weights=_imtlg(gram), state=state)


def _pinv(gram: np.ndarray) -> np.ndarray:
    K = gram.shape[-1]
    try:
        return np.linalg.pinv(gram, rtol=K * np.finfo(np.float64).eps)
    except TypeError:  # NumPy < 2.0
        return np.linalg.pinv(gram, rcond=K * np.finfo(np.float64).eps)


def _imtlg(gram: np.ndarray) -> np.ndarray:
    """The vectorized weights ``[B, K]`` (any B, K)."""
    K = gram.shape[-1]
    d = np.sqrt(np.maximum(np.diagonal(gram, axis1=1, axis2=2), 0.0))
    if K == 1:
        v = np.where(gram[:, 0, :] > 0, d / np.where(gram[:, 0, :] > 0, gram[:, 0, :], 1.0), 0.0)
    else:
        v = np.einsum("bij,bj->bi", _pinv(gram), d)
    s = v.sum(axis=-1, keepdims=True)
    small = np.abs(s) < 1e-12
    return np.where(small, 0.0, v / np.where(small, 1.0, s))


# fast path only when lambda_min >= ~1e-3 lambda_max: there the SVD-based pseudo-inverse and the
# explicit inverse agree to ~1e-13 relative (measured: ~1e-14 / (lambda_min / lambda_max))
_COND_MIN = 1e-3


def _imtlg_k2_scalar(gram: np.ndarray) -> np.ndarray | None:
    """K = 2, a handful of problems, in Python floats: ``v = G^-1 sqrt(diag G)`` by the explicit 2x2
    inverse (equal to the pseudo-inverse when G is well conditioned; agrees with :func:`_imtlg` to
    ~1e-13 relative). None (the caller then uses :func:`_imtlg_k2_pinv`) when some G has
    ``det <= 1e-3 trace^2`` (lambda_min below ~1e-3 lambda_max: ill-conditioned, near the
    pseudo-inverse's cut-off, or singular) or ``|sum v|`` lies within 1e-6 relative of the 1e-12
    zero threshold."""
    rows = []
    for (a, b), (_, c) in gram.tolist():
        tr = a + c
        det = a * c - b * b
        if not (tr > 0.0 and det > _COND_MIN * tr * tr):
            return None
        d1, d2 = math.sqrt(a), math.sqrt(c)
        n1, n2 = c * d1 - b * d2, a * d2 - b * d1
        n = n1 + n2
        s = n / det
        if abs(abs(s) - 1e-12) <= 1e-18:
            return None
        rows.append((n1 / n, n2 / n) if abs(s) >= 1e-12 else (0.0, 0.0))
    return np.array(rows)


def _imtlg_k2_pinv(gram: np.ndarray) -> np.ndarray:
    """K = 2, any conditioning: :func:`_imtlg`'s pseudo-inverse, assembled as ``np.linalg.pinv``
    does it (the same SVD, cut-off ``2 eps * max(s)``, and ``matmul``; the reciprocals in Python
    floats), then ``v = pinv d``, ``v / sum v`` and the 1e-12 zero threshold in Python floats, in
    the same order: the same bits (checked in tests/methods/test_scalar_paths_b.py)."""
    u, sv, vt = np.linalg.svd(gram, full_matrices=False)
    inv = []
    for s0, s1 in sv.tolist():
        cut = _RCOND * max(s0, s1)
        inv.append((1.0 / s0 if s0 > cut else 0.0, 1.0 / s1 if s1 > cut else 0.0))
    pinv = np.matmul(np.swapaxes(vt, -1, -2), np.multiply(np.array(inv)[..., None], np.swapaxes(u, -1, -2)))
    rows = []
    for ((g00, _), (_, g11)), ((p00, p01), (p10, p11)) in zip(gram.tolist(), pinv.tolist()):
        d0, d1 = math.sqrt(max(g00, 0.0)), math.sqrt(max(g11, 0.0))
        v0, v1 = p00 * d0 + p01 * d1, p10 * d0 + p11 * d1
        s = v0 + v1
        rows.append((0.0, 0.0) if abs(s) < 1e-12 else (v0 / s, v1 / s))
    return np.array(rows)


_RCOND = 2 * float(np.finfo(np.float64).eps)  # K * eps, as in _pinv
