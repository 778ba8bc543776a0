"""Compiled (numba) kernels of the engine's end-point fast path: K = 2 objectives on R^2.

One kernel per method advances every active trajectory by one step in one pass over the rows:
Gram entries from ``J``, the method's weights (its state updated in place), the direction
``d = w @ J``, and the optimizer step (Adam / SGD). Arrays are component-major (``x [2, B]``,
``J [2, 2, B]``, states ``[2, B]``) and the per-row code has no data-dependent exits, so LLVM
vectorizes the loops; positions are double-buffered (read ``xi``, write ``xo``: the previous point
stays available for rows that diverge at the next step). Each kernel performs, row by row, the
*same IEEE operations in the same order* as the NumPy code it replaces (``pcd.engine.gram22``,
``pcd.methods.base.combine``, :class:`pcd.engine.Adam` / :class:`~pcd.engine.SGD`, the methods' batched
K = 2 paths in ``pcd.methods`` / ``pcd.direction``), without fused multiply-adds (numba's default,
no ``fastmath``) and with NumPy's error model (a division by zero gives inf/NaN, as in NumPy).
So the fast path's trajectories are bit-identical to :func:`pcd.engine.run`'s (tested in
``tests/test_fastpath.py``). Transcendentals that NumPy evaluates with its own SIMD routines
(FAMO's ``log``/``exp``) stay NumPy calls between two kernels, for the same reason.

Rows whose position, losses or Jacobian is not finite are flagged by :func:`check_rows` (or the
problem kernel) *before* the method kernel runs, and the caller retires them from the active batch
(the engine's divergence rule: such a row is frozen, its last finite point kept).

Each method kernel (``weights_*``) writes the weights ``W [2, B]`` and directions ``D [2, B]`` of
every row; one optimizer kernel (:func:`adam_step` / :func:`sgd_step`) then moves every row.

``numba`` is optional: :data:`AVAILABLE` is False without it and the engine keeps its NumPy loop.
Compiled code is cached on disk (``cache=True``), so only the very first call on a machine pays
the compile time (measured by ``benchmarks/bench_basin.py``).
"""
from __future__ import annotations

import importlib
import math
from typing import Any

import numpy as np

try:  # pragma: no cover - exercised through AVAILABLE
    _numba: Any = importlib.import_module("numba")
    AVAILABLE = True
except ImportError:  # pragma: no cover
    _numba = None
    AVAILABLE = False

__all__ = ["AVAILABLE", "jit"]


def jit(fn=None, *, inline: bool = False):
    """``numba.njit`` with the settings every kernel needs (or the plain function without numba);
    ``inline=True`` for the per-row helpers (inlined into each kernel by numba itself)."""
    if fn is None:
        return lambda f: jit(f, inline=inline)
    if _numba is None:
        return fn
    kw = {"inline": "always"} if inline else {}
    return _numba.njit(cache=True, error_model="numpy", nogil=True, **kw)(fn)


# -- NumPy's semantics for the few non-arithmetic operations (NaN propagates like np.maximum) --------
@jit(inline=True)
def _npmax(a, b):
    if a != a:
        return a
    if b != b:
        return b
    return a if a >= b else b


@jit(inline=True)
def _npmin(a, b):
    if a != a:
        return a
    if b != b:
        return b
    return a if a <= b else b


# -- optimizer + direction + store: one row -----------------------------------------------------------
# o (Adam): [-(lr / bc1), 1 - beta1, beta2, 1 - beta2, sqrt(1 - beta2^t), eps, weight_decay]
# o (SGD):  [-lr, momentum, 1 - dampening, nesterov (0/1), weight_decay, first step (0/1), 0]
@jit(inline=True)
def _adam(o0, o1, o2, o3, o4, o5, o6, x0, x1, a0, a1, b0, b1, d0, d1):
    """:class:`pcd.engine.Adam` on one row (a = m, b = v): returns ``(x0, x1, a0, a1, b0, b1)``."""
    if o6 != 0.0:
        d0 = d0 + o6 * x0
        d1 = d1 + o6 * x1
    a0 = a0 + o1 * (d0 - a0)
    a1 = a1 + o1 * (d1 - a1)
    b0 = b0 * o2 + o3 * (d0 * d0)
    b1 = b1 * o2 + o3 * (d1 * d1)
    return x0 + o0 * (a0 / (math.sqrt(b0) / o4 + o5)), x1 + o0 * (a1 / (math.sqrt(b1) / o4 + o5)), a0, a1, b0, b1


