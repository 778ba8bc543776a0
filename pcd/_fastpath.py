"""The engine's end-point fast path: ``pcd.engine.run(..., record=[steps])`` for K = 2 on R^2.

When only the end points are asked for (basin maps, ``toy``-style summaries), every method that
has a compiled K = 2 step (:meth:`pcd.methods.base.Method.kernel`: PCD, WS, MGDA-exact, PCGrad,
CAGrad, FAMO, each from its own module) runs its whole trajectory batch here: per step, compiled
passes over every active row do the Gram entries (:func:`pcd._kernels.gram_rows`), the method's
weights (its own formula), the direction (:func:`pcd._kernels.combine_rows`) and the Adam/SGD step,
in place, with no per-step recording. Rows that diverge are retired from the active
batch (their last finite point is kept, as in the NumPy loop). The problem is evaluated by a
compiled kernel where one exists (``saddle2d``), else by its own NumPy ``losses_and_jacobian``.

The result is bit-identical to the NumPy loop of :func:`pcd.engine.run` (the kernels perform the
same IEEE operations in the same order; ``tests/test_fastpath.py``). :func:`run_ends` returns None
-- and the engine runs its NumPy loop -- when numba is missing or any method/optimizer/problem is
not covered.
"""
from __future__ import annotations

import math
import os
import time
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import numpy as np

from pcd import _kernels as kern

__all__ = ["run_ends", "supported"]

#: Methods run side by side in threads only from this many rows (starts) per method. Each step is a
#: few compiled calls under a Python loop that holds the GIL; with small batches two threads spend
#: their time handing the GIL over (a thread back from a kernel waits up to the 5 ms switch
#: interval), so the pool was slower at every batch up to ~4,000 rows. Measured on this 2-core
#: machine, saddle2d, the toy page's 6 methods x 1000 steps, median of 5: 1 start 184 ms in the pool
#: against 54 ms one after the other; 256: 298 / 141; 1,024: 418 / 286; 4,096: 780 / 853;
#: 16,384: 2,796 / 3,972 (``benchmarks/bench_drag.py`` measures the drag's share).
POOL_MIN_ROWS = 4096
#: Up to this many rows (starts) per method the whole trajectory runs in one compiled call
#: (:func:`pcd._kernels.trajectory`); a step of the Python loop costs ~10 us of interpreter, which only
#: small batches notice, and the compiled loop copies the previous point, losses and Jacobian at every
#: step, which large ones do. Measured on this 2-core machine, saddle2d, 1000 steps: the toy page's 6
#: methods from 1 start 67-76 -> 26-28 ms (FAMO's ~19 ms stays a Python loop); 100 x 100 starts (the
#: basin maps): PCD 0.17 s on the Python loop, 0.19 s compiled.
TRAJECTORY_MAX_ROWS = 1024


def _kernels_of(meths: list[tuple[str, Any]]) -> list[Any] | None:
    """Each method's compiled K = 2 step (:meth:`pcd.methods.base.Method.kernel`), or None when one of
    them has none."""
    out = []
    for _, inst in meths:
        try:
            k = inst.kernel()
        except (ValueError, KeyError, TypeError):  # the NumPy loop reports the method's error
            return None
        if k is None:
            return None
        out.append(k)
    return out


def _optimizer(opt: Any) -> tuple[int, dict] | None:
    from pcd.optim import SGD, Adam

    if type(opt) is Adam and opt.t == 0:
        return 0, {"lr": opt.lr, "b1": opt.b1, "b2": opt.b2, "eps": opt.eps, "wd": opt.wd}
    if type(opt) is SGD and opt.buf is None:
        return 1, {"lr": opt.lr, "momentum": opt.momentum, "damp": opt.dampening, "nesterov": opt.nesterov,
                   "wd": opt.wd}
    return None


def supported(prob: Any, meths: list[tuple[str, Any]], opt: Any) -> bool:
    """True when :func:`run_ends` would take the fast path."""
    return (kern.AVAILABLE and prob.K == 2 and prob.dim == 2 and _kernels_of(meths) is not None
            and _optimizer(opt) is not None)


def _saddle(prob: Any) -> tuple[float, float, float] | None:
    """``(cx, cy, hw)`` of a :class:`pcd.problems.saddle2d.Saddle2D` (:func:`pcd._kernels.saddle2d_eval`'s
    box), None for any other problem."""
    from pcd.problems.saddle2d import Saddle2D

    if type(prob) is not Saddle2D:
        return None
    cx, cy = (float(v) for v in prob.CENTER)
    return cx, cy, float(prob.HALF_WIDTH)


