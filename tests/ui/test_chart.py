"""The studio charts (pcd.ui.chart): the vendored Plotly.js basic bundle matches the Plotly.js the
Python package ships (same version, so a figure built by plotly.py draws the same), covers every
figure pages 00-05 draw, and a figure it cannot draw goes to st.plotly_chart unchanged; the click
event has st.plotly_chart's selection shape. (The browser tests draw, click and animate them.)"""
from __future__ import annotations

import json
import re
from pathlib import Path

import plotly
import plotly.graph_objects as go
import pytest
from streamlit.testing.v1 import AppTest

from pcd.ui import chart
from tests.pages._apptest import component_names, figure_specs

ROOT = Path(__file__).resolve().parents[2]


def _version(js_head: str) -> str:
    m = re.search(r"plotly\.js(?: \((?:basic|cartesian) - minified\))? v(\d+\.\d+\.\d+)", js_head)
    assert m, js_head[:200]
    return m.group(1)


def test_bundle_is_plotly_basic_of_the_python_packages_plotly_js_version():
    head = chart.BUNDLE.read_text(encoding="utf-8")[:400]
    assert "basic" in head
    full = Path(plotly.__file__).parent / "package_data" / "plotly.min.js"
    assert _version(head) == _version(full.read_text(encoding="utf-8")[:400])
    assert chart.BUNDLE.stat().st_size < 2_000_000  # the point of it: a fraction of the full 4.7 MB
    assert (ROOT / "static" / "plotly-basic.LICENSE").read_text().startswith("MIT License")


def test_static_serving_is_on_in_the_apps_config():
    cfg = (ROOT / ".streamlit" / "config.toml").read_text()
    assert re.search(r"^enableStaticServing\s*=\s*true", cfg, re.M)
    assert chart.BUNDLE == ROOT / "static" / chart.BUNDLE_URL.rsplit("/", 1)[-1]


def test_cartesian_bundle_is_the_same_plotly_js_version():
    head = chart.CARTESIAN.read_text(encoding="utf-8")[:400]
    assert "cartesian" in head
    full = Path(plotly.__file__).parent / "package_data" / "plotly.min.js"
    assert _version(head) == _version(full.read_text(encoding="utf-8")[:400])
    assert chart.CARTESIAN.stat().st_size < 2_000_000
    assert (ROOT / "static" / "plotly-cartesian.LICENSE").read_text().startswith("MIT License")
    assert chart.CARTESIAN == ROOT / "static" / chart.CARTESIAN_URL.rsplit("/", 1)[-1]


def test_bundle_for_picks_the_smallest_bundle():
    assert chart.bundle_for(go.Figure([go.Scatter(y=[1]), go.Bar(y=[1])])) == "basic"
    assert chart.bundle_for(go.Figure([go.Scatter(y=[1]), go.Box(y=[1, 2])])) == "cartesian"
    assert chart.bundle_for(go.Figure(go.Contour(z=[[1, 2], [3, 4]]))) == "cartesian"
    assert chart.bundle_for(go.Figure([go.Heatmap(z=[[1]]), go.Scattergl(y=[1])])) is None
    assert chart.bundle_for(go.Figure(go.Table(cells=dict(values=[[1]])))) is None


def test_an_empty_figure_needs_only_the_basic_bundle():
    assert chart.bundle_for(go.Figure()) == "basic"
    assert chart.bundle_for(go.Figure([go.Scatter(y=[1]), go.Heatmap(z=[[1, 2]])])) == "cartesian"


_SCRIPT = """
import plotly.graph_objects as go
from pcd.ui.chart import plotly_chart
plotly_chart(go.Figure(go.Scatter(x=[1, 2, 3], y=[3, 1, 2], customdata=[[1, 2], [3, 4], [5, 6]]),
                       layout=dict(height=321)), key="line", click=True)
plotly_chart(go.Figure(go.Heatmap(z=[[1, 2], [3, 4]])), key="heat")
plotly_chart(go.Figure(go.Scattergl(y=[1, 2])), key="gl")
"""


@pytest.fixture()
def app(tmp_path):
    path = tmp_path / "page.py"
    path.write_text(_SCRIPT)
    return AppTest.from_file(str(path), default_timeout=60).run()


