"""DWA: dynamic weight average (Liu, Johns & Davison, "End-to-End Multi-Task Learning with
Attention", CVPR 2019, arXiv 1803.10704, eq. (7)), in TorchJD 0.18's ``scalarization.DWA`` form:

    weights_k(t) = K exp(w_k(t-1) / T) / sum_i exp(w_i(t-1) / T),     w_k(t-1) = L_k(t-1) / L_k(t-2)

where ``L_k(t)`` is loss ``k`` averaged over epoch ``t`` and ``T`` the temperature (paper: 2). The
weights sum to ``K``; during the first two epochs, before two averages exist, they are all 1. The
weights use only past losses, so on the gradients they are exactly these ``weights_k``.

An *epoch* here is ``epoch_length`` calls (TorchJD: the caller's ``step()`` at the end of each
epoch); the default 1 makes every call an epoch, which is what a full-batch (deterministic)
problem such as the toy landscapes has. Each call first computes the weights from the two
previous averages, then adds its losses to the current epoch's sum, and closes the epoch after
``epoch_length`` calls. The ratio ``w_k`` is the paper's relative descending rate; the losses are
expected to keep a consistent nonzero sign (TorchJD's note). Where an older average is 0 (the
ratio is undefined, e.g. a trajectory the engine has stopped) the rate is taken as 1 ("no
change"). Needs the loss values (``losses [B, K]``).
"""
from __future__ import annotations

from typing import Any, NamedTuple

import numpy as np

from pcd._validate import LIMITS
from pcd.methods.base import Method, Param, Step, check_losses, register
from pcd.methods.rgw import softmax


class DWAState(NamedTuple):
    """The loss history: the current epoch's loss sum ``[B, K]`` over ``calls`` calls, the two
    previous epochs' averages ``older``, ``newer`` ``[B, K]``, and ``epochs`` finished (0, 1, 2)."""

    loss_sum: np.ndarray
    calls: int
    older: np.ndarray
    newer: np.ndarray
    epochs: int


@register("dwa", "DWA", "loss weighting")
class DWA(Method):
    claims = frozenset({"linear_under_scaling", "weighted"})  # at a fresh state: weights 1, any G
    description = "Weights each loss by how slowly it fell over the last two epochs (softmax of loss ratios)."
    paper = "Liu et al., End-to-End Multi-Task Learning with Attention, CVPR 2019 (arXiv 1803.10704)"
    params = (
        Param("temperature", 2.0, 1e-3, 1e3, log=True, help="temperature T: larger is more uniform (paper 2)"),
        Param("epoch_length", 1, 1, LIMITS["steps"], kind="int",
              help="calls per epoch (the loss averages' window); 1: every call is an epoch"),
    )
    needs_losses = True

    def init(self, batch: int, K: int) -> DWAState:
        z = np.zeros((batch, K))
        return DWAState(loss_sum=z, calls=0, older=z.copy(), newer=z.copy(), epochs=0)

    def update(self, gram: np.ndarray, state: Any = None, *, losses: Any = None, jacobian: Any = None,
               rng: Any = None) -> Step:
        B, K = gram.shape[0], gram.shape[-1]
        L = check_losses(losses, B, K, self.name)
        state = self.state_for(state, B, K)
        if state.epochs < 2:
            w = np.ones((B, K))
        else:
            with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
                rate = state.newer / state.older
            rate = np.where(np.isfinite(rate), rate, 1.0)
            w = K * softmax(rate / self.hparams["temperature"])
        total, calls = state.loss_sum + L, state.calls + 1
        if calls < self.hparams["epoch_length"]:
            new = DWAState(loss_sum=total, calls=calls, older=state.older, newer=state.newer, epochs=state.epochs)
        else:  # the epoch ends: roll the history (TorchJD's step())
            new = DWAState(loss_sum=np.zeros((B, K)), calls=0, older=state.newer, newer=total / calls,
                           epochs=min(state.epochs + 1, 2))
        return Step(weights=w, state=new)
