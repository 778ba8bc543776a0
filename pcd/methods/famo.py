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
K = 2 is written once as three formulas (:func:`famo_adam_k2`, :func:`famo_softmax_k2`,
:func:`famo_weights_k2`) with NumPy's ``exp`` between them: on arrays for a large batch, compiled row
by row for a small one and in the engine's fast path (:meth:`FAMO.kernel`); the same bits as the
general-K code (tested).
Family: loss weighting -- the paper balances the tasks' *loss* decrease with weights learned from the
losses alone (it never needs the per-task gradients: its point is O(1) cost), and TorchJD 0.18 files
it under ``scalarization``.
"""
from __future__ import annotations

from typing import Any, NamedTuple

import numpy as np

from pcd._fast import small_batch
from pcd._kernels import AVAILABLE, formula, jit, where
from pcd.methods._solvers import softmax
from pcd.methods.base import Kernel, Method, Param, Step, check_losses, per_objective, register

_EPS = 1e-8


class FAMOState(NamedTuple):
    """Per-problem logits ``xi [B, K]``, Adam moments, Adam step count, previous losses (None at start)."""

    xi: np.ndarray
    m: np.ndarray
    v: np.ndarray
    t: int
    prev: np.ndarray | None


@register("famo", "FAMO", "loss weighting")
class FAMO(Method):
    claims = frozenset({"weighted"})
    description = "Reweights objectives from their recent log-loss decrease so all improve at a similar rate."
    paper = "Liu et al., FAMO: Fast Adaptive Multitask Optimization, NeurIPS 2023 (arXiv 2306.03792)"
    params = (
        Param("lr", 0.025, 0.0, 1.0, help="Adam learning rate of the task logits (paper: 0.025)"),
        Param("weight_decay", 1e-3, 0.0, 1.0, help="Adam weight decay of the logits (paper: 1e-3)"),
        Param("min_loss", 0.0, None, None, per_objective=True, help="lower bound b_i of each loss"),
    )
    needs_losses = True

    def init(self, batch: int, K: int) -> FAMOState:
        z = np.zeros((batch, K))
        return FAMOState(xi=z.copy(), m=z.copy(), v=z.copy(), t=0, prev=None)

    def _shift(self, losses: np.ndarray) -> np.ndarray:
        return losses - per_objective(self.hparams["min_loss"], losses.shape[-1], "famo: min_loss") + _EPS

    def update(self, gram: np.ndarray, state: Any = None, *, losses: Any = None, jacobian: Any = None,
               rng: Any = None) -> Step:
        B, K = gram.shape[0], gram.shape[-1]
        L = check_losses(losses, B, K, self.name)
        state = self.state_for(state, B, K)
        shifted = self._shift(L)
        with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
            if K == 2:
                return self._update_k2(L, shifted, state)
            logs = np.log(shifted)
            if state.prev is not None:
                delta = np.log(self._shift(state.prev)) - logs
                z = softmax(state.xi)
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
            z = softmax(state.xi)
            r = z / shifted
            w = r / r.sum(axis=-1, keepdims=True)
        new_state = FAMOState(xi=state.xi, m=state.m, v=state.v, t=state.t, prev=L.copy())
        return Step(weights=w, state=new_state, info={"task_weights": z})

    def _update_k2(self, L: np.ndarray, shifted: np.ndarray, state: FAMOState) -> Step:
        """K = 2: the formulas below on the batch's arrays, or compiled row by row for a small batch."""
        compiled = AVAILABLE and small_batch(L.shape[0])
        S = np.empty((12, L.shape[0]))  # the fast path's state rows (see kernel())
        S[0:2], S[2:4], S[4:6] = state.xi.T, state.m.T, state.v.T
        t = state.t
        if state.prev is not None:
            t += 1
            S[8:10] = np.log(self._shift(state.prev)).T
            S[6:8] = softmax(state.xi).T
        W = np.empty((2, L.shape[0]))
        _famo_k2_step(state.prev is not None, t, shifted.T, W, S, self.hparams["lr"], self.hparams["weight_decay"],
                      compiled)
        new_state = FAMOState(xi=S[0:2].T.copy(), m=S[2:4].T.copy(), v=S[4:6].T.copy(), t=t, prev=L.copy())
        return Step(weights=W.T.copy(), state=new_state, info={"task_weights": S[6:8].T.copy()})

    def kernel(self) -> Kernel | None:
        """The K = 2 step compiled (:func:`_famo_k2_step`). State rows: the logits, the Adam
        moments, the softmax, the last log-losses and the shifted logits (two rows each)."""
        b = np.asarray(self.hparams["min_loss"], dtype=np.float64).reshape(-1)
        if b.size not in (1, 2):
            return None
        bcol = np.array([[b[0]], [b[-1]]])
        lr, wd = self.hparams["lr"], self.hparams["weight_decay"]

        def step(t: int, L: np.ndarray, G: np.ndarray, W: np.ndarray, S: np.ndarray) -> None:
            _famo_k2_step(t > 0, t, L - bcol + _EPS, W, S, lr, wd, True)
        return Kernel(step, state=12)


