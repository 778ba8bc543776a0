"""K-objective benchmark figure: law line, log axes, colours, floor for exact zeros, table."""
from __future__ import annotations

import math

import numpy as np
import pytest

from pcd.experiments import synthetic
from pcd.viz.kbench import FLOOR_STEP, law, residual_figure, residual_table
from pcd.viz.theme import method_color, method_style


@pytest.fixture(scope="module")
def records():
    return synthetic.kdw(Ks=[2, 5, 9], methods=["pcd", "mgda"], steps=300, lr=0.03)


def test_law_values():
    assert math.isclose(float(law(2)), 1.536)
    np.testing.assert_allclose(law([5, 17]), [1.536 * 2, 1.536 * 4])
    with pytest.raises(ValueError):
        law(1)


def test_residual_figure_axes_law_and_colours(records):
    fig = residual_figure(records)
    assert fig.layout.xaxis.type == "log" and fig.layout.yaxis.type == "log"
    names = [t.name for t in fig.data]
    assert names[-1].startswith("law")  # drawn last, on top
    lawtr = fig.data[-1]
    np.testing.assert_allclose(lawtr.y, 1.536 * np.sqrt(np.asarray(lawtr.x) - 1))
    mg = next(t for t in fig.data if t.name == "MGDA")
    assert mg.line.color == method_color("mgda")
    # each method's dash and its family's marker (theme.method_style): MGDA square, PCD circle
    assert mg.line.dash == method_style("mgda")["dash"] and set(mg.marker.symbol) <= {"square", "square-open"}
    np.testing.assert_allclose(mg.y, law(mg.x), rtol=1e-3)  # MGDA sits on the law
    pc = next(t for t in fig.data if t.name == "PCD")
    assert np.all(np.asarray(pc.y) < 1e-2 * law(pc.x))
    assert list(fig.layout.xaxis.tickvals) == [2, 5, 9]


def test_exact_zero_drawn_at_floor_with_open_marker():
    recs = [{"K": 2, "method": "pcd", "primary_grad_norm": 0.0}, {"K": 3, "method": "pcd", "primary_grad_norm": 1e-3}]
    fig = residual_figure(recs, floor=1e-16)
    tr = next(t for t in fig.data if t.name == "PCD")
    assert tr.y[0] == pytest.approx(1e-16 * 10 ** -FLOOR_STEP) and tr.y[1] == 1e-3  # first row under the floor
    assert list(tr.marker.symbol) == ["circle-open", "circle"]
    # two methods at an exact zero: each on its own row below the floor, different symbols
    two = residual_figure(recs + [{"K": 2, "method": "ws", "primary_grad_norm": 0.0}], floor=1e-16)
    ws = next(t for t in two.data if t.name == "Weighted sum")
    assert ws.y[0] < tr.y[0] < 1e-16 and ws.marker.symbol[0] != tr.marker.symbol[0]
    with pytest.raises(ValueError):
        residual_figure([])
    with pytest.raises(ValueError):
        residual_figure([{"K": 2}])
    with pytest.raises(ValueError):
        residual_figure(recs, floor=0)


def test_residual_table(records):
    t = residual_table(records)
    assert list(t["K"]) == [2, 5, 9]
    assert set(t.columns) >= {"law 1.536·√(K−1)", "PCD", "MGDA"}
    np.testing.assert_allclose(t["MGDA"], t["law 1.536·√(K−1)"], rtol=1e-3)
