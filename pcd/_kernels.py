"""numba, optional: the tools that compile a method's own formula, and the engine's shared kernels.

A method's math is written ONCE, in its module, as a plain function of NumPy operations marked
:func:`formula` (``np.sqrt``, ``np.maximum``, :func:`where`, arithmetic; e.g.
:func:`pcd.methods.cagrad.cagrad_k2`, :func:`pcd.methods.pcd.pcd_k2`). Called from Python it runs on
whole arrays (the vectorized path); numba compiles the same function for one row, inlined into a
:func:`jit` loop of the method's module (the small-batch path, :func:`k2_batch`, and the engine's
end-point fast path, :mod:`pcd._fastpath`, which asks each method for its compiled step through
:meth:`pcd.methods.base.Method.kernel`). The compiled code performs the *same IEEE operations in
the same order* -- no fused multiply-adds (numba's default, no ``fastmath``), NumPy's error model (a
division by zero gives inf/NaN) -- so every path gives the same bits (tested:
``tests/methods/test_scalar_paths_*.py``, ``tests/test_direction.py``, ``tests/test_fastpath.py``).
Transcendentals that NumPy evaluates with its own SIMD routines (FAMO's ``log``/``exp``) stay
NumPy calls between two kernels, for the same reason.

The engine's own kernels live here: the Gram entries (:func:`gram_rows`), ``d = w @ J``
(:func:`combine_rows`), Adam / SGD (:func:`adam_step`, :func:`sgd_step`), the finite check
(:func:`check_rows`) and the ``saddle2d`` problem. Arrays are component-major (``x [2, B]``,
``J [2, 2, B]``), the per-row code has no data-dependent exits, so LLVM vectorizes the loops;
positions are double-buffered (read ``xi``, write ``xo``: the previous point stays available for
rows that diverge at the next step). Rows whose position, losses or Jacobian is not finite are
flagged *before* the method's step runs, and the caller retires them from the active batch (the
engine's divergence rule: such a row is frozen, its last finite point kept).

``numba`` is optional: :data:`AVAILABLE` is False without it, :func:`jit` and :func:`formula` return
the plain function, and every method runs its NumPy path. Compiled code is cached on disk
(``cache=True``), so only the very first call on a machine pays the compile time (measured by
``benchmarks/bench_basin.py``).

numba is imported lazily (``import numba`` costs ~0.4 s, and ``import pcd.qp`` or a page that never
runs a compiled path should not pay it): :data:`AVAILABLE` only asks whether numba is installed;
:func:`jit` returns a stand-in that compiles on its first call, and :func:`formula` queues its
overload. The first call of any compiled function imports numba and makes every pending one real at
once (:func:`_materialize`): the overloads are registered, each stand-in becomes its numba
dispatcher, and the module globals that named a stand-in are pointed at the dispatcher (numba reads
a compiled function's callees from its globals). From then on :func:`jit` and :func:`formula` act at
once, as before. Should numba be installed but fail to import, the functions stay plain Python (the
same results, slowly) and :data:`AVAILABLE` turns False for whoever reads it later.
"""
from __future__ import annotations

import functools
import importlib
import importlib.util
import inspect
import math
import sys
import threading
from typing import Any

import numpy as np

from pcd._fast import small_batch

# numba installed? (not imported: see the module docstring)
AVAILABLE = importlib.util.find_spec("numba") is not None
_numba: Any = None          # the numba module once imported (:func:`_materialize`)
_state = {"done": False}    # _materialize has run
_lock = threading.RLock()
_pending_jits: list[Any] = []       # stand-ins made before numba was imported
_pending_formulas: list[Any] = []   # formulas whose overload is not registered yet


