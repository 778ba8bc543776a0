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
K = 2 with a small batch (:func:`pcd._fast.small_batch`, the toy engine) runs in Python floats (:meth:`FAMO._weights_k2`, the same
operations and the same bits; non-finite or non-positive shifted losses use the vectorized code).
Family: loss weighting -- the paper balances the tasks' *loss* decrease with weights learned from the
losses alone (it never needs the per-task gradients: its point is O(1) cost), and TorchJD 0.18 files
it under ``scalarization``.
"""
from __future__ import annotations

import math
from math import isfinite, sqrt
from typing import Any, NamedTuple

import numpy as np

from pcd._fast import small_batch
from pcd._kernels import jit
from pcd.methods.base import Kernel, Method, Param, Step, check_losses, per_objective, register

_EPS = 1e-8


class FAMOState(NamedTuple):
    """Per-problem logits ``xi [B, K]``, Adam moments, Adam step count, previous losses (None at start)."""

    xi: np.ndarray
    m: np.ndarray
    v: np.ndarray
    t: int
    prev: np.ndarray | None


def _softmax(x: np.ndarray) -> np.ndarray:
    e = np.exp(x - x.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


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
        if K == 2 and small_batch(B):
            out = self._weights_k2(L, state)
            if out is not None:
                return out
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
        return Step(weights=w, state=new_state, info={"task_weights": z})

    def kernel(self) -> Kernel | None:
        """The K = 2 step compiled (:func:`_famo_logits`, :func:`_famo_weights`), with NumPy's ``log`` /
        ``exp`` between the two (the same rounding as :meth:`update`). State rows: the logits, the
        Adam moments, the softmax, the last log-losses and the shifted logits (two rows each)."""
        b = np.asarray(self.hparams["min_loss"], dtype=np.float64).reshape(-1)
        if b.size not in (1, 2):
            return None
        bcol = np.array([[b[0]], [b[-1]]])
        lr, wd = self.hparams["lr"], self.hparams["weight_decay"]

        def step(t: int, L: np.ndarray, G: np.ndarray, W: np.ndarray, S: np.ndarray) -> None:
            xi, fm, fv, z, plogs, xm = S[0:2], S[2:4], S[4:6], S[6:8], S[8:10], S[10:12]
            shifted = L - bcol + 1e-8
            logs = np.log(shifted)
            if t > 0:
                _famo_logits(xi, fm, fv, z, logs, plogs, xm, wd, lr, 1.0 - 0.9 ** t, 1.0 - 0.999 ** t)
            _famo_weights(W, np.exp(xm), z, shifted)
            plogs[...] = logs
        return Kernel(step, state=12)

    def _weights_k2(self, L: np.ndarray, state: FAMOState) -> Step | None:
        """:meth:`update` for K = 2 and a few problems (a small batch) in Python floats, with the same
        IEEE operations in the same order; ``log``/``exp`` stay NumPy calls (one array each) so
        they round exactly as in the vectorized code (``math.log`` may differ in the last bit,
        which Adam's normalization can blow up near convergence). Returns None (the caller runs
        the vectorized code) where anything is not finite or a shifted loss is not positive."""
        b = self.hparams["min_loss"]
        if isinstance(b, float):
            b0 = b1 = b
        elif np.ndim(b) == 1 and len(b) == 2:
            b0, b1 = (float(x) for x in b)
        else:
            return None  # the vectorized code raises the error
        sh = [(l0 - b0 + _EPS, l1 - b1 + _EPS) for l0, l1 in L.tolist()]
        if not all(0.0 < s0 < _INF and 0.0 < s1 < _INF for s0, s1 in sh):
            return None
        X = state.xi.tolist()
        if not all(isfinite(x0) and isfinite(x1) for x0, x1 in X):
            return None
        t = state.t
        if state.prev is not None:
            P = state.prev.tolist() if isinstance(state.prev, np.ndarray) else None
            if P is None or len(P) != len(sh):
                return None
            psh = [(l0 - b0 + _EPS, l1 - b1 + _EPS) for l0, l1 in P]
            if not all(0.0 < s0 < _INF and 0.0 < s1 < _INF for s0, s1 in psh):
                return None
            lg = np.log(np.array(sh + psh)).tolist()  # [2B, 2]: logs now, then logs before
            n = len(sh)
            Z = _softmax2(X)
            M, V = state.m.tolist(), state.v.tolist()
            lr, wd = self.hparams["lr"], self.hparams["weight_decay"]
            t = t + 1
            bc1, bc2 = 1.0 - 0.9 ** t, 1.0 - 0.999 ** t
            nX, nM, nV = [], [], []
            for i in range(n):
                (ln0, ln1), (lp0, lp1) = lg[i], lg[n + i]
                z0, z1 = Z[i]
                x0, x1 = X[i]
                d0, d1 = lp0 - ln0, lp1 - ln1
                zd = z0 * d0 + z1 * d1
                g0 = z0 * (d0 - zd) + wd * x0
                g1 = z1 * (d1 - zd) + wd * x1
                if not (isfinite(g0) and isfinite(g1)):  # this problem does not learn
                    nX.append(X[i])
                    nM.append(M[i])
                    nV.append(V[i])
                    continue
                (m0, m1), (v0, v1) = M[i], V[i]
                m0, m1 = 0.9 * m0 + 0.1 * g0, 0.9 * m1 + 0.1 * g1
                v0, v1 = 0.999 * v0 + 0.001 * g0 * g0, 0.999 * v1 + 0.001 * g1 * g1
                x0 = x0 - lr * (m0 / bc1) / (sqrt(v0 / bc2) + 1e-8)
                x1 = x1 - lr * (m1 / bc1) / (sqrt(v1 / bc2) + 1e-8)
                nX.append((x0, x1))
                nM.append((m0, m1))
                nV.append((v0, v1))
            X = nX
            xi, m, v = np.array((nX, nM, nV))  # three [B, 2] arrays (views of one block)
        else:
            xi, m, v = state.xi, state.m, state.v
        Z = _softmax2(X)
        W = []
        for (z0, z1), (s0, s1) in zip(Z, sh):
            r0, r1 = z0 / s0, z1 / s1
            rs = r0 + r1
            if not (0.0 < rs < _INF):
                return None
            W.append((r0 / rs, r1 / rs))
        w, z = np.array((W, Z))
        new_state = FAMOState(xi=xi, m=m, v=v, t=t, prev=L.copy())
        return Step(weights=w, state=new_state, info={"task_weights": z})


_INF = float("inf")


def _softmax2(X: list) -> list:
    """:func:`_softmax` of K = 2 rows of finite Python floats (one ``np.exp`` call, so the same bits)."""
    D = []
    for x0, x1 in X:
        mx = x0 if x0 >= x1 else x1
        D.append((x0 - mx, x1 - mx))
    out = []
    for e0, e1 in np.exp(np.array(D)).tolist():
        s = e0 + e1
        out.append((e0 / s, e1 / s))
    return out


@jit
def _famo_logits(xi: Any, fm: Any, fv: Any, z: Any, logs: Any, plogs: Any, xm: Any, wd: Any, lr: Any, bc1: Any, bc2: Any) -> Any:
    """FAMO, first half (from the second call on): the logits' Adam step from
    ``delta = plogs - logs`` (``np.log`` of the shifted losses before / now, computed by NumPy), then
    ``xm = xi - max(xi)`` for the softmax (``pcd.methods.famo.FAMO.weights``)."""
    for i in range(xi.shape[1]):
        z0, z1 = z[0, i], z[1, i]
        d0 = plogs[0, i] - logs[0, i]
        d1 = plogs[1, i] - logs[1, i]
        zd = z0 * d0 + z1 * d1
        q0 = z0 * (d0 - zd) + wd * xi[0, i]
        q1 = z1 * (d1 - zd) + wd * xi[1, i]
        if math.isfinite(q0) and math.isfinite(q1):  # only problems with finite losses learn
            m0 = 0.9 * fm[0, i] + 0.1 * q0
            m1 = 0.9 * fm[1, i] + 0.1 * q1
            v0 = 0.999 * fv[0, i] + 0.001 * q0 * q0
            v1 = 0.999 * fv[1, i] + 0.001 * q1 * q1
            fm[0, i], fm[1, i], fv[0, i], fv[1, i] = m0, m1, v0, v1
            xi[0, i] = xi[0, i] - lr * (m0 / bc1) / (math.sqrt(v0 / bc2) + 1e-8)
            xi[1, i] = xi[1, i] - lr * (m1 / bc1) / (math.sqrt(v1 / bc2) + 1e-8)
        mx = np.maximum(xi[0, i], xi[1, i])
        xm[0, i] = xi[0, i] - mx
        xm[1, i] = xi[1, i] - mx


@jit
def _famo_weights(W: Any, ex: Any, z: Any, shifted: Any) -> Any:
    """FAMO, second half: ``z = softmax(xi)`` from ``ex = np.exp(xm)`` (kept for the next call),
    weights ``z_i / l~_i`` normalized."""
    for i in range(W.shape[1]):
        se = ex[0, i] + ex[1, i]
        z0, z1 = ex[0, i] / se, ex[1, i] / se
        z[0, i], z[1, i] = z0, z1
        r0, r1 = z0 / shifted[0, i], z1 / shifted[1, i]
        rs = r0 + r1
        W[0, i], W[1, i] = r0 / rs, r1 / rs
