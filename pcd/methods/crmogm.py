"""CR-MOGM: correlation-reduced stochastic multi-objective gradient manipulation (Zhou, Zhang, Jiang,
Wang, Yang, Liu, "On the Convergence of Stochastic Multi-Objective Gradient Manipulation and
Beyond", NeurIPS 2022, Algorithm 2 / eq. 8), as TorchJD 0.18's ``CRMOGMWeighting``.

A wrapper: the weights ``lambda^_k`` of another method (``weighting``, MGDA by default, the
paper's CR-MGDA) are smoothed across calls by an exponential moving average,

    lambda_k = alpha lambda_{k-1} + (1 - alpha) lambda^_k,         lambda_0 = lambda^_1,

so the first call returns the wrapped method's weights and ``alpha = 0`` turns the smoothing off
(``alpha = 1`` freezes the first weights). The paper shows the momentum removes the bias of
stochastic MGDA-type weights (Corollary 1 lets ``alpha_k`` grow to 1 as the learning rate decays;
here, as in TorchJD, alpha is fixed). The wrapped method runs with its default hyper-parameters and
without its own state (each call is a fresh solve; for Nash-MTL: no ``update_weights_every``);
TorchJD's ``initial_weights`` (a given ``lambda_0``) is not offered.

State: :class:`CRMOGMState`, ``lambda_{k-1} [B, K]`` (None before the first call). The wrapped
methods are the deterministic Gram-only ones (:data:`WRAPPABLE`). The class claims MGDA's
properties (the default): they are checked, as for every stateful method, on a fresh state, i.e. on
the first call, which returns ``lambda^_1``; with another wrapped method the first call has that
method's claims (``type(m.inner).claims``; the contract's claims are per class). Later calls average
weights of different Gram matrices, which keeps "weighted" but not, in general, "non-conflicting".
"""
from __future__ import annotations

from typing import Any, NamedTuple

import numpy as np

from pcd.methods.base import Method, Param, Step, register

# Gram-only, deterministic methods whose weights TorchJD can wrap (its Weighting classes), by registry name
WRAPPABLE = ("mgda", "upgrad", "dualproj", "cagrad", "imtlg", "alignedmtl", "nashmtl", "fairgrad")


class CRMOGMState(NamedTuple):
    """The last smoothed weights ``[B, K]`` (None before the first call)."""

    lam: np.ndarray | None = None


@register("crmogm", "CR-MOGM", "gradient aggregation")
class CRMOGM(Method):
    claims = frozenset({"non_conflicting", "weighted"})  # MGDA's (the default wrapped method), on a fresh state
    zero_where_primary_vanishes = True  # MGDA's (the default wrapped method)
    gram_scaling = None  # the EMA mixes weights of earlier Gram matrices; the wrapped method rescales itself
    description = "Smooths another method's weights (MGDA by default) by an exponential moving average."
    paper = ("Zhou et al., On the Convergence of Stochastic Multi-Objective Gradient Manipulation and Beyond, "
             "NeurIPS 2022, Algorithm 2 (eq. 8)")
    params = (
        Param("weighting", "mgda", kind="choice", choices=WRAPPABLE, help="the method whose weights are smoothed"),
        Param("alpha", 0.9, 0.0, 1.0, help="weight of the previous weights (0: no smoothing; TorchJD's default 0.9)"),
    )

    def __init__(self, **hparams: Any) -> None:
        super().__init__(**hparams)
        from pcd.methods import make

        inner = make(self.hparams["weighting"])
        if inner.needs():
            raise ValueError(f"crmogm: the wrapped method {inner.name!r} needs more than the Gram matrix")
        self.inner = inner

    def init(self, batch: int, K: int) -> CRMOGMState:
        return CRMOGMState()

    def update(self, gram: np.ndarray, state: Any = None, *, losses: Any = None, jacobian: Any = None,
               rng: Any = None) -> Step:
        B, K = gram.shape[0], gram.shape[-1]
        lam_hat = np.asarray(self.inner(gram).weights, dtype=np.float64)  # with its own extreme-scale retry
        prev = None if state is None else state.lam
        if prev is None:
            prev = lam_hat  # lambda_0 = lambda^_1 (the same arithmetic as TorchJD below)
        elif prev.shape != (B, K):
            raise ValueError(f"crmogm: state is for shape {list(prev.shape)}, got a batch of [{B}, {K}]")
        a = self.hparams["alpha"]
        lam = a * prev + (1.0 - a) * lam_hat
        return Step(weights=lam, state=CRMOGMState(lam=lam.copy()), info={"inner_weights": lam_hat})
