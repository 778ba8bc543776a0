"""Engine: one run of the longest step budget, sliced, equals a fresh run of every shorter budget
bit for bit (:func:`pcd.engine.run_budgets`) -- divergence, method errors, stochastic methods and
the speed window included."""
from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from pcd.engine import RunResult, run, run_budgets
from pcd.methods.base import Method, MethodOutput
from pcd.problems import make

TIMINGS = {"seconds", "method_seconds"}


def assert_same_run(a: RunResult, b: RunResult) -> None:
    """Every field of two runs equal (NaN == NaN), the timings left out."""
    for f in dataclasses.fields(RunResult):
        if f.name in TIMINGS:
            continue
        va, vb = getattr(a, f.name), getattr(b, f.name)
        if isinstance(va, np.ndarray) or isinstance(vb, np.ndarray):
            assert va.dtype == vb.dtype and va.shape == vb.shape, f.name
            np.testing.assert_array_equal(va, vb, err_msg=f.name, strict=True)
        else:
            assert va == vb, f.name


def _check(problem, methods, budgets, record, **kw):
    sliced = run_budgets(problem, methods, budgets, record=record, **kw)
    assert sorted(sliced) == sorted(set(budgets))
    for b in budgets:
        assert_same_run(sliced[b], run(problem, methods, steps=b, record=record(b), fast=False, **kw))
    return sliced


@pytest.mark.parametrize("opt", ["adam", "sgd"])
def test_double_well_budgets_equal_fresh_runs(opt):
    """The K-objective page's runs: K = 5, PCD (its normalizer's state), MGDA, the weighted sum."""
    sliced = _check("double_well", ["pcd", "mgda", "ws"], [3, 40, 90, 200], lambda b: [0, b], optimizer=opt,
                    lr=0.03, method_params={"pcd": {"tau": 0.3}}, problem_params={"K": 5})
    # the budgets really differ (the slice is not the end of the longest run)
    assert not np.array_equal(sliced[40].end, sliced[200].end)


def test_toy_budgets_with_frames_stochastic_methods_and_the_compiled_path():
    """Several starts, seeded stochastic methods (PCGrad, GradDrop), sampled frames; and the end-point
    budget (record None = [b]) equals the engine's compiled fast path too."""
    methods = ["pcd", "pcgrad", "graddrop", "cagrad"]
    _check("saddle2d", methods, [17, 120, 250], lambda b: 30, optimizer="adam", lr=0.02, seed=7)
    ends = run_budgets("saddle2d", ["pcd", "ws", "mgda"], [100, 300], lr=0.02)
    for b, res in ends.items():
        assert_same_run(res, run("saddle2d", ["pcd", "ws", "mgda"], steps=b, record=[b], lr=0.02))


class _RaisesLate(Method):
    """Steps along the secondary alone (x -> 0.6 x with SGD at lr 0.2) and raises once the primary
    loss log(x) + y^2 falls below -4 (some steps into the run)."""
    name = "raises_late"

    def weights(self, gram, *, losses=None, **kw):
        if losses is not None and np.min(losses[:, 0]) < -4.0:
            raise RuntimeError("late failure")
        return MethodOutput(weights=np.tile([0.0, 1.0], (gram.shape[0], 1)))


def test_divergence_and_method_errors_at_every_budget():
    """A row that diverges and a method that raises part-way: budgets before and after both events."""
    prob = make("custom", primary="log(x) + y**2", secondaries=["x**2"], starts=[[0.5, 0.1], [3.0, 0.2]])
    full = run(prob, ["ws", _RaisesLate()], steps=400, optimizer="sgd", lr=0.2)
    div = int(full.diverged_step[0].max())
    err = int(full.diverged_step[1].min())
    assert 2 <= div < 400 and 2 <= err < 400 and full.errors, (div, err, full.errors)
    budgets = sorted({1, div - 1, div, div + 1, err - 1, err, err + 1, 400})
    sliced = run_budgets(prob, ["ws", _RaisesLate()], budgets, record=lambda b: None, optimizer="sgd", lr=0.2)
    for b in budgets:
        assert_same_run(sliced[b], run(prob, ["ws", _RaisesLate()], steps=b, optimizer="sgd", lr=0.2))
    assert "raises_late" not in sliced[err - 1].errors and "raises_late" in sliced[err].errors


@pytest.mark.parametrize("budgets, kw, msg", [
    ([], {}, "at least one"),
    (5, {}, "list of step counts"),
    ([0, 10], {}, "budget"),
    ([10], {"steps": 10}, "'steps' is not an argument"),
    ([10], {"record": 3}, "function of the budget"),
    ([10], {"lr": -1.0}, "lr"),
])
def test_bad_input_is_a_value_error(budgets, kw, msg):
    with pytest.raises(ValueError, match=msg):
        run_budgets("saddle2d", ["pcd"], budgets, **kw)
