"""Figure builders of the Pruning lab (pure functions: data in, figure out)."""
from __future__ import annotations

import pytest

from pcd.viz.runs import curves_figure, method_bars, results_scatter
from pcd.viz.theme import method_color as color


def test_curves_one_panel_per_present_key_and_method_colours():
    series = {"run 1": [{"epoch": 1, "test_acc": 50.0, "mu": 0.1}, {"epoch": 2, "test_acc": 60.0, "mu": None}],
              "run 2": [{"epoch": 1, "test_acc": 40.0}]}
    fig = curves_figure(series, {"run 1": "pcd", "run 2": "mgda"}, keys=["test_acc", "mu", "cosine"])
    titles = [a.text.replace("<br>", " ") for a in fig.layout.annotations]  # long titles in two lines
    assert titles == ["test accuracy (%)", "PCD's mu (mean per epoch)"]  # cosine absent -> no panel
    acc1 = [t for t in fig.data if t.name == "run 1" and t.yaxis == "y"][0]
    assert list(acc1.x) == [1, 2] and list(acc1.y) == [50.0, 60.0] and acc1.line.color == color("pcd")
    mu1 = [t for t in fig.data if t.name == "run 1" and t.yaxis == "y2"][0]
    assert list(mu1.y) == [0.1]  # the missing value is skipped, not plotted as 0
    assert sum(t.showlegend for t in fig.data) == 2  # one legend entry per run


def test_curves_empty_says_so():
    fig = curves_figure({"run 1": []})
    assert "no epoch finished yet" in fig.layout.annotations[0].text
    with pytest.raises(ValueError, match="series"):
        curves_figure([1, 2])


def test_scatter_symbol_per_method_tau_colour_and_front():
    pts = [{"id": 1, "method": "pcd", "tau": 0.02, "x": 60.0, "test_acc": 95.0},
           {"id": 2, "method": "pcd", "tau": 0.1, "x": 85.0, "test_acc": 90.0},
           {"id": 3, "method": "ws", "tau": 0.0, "x": 50.0, "test_acc": 20.0},
           {"id": 4, "method": "ws", "tau": 0.0, "x": None, "test_acc": 20.0}]
    fig = results_scatter(pts, "x", front=[0, 1])
    by = {t.name: t for t in fig.data}
    assert set(by) == {"PCD", "Weighted sum", "Pareto front"}
    assert list(by["PCD"].marker.color) == [0.02, 0.1] and by["PCD"].marker.line.color == color("pcd")
    assert len(by["Weighted sum"].x) == 1  # the run without an x value is left out
    assert by["PCD"].marker.symbol != by["Weighted sum"].marker.symbol
    assert list(by["Pareto front"].x) == [60.0, 85.0]
    assert by["PCD"].marker.cmin == 0.0 and by["PCD"].marker.cmax == 0.1


def test_method_bars_colours_and_labels():
    fig = method_bars({"pcd": 73.0, "mgda": 1.2, "famo": float("nan")}, "t", "accuracy")
    bar = fig.data[0]
    assert list(bar.x) == ["PCD", "MGDA"] and list(bar.y) == [73.0, 1.2]
    assert list(bar.marker.color) == [color("pcd"), color("mgda")]
    with pytest.raises(ValueError):
        method_bars([1, 2], "t", "y")
