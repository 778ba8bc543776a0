"""The engine's end-point fast path (numba kernels) is bit-identical to its NumPy loop."""
from __future__ import annotations

import dataclasses
import os

import numpy as np
import pytest

import pcd._fastpath as fastpath
import pcd._kernels as kern
import pcd.methods as methods
from pcd.engine import run, run_paths
from pcd.problems import make

# Skipped only on a developer machine without numba: in CI (``CI`` set, numba in requirements.txt) a
# missing numba fails these tests instead of hiding the bit-identity proof behind a skip.
pytestmark = pytest.mark.skipif(not kern.AVAILABLE and not os.environ.get("CI"),
                                reason="numba not installed (the NumPy loop is used); CI runs these")

# every method with a compiled step (Method.kernel) at its defaults: a new one is checked here unasked
METHODS = [n for n in methods.available() if methods.make(n).kernel() is not None]
FIELDS = ["end", "end_losses", "end_grad_norms", "positions", "losses", "grad_norms", "weights", "update_norms",
          "multipliers", "speed", "final_update_norm", "cms_residual", "pareto_residual", "diverged_step"]


def _starts(n=40, seed=1):
    rng = np.random.default_rng(seed)
    return np.column_stack([rng.uniform(-3.5, 3.5, n), rng.uniform(-2.0, 2.0, n)])


def _same(a, b):
    for f in FIELDS:
        np.testing.assert_array_equal(getattr(a, f), getattr(b, f), err_msg=f)
    assert a.diagnosis.tolist() == b.diagnosis.tolist()
    assert a.methods == b.methods and a.errors == b.errors == {}


@pytest.mark.parametrize("optimizer, lr, extra", [
    ("adam", 0.01, {}),
    ("adam", 0.05, {"weight_decay": 0.01, "betas": (0.8, 0.99)}),
    ("sgd", 0.05, {"momentum": 0.9}),
    ("sgd", 0.02, {"momentum": 0.5, "nesterov": True, "weight_decay": 0.1}),
    ("sgd", 0.3, {}),  # diverges from some starts: retired rows keep their last finite point
])
def test_bit_identical_to_the_numpy_loop_on_saddle2d(optimizer, lr, extra):
    kw = dict(starts=_starts(), steps=200, optimizer=optimizer, lr=lr, record=[200], optimizer_params=extra,
              method_params={"pcd": {"tau": 0.3}, "cagrad": {"c": 0.4}, "famo": {"min_loss": [0.0, -0.1]}})
    a = run("saddle2d", METHODS, fast=False, **kw)
    b = run("saddle2d", METHODS, **kw)
    _same(a, b)
    if optimizer == "sgd" and lr == 0.3:
        assert a.diverged.any() and not a.diverged.all()


def test_bit_identical_on_a_custom_formula_with_divergence():
    prob = make("custom", primary="(x**2-1)**2 + 0.5*y**2 + exp(x)/10", secondaries=["relu(abs(x-1)-0.25) + y**4"],
                bounds=((-2.0, 2.0), (-2.0, 2.0)))
    kw = dict(starts=_starts(30, 2) * [0.6, 1.0], steps=150, optimizer="sgd", lr=0.2, record=[150])
    a = run(prob, METHODS, fast=False, **kw)
    b = run(prob, METHODS, **kw)
    _same(a, b)
    assert a.diverged.any()


def test_unsupported_runs_fall_back_to_the_numpy_loop(monkeypatch):
    starts = _starts(20)
    calls = []
    real = fastpath._run_method
    monkeypatch.setattr(fastpath, "_run_method", lambda *a, **k: calls.append(1) or real(*a, **k))
    run("saddle2d", ["pcd", "upgrad"], starts=starts, steps=20, record=[20])   # upgrad has no kernel
    run("saddle2d", ["pcd"], starts=starts, steps=20, record=None)             # every step recorded
    run("saddle2d", ["mgda"], starts=starts, steps=20, record=[20], method_params={"mgda": {"solver": "frank-wolfe"}})
    assert calls == []
    run("saddle2d", ["pcd", "ws"], starts=starts, steps=20, record=[20])
    assert len(calls) == 2
    monkeypatch.setattr(kern, "AVAILABLE", False)
    res = run("saddle2d", ["pcd", "ws"], starts=starts, steps=20, record=[20])
    assert len(calls) == 2 and res.end.shape == (2, 20, 2)


def test_progress_is_reported_per_method():
    seen = []
    run("saddle2d", METHODS, starts=_starts(10), steps=10, record=[10], progress=lambda f, m: seen.append((f, m)))
    assert sorted(m for _, m in seen) == sorted(METHODS) and seen[-1][0] == 1.0


