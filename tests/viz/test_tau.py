"""τ-dial figure: trade-off curve coloured by τ, selectable points, Pareto front, table."""
from __future__ import annotations

import numpy as np
import pytest

import pcd.problems as problems
from pcd.experiments import synthetic
from pcd.viz.tau import tau_table, tradeoff_figure


@pytest.fixture(scope="module")
def records():
    return synthetic.tau_sweep("quadratic", taus=[0.0, 0.1, 0.5], steps=200, lr=0.02)


def test_tradeoff_curve_points_customdata_and_front(records):
    front = problems.make("quadratic").pareto_front(50)
    fig = tradeoff_figure(records, pareto_front=front, selected=0.1)
    curve = fig.data[0]
    np.testing.assert_allclose(curve.customdata, [0.0, 0.1, 0.5])  # a click identifies τ
    np.testing.assert_allclose(np.c_[curve.x, curve.y], [r["losses"][:2] for r in records])
    assert list(curve.marker.color) == [0.0, 0.1, 0.5]
    pf = next(t for t in fig.data if t.name == "Pareto front")
    np.testing.assert_allclose(np.c_[pf.x, pf.y], front)
    sel = next(t for t in fig.data if t.name == "τ = 0.1")
    np.testing.assert_allclose([sel.x[0], sel.y[0]], records[1]["losses"][:2])
    singles = next(t for t in fig.data if t.name == "single starts")
    assert len(singles.x) == sum(len(r["start_losses"]) for r in records)
    assert fig.layout.xaxis.type == "linear"
    assert tradeoff_figure(records, log_axes=True).layout.yaxis.type == "log"


def test_tradeoff_sorted_and_validation(records):
    fig = tradeoff_figure(list(reversed(records)))
    assert list(fig.data[0].customdata) == [0.0, 0.1, 0.5]
    with pytest.raises(ValueError, match="not in the sweep"):
        tradeoff_figure(records, selected=0.3)
    with pytest.raises(ValueError):
        tradeoff_figure([])
    with pytest.raises(ValueError):
        tradeoff_figure([{"tau": 0.1, "losses": [1.0]}])


def test_tau_table(records):
    t = tau_table(records)
    assert list(t["τ"]) == [0.0, 0.1, 0.5]
    assert "mean final f1" in t.columns and "reached CMS" in t.columns
