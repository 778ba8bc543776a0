"""Krum and Multi-Krum: Byzantine-robust selection (Blanchard, El Mhamdi, Guerraoui, Stainer,
"Machine Learning with Adversaries: Byzantine Tolerant Gradient Descent", NeurIPS 2017, Sec. 4),
as TorchJD 0.18's ``KrumWeighting``.

With ``f = n_byzantine`` and the distances ``||g_i - g_j|| = sqrt(G_ii + G_jj - 2 G_ij)``, each
gradient's score is the sum of its distances to its ``K - f - 2`` nearest neighbours,

    s(i) = sum_{j in N_i} ||g_i - g_j||,                                         (Krum's score)

and the update is the mean of the ``m = n_selected`` gradients with the lowest scores
(``weights = 1/m`` on them): Krum for m = 1, Multi-Krum above.

Two extensions where TorchJD refuses or is arbitrary (so every page, down to the K = 2 toys, can
run it): (1) with fewer than ``f + 3`` objectives the number of neighbours is clipped at 0 (all
scores 0: every gradient ties) and ``m`` at K; (2) ties for the last selected place share its
weight equally (TorchJD's ``topk`` picks one of them by position), so the method is symmetric in
the objectives: with ``f = 0`` Krum at K = 2 is the mean and at K = 3 the mean of the closest
pair. Scores within 1e-12 (relative) of the m-th lowest count as tied.

Defaults: TorchJD requires ``n_byzantine``; ours is 0 (no adversarial objective), with
``n_selected = 1`` (TorchJD's default). Weighted (a mean of gradients); the selection moves with the
gradients' scales, so not linear under scaling, and a selected gradient may conflict with others.
"""
from __future__ import annotations

from typing import Any

import numpy as np

from pcd.methods.base import Method, Param, Step, register

_TIE = 1e-12  # relative score difference below which two scores tie


def krum_weights(G: np.ndarray, n_byzantine: int, n_selected: int) -> np.ndarray:
    """Multi-Krum weights ``[B, K]`` for Gram matrices ``G [B, K, K]`` (see the module docstring)."""
    K = G.shape[-1]
    diag = np.diagonal(G, axis1=1, axis2=2)
    dist = np.sqrt(np.maximum(diag[:, None, :] + diag[:, :, None] - 2.0 * G, 0.0))
    n_closest = max(K - n_byzantine - 2, 0)
    near = np.sort(dist, axis=-1)[:, :, 1:n_closest + 1]  # the smallest is the distance to itself
    scores = near.sum(axis=-1)
    m = min(n_selected, K)
    srt = np.sort(scores, axis=-1)
    thr = srt[:, m - 1:m]  # the m-th lowest score
    tol = _TIE * np.maximum(np.abs(thr), 1e-300)
    below = scores < thr - tol
    tied = np.abs(scores - thr) <= tol
    share = (m - below.sum(axis=-1, keepdims=True)) / tied.sum(axis=-1, keepdims=True)
    return (below + tied * share) / m


@register("krum", "Krum", "gradient aggregation")
class Krum(Method):
    claims = frozenset({"weighted"})
    description = "Keeps the gradient(s) closest to their neighbours, robust to a few adversarial ones."
    paper = ("Blanchard, El Mhamdi, Guerraoui & Stainer, Machine Learning with Adversaries: Byzantine "
             "Tolerant Gradient Descent, NeurIPS 2017, Sec. 4")
    params = (
        Param("n_byzantine", 0, 0, 510, kind="int", help="objectives that may be adversarial, f (TorchJD requires it)"),
        Param("n_selected", 1, 1, 512, kind="int", help="gradients averaged (1: Krum, more: Multi-Krum)"),
    )
    gram_scaling = 0.0

    def update(self, gram: np.ndarray, state: Any = None, *, losses: Any = None, jacobian: Any = None,
               rng: Any = None) -> Step:
        return Step(weights=krum_weights(gram, self.hparams["n_byzantine"], self.hparams["n_selected"]),
                    state=state)