def test_a_small_batch_runs_in_the_calling_thread_and_the_pool_gives_the_same_bits(monkeypatch):
    """Below ``POOL_MIN_ROWS`` starts the methods run one after the other in the caller's thread (in
    threads they spent their time handing over the GIL: ~3x slower for a drag's one start); from it
    they run side by side. Either way, the same numbers."""
    import threading

    threads = []
    real = fastpath._run_method
    monkeypatch.setattr(fastpath, "_run_method",
                        lambda *a, **k: threads.append(threading.current_thread()) or real(*a, **k))
    kw = dict(starts=_starts(12), steps=120, lr=0.05, record=[120], method_params={"pcd": {"tau": 0.3}})
    one_by_one = run("saddle2d", METHODS, **kw)
    assert threads == [threading.main_thread()] * len(METHODS)
    threads.clear()
    monkeypatch.setattr(fastpath, "POOL_MIN_ROWS", 1)
    monkeypatch.setattr(os, "cpu_count", lambda: 2)
    side_by_side = run("saddle2d", METHODS, **kw)
    assert len(threads) == len(METHODS) and threading.main_thread() not in threads
    _same(one_by_one, side_by_side)


def test_every_compiled_step_but_famos_runs_the_whole_trajectory_in_one_call():
    # FAMO's step calls NumPy's log/exp between two kernels (NumPy's SIMD routines: other bits than a compiled
    # libm call), so its trajectory stays a Python loop over compiled steps; every other kernel has `rows`
    assert {n for n in METHODS if methods.make(n).kernel().rows is None} == {"famo"}


@pytest.mark.parametrize("optimizer, lr, extra", [
    ("adam", 0.02, {}),
    ("sgd", 0.3, {}),  # some rows diverge: the compiled loop hands the step over to the Python loop
    ("sgd", 0.05, {"momentum": 0.9, "nesterov": True, "weight_decay": 0.1}),
])
def test_the_compiled_trajectory_gives_the_bits_of_the_step_by_step_loop(monkeypatch, optimizer, lr, extra):
    kw = dict(starts=_starts(), steps=200, optimizer=optimizer, lr=lr, optimizer_params=extra,
              method_params={"pcd": {"tau": 0.3}, "cagrad": {"c": 0.4}}, record=np.arange(201), losses=True)
    calls = []
    real = kern.trajectory
    monkeypatch.setattr(kern, "trajectory", lambda *a: calls.append(a[1]) or real(*a))
    whole = run_paths("saddle2d", METHODS, **kw)
    assert len(calls) == len(METHODS) - 1 and set(calls) == {0}  # one call per method, from step 0 (FAMO: none)
    monkeypatch.setattr(fastpath, "_saddle", lambda prob: None)  # the same kernels, one Python step at a time
    stepwise = run_paths("saddle2d", METHODS, **kw)
    numpy_loop = run_paths("saddle2d", METHODS, fast=False, **kw)
    for a, b, c in zip(whole, stepwise, numpy_loop):
        np.testing.assert_array_equal(np.asarray(a), np.asarray(b))
        np.testing.assert_array_equal(np.asarray(a), np.asarray(c))
    if optimizer == "sgd" and lr == 0.3:
        last = np.isnan(whole[2][:, :, -1]).any(axis=-1)  # [M, S]: the rows that diverged on the way
        assert last.any() and not last.all()


def test_a_kernel_whose_params_table_has_the_wrong_rows_is_refused():
    good = methods.make("pcd").kernel()
    assert fastpath._params(good, 10).shape == (11, 4)
    bad = dataclasses.replace(good, params=lambda steps: np.zeros((steps, 4)))
    with pytest.raises(ValueError, match="1 or 11 rows"):
        fastpath._params(bad, 10)


def test_a_large_batch_keeps_the_step_by_step_loop(monkeypatch):
    calls = []
    real = kern.trajectory
    monkeypatch.setattr(kern, "trajectory", lambda *a: calls.append(a[1]) or real(*a))
    monkeypatch.setattr(fastpath, "TRAJECTORY_MAX_ROWS", 8)
    kw = dict(steps=30, record=[30], method_params={"pcd": {"tau": 0.3}})
    run("saddle2d", ["pcd", "ws"], starts=_starts(9), **kw)
    assert calls == []  # 9 rows > 8: the Python loop over compiled steps
    run("saddle2d", ["pcd", "ws"], starts=_starts(8), **kw)
    assert calls == [0, 0]
