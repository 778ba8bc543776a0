"""MoDo: multi-objective gradient with double sampling (Chen, Fernando, Ying, Chen, "Three-Way
Trade-Off in Multi-Objective Learning: Optimization, Generalization and Conflict-Avoidance",
JMLR 25 (2024), Algorithm 1, eq. 2.9a), as TorchJD 0.18's ``MoDoWeighting``.

One projected stochastic-gradient step per call on MGDA's dual (its ridge-regularized form):

    lambda <- Proj_simplex(lambda - gamma (A lambda + rho lambda)),          weights = lambda   (2.9a)

where ``A = J_1 J_2^T`` is built from two *independent* mini-batches ("double sampling": the
unbiased estimate of ``G lambda``). The contract hands the method a ``[B, K, K]`` matrix: pass
``J_1 J_2^T`` there where two draws exist (it need not be symmetric); with one draw (the toys,
deterministic gradients) ``A = G = J J^T`` and MoDo is projected-gradient MGDA with memory.
``lambda`` starts at ``1/K``; the projection onto the simplex is TorchJD's (sort-based, exact).

State: :class:`MoDoState`, ``lambda [B, K]``. Weights on the simplex ("weighted"); one small step
per call, so not non-conflicting, and ``A``'s scale sets the step (not linear under scaling).
"""
from __future__ import annotations

from typing import Any, NamedTuple

import numpy as np

from pcd.methods.base import Method, Param, Step, register


class MoDoState(NamedTuple):
    """The task weights ``lambda [B, K]`` (on the simplex)."""

    lam: np.ndarray


def project_onto_simplex(y: np.ndarray) -> np.ndarray:
    """Euclidean projection of each row of ``y [B, K]`` onto the probability simplex, as TorchJD's
    ``project_onto_simplex``: sort descending, ``t_i = (sum of the i largest - 1) / i``, take the first
    ``t_i`` above the next sorted entry (else ``(sum(y) - 1) / K``), clip ``y - t`` at 0."""
    B, K = y.shape
    srt = -np.sort(-y, axis=-1)
    cs = np.cumsum(srt, axis=-1)
    tmax = (cs - 1.0) / np.arange(1.0, K + 1.0)
    hit = tmax[:, :-1] > srt[:, 1:]
    first = np.argmax(hit, axis=-1)
    t = np.where(hit.any(axis=-1), tmax[np.arange(B), first], (y.sum(axis=-1) - 1.0) / K)
    return np.maximum(y - t[:, None], 0.0)


@register("modo", "MoDo", "gradient aggregation")
class MoDo(Method):
    claims = frozenset({"weighted"})
    description = "One projected-gradient step per call on MGDA's weights, from two independent gradient draws."
    paper = ("Chen, Fernando, Ying & Chen, Three-Way Trade-Off in Multi-Objective Learning, JMLR 25 (2024), "
             "Algorithm 1, eq. 2.9a")
    params = (
        Param("gamma", 0.1, 1e-9, 100.0, log=True, help="step size of the weight update (TorchJD's default 0.1)"),
        Param("rho", 0.1, 0.0, 100.0, help="l2 regularization of the weights (TorchJD's default 0.1)"),
    )
    gram_scaling = None  # gamma acts on A itself

    def init(self, batch: int, K: int) -> MoDoState:
        return MoDoState(lam=np.full((batch, K), 1.0 / K))

    def update(self, gram: np.ndarray, state: Any = None, *, losses: Any = None, jacobian: Any = None,
               rng: Any = None) -> Step:
        B, K = gram.shape[0], gram.shape[-1]
        lam = self.state_for(state, B, K).lam
        grad = np.einsum("bij,bj->bi", gram, lam) + self.hparams["rho"] * lam
        lam = project_onto_simplex(lam - self.hparams["gamma"] * grad)
        return Step(weights=lam, state=MoDoState(lam=lam.copy()))