def _evaluator(prob: Any):
    """``f(x [2, B], bad [B]) -> (L [2, B], J [2, 2, B], n_bad)``: the compiled saddle2d kernel, or
    the problem's own NumPy ``losses_and_jacobian`` (rearranged component-major) + a finite check."""
    box = _saddle(prob)
    if box is not None:
        cx, cy, hw = box

        def saddle(x: np.ndarray, bad: np.ndarray) -> tuple[np.ndarray, np.ndarray, int]:
            B = x.shape[1]
            L, J = np.empty((2, B)), np.empty((2, 2, B))
            return L, J, kern.saddle2d_eval(x, L, J, bad, cx, cy, hw)
        return saddle

    def numpy(x: np.ndarray, bad: np.ndarray) -> tuple[np.ndarray, np.ndarray, int]:
        L, J = prob.losses_and_jacobian(x.T)
        L, J = np.ascontiguousarray(np.asarray(L, dtype=np.float64).T), \
            np.ascontiguousarray(np.asarray(J, dtype=np.float64).transpose(1, 2, 0))
        return L, J, kern.check_rows(x, L, J, bad)
    return numpy


def run_ends(prob: Any, meths: list[tuple[str, Any]], x0: np.ndarray, steps: int, opt: Any,
             progress: Any = None, record: np.ndarray | None = None) -> dict | None:
    """End state of every (method, start) trajectory, as full ``[M*S, ...]`` arrays for
    :func:`pcd.engine._finish`; None when the fast path does not cover this run. Methods run in a
    thread pool (one per core) when the batch has at least :data:`POOL_MIN_ROWS` starts, else one after
    the other; ``progress(fraction, method)`` is called as each one finishes.
    ``record`` (sorted step indices): also ``"positions" [M*S, T, 2]``, the point at each of those
    steps as the NumPy loop records it (NaN after a row diverged; its point at that step kept), and
    ``"losses" [M*S, T, 2]``, the losses evaluated there in the same step (NaN from the step a row
    diverged at, as the NumPy loop records them)."""
    if not kern.AVAILABLE or prob.K != 2 or prob.dim != 2:
        return None
    specs = _kernels_of(meths)
    optk = _optimizer(opt)
    if specs is None or optk is None:
        return None
    evaluate, box = _evaluator(prob), _saddle(prob)  # (a compiled problem: whole trajectories in one call)
    M, S = len(meths), x0.shape[0]
    window = max(1, steps // 10)
    full: dict[str, Any] = {"x": np.empty((M * S, 2)), "x_window": np.empty((M * S, 2)), "end_x": np.tile(x0, (M, 1)),
            "end_L": np.full((M * S, 2), np.nan), "end_J": np.full((M * S, 2, 2), np.nan),
            "L": np.zeros((M * S, 2)), "J": np.zeros((M * S, 2, 2)), "W": np.zeros((M * S, 2)),
            "D": np.zeros((M * S, 2)), "MU": np.full((M * S, 1), np.nan),
            "div_step": np.full(M * S, -1, dtype=np.int64)}
    if record is not None:
        full["rec_slot"] = np.full(steps + 1, -1, dtype=np.int64)
        full["rec_slot"][np.asarray(record, dtype=np.int64)] = np.arange(len(record))
        full["positions"] = np.full((M * S, len(record), 2), np.nan)
        full["losses"] = np.full((M * S, len(record), 2), np.nan)
    seconds: dict[str, float] = {}

    def one(m: int) -> str:
        label, kernel = meths[m][0], specs[m]
        t0 = time.perf_counter()
        with np.errstate(all="ignore"):  # NaN/inf are detected and reported, not warned about
            _run_method(kernel, optk, evaluate, box, x0, steps, window, full, m * S)
        seconds[label] = time.perf_counter() - t0
        return label

    workers = min(M, os.cpu_count() or 1) if S >= POOL_MIN_ROWS else 1
    if workers > 1:  # the kernels release the GIL: methods run side by side, one per core
        with ThreadPoolExecutor(max_workers=workers) as pool:
            for done, label in enumerate(pool.map(one, range(M)), 1):
                if progress is not None:
                    progress(done / M, label)
    else:
        for m in range(M):
            label = one(m)
            if progress is not None:
                progress((m + 1) / M, label)
    full["alive"] = full["div_step"] < 0
    full["seconds"] = seconds
    return full


def _optimizer_table(okind: int, o: dict, steps: int) -> np.ndarray:
    """Per-step optimizer constants ``[steps, 7]`` (the kernels' ``o``), computed with the same
    Python expressions as :class:`pcd.engine.Adam` / ``SGD`` (so the same bits)."""
    ops = np.zeros((max(steps, 1), 7))
    for t in range(steps):
        if okind == 0:
            bc1 = 1.0 - o["b1"] ** (t + 1)
            ops[t] = (-(o["lr"] / bc1), 1.0 - o["b1"], o["b2"], 1.0 - o["b2"], math.sqrt(1.0 - o["b2"] ** (t + 1)),
                      o["eps"], o["wd"])
        else:
            ops[t] = (-o["lr"], o["momentum"], 1.0 - o["damp"], 1.0 if o["nesterov"] else 0.0, o["wd"],
                      1.0 if t == 0 else 0.0, 0.0)
    return ops


def _run_method(kernel: Any, optk: tuple[int, dict], evaluate, box: tuple[float, float, float] | None,
                x0: np.ndarray, steps: int, window: int, full: dict, off: int) -> None:
    """One method's trajectories, all steps; writes its rows ``off .. off + S`` of ``full``. ``box``: the
    compiled problem's (:func:`_saddle`), for which the whole trajectory can run in one call."""
    okind, o = optk
    S = x0.shape[0]
    idx = np.arange(S) + off                       # full row of each active row
    st: dict[str, np.ndarray] = {"x": np.array(x0.T, order="C"),  # a copy: for S = 1, x0.T is a view
                                 "xo": np.empty((2, S)),
                                 "s1": np.zeros((2, S)), "s2": np.zeros((2, S)),
                                 "W": np.zeros((2, S)), "D": np.zeros((2, S)), "G": np.zeros((3, S)),
                                 "S": np.zeros((kernel.state, S))}
    bad = np.zeros(S, dtype=bool)
    xprev = st["x"]                                # x_{t-1} (the start at t = 0)
    Lp, Jp = np.full((2, S), np.nan), np.full((2, 2, S), np.nan)
    ops = _optimizer_table(okind, o, steps)
    L, J = Lp, Jp
    pos: np.ndarray | None = full.get("positions")
    los: np.ndarray | None = full.get("losses")
    slot: np.ndarray = full.get("rec_slot", np.empty(0, dtype=np.int64))
    t0 = 0
    rows = kern.compiled(kernel.rows) if kernel.rows is not None else None
    P = _params(kernel, steps)
    step = kernel.step if rows is None else _one_step(rows, P)
    if rows is not None and box is not None and S <= TRAJECTORY_MAX_ROWS:  # one compiled call, up to a divergence
        t0, xprev, Lp, Jp = _compiled_steps(rows, P, okind, ops, box, st, bad, steps, window, full, idx)
        L, J = Lp, Jp
        if t0 > steps:
            _store_end(kernel, st, L, J, full, idx)
            return
    for t in range(t0, steps + 1):
        x = st["x"]
        if t == steps - window:
            full["x_window"][idx] = x.T
        L, J, nd = evaluate(x, bad)
        if pos is not None and slot[t] >= 0:  # the recorded point (a row that diverges now: its point too)
            pos[idx, slot[t]] = x.T
            if los is not None:  # and its losses (NaN for a row that diverges now, as the NumPy loop's)
                los[idx, slot[t]] = L.T
                if nd:
                    los[idx[bad], slot[t]] = np.nan
        if nd:  # retire the rows that diverged: their last finite point is the previous one
            rows = np.flatnonzero(bad)
            orig = idx[rows]
            full["div_step"][orig] = t
            full["end_x"][orig] = xprev[:, rows].T
            full["end_L"][orig] = Lp[:, rows].T
            full["end_J"][orig] = Jp[:, :, rows].transpose(2, 0, 1)
            full["x"][orig] = x[:, rows].T
            if t <= steps - window:
                full["x_window"][orig] = x[:, rows].T
            keep = ~bad
            idx = idx[keep]
            # (C order, as the compiled steps take them: a mask on the last axis gives Fortran order)
            st = {k: np.ascontiguousarray(v[..., keep]) for k, v in st.items()}
            L, J = np.ascontiguousarray(L[:, keep]), np.ascontiguousarray(J[:, :, keep])
            bad = np.zeros(idx.size, dtype=bool)
            x = st["x"]
        W, D, G = st["W"], st["D"], st["G"]
        kern.gram_rows(J, G)
        step(t, L, G, W, st["S"])
        kern.combine_rows(J, W, D)
        if t < steps:  # the optimizer step; then swap the position buffers (x_t becomes the previous point)
            if okind == 0:
                kern.adam_step(x, st["xo"], D, st["s1"], st["s2"], ops[t])
            else:
                kern.sgd_step(x, st["xo"], D, st["s1"], ops[t])
            st["x"], st["xo"] = st["xo"], x
            xprev = x
        Lp, Jp = L, J
    _store_end(kernel, st, L, J, full, idx)


def _store_end(kernel: Any, st: dict[str, np.ndarray], L: np.ndarray, J: np.ndarray, full: dict,
               idx: np.ndarray) -> None:
    """A method's live rows ``idx`` at the end of the run (``L``, ``J``: their last evaluation) into ``full``."""
    x = st["x"]
    full["x"][idx] = x.T
    full["end_x"][idx] = x.T
    full["end_L"][idx] = L.T
    full["end_J"][idx] = J.transpose(2, 0, 1)
    full["L"][idx] = L.T
    full["J"][idx] = J.transpose(2, 0, 1)
    full["W"][idx] = st["W"].T
    full["D"][idx] = st["D"].T
    if kernel.mu_row is not None:
        full["MU"][idx, 0] = st["S"][kernel.mu_row]


def _one_step(rows: Any, P: np.ndarray) -> Any:
    """``step(t, L, G, W, S)`` of the Python loop: the method's compiled step with its parameters ``P[t]``
    (``P[0]`` for a one-row table)."""
    last = P.shape[0] - 1

    def step(t: int, L: np.ndarray, G: np.ndarray, W: np.ndarray, S: np.ndarray) -> None:
        rows(t, L, G, W, S, P[min(t, last)])
    return step


def _params(kernel: Any, steps: int) -> np.ndarray:
    """A kernel's parameter table for a run of ``steps`` steps: ``[steps + 1, k]`` (a row per step) or
    ``[1, k]`` (the same every step); ``[1, 0]`` for none."""
    P = np.ascontiguousarray(kernel.params(steps) if kernel.params is not None else np.zeros((1, 0)), dtype=np.float64)
    if P.ndim != 2 or P.shape[0] not in (1, steps + 1):
        raise ValueError(f"a kernel's params table must have 1 or {steps + 1} rows, got shape {P.shape}")
    return P


def _compiled_steps(rows: Any, P: np.ndarray, okind: int, ops: np.ndarray, box: tuple[float, float, float],
                    st: dict[str, np.ndarray], bad: np.ndarray, steps: int, window: int, full: dict,
                    idx: np.ndarray) -> tuple[int, np.ndarray, np.ndarray, np.ndarray]:
    """The steps of :func:`_run_method`'s loop (the method's compiled step ``rows``, its parameter table ``P``)
    in one compiled call (:func:`pcd._kernels.trajectory`: the
    same kernels in the same order, so the same bits; a step of the Python loop costs ~10 us of
    interpreter at a handful of rows, a whole 1000-step run of a start, every step recorded, ~1.5 ms
    compiled), from step 0 up to the end or to the first step at which a row is not finite. Returns that
    step (``steps + 1`` when done), the point before it, and the losses and Jacobian evaluated before it
    (the last ones, when done; the Python loop goes on from a divergence with these as ``xprev``, ``Lp``,
    ``Jp``); ``st`` holds the positions
    (``"x"``), the optimizer's and the method's state, updated in place; ``full``: the recorded points
    and the window's point."""
    S = st["x"].shape[1]
    xprev = st["x"].copy()
    L, J = np.full((2, S), np.nan), np.full((2, 2, S), np.nan)
    Lp, Jp = L.copy(), J.copy()
    xw = np.zeros((2, S))
    pos = full.get("positions")
    los = full.get("losses")
    slot = full.get("rec_slot")
    none3 = np.zeros((0, 1, 2))
    t = kern.trajectory(rows, 0, steps, okind, ops, P, st["x"], st["xo"], xprev, J, L, Jp,
                        Lp, st["G"], st["W"], st["D"], st["S"], st["s1"], st["s2"], bad, *box, steps - window, xw,
                        slot if slot is not None else np.full(steps + 1, -1, dtype=np.int64),
                        pos if pos is not None else none3, los if los is not None else none3, idx)
    if t > steps - window:  # the window's point was taken (else the Python loop takes it)
        full["x_window"][idx] = xw.T
    return t, xprev, Lp, Jp  # (trajectory copies each step's L, J into Lp, Jp after it, the last one too)
