"""Bargaining family: Nash-MTL and AuxiNash.

**Nash-MTL** (Navon et al., "Multi-Task Learning as a Bargaining Game", ICML 2022, arXiv
2202.01017, eq. (4) and Algorithm 1; TorchJD 0.18 ``NashMTL``). The Nash bargaining solution of the
"tasks" over the update ``d = J^T alpha`` in a ball satisfies

    alpha_i (G alpha)_i = 1,  alpha > 0          (i.e. G alpha = 1 / alpha)

(TorchJD divides G by ``||G||_F`` for its solver and multiplies the constraint back by the same
factor, so the equation holds for the raw G, as here); then the update is clipped: if
``||J^T alpha|| = sqrt(alpha^T G alpha) > max_norm`` (``max_norm > 0``) alpha is rescaled to it. The
weights are recomputed every ``update_weights_every`` calls (state: last alpha, call count).
We solve the equation exactly (K = 2 closed form, K >= 3 damped Newton warm-started from the last
alpha); TorchJD/the official code run <= 20 convex-concave iterations with ECOS and stop at
``||G alpha - 1/alpha|| < 1e-3``, so they agree with us only to about that accuracy.
Non-conflicting: ``(J d)_i = (G alpha)_i = 1 / alpha_i > 0``. At an exact cancellation the
bargaining problem has no solution (alpha -> infinity along the null direction); the ridge
``1e-13 trace(G)`` keeps alpha finite and the direction is ~0.

**AuxiNash** (Shamsian, Navon, Glazer, Kawaguchi, Chechik, Fetaya, "Auxiliary Learning as an
Asymmetric Bargaining Game", ICML 2023, arXiv 2301.13501). The asymmetric Nash bargaining solution
with bargaining powers ``p`` maximizes ``sum_i p_i log(g_i . d)`` over ``||d|| <= 1``; its
stationarity gives

    alpha_i (G alpha)_i = p_i,   alpha > 0          (G alpha = p / alpha)

with the primary (objective 0) holding the larger power. **Simplification (documented):** the paper
learns ``p`` in an outer loop by differentiating the primary's validation loss through the update
(implicit differentiation, every few hundred steps); here the powers are a fixed hyper-parameter:
``p_1 = K * primary_share`` and ``p_j = K (1 - primary_share) / (K - 1)`` for the auxiliaries, so
``sum p = K`` and ``primary_share = 1/K`` reproduces Nash-MTL exactly. Normalization and clipping
follow Nash-MTL (the AuxiNash code builds on it).

K = 2 has a closed form (:func:`pcd.methods._solvers.nash_k2`, written once): a small batch
(:func:`pcd._fast.small_batch`, the toy engine) runs it compiled row by row, larger ones on whole
arrays -- the same bits.
"""
from __future__ import annotations

from typing import Any, NamedTuple

import numpy as np

from pcd._fast import small_batch
from pcd._kernels import AVAILABLE
from pcd.methods._solvers import nash, nash_clip_k2, nash_k2_rows
from pcd.methods.base import Method, Param, Step, register


class NashState(NamedTuple):
    alpha: np.ndarray | None  # last solution [B, K] (before clipping)
    step: int = 0


def _bargain(gram: np.ndarray, p: np.ndarray, state: NashState | None, max_norm: float,
             every: int) -> Step:
    """``p``: the powers ``[K]`` (the same for every problem)."""
    B, K = gram.shape[0], gram.shape[-1]
    if state is None or (state.alpha is not None and state.alpha.shape != (B, K)):
        state = NashState(alpha=None, step=0)
    solve = state.alpha is None or state.step % every == 0
    if K == 2 and solve and AVAILABLE and small_batch(B):  # a few problems: the formulas compiled, per row
        A, W, R = np.empty((B, 2)), np.empty((B, 2)), np.empty(B)
        nash_k2_rows(gram, p, float(max_norm), A, W, R)
        return Step(weights=W, state=NashState(alpha=A, step=state.step + 1), info={"alpha": A, "residual": R})
    if state.alpha is None or solve:
        alpha, res = nash(gram, np.broadcast_to(p, (B, K)), state.alpha)
    else:
        alpha, res = state.alpha, np.zeros(B)
    w = alpha.copy()
    if max_norm > 0 and K == 2:
        with np.errstate(over="ignore", invalid="ignore"):  # as einsum below: quiet
            w0, w1 = nash_clip_k2(w[:, 0], w[:, 1], gram[:, 0, 0], gram[:, 0, 1], gram[:, 1, 0], gram[:, 1, 1],
                                  max_norm)
        w = np.stack([w0, w1], axis=-1)
    elif max_norm > 0:
        norm = np.sqrt(np.maximum(np.einsum("bi,bij,bj->b", w, gram, w), 0.0))
        clip = norm > max_norm
        w = np.where(clip[:, None], w / np.where(clip, norm, 1.0)[:, None] * max_norm, w)
    return Step(weights=w, state=NashState(alpha=alpha, step=state.step + 1),
                info={"alpha": alpha, "residual": res})


_COMMON = (
    Param("max_norm", 1.0, 0.0, 1e6, help="clip ||update|| to this (0 = no clipping; TorchJD default 1)"),
    Param("update_weights_every", 1, 1, 10000, kind="int", help="recompute the weights every n calls"),
)


@register("nashmtl", "Nash-MTL", "gradient aggregation")
class NashMTL(Method):
    gram_scaling = -0.5  # G a = 1 / a: a(c G) = a(G) / sqrt(c)
    claims = frozenset({"non_conflicting", "weighted"})
    description = "Nash bargaining between objectives: G alpha = 1/alpha, every objective improves."
    paper = "Navon et al., Multi-Task Learning as a Bargaining Game, ICML 2022 (arXiv 2202.01017)"
    params = _COMMON

    def init(self, batch: int, K: int) -> NashState:
        return NashState(alpha=None, step=0)

    def update(self, gram: np.ndarray, state: Any = None, *, losses: Any = None, jacobian: Any = None,
               rng: Any = None) -> Step:
        K = gram.shape[-1]
        return _bargain(gram, np.ones(K), state, self.hparams["max_norm"], self.hparams["update_weights_every"])


@register("auxinash", "AuxiNash", "hierarchical")
class AuxiNash(Method):
    gram_scaling = -0.5
    claims = frozenset({"non_conflicting", "weighted", "hierarchical"})
    description = "Asymmetric Nash bargaining: the primary holds the larger bargaining power."
    paper = "Shamsian et al., Auxiliary Learning as an Asymmetric Bargaining Game, ICML 2023 (arXiv 2301.13501)"
    params = (
        Param("primary_share", 0.75, 0.01, 0.99, help="primary's share of the bargaining power (fixed; 1/K = Nash-MTL)"),
    ) + _COMMON

    def init(self, batch: int, K: int) -> NashState:
        return NashState(alpha=None, step=0)

    def powers(self, K: int) -> np.ndarray:
        s = self.hparams["primary_share"]
        if K == 1:
            return np.ones(1)
        p = np.full(K, K * (1.0 - s) / (K - 1))
        p[0] = K * s
        return p

    def update(self, gram: np.ndarray, state: Any = None, *, losses: Any = None, jacobian: Any = None,
               rng: Any = None) -> Step:
        K = gram.shape[-1]
        return _bargain(gram, self.powers(K), state, self.hparams["max_norm"], self.hparams["update_weights_every"])
