"""τ-dial figure: one trade-off curve per step budget, moving points open, selectable points,
Pareto front, zero-safe log axes, table."""
from __future__ import annotations

import numpy as np
import pytest

import pcd.problems as problems
from pcd.experiments import synthetic
from pcd.viz.tau import ZERO_FLOOR, budgets_of, tau_table, tradeoff_figure


@pytest.fixture(scope="module")
def records():
    return synthetic.tau_sweep("quadratic", taus=[0.0, 0.1, 0.5], lr=0.02, budgets=[100, 300])


def test_budget_curves_customdata_moving_points_open_and_front(records):
    front = problems.make("quadratic").pareto_front(50)
    fig = tradeoff_figure(records, pareto_front=front, selected=0.1)
    assert budgets_of(records) == [100, 300]
    curve = fig.data[0]  # the largest budget first
    assert curve.name == "PCD after 300 steps"
    np.testing.assert_allclose([float(c[0]) for c in curve.customdata], [0.0, 0.1, 0.5])  # a click identifies τ
    np.testing.assert_allclose(np.c_[curve.x, curve.y], [r["budgets"][300]["losses"][:2] for r in records])
    for tr in fig.data[:2]:
        b = int(tr.name.split()[2])
        for sym, r in zip(tr.marker.symbol, records):
            moving = r["budgets"][b]["moving_fraction"] > 0
            # never a "moving" outcome drawn as a filled (converged) point
            assert sym == ("circle-open" if moving else "circle")
    pf = next(t for t in fig.data if t.name == "Pareto front")
    np.testing.assert_allclose(np.c_[pf.x, pf.y], front)
    sel = next(t for t in fig.data if t.name == "selected τ = 0.1")
    np.testing.assert_allclose([sel.x[0], sel.y[0]], records[1]["budgets"][300]["losses"][:2])
    assert fig.layout.xaxis.type == "linear"


def test_budget_equals_a_shorter_run(records):
    """A budget read off a longer run is exactly what a run of that many steps reports."""
    short = synthetic.tau_sweep("quadratic", taus=[0.0, 0.1, 0.5], lr=0.02, steps=100)
    for r, s in zip(records, short):
        np.testing.assert_allclose(r["budgets"][100]["start_losses"], s["start_losses"])
        assert r["budgets"][100]["diagnosis"] == s["diagnosis"]


def test_zero_safe_log_axis_on_the_saddle():
    recs = synthetic.tau_sweep("saddle2d", taus=[0.0, 0.3], lr=0.02, budgets=[1000])
    assert recs[1]["budgets"][1000]["losses"][1] < ZERO_FLOOR  # PCD at CMS: the secondary is 0
    fig = tradeoff_figure(recs, log_axes=True)
    ax = fig.layout.yaxis
    assert ax.type == "log" and ax.ticktext[0].startswith("0")
    assert all("p" not in t for t in ax.ticktext)  # no SI "100p" ticks
    floor = ax.tickvals[0]
    assert fig.data[0].y[1] == pytest.approx(floor)  # the zero is drawn, on the floor labelled 0
    assert np.log10(ax.tickvals[-1]) - np.log10(floor) <= 16  # no 10⁻⁴⁰ axis


def test_tradeoff_sorted_and_validation(records):
    fig = tradeoff_figure(list(reversed(records)))
    assert [float(c[0]) for c in fig.data[0].customdata] == [0.0, 0.1, 0.5]
    with pytest.raises(ValueError, match="not in the sweep"):
        tradeoff_figure(records, selected=0.3)
    with pytest.raises(ValueError):
        tradeoff_figure([])
    with pytest.raises(ValueError):
        tradeoff_figure([{"tau": 0.1, "losses": [1.0]}])


def test_tau_table(records):
    t = tau_table(records)
    assert list(t["τ"]) == [0.0, 0.1, 0.5]
    assert {"mean f1", "reached CMS", "outcome", "still moving after 100 / 300 steps"} <= set(t.columns)
    assert not any("_" in str(v) for v in t["outcome"])  # words, not engine codes


def test_tradeoff_figure_draws_other_methods_where_they_end_and_skips_the_refused():
    """Issue 27: the τ dial compares PCD's curve with where every other method ends (its own
    defaults, same starts): one marker per method that ran, at its mean final losses."""
    from pcd.experiments.synthetic import tau_references, tau_sweep
    from pcd.viz.tau import tradeoff_figure

    recs = tau_sweep("two_task", taus=[0.0, 0.5], budgets=[30], lr=0.02)
    refs = tau_references("two_task", ["ws", "uw", "fairgrad"], steps=30, lr=0.02)
    assert refs["uw"]["error"] and "losses must be >= 0" in refs["uw"]["error"] and refs["uw"]["losses"] is None
    fig = tradeoff_figure(recs, references=refs)
    by_name = {t.name: t for t in fig.data}
    assert "UW" not in by_name
    for m, label in (("ws", "Weighted sum"), ("fairgrad", "FairGrad")):
        t = by_name[label]
        assert [t.x[0], t.y[0]] == pytest.approx(refs[m]["losses"][:2])
