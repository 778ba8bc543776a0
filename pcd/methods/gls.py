"""GLS: geometric loss strategy (Chennupati et al., "MultiNet++: Multi-Stream Feature Aggregation
and Geometric Loss Strategy for Multi-Task Learning", CVPR Workshops 2019, arXiv 1904.08492,
its geometric loss), TorchJD 0.18's ``scalarization.GeometricMean``:

    S(L) = (prod_i L_i)^(1/K) = exp(mean_i log L_i)

Its gradient is ``dS/dtheta = sum_i S / (K L_i) grad L_i``, so as weights on the gradients

    weights_i = L_geo / (K L_i),      L_geo = (prod_j L_j)^(1/K)

(computed as ``exp(mean_j log L_j - log L_i) / K``). Each gradient is divided by its own loss
(``grad log L_i``), scaled by the geometric mean: a loss that is small relative to the others gets a
large weight. No hyper-parameters. Needs the loss values (``losses [B, K]``), which must be
``>= 0`` (the geometric mean of a negative loss is undefined: refused with a ``ValueError``). Where
some loss is 0 the geometric mean is at its minimum 0 and its gradient ``L_geo / (K L_i)`` is
``0 / 0`` for that loss (TorchJD returns NaN there): the weights of such a problem are all 0 (no
update), which is also what a trajectory the engine has stopped (losses set to 0) gets.
"""
from __future__ import annotations

from typing import Any

import numpy as np

from pcd.methods.base import Method, Step, check_losses, register


@register("gls", "GLS", "loss weighting")
class GLS(Method):
    claims = frozenset({"weighted"})
    description = "Minimizes the geometric mean of the losses: each gradient divided by its loss, times the mean."
    paper = ("Chennupati et al., MultiNet++: Multi-Stream Feature Aggregation and Geometric Loss Strategy for "
             "Multi-Task Learning, CVPR Workshops 2019 (arXiv 1904.08492)")
    needs_losses = True

    def update(self, gram: np.ndarray, state: Any = None, *, losses: Any = None, jacobian: Any = None,
               rng: Any = None) -> Step:
        B, K = gram.shape[0], gram.shape[-1]
        L = check_losses(losses, B, K, self.name, nonnegative="the geometric mean of a negative loss is undefined")
        zero = (L == 0.0).any(axis=1, keepdims=True)
        with np.errstate(divide="ignore"):
            logs = np.log(np.where(zero, 1.0, L))
        w = np.exp(logs.mean(axis=1, keepdims=True) - logs) / K
        return Step(weights=np.where(zero, 0.0, w), state=state)
