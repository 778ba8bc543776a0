"""Plotly figures on the studio pages, drawn with Plotly.js's *basic* bundle (presentation only).

Why not ``st.plotly_chart``: Streamlit's chart loads the full Plotly.js (a 4.7 MB chunk with every
trace type, maps and WebGL), and evaluating it costs the browser ~1 s of CPU on the 2-core dev
machine before the first figure can be drawn -- the largest single part of a page's first load.
The studio's pages 00-05 draw only scatter/line figures (plus layout images, shapes, annotations
and animation frames), which the partial bundle ``plotly.js-basic`` (scatter, bar, pie; 1.2 MB,
~0.3 s to evaluate; same Plotly.js version) covers. :func:`plotly_chart` draws a figure with it in
a small Streamlit component (``st.components.v2``, no iframe, no build step; its JavaScript and CSS
are ``pcd/ui/static/chart.js``, ``plotly_loader.js`` and ``chart.css``):

* width = the column's width (as ``st.plotly_chart``), height = ``layout.height`` (450 if unset),
  reserved before Plotly.js arrives (no layout shift); a chart below the window is first drawn when
  it scrolls near or the browser is idle (the charts in view come first); redrawn with ``Plotly.react`` when the
  figure changes (zoom and legend clicks kept where the figure allows), frames replaced; the first
  draw leaves the animation frames out and adds them once the browser is idle (the figure shows sooner);
* ``click=True``: a click on a data point (``click="anywhere"``: anywhere in the plot area) is sent back as ``{"selection": {"points": [{x, y,
  curve_number, point_number, point_index, customdata}], ...}}`` -- the shape of
  ``st.plotly_chart(on_select="rerun", selection_mode="points")``'s event, read the same way
  (``st.session_state[key]["selection"]["points"]``), one rerun per click;
* a full-screen button in the toolbar (as ``st.plotly_chart``'s): the figure takes the screen, Esc
  gives it its column back;
* a figure with a box plot, a heatmap or a contour (no WebGL) is drawn with the *cartesian* bundle
  (``static/plotly-cartesian.min.js``, 1.5 MB, same version), loaded only when such a figure is on
  the page (:func:`bundle_for` picks the smallest bundle); a figure with another trace type
  (WebGL, tables, maps) is handed to ``st.plotly_chart`` unchanged (same look: ``theme=None``; in presenter
  mode with the same larger type, :func:`present_fonts`).

The bundle is served by Streamlit's static file serving (``static/plotly-basic.min.js`` next to
``app.py``; ``server.enableStaticServing = true`` in ``.streamlit/config.toml``). When it cannot be
fetched (static serving off, file missing) the component falls back to Streamlit's own full
Plotly.js chunk, so a figure is always drawn. The instance that drew a chart is kept on its graph
div (``gd._pcdPlotly``): the lecturer controls (:mod:`pcd.ui.controls`) animate it with that one.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any

import streamlit as st

from pcd.ui._assets import asset
from pcd.ui.page import chart_drawn, fragment_rerun
from pcd.ui.preload import plotly_chunk
from pcd.ui.presenter import presenter_mode
from pcd.viz.labels import PRESENT_TEXT_SCALE

# plotly.js-basic-dist-min 4.1.1 (MIT; Python plotly 6.x / Streamlit 1.67 ship Plotly.js 4.1.x)
BUNDLE = Path(__file__).resolve().parents[2] / "static" / "plotly-basic.min.js"
BUNDLE_URL = "app/static/plotly-basic.min.js"  # relative to the app's base URL
BASIC_TRACES = frozenset({"scatter", "bar", "pie"})  # the trace types plotly.js-basic registers
# plotly.js-cartesian-dist-min 4.1.1 (MIT, 1.5 MB): for a figure with a box plot or a heatmap
# (~0.3 s more than the basic bundle to load and evaluate, ~0.6 s less than Streamlit's chunk)
CARTESIAN = BUNDLE.parent / "plotly-cartesian.min.js"
CARTESIAN_URL = "app/static/plotly-cartesian.min.js"
CARTESIAN_TRACES = frozenset({"bar", "box", "contour", "heatmap", "histogram", "histogram2d", "histogram2dcontour",
                              "image", "pie", "scatter", "scatterternary", "violin"})
DEFAULT_HEIGHT = 450  # px, st.plotly_chart's default when the layout has no height
# presenter mode: a figure up to 1.6 times too tall for the window less `room` px (header, title, settings
# drawer; `player` px more for an animated figure's controls) is drawn to fit it; its fonts are scaled by `font` (static/chart.js: fitHeight, presentFonts)
PRESENT_FIT = {"room": 190, "player": 90, "font": PRESENT_TEXT_SCALE}

# The component's JavaScript and CSS (pcd/ui/static/): plotly_loader.js is the one Plotly.js loader
# per browser page (the router's preload and every chart share it: fetch and evaluate the bundle once,
# keep it as window.__pcdPlotly and give window.Plotly back to whoever had it); chart.js draws.
LOADER_JS = asset("plotly_loader.js")
_CHART_JS = LOADER_JS + asset("chart.js")
_CSS = asset("chart.css")

_component: list[Any] = []


def _chart_component() -> Any:
    if not _component:
        _component.append(st.components.v2.component("pcd_plotly", css=_CSS, js=_CHART_JS, isolate_styles=False))
    return _component[0]


def _types(fig: Any) -> set[str]:
    from pcd.viz.theme import FrozenFigure

    if isinstance(fig, FrozenFigure):
        return set(fig.trace_types)
    return {getattr(t, "type", None) or "scatter" for t in fig.data}


def bundle_for(fig: Any) -> str | None:
    """The smallest bundle that draws every trace of ``fig``: ``"basic"``, ``"cartesian"``, or
    None (WebGL, tables, maps...: ``st.plotly_chart`` with Streamlit's full Plotly.js)."""
    types = _types(fig)
    return "basic" if types <= BASIC_TRACES else "cartesian" if types <= CARTESIAN_TRACES else None


def bundle_src(bundle: str = "basic") -> str | None:
    """URL of a bundle (``"basic"`` or ``"cartesian"``) for the browser, None when Streamlit will not
    serve it (static serving off or the file missing): the charts then use Streamlit's full Plotly.js."""
    path, url = (BUNDLE, BUNDLE_URL) if bundle == "basic" else (CARTESIAN, CARTESIAN_URL)
    try:
        serving = bool(st.get_option("server.enableStaticServing"))
    except Exception:
        serving = False
    return url if serving and path.is_file() else None


def _scale_fonts(o: Any, k: float, depth: int = 0) -> None:
    if depth > 8:
        return
    if isinstance(o, list):
        for v in o:
            _scale_fonts(v, k, depth + 1)
    elif isinstance(o, dict):
        for name, v in o.items():
            if isinstance(v, dict) and name.lower().endswith("font") and isinstance(v.get("size"), (int, float)):
                v["size"] = round(v["size"] * k, 1)
            _scale_fonts(v, k, depth + 1)


def present_fonts(fig: Any, k: float) -> Any:
    """A copy of ``fig`` with every font of its layout (axes, titles, legend, the annotations placed
    on the paper such as subplot titles; not the labels placed on the data, laid out for their own
    sizes) ``k`` times larger: presenter mode's type for a chart Streamlit
    draws (``st.plotly_chart``: WebGL traces, tables) -- the rule ``static/chart.js`` (presentFonts)
    applies in the browser to the studio's own charts."""
    import plotly.graph_objects as go

    lay = fig.layout.to_plotly_json()
    anns = lay.pop("annotations", None)
    _scale_fonts(lay, float(k))
    for a in anns or []:  # placed on the paper (subplot titles): scaled; placed on the data (labels): as laid out
        if a.get("xref") == "paper" and a.get("yref") == "paper":
            _scale_fonts({"font": a.get("font")}, float(k))
    font = lay.setdefault("font", {})
    if not isinstance(font.get("size"), (int, float)):
        font["size"] = round(12 * float(k), 1)  # Plotly's default, 12 px
    if anns is not None:
        lay["annotations"] = anns
    return go.Figure(data=fig.data, layout=lay, frames=fig.frames, skip_invalid=True)


def _report_id() -> int:
    """A number new for each chart run that asks the browser to report its draw (chart.js reports once per number)."""
    n = int(st.session_state.get("_pcd_report_seq", 0)) + 1
    st.session_state["_pcd_report_seq"] = n
    return n


def plotly_chart(fig: Any, key: str, *, click: bool | str = False, config: dict | None = None,
                 report_drawn: bool = False) -> None:
    """Draw the Plotly figure ``fig`` (see the module docstring). ``key``: the widget key (the
    chart's container gets the class ``st-key-<key>``). ``click=True``: a click on a data point is
    sent back; ``click="anywhere"``: a click anywhere in the plot area (not a drag), as one point
    ``{x, y}`` in the main axes' units, the other fields None -- in both cases in
    ``st.session_state[key]["selection"]["points"]``. ``config``: Plotly's config (``displaylogo`` off).
    ``fig`` may be a :class:`pcd.viz.theme.FrozenFigure` (serialized once, sent as it is).
    ``report_drawn=True``: in a fragment's own rerun, the browser reports when it has drawn this figure
    (or could not, or waited ``chart.js``'s REPORT_MS for it), for :func:`pcd.ui.page.rest_of_page_follows`
    (``when_drawn``); in a run of the whole page nothing waits, and nothing is reported."""
    from pcd.viz.theme import FrozenFigure

    if click not in (False, True, "anywhere"):
        raise ValueError(f"click must be False, True or 'anywhere', got {click!r}")
    config = {"displaylogo": False, **(config or {})}
    bundle = bundle_for(fig)
    if bundle is None:
        if isinstance(fig, FrozenFigure):
            fig = fig.figure()
        if presenter_mode():
            fig = present_fonts(fig, PRESENT_FIT["font"])
        if click:
            st.plotly_chart(fig, theme=None, key=key, config=config, on_select="rerun", selection_mode="points")
        else:
            st.plotly_chart(fig, theme=None, key=key, config=config)
        return
    frozen = isinstance(fig, FrozenFigure)
    height = fig.height if frozen else fig.layout.height
    height = int(height) if height is not None and height >= 10 else DEFAULT_HEIGHT
    payload = {"spec": fig.spec if frozen else fig.to_json(), "height": height, "config": config, "click": click,
               "src": bundle_src(bundle), "chunk": plotly_chunk(), "present": PRESENT_FIT if presenter_mode() else None,
               "animated": bool(fig.frame_names if frozen else fig.frames), "report": _report_id() if report_drawn and fragment_rerun() else 0}
    _chart_component()(data=payload, key=key, on_selection_change=lambda: None,
                       on_drawn_change=lambda: chart_drawn(key))