def test_scatter_to_the_basic_bundle_a_heatmap_to_the_cartesian_webgl_to_st_plotly_chart(app):
    assert not app.exception
    ours = [e for e in app.get("bidi_component") if str(e.proto.component_name).endswith("pcd_plotly")]
    assert len(ours) == 2 and component_names(app) == []
    payload, heat = (json.loads(e.proto.json) for e in ours)
    assert payload["height"] == 321 and payload["click"] is True and payload["config"]["displaylogo"] is False
    fig = json.loads(payload["spec"])
    assert fig["data"][0]["type"] == "scatter"
    # the bundle's URL (static serving is on in the app's config), Streamlit's chunk as the fallback
    assert payload["src"] == chart.BUNDLE_URL and payload["chunk"].startswith("PlotlyChart.")
    assert heat["src"] == chart.CARTESIAN_URL and json.loads(heat["spec"])["data"][0]["type"] == "heatmap"
    assert len(app.get("plotly_chart")) == 1  # the WebGL scatter, drawn by Streamlit's full Plotly.js
    assert figure_specs(app)[0]["data"][0]["y"] is not None


def test_click_sends_st_plotly_chart_selection_fields():
    """The pages read st.session_state[key]["selection"]["points"][i][field] for these fields
    (pages 02 and 05); the browser tests click and check the result."""
    js = re.sub(r"\s", "", chart._CHART_JS)
    assert "setStateValue('selection',{points:pts,point_indices:" in js
    for key in ("x", "y", "curve_number", "point_number", "point_index", "customdata"):
        assert re.search(r"[{,]" + key + ":", js), key


def test_click_anywhere_sends_the_plot_areas_point_and_bad_values_are_refused():
    js = re.sub(r"\s", "", chart._CHART_JS)
    assert "s.data.click!=='anywhere'" in js and "xa.p2l(px)" in js  # pixel -> data of the main axes
    with pytest.raises(ValueError, match="click must be"):
        chart.plotly_chart(go.Figure(), key="k", click="somewhere")


def test_bundle_src_needs_static_serving(monkeypatch):
    import streamlit as st

    monkeypatch.setattr(st, "get_option", lambda name: True)
    assert chart.bundle_src() == chart.BUNDLE_URL
    monkeypatch.setattr(st, "get_option", lambda name: False)
    assert chart.bundle_src() is None
    monkeypatch.setattr(st, "get_option", lambda name: True)
    monkeypatch.setattr(chart, "BUNDLE", ROOT / "static" / "missing.js")
    assert chart.bundle_src() is None
    assert chart.bundle_src("cartesian") == chart.CARTESIAN_URL
    monkeypatch.setattr(chart, "CARTESIAN", ROOT / "static" / "missing.js")
    assert chart.bundle_src("cartesian") is None


def test_present_fonts_scales_the_layouts_type_not_the_annotations():
    """Presenter mode for a chart Streamlit draws (WebGL: the basin maps): the axes', titles' and
    legend's type and the subplot titles PRESENT_FIT["font"] times larger, the labels on the data
    (laid out for their sizes) and the figure itself unchanged."""
    import plotly.graph_objects as go

    from pcd.ui.chart import PRESENT_FIT, present_fonts

    fig = go.Figure(go.Scattergl(x=[1, 2], y=[3, 4]), layout=dict(
        font=dict(size=14), xaxis=dict(tickfont=dict(size=11), title=dict(text="x", font=dict(size=13))),
        annotations=[dict(text="label", font=dict(size=12), x=1, y=3),
                     dict(text="subplot title", font=dict(size=14), x=0.5, y=1, xref="paper", yref="paper")]))
    k = PRESENT_FIT["font"]
    out = present_fonts(fig, k)
    assert out.layout.font.size == pytest.approx(14 * k) and out.layout.xaxis.tickfont.size == pytest.approx(11 * k)
    assert out.layout.xaxis.title.font.size == pytest.approx(13 * k)
    assert out.layout.annotations[0].font.size == 12 and fig.layout.font.size == 14  # the original untouched
    assert out.layout.annotations[1].font.size == pytest.approx(14 * k)  # a title on the paper grows
    assert present_fonts(go.Figure(), k).layout.font.size == pytest.approx(12 * k)  # Plotly's default 12 px
