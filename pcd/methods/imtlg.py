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

import numpy as np

from pcd.methods.base import Method, MethodOutput, register


@register
class IMTLG(Method):
    name = "imtlg"
    display_name = "IMTL-G"
    description = "Weights that give the update equal projections onto every normalized gradient."
    paper = "Liu et al., Towards Impartial Multi-task Learning, ICLR 2021"

    def weights(self, gram, *, losses=None, jacobian=None, state=None, rng=None) -> MethodOutput:
        B, K = gram.shape[0], gram.shape[-1]
        d = np.sqrt(np.maximum(np.diagonal(gram, axis1=1, axis2=2), 0.0))
        if K == 1:
            v = np.where(gram[:, 0, :] > 0, d / np.where(gram[:, 0, :] > 0, gram[:, 0, :], 1.0), 0.0)
        else:
            try:
                pinv = np.linalg.pinv(gram, rtol=K * np.finfo(np.float64).eps)
            except TypeError:  # NumPy < 2.0
                pinv = np.linalg.pinv(gram, rcond=K * np.finfo(np.float64).eps)
            v = np.einsum("bij,bj->bi", pinv, d)
        s = v.sum(axis=-1, keepdims=True)
        small = np.abs(s) < 1e-12
        w = np.where(small, 0.0, v / np.where(small, 1.0, s))
        return MethodOutput(weights=w, state=state)
