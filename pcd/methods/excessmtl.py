"""ExcessMTL: robust multi-task learning with excess risks (He, Yang, Zhou, Liu, Zhao, "Robust
Multi-Task Learning with Excess Risks", ICML 2024, PMLR 235, eqs. 6, 7 and 9), as TorchJD 0.18's
``ExcessMTLWeighting``. **Needs the Jacobian J** (squared gradients, per coordinate).

Each call accumulates the squared gradients (an AdaGrad diagonal Hessian, eq. 7),
``S <- S + J * J``, estimates each task's excess risk (eq. 6)

    e_i = sum_k J_ik^2 / sqrt(S_ik + 1e-7),

divides it by a baseline (scale processing, Sec. 3.2) and updates the weights on the simplex by an
exponentiated-gradient step (eq. 9), in log space as TorchJD:

    weights <- softmax(log(weights) + robust_step_size * e / (e_0 + 1e-7)).

The baseline ``e_0``: with ``n_warmup_steps = 0`` the first call's ``e`` (and that first call uses
``e`` itself, as the official code); otherwise the weights stay ``1/K`` for ``n_warmup_steps``
calls while ``e`` is averaged into the baseline (paper, Appendix C.1). The weights start at
``1/K`` (the paper; the official code and LibMTL start at 1).

State: :class:`ExcessMTLState` (weights, ``S [B, K, n]``, baseline, warm-up sum, call count),
batch-first; ``S`` is created at the first call (n is known only then).
"""
from __future__ import annotations

from typing import Any, NamedTuple

import numpy as np

from pcd.methods._solvers import softmax
from pcd.methods.base import Method, Param, Step, check_jacobian, register


class ExcessMTLState(NamedTuple):
    """Weights ``[B, K]``, squared-gradient sums ``[B, K, n]`` (None before the first call),
    baseline excess risks ``[B, K]`` (None until set), warm-up sum ``[B, K]``, calls so far."""

    weights: np.ndarray
    sq_grad_sum: np.ndarray | None
    initial: np.ndarray | None
    warmup_sum: np.ndarray
    steps: int


@register("excessmtl", "ExcessMTL", "gradient aggregation")
class ExcessMTL(Method):
    claims = frozenset({"weighted"})
    description = "Shifts weight to the tasks with the largest estimated excess risk (distance to their optimum)."
    paper = ("He, Yang, Zhou, Liu & Zhao, Robust Multi-Task Learning with Excess Risks, ICML 2024 "
             "(PMLR 235), eqs. 6, 7, 9")
    params = (
        Param("robust_step_size", 1.0, 1e-6, 100.0, log=True,
              help="step size of the exponentiated weight update (TorchJD's default 1)"),
        Param("n_warmup_steps", 0, 0, 1_000_000, kind="int",
              help="calls with uniform weights that set the baseline excess risks (0: the first call's)"),
    )
    needs_jacobian = True
    gram_scaling = None  # the excess risks depend on the gradients' scale

    def init(self, batch: int, K: int) -> ExcessMTLState:
        return ExcessMTLState(weights=np.full((batch, K), 1.0 / K), sq_grad_sum=None, initial=None,
                              warmup_sum=np.zeros((batch, K)), steps=0)

    def update(self, gram: np.ndarray, state: Any = None, *, losses: Any = None, jacobian: Any = None,
               rng: Any = None) -> Step:
        B, K = gram.shape[0], gram.shape[-1]
        J = check_jacobian(jacobian, B, K, "excessmtl")
        state = self.state_for(state, B, K)
        S = state.sq_grad_sum
        if S is not None and S.shape != J.shape:
            raise ValueError(f"excessmtl: state holds squared gradients of shape {list(S.shape)}, "
                             f"got a Jacobian of shape {list(J.shape)}")
        sq = J * J
        S = sq if S is None else S + sq
        e = (sq / np.sqrt(S + 1e-7)).sum(axis=-1)  # eq. 6 with the diagonal Hessian of eq. 7
        steps = state.steps + 1
        warm = self.hparams["n_warmup_steps"]
        if state.steps < warm:  # warm-up: uniform weights, the baseline accumulates
            new = ExcessMTLState(weights=state.weights, sq_grad_sum=S, initial=state.initial,
                                 warmup_sum=state.warmup_sum + e, steps=steps)
            return Step(weights=state.weights.copy(), state=new, info={"excess_risk": e})
        initial = state.initial
        if initial is None:
            if warm > 0:
                initial = state.warmup_sum / warm
                e = e / (initial + 1e-7)
            else:
                initial = e  # the first call's excess risks are the baseline, and used raw
        else:
            e = e / (initial + 1e-7)
        with np.errstate(divide="ignore"):
            w = softmax(np.log(state.weights) + e * self.hparams["robust_step_size"])
        new = ExcessMTLState(weights=w, sq_grad_sum=S, initial=initial, warmup_sum=state.warmup_sum, steps=steps)
        return Step(weights=w.copy(), state=new, info={"excess_risk": e})
