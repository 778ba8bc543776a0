"""FAMO: fast adaptive multitask optimization (Liu et al., NeurIPS 2023, arXiv 2306.03792,
Algorithm 1/2), loss-history based, with TorchJD 0.18's ``scalarization.FAMO`` conventions.

With logits ``xi`` (state, zero at start), ``z = softmax(xi)`` and shifted losses
``l~_i = l_i - b_i + eps`` (``b`` = ``min_loss``, ``eps = 1e-8``):

    weights_i = c z_i / l~_i,      c = (sum_j z_j / l~_j)^-1     (gradient of c sum_i z_i log l~_i)

so the update is a convex combination of the gradients that favours the objectives whose
log-loss decreases slowly. The logits learn from the loss change: at the *next* call, with the new
losses, ``delta_i = log l~_i(prev) - log l~_i(now)`` and the logit gradient is
``J_softmax^T delta = z * (delta - z . delta)``, followed by one Adam step
(``lr``, ``weight_decay`` added to the gradient as in ``torch.optim.Adam``, betas 0.9/0.999,
eps 1e-8). The paper recomputes the losses on the same batch after the step; on deterministic
problems the next call's losses are exactly that. Needs the loss values (``losses [B, K]``).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from pcd.methods.base import Method, MethodOutput, Param, register

_EPS = 1e-8


@dataclass
class FAMOState:
    """Per-problem logits ``xi [B, K]``, Adam moments, Adam step count, previous losses (or None)."""

    xi: np.ndarray
    m: np.ndarray
    v: np.ndarray
    t: int
    prev: np.ndarray | None


def _softmax(x: np.ndarray) -> np.ndarray:
    e = np.exp(x - x.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


@register
class FAMO(Method):
    name = "famo"
    display_name = "FAMO"
    description = "Reweights objectives from their recent log-loss decrease so all improve at a similar rate."
    paper = "Liu et al., FAMO: Fast Adaptive Multitask Optimization, NeurIPS 2023 (arXiv 2306.03792)"
    params = (
        Param("lr", 0.025, 0.0, 1.0, help="Adam learning rate of the task logits (paper: 0.025)"),
        Param("weight_decay", 1e-3, 0.0, 1.0, help="Adam weight decay of the logits (paper: 1e-3)"),
        Param("min_loss", 0.0, None, None, per_objective=True, help="lower bound b_i of each loss"),
    )
    needs_losses = True

    def init_state(self, batch: int, K: int) -> FAMOState:
        z = np.zeros((batch, K))
        return FAMOState(xi=z.copy(), m=z.copy(), v=z.copy(), t=0, prev=None)

    def _shift(self, losses: np.ndarray) -> np.ndarray:
        b = np.asarray(self.hparams["min_loss"], dtype=np.float64)
        if b.ndim == 1 and b.shape[0] != losses.shape[-1]:
            raise ValueError(f"famo: min_loss needs one value per objective ({losses.shape[-1]}), got {b.shape[0]}")
        return losses - b + _EPS

    def weights(self, gram, *, losses=None, jacobian=None, state=None, rng=None) -> MethodOutput:
        B, K = gram.shape[0], gram.shape[-1]
        L = np.asarray(losses, dtype=np.float64)
        if L.ndim == 1:
            L = L[None]
        if L.shape != (B, K):
            raise ValueError(f"famo: losses must have shape [B, K] = [{B}, {K}], got {list(L.shape)}")
        if state is None:
            state = self.init_state(B, K)
        if state.xi.shape != (B, K):
            raise ValueError(f"famo: state is for shape {state.xi.shape}, got a batch of [{B}, {K}]")
        shifted = self._shift(L)
        with np.errstate(divide="ignore", invalid="ignore"):
            logs = np.log(shifted)
            if state.prev is not None:
                delta = np.log(self._shift(state.prev)) - logs
                z = _softmax(state.xi)
                grad = z * (delta - np.einsum("bk,bk->b", z, delta)[:, None])
                grad = grad + self.hparams["weight_decay"] * state.xi
                # only problems with finite losses learn (divergence is reported by the engine)
                ok = np.isfinite(grad).all(axis=1, keepdims=True)
                grad = np.where(ok, grad, 0.0)
                t = state.t + 1
                m = 0.9 * state.m + 0.1 * grad
                v = 0.999 * state.v + 0.001 * grad * grad
                mhat = m / (1.0 - 0.9 ** t)
                vhat = v / (1.0 - 0.999 ** t)
                xi = state.xi - self.hparams["lr"] * mhat / (np.sqrt(vhat) + 1e-8)
                xi = np.where(ok, xi, state.xi)
                state = FAMOState(xi=xi, m=np.where(ok, m, state.m), v=np.where(ok, v, state.v), t=t, prev=None)
            z = _softmax(state.xi)
            r = z / shifted
            w = r / r.sum(axis=-1, keepdims=True)
        new_state = FAMOState(xi=state.xi, m=state.m, v=state.v, t=state.t, prev=L.copy())
        return MethodOutput(weights=w, state=new_state, info={"task_weights": z})
