"""UW: uncertainty weighting (Kendall, Gal & Cipolla, "Multi-Task Learning Using Uncertainty to
Weigh Losses for Scene Geometry and Semantics", CVPR 2018, arXiv 1705.07115, eq. (7) with
``s_i = log sigma_i^2``), in TorchJD 0.18's ``scalarization.UW`` form:

    S(L, s) = sum_i ( 1/2 e^{-s_i} L_i + 1/2 s_i )

The model's gradient of ``S`` is ``sum_i 1/2 e^{-s_i} grad L_i``, so as weights on the gradients

    weights_i = 1/2 e^{-s_i}

The log-variances ``s`` (state, ``init`` at start: TorchJD 0; LibMTL uses -0.5) are learned jointly
with the model, as TorchJD's example does by handing them to the model's SGD optimizer: at each call
the weights use the current ``s`` and then

    s_i <- s_i - lr * dS/ds_i = s_i - lr * (1/2 - 1/2 e^{-s_i} L_i)

(the step taken with the same losses, at the same time as the model's step). For losses held fixed,
``s_i -> log L_i`` (the minimizer of ``S`` in ``s``), i.e. ``weights_i -> 1 / (2 L_i)``: each loss
is divided by its own scale. UW assumes ``L_i > 0`` (sigma^2 is the task's noise level): a
negative loss is refused with a ``ValueError`` (``dS/ds_i > 1/2`` for every ``s_i``: no minimum, the
weight grows without bound; TorchJD does not check); a loss that stays at 0 lowers ``s_i`` by
``lr/2`` per call and its weight grows like ``e^{lr t / 2}`` -- not refused (a trajectory the engine
has stopped has losses 0), it is what UW does. Needs the loss values (``losses [B, K]``).
"""
from __future__ import annotations

from typing import Any, NamedTuple

import numpy as np

from pcd.methods.base import Method, Param, Step, check_losses, register


class UWState(NamedTuple):
    """Per-problem log-variances ``s = log sigma^2`` ``[B, K]``."""

    log_var: np.ndarray


@register("uw", "UW", "loss weighting")
class UW(Method):
    claims = frozenset({"linear_under_scaling", "weighted"})  # at a fresh state: weights 1/2, any G
    description = "Learns one log-variance per loss and weights each loss by 1/(2 sigma^2): losses on their own scale."
    paper = "Kendall et al., Multi-Task Learning Using Uncertainty to Weigh Losses, CVPR 2018 (arXiv 1705.07115)"
    params = (
        Param("lr", 0.1, 0.0, 10.0, help="SGD step of the log-variances (TorchJD: the model's optimizer)"),
        Param("init", 0.0, -10.0, 10.0, help="initial log-variance s_i (TorchJD 0, LibMTL -0.5)"),
    )
    needs_losses = True

    def init(self, batch: int, K: int) -> UWState:
        return UWState(log_var=np.full((batch, K), self.hparams["init"]))

    def update(self, gram: np.ndarray, state: Any = None, *, losses: Any = None, jacobian: Any = None,
               rng: Any = None) -> Step:
        B, K = gram.shape[0], gram.shape[-1]
        L = check_losses(losses, B, K, self.name, nonnegative="for L_i < 0 the log-variance s_i has no minimum")
        s = self.state_for(state, B, K).log_var
        w = 0.5 * np.exp(-s)
        new = s - self.hparams["lr"] * (0.5 - w * L)
        return Step(weights=w, state=UWState(log_var=new))
