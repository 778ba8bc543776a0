"""Scale-invariance figures: operating points per method and scale, highlight, drift."""
from __future__ import annotations

import numpy as np
import pytest

from pcd.experiments import synthetic
from pcd.viz.scale import drift_figure, drift_table, sweep_figure
from pcd.viz.theme import method_color


@pytest.fixture(scope="module")
def result():
    return synthetic.scale(exponents=[-2, 0, 2, 4], methods=["ws", "pcd"], steps=300)


def test_sweep_figure_points_and_highlight(result):
    fig = sweep_figure(result, current=2)
    ws = next(t for t in fig.data if t.name.startswith("Weighted sum ("))
    np.testing.assert_allclose(np.c_[ws.x, ws.y], result["methods"]["ws"]["endpoints"])
    assert ws.marker.color == method_color("ws")
    assert list(ws.text) == ["-2", "0", "2", "4"]
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
        P = np.asarray(result["methods"][m]["endpoints"])
        # distance to the point at the middle scale; its max is bounded by the drift
        assert min(tr.y) == 0.0
        assert max(tr.y) <= result["methods"][m]["drift"] + 1e-12
        assert tr.line.color == method_color(m)
    t = drift_table(result).set_index("method")
    assert t.loc["Weighted sum", "drift (operating point)"] == pytest.approx(result["methods"]["ws"]["drift"])
    # WS slides along the front, PCD much less (here the scales stay above the normalizer's eps)
    assert t.loc["PCD", "drift (operating point)"] < 0.1 * t.loc["Weighted sum", "drift (operating point)"]