@jit(inline=True)
def _sgd(o0, o1, o2, o3, o4, o5, x0, x1, a0, a1, d0, d1):
    """:class:`pcd.engine.SGD` on one row (a = momentum buffer): returns ``(x0, x1, a0, a1)``."""
    if o4 != 0.0:
        d0 = d0 + o4 * x0
        d1 = d1 + o4 * x1
    if o1 != 0.0:
        if o5 != 0.0:
            a0, a1 = d0, d1
        else:
            a0 = a0 * o1 + o2 * d0
            a1 = a1 * o1 + o2 * d1
        if o3 != 0.0:
            d0 = d0 + o1 * a0
            d1 = d1 + o1 * a1
        else:
            d0, d1 = a0, a1
    return x0 + o0 * d0, x1 + o0 * d1, a0, a1


@jit
def adam_step(xi, xo, D, m, v, o):
    """``xo = Adam(xi, D)`` for every row (``m``, ``v`` updated in place); ``o`` as above."""
    o0, o1, o2, o3, o4, o5, o6 = o[0], o[1], o[2], o[3], o[4], o[5], o[6]
    for i in range(xi.shape[1]):
        xo[0, i], xo[1, i], m[0, i], m[1, i], v[0, i], v[1, i] = _adam(
            o0, o1, o2, o3, o4, o5, o6, xi[0, i], xi[1, i], m[0, i], m[1, i], v[0, i], v[1, i], D[0, i], D[1, i])


@jit
def sgd_step(xi, xo, D, buf, o):
    """``xo = SGD(xi, D)`` for every row (momentum ``buf`` updated in place); ``o`` as above."""
    o0, o1, o2, o3, o4, o5 = o[0], o[1], o[2], o[3], o[4], o[5]
    for i in range(xi.shape[1]):
        xo[0, i], xo[1, i], buf[0, i], buf[1, i] = _sgd(o0, o1, o2, o3, o4, o5, xi[0, i], xi[1, i],
                                                        buf[0, i], buf[1, i], D[0, i], D[1, i])


@jit(inline=True)
def _gram(j00, j01, j10, j11):
    """``(G00, G01, G11)`` of ``pcd.engine.gram22``."""
    return j00 * j00 + j01 * j01, j00 * j10 + j01 * j11, j10 * j10 + j11 * j11


# -- method kernels ---------------------------------------------------------------------------------------
@jit
def weights_ws(J, W, D, w0, w1):
    """Weighted sum: fixed weights ``(w0, w1)``."""
    for i in range(J.shape[2]):
        j00, j01, j10, j11 = J[0, 0, i], J[0, 1, i], J[1, 0, i], J[1, 1, i]
        W[0, i], W[1, i] = w0, w1
        D[0, i], D[1, i] = w0 * j00 + w1 * j10, w0 * j01 + w1 * j11


@jit
def weights_pcd(J, W, D, ema, MU, beta, omb, bc, eps, tau, eps10, zero_rel):
    """PCD, K = 2: ``EMANormalizer.update`` + ``direction.pcd_weights`` for K = 2; ``MU [B]`` gets mu."""
    for i in range(J.shape[2]):
        j00, j01, j10, j11 = J[0, 0, i], J[0, 1, i], J[1, 0, i], J[1, 1, i]
        g00, g01, g11 = _gram(j00, j01, j10, j11)
        v0 = beta * ema[0, i] + omb * g00
        v1 = beta * ema[1, i] + omb * g11
        ema[0, i], ema[1, i] = v0, v1
        den0 = v0 / bc + eps
        den1 = v1 / bc + eps
        sc1 = 1.0 / math.sqrt(den0) if den0 > 0 else 0.0
        sc2 = 1.0 / math.sqrt(den1) if den1 > 0 else 0.0
        a = g00 * sc1 * sc1
        c = g01 * sc1 * sc2
        e = g11 * sc2 * sc2
        mu = _npmax((tau * e - c) / e, 0.0) if e > zero_rel * _npmax(a, e) else 0.0
        dn2 = a + 2.0 * mu * c + mu * mu * e
        sz = math.sqrt(_npmax(a, 0.0)) + mu * math.sqrt(_npmax(e, 0.0))
        g1 = math.sqrt(_npmax(g00, 0.0))
        f = g1 / math.sqrt(dn2) if (dn2 > eps10 * (sz * sz) and g1 > 0) else 0.0
        MU[i] = mu
        w0, w1 = 1.0 * sc1 * f, mu * sc2 * f
        W[0, i], W[1, i] = w0, w1
        D[0, i], D[1, i] = w0 * j00 + w1 * j10, w0 * j01 + w1 * j11


