"""RGW: random gradient weighting (Lin et al., "Reasonable Effectiveness of Random Weighting: A
Litmus Test for Multi-Task Learning", TMLR 2022, arXiv 2111.10603, Algorithm 2).

    weights = softmax(z),   z ~ N(0, I_K)   (drawn afresh at every call, per problem in the batch)

Same definition as TorchJD's ``RandomWeighting``. Pass ``rng`` for reproducible draws.
"""
from __future__ import annotations

from typing import Any

import numpy as np

from pcd.methods.base import Method, Step, register


def softmax(z: np.ndarray) -> np.ndarray:
    e = np.exp(z - z.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


@register("rgw", "RGW", "gradient aggregation")
class RGW(Method):
    claims = frozenset({"linear_under_scaling", "weighted"})
    description = "Random positive weights (softmax of Gaussian draws) at every step."
    paper = "Lin et al., Reasonable Effectiveness of Random Weighting, TMLR 2022 (arXiv 2111.10603)"
    stochastic = True

    def update(self, gram: np.ndarray, state: Any = None, *, losses: Any = None, jacobian: Any = None,
               rng: Any = None) -> Step:
        rng = rng if rng is not None else np.random.default_rng()
        B, K = gram.shape[0], gram.shape[-1]
        return Step(weights=softmax(rng.standard_normal((B, K))), state=state)