def _famo_k2_step(learn: bool, t: int, shifted: np.ndarray, W: np.ndarray, S: np.ndarray, lr: float, wd: float,
                  compiled: bool) -> None:
    """One K = 2 step on component-major arrays (``shifted [2, B]``, ``W [2, B]``, state rows ``S``:
    logits, Adam m, Adam v, softmax z, previous log-losses, shifted logits), in place: the Adam step
    of the logits from ``delta = log l~(prev) - log l~(now)`` (``learn``: not on the first call,
    Adam step ``t``), then the weights. ``log``/``exp`` are NumPy's between the compiled formulas."""
    logs = np.log(shifted)
    if learn:
        p = np.array([wd, lr, 1.0 - 0.9 ** t, 1.0 - 0.999 ** t])
        if compiled:
            _famo_adam_rows(S, S[8:10] - logs, p)
        else:
            S[0], S[1], S[2], S[3], S[4], S[5] = famo_adam_k2(S[0], S[1], S[2], S[3], S[4], S[5], S[6], S[7],
                                                              S[8] - logs[0], S[9] - logs[1], p)
    S[10:12] = S[0:2] - np.maximum(S[0], S[1])
    ex = np.exp(S[10:12])
    if compiled:
        _famo_weights_rows(ex, shifted, S, W)
    else:
        S[6], S[7] = famo_softmax_k2(ex[0], ex[1])
        W[0], W[1] = famo_weights_k2(S[6], S[7], shifted[0], shifted[1])
    S[8:10] = logs


@formula
def famo_adam_k2(x0: Any, x1: Any, m0: Any, m1: Any, v0: Any, v1: Any, z0: Any, z1: Any, d0: Any, d1: Any,
                 p: Any) -> Any:
    """The logits' Adam step for K = 2, ``p = (weight_decay, lr, 1 - 0.9^t, 1 - 0.999^t)``: gradient
    ``z * (delta - z . delta) + weight_decay * xi``; a problem whose gradient is not finite does not learn."""
    wd, lr, bc1, bc2 = p[0], p[1], p[2], p[3]
    zd = z0 * d0 + z1 * d1
    q0 = z0 * (d0 - zd) + wd * x0
    q1 = z1 * (d1 - zd) + wd * x1
    ok = np.isfinite(q0) & np.isfinite(q1)
    n0, n1 = 0.9 * m0 + 0.1 * q0, 0.9 * m1 + 0.1 * q1
    u0, u1 = 0.999 * v0 + 0.001 * q0 * q0, 0.999 * v1 + 0.001 * q1 * q1
    y0 = x0 - lr * (n0 / bc1) / (np.sqrt(u0 / bc2) + 1e-8)
    y1 = x1 - lr * (n1 / bc1) / (np.sqrt(u1 / bc2) + 1e-8)
    return where(ok, y0, x0), where(ok, y1, x1), where(ok, n0, m0), where(ok, n1, m1), where(ok, u0, v0), \
        where(ok, u1, v1)


@formula
def famo_softmax_k2(e0: Any, e1: Any) -> Any:
    """``z = softmax(xi)`` from ``e = exp(xi - max xi)``."""
    se = e0 + e1
    return e0 / se, e1 / se


@formula
def famo_weights_k2(z0: Any, z1: Any, s0: Any, s1: Any) -> Any:
    """``w_i = (z_i / l~_i) / sum_j z_j / l~_j``."""
    r0, r1 = z0 / s0, z1 / s1
    rs = r0 + r1
    return r0 / rs, r1 / rs


_famo_adam_k2_c = jit(famo_adam_k2, inline=True)  # the formula, compiled into the row loop below
_famo_softmax_k2_c = jit(famo_softmax_k2, inline=True)  # the formula, compiled into the row loop below
_famo_weights_k2_c = jit(famo_weights_k2, inline=True)  # the formula, compiled into the row loop below


@jit
def _famo_adam_rows(S: Any, delta: Any, p: Any) -> Any:
    for i in range(S.shape[1]):
        S[0, i], S[1, i], S[2, i], S[3, i], S[4, i], S[5, i] = _famo_adam_k2_c(
            S[0, i], S[1, i], S[2, i], S[3, i], S[4, i], S[5, i], S[6, i], S[7, i], delta[0, i], delta[1, i], p)


@jit
def _famo_weights_rows(ex: Any, shifted: Any, S: Any, W: Any) -> Any:
    for i in range(S.shape[1]):
        S[6, i], S[7, i] = _famo_softmax_k2_c(ex[0, i], ex[1, i])
        W[0, i], W[1, i] = _famo_weights_k2_c(S[6, i], S[7, i], shifted[0, i], shifted[1, i])