class _LazyJit:
    """What :func:`jit` returns before numba is imported: calls (and attribute reads) make every
    pending compiled function real (:func:`_materialize`), then go to this one's dispatcher."""

    def __init__(self, fn: Any, inline: bool, sig: Any = None) -> None:
        functools.update_wrapper(self, fn)
        self.fn, self.inline, self.sig = fn, inline, sig
        self.real: Any = None

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        real = self.real if self.real is not None else _materialize(self)
        return real(*args, **kwargs)

    def __getattr__(self, name: str) -> Any:  # py_func, signatures, ... of the dispatcher
        if name in ("fn", "inline", "sig", "real") or name.startswith("__"):
            raise AttributeError(name)
        return getattr(self.real if self.real is not None else _materialize(self), name)


def _njit(fn: Any, inline: bool, sig: Any = None) -> Any:
    kw = {"inline": "always"} if inline else {}
    if sig is not None:  # an explicit signature (its types made now that numba is imported): compiled at once
        return _numba.njit(sig(_numba.types), cache=True, error_model="numpy", nogil=True, **kw)(fn)
    return _numba.njit(cache=True, error_model="numpy", nogil=True, **kw)(fn)


def _register_formula(fn: Any) -> None:
    def typer(*args: Any) -> Any:
        return fn
    typer.__signature__ = inspect.signature(fn)  # type: ignore[attr-defined]
    _numba.extending.overload(fn, jit_options={"error_model": "numpy"})(typer)


def _materialize(target: Any = None) -> Any:
    """Import numba (once), register the pending overloads (:func:`where`'s scalar form, every
    :func:`formula`), turn every pending :class:`_LazyJit` into its dispatcher and repoint the
    ``pcd`` modules' globals that named a stand-in. Returns ``target``'s real function (the plain
    function when numba cannot be imported)."""
    global _numba, AVAILABLE
    with _lock:
        if not _state["done"]:
            try:
                _numba = importlib.import_module("numba") if AVAILABLE else None
            except ImportError:  # pragma: no cover - a broken install: stay on plain Python
                _numba = None
            if _numba is None:
                AVAILABLE = False
            else:
                _register_where()
                for fn in _pending_formulas:
                    _register_formula(fn)
            # (a function with an explicit signature compiles when first used: :func:`compiled`)
            real = {id(lz): (lz, _njit(lz.fn, lz.inline) if _numba is not None else lz.fn)
                    for lz in _pending_jits if lz.sig is None}
            for lz, fn in real.values():
                lz.real = fn
            # numba resolves a kernel's callees from its globals: those of each stand-in's own module
            # and of every pcd module (which may have imported one by name)
            spaces = {id(lz.fn.__globals__): lz.fn.__globals__ for lz, _ in real.values()}
            for name, mod in list(sys.modules.items()):
                if mod is not None and (name == "pcd" or name.startswith("pcd.")):
                    spaces.setdefault(id(vars(mod)), vars(mod))
            for space in spaces.values():
                for key, val in list(space.items()):
                    if isinstance(val, _LazyJit) and id(val) in real:
                        space[key] = real[id(val)][1]
            _pending_jits.clear()
            _pending_formulas.clear()
            _state["done"] = True
        if target is not None and target.real is None:  # one with an explicit signature, on its first use
            target.real = _njit(target.fn, target.inline, target.sig) if _numba is not None else target.fn
    return None if target is None else target.real


def compiled(fn: Any) -> Any:
    """The real function behind a :func:`jit` stand-in (compiled now if it was not yet), or ``fn``."""
    if isinstance(fn, _LazyJit):
        return fn.real if fn.real is not None else _materialize(fn)
    return fn


__all__ = ["AVAILABLE", "jit", "compiled", "formula", "where", "k2_batch", "NO_PARAMS", "STEP_SIG", "gram_rows",
           "combine_rows", "trajectory"]


