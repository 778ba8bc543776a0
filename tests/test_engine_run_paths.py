"""pcd.engine.run_paths: the trajectories alone (the toy map's live redraws) are exactly run's positions,
on the compiled fast path where it covers the run and on the NumPy loop elsewhere."""
from __future__ import annotations

import numpy as np
import pytest

import pcd._kernels as kern
from pcd.engine import run, run_paths

STARTS = np.array([[-2.5, 0.4], [-1.0, 1.5], [-1.65, -0.55]])
SIX = ["pcd", "ws", "mgda", "pcgrad", "cagrad", "famo"]


@pytest.mark.parametrize("methods, optimizer, lr, steps, record", [
    (SIX, "adam", 0.02, 1000, 200),      # the toy page's default (the compiled path)
    (SIX, "sgd", 5.0, 300, 50),          # rows that diverge: NaN after, their point at that step kept
    (["pcd", "upgrad"], "adam", 0.05, 200, 40),  # a method without a compiled step: the NumPy loop
])
def test_run_paths_equals_run_positions(methods, optimizer, lr, steps, record):
    mp = {"pcd": {"tau": 0.1}}
    ref = run("saddle2d", methods, starts=STARTS, steps=steps, optimizer=optimizer, lr=lr, method_params=mp, record=record)
    names, rec, pos = run_paths("saddle2d", methods, starts=STARTS, steps=steps, optimizer=optimizer, lr=lr,
                                method_params=mp, record=record)
    assert names == ref.methods
    np.testing.assert_array_equal(rec, ref.record)
    np.testing.assert_array_equal(pos, ref.positions)  # NaN where run has NaN
    # with the losses (the objective-space panel that follows a drag): run's own, NaN from a divergence on
    names2, rec2, pos2, losses = run_paths("saddle2d", methods, starts=STARTS, steps=steps, optimizer=optimizer, lr=lr,
                                           method_params=mp, record=record, losses=True)
    assert names2 == names
    np.testing.assert_array_equal(rec2, rec)
    np.testing.assert_array_equal(pos2, pos)
    np.testing.assert_array_equal(losses, ref.losses)


@pytest.mark.skipif(not kern.AVAILABLE, reason="numba not installed (the NumPy loop is used)")
def test_diverging_rows_are_covered():
    ref = run("saddle2d", SIX, starts=STARTS, steps=300, optimizer="sgd", lr=5.0, record=50)
    assert (ref.diverged_step >= 0).any()  # the case above does exercise divergence


def test_run_paths_validates():
    with pytest.raises(ValueError):
        run_paths("saddle2d", ["pcd"], starts=[[np.nan, 0.0]])
    with pytest.raises(ValueError):
        run_paths("saddle2d", ["nope"], starts=STARTS)
    with pytest.raises(ValueError):
        run_paths("saddle2d", ["pcd"], starts=STARTS, lr=0.0)


def test_one_start_is_not_overwritten():
    # the fast path once updated a single start in place (x0.T of a [1, 2] array is a view, not a copy)
    start = np.array([[-1.0, 0.5]])
    run_paths("saddle2d", SIX, starts=start, steps=100, lr=0.02, record=10)
    run("saddle2d", SIX, starts=start, steps=100, lr=0.02, record=[100])  # the end-point fast path
    np.testing.assert_array_equal(start, [[-1.0, 0.5]])
