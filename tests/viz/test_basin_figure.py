"""The basin-map figure builder: one heatmap per method, hover/click markers, fractions in titles."""
from __future__ import annotations

import numpy as np
import pytest

from pcd.experiments.basin import basin
from pcd.viz.basin import OUTCOME_COLORS, basin_figure, fractions_text


@pytest.fixture(scope="module")
def res():
    return basin("saddle2d", ["pcd", "ws", "mgda"], grid=8, steps=400)


def test_one_map_per_method_with_hover_markers(res):
    fig = basin_figure(res, optima=[[2.0, 0.0]])
    maps = [t for t in fig.data if t.name and t.name.startswith("map: ")]
    starts = [t for t in fig.data if t.name and t.name.startswith("starts: ")]
    assert [t.name for t in maps] == ["map: pcd", "map: ws", "map: mgda"]
    assert len(starts) == 3 and len(starts[1].x) == 64
    ws = res.index("ws")
    np.testing.assert_allclose(np.asarray(starts[1].customdata), np.round(res.ends[ws], 3))
    assert res.start_index(starts[1].x[5], starts[1].y[5]) == 5
    z = np.asarray(maps[1].z)
    assert z.shape == (8, 8)
    titles = [a.text for a in fig.layout.annotations]
    assert any(fractions_text(res.fractions("ws")) in t for t in titles)
    keys = [t for t in fig.data if t.type == "scatter" and t.showlegend is not False and t.name != "CMS point"]
    assert [t.marker.color for t in keys] == list(OUTCOME_COLORS.values())


def test_subset_and_errors(res):
    fig = basin_figure(res, methods=["ws"], hover=False)
    assert [t.name for t in fig.data if t.name and t.name.startswith(("map", "starts"))] == ["map: ws"]
    with pytest.raises(ValueError, match="not in this basin map"):
        basin_figure(res, methods=["famo"])
    with pytest.raises(ValueError, match="columns"):
        basin_figure(res, columns=0)


def test_fractions_text():
    assert fractions_text({"cms": 0.5, "moving": 0.5}) == "CMS 50 % · moving 50 %"