def jit(fn=None, *, inline: bool = False, sig: Any = None):
    """``numba.njit`` with the settings every kernel needs (or the plain function without numba);
    ``inline=True`` for the per-row helpers (inlined into each kernel by numba itself). ``sig``: a
    function of ``numba.types`` that returns an explicit signature (e.g. :data:`STEP_SIG`), for a
    function passed to another as a first-class function (:func:`trajectory`: one compiled, cached
    loop for every method). Before numba is imported, a stand-in that compiles on its first call
    (see the module docstring)."""
    if fn is None:
        return lambda f: jit(f, inline=inline, sig=sig)
    with _lock:
        if not _state["done"]:
            if not AVAILABLE:
                return fn
            lazy = _LazyJit(fn, inline, sig)
            _pending_jits.append(lazy)
            return lazy
    if _numba is None:
        return fn
    return _LazyJit(fn, inline, sig) if sig is not None else _njit(fn, inline)


def where(cond, x, y):
    """``np.where(cond, x, y)``: what a method's formula calls to choose between two values, so that
    the one function serves NumPy arrays (a batch at once) and, compiled, one row at a time (numba
    then uses the scalar ``x if cond else y`` registered in :func:`_register_where`). Both values
    are computed, as in NumPy: a formula guards its divisors (``a / where(ok, b, 1.0)``), never
    relies on a branch."""
    return np.where(cond, x, y)


def _register_where() -> None:
    @_numba.extending.overload(where)
    def _where_scalar(cond, x, y):  # pragma: no cover - compiled
        def impl(cond, x, y):
            if cond:
                return x
            return y
        return impl


def formula(fn):
    """Marks a method's formula, written once on NumPy's operations (``np.sqrt``, ``np.maximum``,
    :func:`where`, arithmetic): called from Python it runs on whole arrays (the vectorized path). A
    row loop compiles it with ``jit(fn, inline=True)`` (inlined into the loop, so LLVM vectorizes
    it); a formula may call other formulas (e.g. PCD's ``pcd_k2`` calls ``k2_mu``), which numba then
    compiles for one row through the overload registered for it (NumPy's error model: a division by
    zero gives inf/NaN there too; registered when numba is imported, :func:`_materialize`). Without
    numba it is just the function."""
    with _lock:
        if not _state["done"]:
            if AVAILABLE:
                _pending_formulas.append(fn)
            return fn
    if _numba is not None:
        _register_formula(fn)
    return fn


def k2_batch(G: np.ndarray, formula: Any, rows: Any, p: np.ndarray) -> np.ndarray:
    """The weights ``[B, 2]`` of a method's K = 2 formula ``formula(a, b, c, p) -> (w0, w1)`` for Gram
    matrices ``G [B, 2, 2]`` (``a, b, c = G00, G01, G11``; ``p`` its float parameters). A small batch
    (:func:`pcd._fast.small_batch`) runs the formula compiled, row by row (``rows(a, b, c, p, W)``,
    the method's loop over ``jit(formula)``) when numba is present; otherwise the formula runs on the
    batch's arrays. One function, the same IEEE operations either way: the same bits (tested)."""
    a, b, c = G[:, 0, 0], G[:, 0, 1], G[:, 1, 1]
    if AVAILABLE and small_batch(G.shape[0]):
        W = np.empty((G.shape[0], 2))
        rows(a, b, c, p, W.T)
        return W
    w0, w1 = formula(a, b, c, p)
    W = np.empty((G.shape[0], 2))
    W[:, 0], W[:, 1] = w0, w1
    return W


NO_PARAMS = np.zeros(0)  # ``p`` of a K = 2 formula without parameters


# -- NumPy's semantics for the few non-arithmetic operations (NaN propagates like np.maximum) --------
@jit(inline=True)
def _npmax(a, b):
    if a != a:
        return a
    if b != b:
        return b
    return a if a >= b else b


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


# -- the two passes every method's step shares --------------------------------------------------------
@jit
def gram_rows(J, G):
    """``G [3, B] = (G00, G01, G11)`` of every row's ``J [2, 2, B]`` (``pcd.engine.gram22``'s operations)."""
    for i in range(J.shape[2]):
        G[0, i], G[1, i], G[2, i] = _gram(J[0, 0, i], J[0, 1, i], J[1, 0, i], J[1, 1, i])


