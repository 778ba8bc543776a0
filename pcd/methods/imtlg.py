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

from typing import Any

import numpy as np

from pcd._fast import small_batch
from pcd._kernels import AVAILABLE, NO_PARAMS, formula, jit, where
from pcd.methods.base import Method, Step, register


@register("imtlg", "IMTL-G", "gradient aggregation")
class IMTLG(Method):
    claims = frozenset({"weighted"})
    description = "Weights that give the update equal projections onto every normalized gradient."
    paper = "Liu et al., Towards Impartial Multi-task Learning, ICLR 2021"

    def update(self, gram: np.ndarray, state: Any = None, *, losses: Any = None, jacobian: Any = None,
               rng: Any = None) -> Step:
        if gram.shape[-1] == 2 and gram.ndim == 3 and small_batch(gram.shape[0]):
            # a few start points: the explicit 2x2 inverse (imtlg_k2_inverse) beats an SVD per call;
            # the rows where it must not be used go to the pseudo-inverse, each as it would alone
            return Step(weights=_imtlg_k2(gram), state=state)
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


@formula
def imtlg_k2_inverse(a: Any, b: Any, c: Any, p: Any) -> Any:
    """K = 2, written once (NumPy arrays, or one row compiled): ``v = G^-1 sqrt(diag G)`` by the
    explicit 2x2 inverse for ``(a, b, c) = (G11, G12, G22)`` (equal to the pseudo-inverse when G is
    well conditioned; agrees with :func:`_imtlg` to ~1e-13 relative), ``weights = v / sum v`` (0 when
    ``|sum v| < 1e-12``). Returns ``(w_1, w_2, ok)``: ``ok = 0`` where this must not be used -- G has
    ``det <= 1e-3 trace^2`` (lambda_min below ~1e-3 lambda_max: ill-conditioned, near the
    pseudo-inverse's cut-off, or singular) or ``|sum v|`` lies within 1e-6 relative of the 1e-12
    zero threshold. ``p``: no parameters."""
    tr = a + c
    det = a * c - b * b
    good = (tr > 0.0) & (det > _COND_MIN * tr * tr)
    d1, d2 = np.sqrt(np.maximum(a, 0.0)), np.sqrt(np.maximum(c, 0.0))  # a, c > 0 where good
    n1, n2 = c * d1 - b * d2, a * d2 - b * d1
    n = n1 + n2
    s = n / where(good, det, 1.0)
    ok = where(good, where(np.abs(np.abs(s) - 1e-12) <= 1e-18, 0.0, 1.0), 0.0)
    keep = np.abs(s) >= 1e-12
    m = where(keep, n, 1.0)
    return where(keep, n1 / m, 0.0), where(keep, n2 / m, 0.0), ok


_imtlg_k2_inverse_c = jit(imtlg_k2_inverse, inline=True)  # the formula, compiled into the row loop below


@jit
def _imtlg_k2_inverse_rows(G: Any, p: Any, W: Any, OK: Any) -> Any:
    """:func:`imtlg_k2_inverse` for every row of ``G [B, 2, 2]`` into ``W [B, 2]`` and its ``ok`` flag
    into ``OK [B]``; returns how many rows are not ``ok``."""
    bad = 0
    for i in range(G.shape[0]):
        W[i, 0], W[i, 1], ok = _imtlg_k2_inverse_c(G[i, 0, 0], G[i, 0, 1], G[i, 1, 1], p)
        OK[i] = ok
        bad += 0 if ok == 1.0 else 1
    return bad


def _imtlg_k2_inverse_ok(gram: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """:func:`imtlg_k2_inverse` for a batch ``[B, 2, 2]`` (compiled row by row for a small batch,
    else on its arrays): the weights ``[B, 2]`` and where they may be used, ``ok [B]`` (bool)."""
    if AVAILABLE and small_batch(gram.shape[0]):
        W, OK = np.empty((gram.shape[0], 2)), np.empty(gram.shape[0])
        _imtlg_k2_inverse_rows(gram, NO_PARAMS, W, OK)
        return W, OK == 1.0
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        w0, w1, ok = imtlg_k2_inverse(gram[:, 0, 0], gram[:, 0, 1], gram[:, 1, 1], NO_PARAMS)
    return np.stack([w0, w1], axis=-1), np.asarray(ok) == 1.0


def _imtlg_k2_inverse(gram: np.ndarray) -> np.ndarray | None:
    """The weights of :func:`_imtlg_k2_inverse_ok`, or None when some problem is not ``ok``."""
    W, ok = _imtlg_k2_inverse_ok(gram)
    return W if ok.all() else None


def _imtlg_k2(gram: np.ndarray) -> np.ndarray:
    """K = 2 weights ``[B, 2]``: :func:`imtlg_k2_inverse` where it is ``ok``; the other rows (ill-conditioned,
    singular, at the 1e-12 threshold) by :func:`_imtlg` on those rows only. Each row gets exactly the
    bits it would get alone (the pseudo-inverse works matrix by matrix; tested), so a batch's weights
    no longer depend on its other rows (before, one such row sent the whole batch to :func:`_imtlg`)."""
    B = gram.shape[0]
    if AVAILABLE and small_batch(B):
        W, OK = np.empty((B, 2)), np.empty(B)
        n_bad = _imtlg_k2_inverse_rows(gram, NO_PARAMS, W, OK)
        if n_bad == 0:
            return W
        if n_bad == B:
            return _imtlg(gram)
        bad = OK != 1.0
    else:
        W, ok = _imtlg_k2_inverse_ok(gram)
        if ok.all():
            return W
        bad = ~ok
    W[bad] = _imtlg(gram[bad])
    return W
