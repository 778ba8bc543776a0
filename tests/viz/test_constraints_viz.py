"""Figure builders of the constraints page: pure functions data -> go.Figure."""
from __future__ import annotations

import math

import numpy as np
import plotly.graph_objects as go
import pytest

from pcd.viz import constraints as V
from pcd.viz.theme import METHOD_COLORS as COLORS


def _colors(fig):
    out = set()
    for t in fig.data:
        line = getattr(t, "line", None)
        marker = getattr(t, "marker", None)
        if line is not None and line.color:
            out.add(line.color)
        if marker is not None and isinstance(marker.color, str):
            out.add(marker.color)
    return out


def test_family_colors_come_from_the_registry():
    for fam in V.FAMILIES:
        assert V.family_color(fam) == COLORS[fam]
    with pytest.raises(ValueError, match="unknown method family"):
        V.family_color("mgda")


def test_toy_landscape_curve_region_and_markers():
    finals = [{"label": "penalty(c=0.5)", "family": "penalty", "x": math.pi / 2},
              {"label": "auglag", "family": "auglag", "x": math.asin(0.4)},
              {"label": "nupi", "family": "nupi", "x": float("nan")}]  # a diverged run is skipped, not raised
    fig = V.toy_landscape_figure(0.5, 0.4, finals)
    assert isinstance(fig, go.Figure)
    names = [t.name for t in fig.data]
    assert names[0] == "objective cos x" and "0.5·sin x" in names[1]
    pen = fig.data[1]
    np.testing.assert_allclose(pen.y, np.cos(pen.x) + 0.5 * np.sin(pen.x))
    markers = [t for t in fig.data if t.mode == "markers"]
    assert len(markers) == 2
    assert markers[1].marker.color == COLORS["auglag"]
    assert markers[1].y[0] == pytest.approx(math.cos(math.asin(0.4)))
    rect = [s for s in fig.layout.shapes if s.type == "rect"][0]  # the feasible region [0, arcsin eps]
    assert rect.x0 == 0 and rect.x1 == pytest.approx(math.asin(0.4))


@pytest.mark.parametrize("eps, c", [(0.0, 1.0), (1.0, 1.0), (0.5, -1.0), (0.5, float("inf"))])
def test_toy_landscape_rejects_bad_eps_and_c(eps, c):
    with pytest.raises(ValueError, match="epsilon|penalty coefficient"):
        V.toy_landscape_figure(c, eps)


def test_trajectory_figure_panels_and_off_scale_note():
    T = 50
    traces = [{"label": "gda", "family": "gda", "x": np.full(T, math.pi / 2), "lam": np.linspace(0, 300, T)},
              {"label": "auglag", "family": "auglag", "x": np.full(T, 0.41), "lam": np.full(T, 0.43)},
              {"label": "pcd", "family": "pcd", "x": np.full(T, 0.4), "lam": np.full(T, np.nan)}]
    fig = V.toy_trajectory_figure(traces, 0.41, 0.436)
    # x panel: 3 lines; lambda panel: only the methods with a multiplier
    assert len(fig.data) == 5
    assert [t.line.color for t in fig.data[:2]] == [COLORS["gda"], COLORS["gda"]]
    assert any("off scale" in a.text and "gda" in a.text for a in fig.layout.annotations)
    assert fig.layout.yaxis2.range[1] == pytest.approx(3 * 0.436 + 0.5)
    with pytest.raises(ValueError, match="same length"):
        V.toy_trajectory_figure([{"label": "a", "family": "gda", "x": [0, 1], "lam": [0]}], 0.4, 0.4)
    with pytest.raises(ValueError, match="at least one"):
        V.toy_trajectory_figure([], 0.4, 0.4)


def test_epsilon_figure_one_trace_per_method_plus_truth():
    rows = [{"eps": e, "method": m, "family": f, "x": x}
            for e in (0.1, 0.5) for m, f, x in (("auglag", "auglag", math.asin(e)), ("penalty(c=1)", "penalty", 0.0))]
    fig = V.epsilon_figure(rows)
    assert [t.name for t in fig.data] == ["x* = arcsin ε", "auglag", "penalty(c=1)"]
    np.testing.assert_allclose(fig.data[1].y, np.arcsin([0.1, 0.5]))
    assert fig.data[2].line.color == COLORS["penalty"]


