"""AppTest for the Basin maps page (issue 14, part 1): maps render with fractions, settings re-render,
bad input shows an error, the click link opens the toy page on that start."""
from __future__ import annotations

from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from pcd.studio import toy as toy_page
from tests.pages._apptest import figure_specs, tables

PAGE = str(Path(__file__).resolve().parents[2] / "pages" / "09_Basin_maps.py")


def _app(**query) -> AppTest:
    at = AppTest.from_file(PAGE, default_timeout=180)
    for k, v in query.items():
        at.query_params[k] = str(v)
    return at.run()


def _ok(at):
    assert not at.exception, at.exception
    assert not at.error, [e.value for e in at.error]


def test_default_view_and_a_changed_setting():
    at = _app(grid=25, steps=500)
    _ok(at)
    specs = figure_specs(at)  # the studio charts (pcd.ui.chart): presenter mode scales their type
    maps = [t["name"] for sp in specs for t in sp["data"] if t.get("name", "").startswith("map: ")]
    assert maps == [f"map: {m}" for m in ("pcd", "ws", "mgda", "pcgrad", "cagrad", "famo")]
    titles = " ".join(a["text"] for sp in specs for a in sp["layout"]["annotations"])
    assert "CMS" in titles and "%" in titles
    assert "conflict equilibrium" in " ".join(m.value for m in at.markdown)
    table = tables(at)[0]  # an HTML table: it wraps at 800 px
    assert set(table["method"]) >= {"PCD", "Weighted sum"} and abs(table["fraction"].sum() - 6) < 1e-9
    assert "python -m pcd basin --problem saddle2d --grid 25" in at.code[0].value
    at.multiselect(key="basin_methods").set_value(["pcd", "ws"]).run()
    _ok(at)
    specs = figure_specs(at)  # the studio charts (pcd.ui.chart): presenter mode scales their type
    assert [t["name"] for sp in specs for t in sp["data"] if t.get("name", "").startswith("map: ")] == \
        ["map: pcd", "map: ws"]


def test_custom_formula_and_bad_formula():
    at = _app(problem="custom", f1="(x-1)**2 + y**2", f2="(x+1)**2 + y**2", grid=25, steps=200, methods="ws")
    _ok(at)
    at = _app(problem="custom", f1="x+++", f2="y", grid=25, steps=200, methods="ws")
    assert not at.exception and at.error


def test_toy_link_opens_one_start():
    q = toy_page.toy_query("saddle2d", "ws", [-2.5, 0.4], tau=0.02, optimizer="adam", lr=0.02, steps=1000)
    assert q == {"problem": "saddle2d", "methods": "ws", "tau": "0.02", "opt": "adam", "lr": "0.02", "steps": "1000",
                 "starts": "typed", "typed": "-2.500, 0.400"}
    toy = AppTest.from_file(str(Path(PAGE).parent / "02_Toy_landscapes.py"), default_timeout=180)
    for k, v in q.items():
        toy.query_params[k] = v
    toy.run()
    assert not toy.exception
    table = tables(toy)[0]  # the endpoint table (an HTML table: it wraps, never cuts)
    assert len(table) == 1 and table.iloc[0]["method"] in ("WS", "Weighted sum")
    with pytest.raises(ValueError, match="toy page offers"):
        toy_page.toy_query("saddle2d", "ws", [0, 0], tau=0.1, optimizer="adam", lr=0.03, steps=1000)