@jit
def weights_mgda(J, W, D):
    """MGDA, K = 2 closed form (``_solvers.simplex_min_norm``)."""
    for i in range(J.shape[2]):
        j00, j01, j10, j11 = J[0, 0, i], J[0, 1, i], J[1, 0, i], J[1, 1, i]
        a, b, c = _gram(j00, j01, j10, j11)
        den = a + c - 2.0 * b
        t = _npmin(_npmax((c - b) / den if den > 0 else 0.5, 0.0), 1.0)
        w0, w1 = t, 1.0 - t
        W[0, i], W[1, i] = w0, w1
        D[0, i], D[1, i] = w0 * j00 + w1 * j10, w0 * j01 + w1 * j11


@jit
def weights_pcgrad(J, W, D):
    """PCGrad, K = 2 closed form (``pcgrad.pcgrad_weights``; the order does not matter for K = 2)."""
    for i in range(J.shape[2]):
        j00, j01, j10, j11 = J[0, 0, i], J[0, 1, i], J[1, 0, i], J[1, 1, i]
        a, b, c = _gram(j00, j01, j10, j11)
        w1 = 1.0 + ((-b) / c if (b < 0.0 and c > 0.0) else 0.0)
        w0 = 1.0 + ((-b) / a if (b < 0.0 and a > 0.0) else 0.0)
        W[0, i], W[1, i] = w0, w1
        D[0, i], D[1, i] = w0 * j00 + w1 * j10, w0 * j01 + w1 * j11


@jit
def weights_cagrad(J, W, D, half_c, norm_eps, ridge_mul):
    """CAGrad, K = 2 (``cagrad._cagrad_k2``: the same formulas in the same order)."""
    for i in range(J.shape[2]):
        j00, j01, j10, j11 = J[0, 0, i], J[0, 1, i], J[1, 0, i], J[1, 1, i]
        g11, g12, g22 = _gram(j00, j01, j10, j11)
        tr = g11 + g22
        keep = tr >= norm_eps
        inv = (1.0 if keep else 0.0) / (tr if tr > 0 else 1.0)
        a, q, e = g11 * inv, g12 * inv, g22 * inv
        b1, b2 = 0.5 * (a + q), 0.5 * (q + e)
        phi = half_c * math.sqrt(_npmax(a + 2.0 * q + e, 0.0))
        z = 0.0 if keep else 1.0
        ar = a * ridge_mul + 1e-30 + z
        er = e * ridge_mul + 1e-30 + z
        f1 = b1 + phi * math.sqrt(ar)
        f2 = b2 + phi * math.sqrt(er)
        det = ar * er - q * q
        x1, x2 = (er - q) / det, (ar - q) / det
        y1, y2 = (er * b1 - q * b2) / det, (ar * b2 - q * b1) / det
        ox, oy = x1 + x2, y1 + y2
        disc = oy * oy - ox * (b1 * y1 + b2 * y2 - phi * phi)
        sd = math.sqrt(_npmax(disc, 1e-300))
        w1 = ((oy + sd) / ox * x1 - y1) / sd
        ok = (disc > 0) and (det > 0) and (w1 >= -1e-10) and (w1 <= 1.0 + 1e-10)
        f3 = b1 * w1 + b2 * (1.0 - w1) + phi * phi / sd if ok else math.inf
        t = 1.0 if (f1 <= f2 and f1 <= f3) else (0.0 if f2 <= f3 else _npmin(_npmax(w1, 0.0), 1.0))
        if phi <= 1e-15:
            t = 0.5 if abs(b1 - b2) <= 1e-12 * _npmax(abs(b1), abs(b2)) else (1.0 if b1 < b2 else 0.0)
        u = 1.0 - t
        gw = math.sqrt(_npmax(t * t * a + 2.0 * t * u * q + u * u * e, 0.0))
        big = gw >= norm_eps
        coef = phi / (gw if big else 1.0)
        bigf = 1.0 if big else 0.0
        w0, w1 = bigf * (0.5 + coef * t), bigf * (0.5 + coef * u)
        W[0, i], W[1, i] = w0, w1
        D[0, i], D[1, i] = w0 * j00 + w1 * j10, w0 * j01 + w1 * j11


