"""Coordinate-wise trimmed mean (Yin, Chen, Ramchandran, Bartlett, "Byzantine-Robust Distributed
Learning: Towards Optimal Statistical Rates", ICML 2018, Definition 2), as TorchJD 0.18's
``TrimmedMean``. **Needs the Jacobian J.**

Per coordinate k, drop the ``b = trim_number`` largest and the ``b`` smallest of the K values
``J_1k ... J_Kk`` and average the rest:

    d_k = 1 / (K - 2b)  sum_{i = b+1}^{K-b} J_(i)k          (J_(1)k <= ... <= J_(K)k)

A :class:`~pcd.methods.base.DirectionMethod`: the selection is per coordinate, so the update is
not a combination ``weights @ J`` of the gradients; the step's ``exact`` field holds it and
``weights`` are its least-squares weights (:func:`pcd.methods.graddrop.least_squares_weights`).
``trim_number = 0`` is the mean; ``2b = K - 1`` the coordinate-wise median (odd K).

Where K is too small for the requested trimming (TorchJD refuses ``K < 2b + 1``), as many values
as K allows are trimmed, ``floor((K - 1) / 2)`` per side, so every page (down to the K = 2 toys,
where it is the mean) can run it. TorchJD requires ``trim_number``; our default is 1.
"""
from __future__ import annotations

from typing import Any

import numpy as np

from pcd.methods.base import DirectionMethod, Param, Step, check_jacobian, register
from pcd.methods.graddrop import least_squares_weights


def trimmed_mean(J: np.ndarray, trim: int) -> np.ndarray:
    """``J [B, K, n]`` -> ``[B, n]``: per coordinate, the mean of the K values without the ``b``
    largest and ``b`` smallest, ``b = min(trim, (K - 1) // 2)``."""
    K = J.shape[1]
    b = min(trim, (K - 1) // 2)
    if b == 0:
        return J.mean(axis=1)
    return np.sort(J, axis=1)[:, b:K - b].mean(axis=1)


@register("trimmedmean", "Trimmed mean", "gradient aggregation")
class TrimmedMean(DirectionMethod):
    claims = frozenset()
    description = "Per coordinate, drops the most extreme values of the gradients and averages the rest."
    paper = ("Yin, Chen, Ramchandran & Bartlett, Byzantine-Robust Distributed Learning: Towards Optimal "
             "Statistical Rates, ICML 2018, Definition 2")
    params = (Param("trim_number", 1, 0, 255, kind="int",
                    help="values dropped at each end, per coordinate (at most (K - 1) / 2; TorchJD requires it)"),)
    gram_scaling = 0.0  # d(c J) = c d(J): the least-squares weights do not move

    def update(self, gram: np.ndarray, state: Any = None, *, losses: Any = None, jacobian: Any = None,
               rng: Any = None) -> Step:
        B, K = gram.shape[0], gram.shape[-1]
        J = check_jacobian(jacobian, B, K, "trimmedmean")
        d = trimmed_mean(J, self.hparams["trim_number"])
        return Step(weights=least_squares_weights(J, d), state=state, exact=d)