def test_decision_boundary_lines_lie_on_the_boundary():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(20, 2))
    y = (X.sum(axis=1) > 0).astype(float)
    fig = V.decision_boundary_figure(X, y, [{"label": "gda", "family": "gda", "w": [1.0, 2.0], "b": 0.5},
                                            {"label": "steep", "family": "pcd", "w": [3.0, 0.1], "b": -1.0}])
    lines = [t for t in fig.data if t.mode == "lines"]
    assert len(lines) == 2 and lines[0].line.color == COLORS["gda"] and lines[1].line.color == COLORS["pcd"]
    for t, (w, b) in zip(lines, (([1.0, 2.0], 0.5), ([3.0, 0.1], -1.0))):
        np.testing.assert_allclose(w[0] * np.asarray(t.x) + w[1] * np.asarray(t.y) + b, 0.0, atol=1e-12)
    with pytest.raises(ValueError, match=r"X must be \[n, 2\]"):
        V.decision_boundary_figure(X[:, :1], y, [])


def test_rate_sweep_figure_uses_log_axes_and_drops_zero():
    pen = {"param": [0.0, 1.0, 2.15, 10.0], "rate": [50, 50, 74, 100], "accuracy": [100, 100, 76, 50]}
    lag = {"param": [0.0, 0.01, 1.0], "rate": [50, 70, 70], "accuracy": [100, 80, 80]}
    fig = V.rate_sweep_figure(pen, lag, 70.0, curve={"param": [0.001, 1, 10], "rate": [50, 50, 100],
                                                     "accuracy": [100, 100, 50]},
                              paper_penalty={"param": [0, 1], "rate": [49.75, 50.5]})
    assert fig.layout.xaxis.type == "log" and fig.layout.xaxis2.type == "log"
    rates = [t for t in fig.data if t.name == "fixed penalty: class-0 rate"][0]
    assert list(rates.x) == [1.0, 2.15, 10.0]  # c = 0 cannot sit on a log axis
    assert rates.marker.color == COLORS["penalty"]
    lag_tr = [t for t in fig.data if t.name == "Lagrangian (GDA): class-0 rate"][0]
    assert lag_tr.marker.color == COLORS["gda"] and list(lag_tr.y) == [70, 70]
    assert any(s.y0 == 70.0 for s in fig.layout.shapes)  # target line
    with pytest.raises(ValueError, match="same length"):
        V.rate_sweep_figure({"param": [1, 2], "rate": [1], "accuracy": [1, 2]}, lag)


def test_history_bisection_and_cost_figures():
    fig = V.rate_history_figure([{"label": "gda", "family": "gda", "rate_hist": [50, 60, 70], "every": 10}])
    assert list(fig.data[0].x) == [10, 20, 30]
    runs = [{"run": 1, "c": 1e-3, "rate": 50.0}, {"run": 2, "c": 100.0, "rate": 100.0}, {"run": 3, "c": 2.0, "rate": 70.5}]
    fig = V.bisection_figure(runs, 70.0, 1.0, constrained_rate=70.0)
    assert list(fig.data[0].x) == [1, 2, 3] and fig.data[0].marker.color == COLORS["penalty"]
    band = [s for s in fig.layout.shapes if s.type == "rect"][0]
    assert (band.y0, band.y1) == (69.0, 71.0)
    fig = V.cost_figure({"penalty_s": [1.0, 1.0], "constrained_s": [1.5, 1.5]})
    assert "+50.0 %" in fig.layout.title.text
    with pytest.raises(ValueError):
        V.cost_figure({"penalty_s": [], "constrained_s": [1.0]})


def test_reference_lines_are_drawn_above_the_data_in_a_neutral_ink():
    fig = V.rate_history_figure([{"label": "a", "family": "gda", "rate_hist": [50, 60, 70, 72], "every": 10}])
    line = fig.layout.shapes[0]
    assert line.layer == "above" and line.line.color == V.REFERENCE != COLORS["pcd"]
    assert fig.layout.annotations[0].bgcolor  # the label stays readable over markers