@jit
def combine_rows(J, W, D):
    """``D [2, B] = w @ J`` row by row, ``d_j = w_0 J_0j + w_1 J_1j`` (:func:`pcd.methods.base.combine`)."""
    for i in range(J.shape[2]):
        w0, w1 = W[0, i], W[1, i]
        D[0, i], D[1, i] = w0 * J[0, 0, i] + w1 * J[1, 0, i], w0 * J[0, 1, i] + w1 * J[1, 1, i]


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


# -- a whole trajectory batch in one call (the engine's fast path on a compiled problem) -----------------
def STEP_SIG(t: Any) -> Any:
    """The signature of a method's compiled step for :func:`trajectory` (``t``: ``numba.types``):
    ``step(t, L [2, B], G [3, B], W [2, B], S [state, B], p [n])`` -- :class:`pcd.methods.base.Kernel`'s
    ``step`` with the step's parameters ``p`` (a row of the kernel's ``params`` table) -- writing the
    weights of step ``t`` into ``W`` and updating ``S`` in place."""
    c2 = t.float64[:, ::1]  # C-contiguous (the fast path's arrays): the row loops vectorize as they do called from Python
    return t.void(t.int64, c2, c2, c2, c2, t.float64[::1])


def _trajectory_sig(t: Any) -> Any:
    c2, c3 = t.float64[:, ::1], t.float64[:, :, ::1]
    return t.int64(t.FunctionType(STEP_SIG(t)), t.int64, t.int64, t.int64, c2, c2,  # step t steps okind ops P
                   c2, c2, c2, c3, c2, c3, c2,  # x xo xprev J L Jp Lp
                   c2, c2, c2, c2, c2, c2, t.boolean[::1],  # G W D S s1 s2 bad
                   t.float64, t.float64, t.float64, t.int64, c2, t.int64[::1], c3, c3, t.int64[::1])


@jit(sig=_trajectory_sig)
def trajectory(step, t, steps, okind, ops, P, x, xo, xprev, J, L, Jp, Lp, G, W, D, S, s1, s2, bad,
               cx, cy, hw, wstep, xw, slot, pos, los, rows):  # pragma: no cover - compiled
    """Steps ``t .. steps`` of one method's rows on ``saddle2d`` (:func:`saddle2d_eval`; ``cx, cy, hw`` its
    box), each exactly what :func:`pcd._fastpath._run_method`'s Python loop does in one step -- the same
    kernels in the same order, so the same bits: evaluate, record (``slot[t] >= 0``: ``pos``/``los``
    rows ``rows``), :func:`gram_rows`, the method's ``step`` (its parameters ``P[t]``, or ``P[0]`` for a
    one-row table), :func:`combine_rows`, Adam (``okind`` 0) or SGD (1) with ``ops[t]``. Positions are
    kept in ``x`` (``xo``: the optimizer's output), the previous point in ``xprev``, the previous
    losses and Jacobian in ``Lp``/``Jp``; ``xw`` receives the point at step ``wstep``. Returns the step
    to go on from: ``steps + 1`` when done, or the first step at which a row is not finite (nothing of
    that step done: the caller retires the row, :func:`saddle2d_eval` set ``bad``)."""
    while t <= steps:
        if t == wstep:
            xw[:, :] = x
        if saddle2d_eval(x, L, J, bad, cx, cy, hw):
            return t
        r = slot[t]
        if r >= 0:
            for i in range(x.shape[1]):
                k = rows[i]
                pos[k, r, 0], pos[k, r, 1] = x[0, i], x[1, i]
                if los.shape[0]:
                    los[k, r, 0], los[k, r, 1] = L[0, i], L[1, i]
        gram_rows(J, G)
        step(t, L, G, W, S, P[t] if P.shape[0] > 1 else P[0])
        combine_rows(J, W, D)
        if t < steps:
            if okind == 0:
                adam_step(x, xo, D, s1, s2, ops[t])
            else:
                sgd_step(x, xo, D, s1, ops[t])
            xprev[:, :] = x
            x[:, :] = xo
        Lp[:, :] = L
        Jp[:, :, :] = J
        t += 1
    return t