@jit
def famo_logits(xi, fm, fv, z, logs, plogs, xm, wd, lr, bc1, bc2):
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
        mx = _npmax(xi[0, i], xi[1, i])
        xm[0, i] = xi[0, i] - mx
        xm[1, i] = xi[1, i] - mx


@jit
def weights_famo(J, W, D, ex, z, shifted):
    """FAMO, second half: ``z = softmax(xi)`` from ``ex = np.exp(xm)`` (kept for the next call),
    weights ``z_i / l~_i`` normalized."""
    for i in range(J.shape[2]):
        se = ex[0, i] + ex[1, i]
        z0, z1 = ex[0, i] / se, ex[1, i] / se
        z[0, i], z[1, i] = z0, z1
        r0, r1 = z0 / shifted[0, i], z1 / shifted[1, i]
        rs = r0 + r1
        w0, w1 = r0 / rs, r1 / rs
        j00, j01, j10, j11 = J[0, 0, i], J[0, 1, i], J[1, 0, i], J[1, 1, i]
        W[0, i], W[1, i] = w0, w1
        D[0, i], D[1, i] = w0 * j00 + w1 * j10, w0 * j01 + w1 * j11


@jit
def check_rows(x, L, J, bad):
    """``bad[i]`` = a non-finite position / loss / Jacobian entry in row i; returns how many."""
    nd = 0
    for i in range(x.shape[1]):
        ok = (math.isfinite(x[0, i]) and math.isfinite(x[1, i]) and math.isfinite(L[0, i])
              and math.isfinite(L[1, i]) and math.isfinite(J[0, 0, i]) and math.isfinite(J[0, 1, i])
              and math.isfinite(J[1, 0, i]) and math.isfinite(J[1, 1, i]))
        bad[i] = not ok
        nd += 0 if ok else 1
    return nd


# -- problems -----------------------------------------------------------------------------------------
@jit
def saddle2d_eval(x, L, J, bad, cx, cy, hw):
    """:class:`pcd.problems.saddle2d.Saddle2D` ``losses_and_jacobian`` into ``L [2, B]``, ``J [2, 2, B]``
    (the same operations), and the finite check of :func:`check_rows` in the same pass."""
    nd = 0
    for i in range(x.shape[1]):
        t1, t2 = x[0, i], x[1, i]
        sq = t1 * t1 - 4.0
        l0 = 0.25 * sq * sq + 0.5 * t2 * t2
        j00 = t1 * sq
        dx, dy = t1 - cx, t2 - cy
        ox, oy = abs(dx) - hw, abs(dy) - hw
        l1 = _npmax(ox, 0.0) + _npmax(oy, 0.0)
        j10 = np.sign(dx) * (1.0 if ox > 0 else 0.0)
        j11 = np.sign(dy) * (1.0 if oy > 0 else 0.0)
        L[0, i], L[1, i] = l0, l1
        J[0, 0, i], J[0, 1, i], J[1, 0, i], J[1, 1, i] = j00, t2, j10, j11
        ok = (math.isfinite(t1) and math.isfinite(t2) and math.isfinite(l0) and math.isfinite(l1)
              and math.isfinite(j00) and math.isfinite(j10) and math.isfinite(j11))
        bad[i] = not ok
        nd += 0 if ok else 1
    return nd
