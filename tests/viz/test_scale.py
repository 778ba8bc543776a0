"""Scale-invariance figures: operating points per method and scale, highlight, drift."""
from __future__ import annotations

import numpy as np
import pytest

from pcd.experiments import synthetic
from pcd.viz.scale import drift_figure, drift_table, eps_window_text, power_label, sweep_figure
from pcd.viz.theme import method_color, method_style


@pytest.fixture(scope="module")
def result():
    return synthetic.scale(exponents=[-2, 0, 2, 4], methods=["ws", "pcd"], steps=300)


def test_sweep_figure_points_and_highlight(result):
    fig = sweep_figure(result, current=2)
    ws = next(t for t in fig.data if t.name.startswith("Weighted sum ("))
    np.testing.assert_allclose(np.c_[ws.x, ws.y], result["methods"]["ws"]["endpoints"])
    assert ws.marker.line.color == method_color("ws")
    assert set(ws.marker.color) == {method_color("ws")}  # every scale is scale-free here: filled markers
    # distinct points: one label each, exponents as superscripts; 10² and 10⁴ lie 0.06 apart (4 % of
    # the plot's span: their labels would overprint), so they share one, which claims no coincidence
    assert list(ws.text) == ["10⁻²", "10⁰", "10² … 10⁴", ""]
    # every point and its label fit inside the axes' ranges
    for t in (ws,):
        assert fig.layout.xaxis.range[0] < min(t.x) and max(t.x) < fig.layout.xaxis.range[1]
        assert fig.layout.yaxis.range[0] < min(t.y) and max(t.y) < fig.layout.yaxis.range[1]
    pcd = next(t for t in fig.data if t.name.startswith("PCD ("))
    assert [t for t in pcd.text if t] == ["10⁻² … 10⁴ (4 scales)"]  # coinciding points share one label
    rings = [t for t in fig.data if t.name and "at 10^2" in t.name]
    assert len(rings) == 2
    pcd_ring = next(t for t in rings if t.name.startswith("PCD"))
    np.testing.assert_allclose([pcd_ring.x[0], pcd_ring.y[0]], result["methods"]["pcd"]["endpoints"][2])
    assert any(t.name == "Pareto set" for t in fig.data)
    assert fig.layout.yaxis.scaleanchor == "x"
    # drift shown in the legend name
    assert f"{result['methods']['pcd']['drift']:.3g}" in next(t.name for t in fig.data if t.name.startswith("PCD ("))
    with pytest.raises(ValueError, match="not in the sweep"):
        sweep_figure(result, current=1)
    with pytest.raises(ValueError):
        sweep_figure({"methods": {}})


def test_drift_figure_and_table(result):
    fig = drift_figure(result)
    for tr in fig.data:
        m = "ws" if tr.name == "Weighted sum" else "pcd"
        # distance to the point at the middle scale; its max is bounded by the drift
        assert min(tr.y) == 0.0
        assert max(tr.y) <= result["methods"][m]["drift"] + 1e-12
        assert tr.line.color == method_color(m)
        assert tr.line.dash == method_style(m)["dash"] and tr.marker.symbol == method_style(m)["symbol"]
    t = drift_table(result).set_index("method")
    assert t.loc["Weighted sum", "drift (operating point)"] == pytest.approx(result["methods"]["ws"]["drift"])
    # WS slides along the front, PCD much less (here the scales stay above the normalizer's eps)
    assert t.loc["PCD", "drift (operating point)"] < 0.1 * t.loc["Weighted sum", "drift (operating point)"]


def test_eps_dominated_scales_are_open_markers_and_a_shaded_band():
    r = synthetic.scale(exponents=[-5, -4, -3, 0], methods=["pcd"], steps=100)
    assert r["scale_free"] == [False, False, True, True]
    fig = sweep_figure(r)
    pcd = next(t for t in fig.data if t.name.startswith("PCD ("))
    assert list(pcd.marker.color)[:2] == ["white", "white"] and list(pcd.marker.color)[2] == method_color("pcd")
    d = drift_figure(r)
    band = d.layout.shapes[0]
    assert (band.x0, band.x1) == (-5.5, -3.5)
    assert "ε takes over (ε = 1e-08)" in d.layout.annotations[0].text
    assert list(d.layout.xaxis.ticktext) == ["10⁻⁵", "10⁻⁴", "10⁻³", "10⁰"]
    assert eps_window_text(r) == "10⁻³ … 10⁰ (3 orders)"
    assert power_label(-12) == "10⁻¹²" and power_label(7) == "10⁷"
