"""Lecturer controls for the Plotly figures of the pages (presentation only, no math).

Two small Streamlit components (``st.components.v2``: HTML/CSS/JS from ``pcd/ui/static/``
(``player.*``, ``vector_drag.js``, ``scroll_to_top.js``), no build step, no iframe) that act on a chart already on the page (:func:`pcd.ui.chart.plotly_chart` or
``st.plotly_chart``), found by its widget key:

* :func:`frame_controls` -- reset / step back / play-pause / step forward, a speed control and the
  current step, driving the chart's own animation frames (``Plotly.animate``) in the browser, plus
  a cursor on a second chart (the loss plot) that follows the frame shown -- while playing,
  scrubbing the chart's slider or stepping. Keyboard: <- / -> step, Home resets.
* :func:`vector_drag` -- click or drag in a chart to move one of its vectors; the new tip is sent
  back to Python (one rerun when the mouse is released).

Both use the Plotly.js instance that drew the chart (``gd._pcdPlotly``, :mod:`pcd.ui.chart`; else
the one Streamlit loads for ``st.plotly_chart``, ``window.Plotly``) and the chart's own axes for
pixel -> data conversion; when it is not (yet) there, the buttons say so
instead of failing. Nothing runs on the server while stepping or playing.
"""
from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import streamlit as st

from pcd.ui._assets import asset

# the components' markup, style and scripts (pcd/ui/static/), read once
_PLAYER_HTML = asset("player.html")
_PLAYER_CSS = asset("player.css")
_PLAYER_JS = asset("player.js")
_DRAG_JS = asset("vector_drag.js")
_TOP_JS = asset("scroll_to_top.js")

_components: dict[str, Any] = {}


def _component(name: str) -> Any:
    if name not in _components:
        if name == "player":
            _components[name] = st.components.v2.component("pcd_frame_controls", html=_PLAYER_HTML,
                                                           css=_PLAYER_CSS, js=_PLAYER_JS)
        elif name == "top":
            _components[name] = st.components.v2.component("pcd_scroll_to_top", js=_TOP_JS)
        else:
            _components[name] = st.components.v2.component(
                "pcd_vector_drag", html="<div class='pcd-drag-hint'></div>", js=_DRAG_JS)
    return _components[name]


def frame_controls(chart_key: str, frames: Sequence[Any], frame_ms: int = 45, loss_key: str | None = None,
                   cursor_x: Sequence[float] | None = None, cursor_name: str = "step cursor",
                   keyboard: bool = True, key: str | None = None,
                   width_classes: Sequence[tuple[str, float | None]] | None = None,
                   width: str | None = None, follow: Sequence[str] = ()) -> str | None:
    """Reset / step back / play-pause / step forward and a speed control (¼× … 4×) for the
    animated ``st.plotly_chart`` with widget key ``chart_key`` whose frames are named ``frames``
    (in order). ``loss_key`` + ``cursor_x`` (one x per frame): the shapes named ``cursor_name`` of
    that second chart follow the frame shown (see :func:`pcd.viz.teaching.add_step_cursor`).
    A range input under the buttons scrubs to any frame (the chart needs no slider of its own).
    ``follow``: widget keys of more charts animated on frames of the same names (e.g. the toy page's
    objective-space panel): each shows the frame the controls show, ending included. A figure built
    to reveal its ending (end markers with ``meta="end"``, end labels named ``"end label"``,
    :func:`pcd.viz.landscape.landscape_figure` ``reveal=True``) shows them at the last frame only.

    ``width_classes = [("narrow", 700), ("wide", None)]`` (upper bounds in px, ``None`` = any):
    the component reports which class the page column's width falls in (one rerun when it differs
    from ``width``, the class the figure was laid out for); returns the last reported class.
    """
    names = [str(f) for f in frames]
    if cursor_x is not None and len(cursor_x) != len(names):
        raise ValueError(f"cursor_x needs one value per frame ({len(names)}), got {len(cursor_x)}")
    frame_ms = int(frame_ms)
    if frame_ms < 1:
        raise ValueError(f"frame_ms must be >= 1, got {frame_ms}")
    classes = [[str(n), None if w is None else float(w)] for n, w in (width_classes or [])]
    payload = {"target": str(chart_key), "frames": names, "ms": frame_ms, "loss": loss_key,
               "cursor_x": [float(v) for v in cursor_x] if cursor_x is not None else [],
               "cursor_name": cursor_name, "keys": bool(keyboard), "width_classes": classes or None,
               "width": width, "follow": [str(k) for k in follow]}
    key = key or f"{chart_key}-controls"
    _component("player")(data=payload, key=key, on_width_change=lambda: None)
    return reported_width(key)


def reported_width(key: str) -> str | None:
    """The width class last reported by the frame controls with widget key ``key`` (or None)."""
    val: Any = st.session_state.get(key)
    try:
        got = val.get("width") if hasattr(val, "get") else getattr(val, "width", None)
    except Exception:  # a malformed value from the browser is ignored
        return None
    return str(got) if isinstance(got, str) else None


def vector_drag(chart_key: str, vectors: Sequence[dict], on_drop: Callable[[dict], None] | None = None,
                key: str | None = None) -> None:
    """Click or drag in the chart ``chart_key`` to move the nearest of ``vectors``
    (``[{"name", "tip": [x, y], "trace": index of its line trace or None}]``; the line follows the
    mouse while dragging). On release, ``on_drop({"name", "x", "y", "n"})`` runs as the widget
    callback of the next rerun (``n``: a timestamp), so it may set other widgets' session state.
    The chart's own zoom-drag is suppressed inside the plot area."""
    vecs = [{"name": str(v["name"]), "tip": [float(v["tip"][0]), float(v["tip"][1])],
             "trace": None if v.get("trace") is None else int(v["trace"])} for v in vectors]
    if not vecs:
        raise ValueError("vector_drag needs at least one vector")
    key = key or f"{chart_key}-drag"

    def _changed() -> None:
        val: Any = st.session_state.get(key)
        tip = val.get("tip") if isinstance(val, dict) or hasattr(val, "get") else getattr(val, "tip", None)
        if isinstance(tip, dict) and on_drop is not None:
            try:
                on_drop(tip)
            except (KeyError, TypeError, ValueError):
                pass  # a malformed event from the browser is ignored, never raised

    _component("drag")(data={"target": str(chart_key), "vectors": vecs}, key=key, on_tip_change=_changed)


def scroll_to_top(token: str, key: str = "pcd-scroll-top") -> None:
    """Scroll the page to its top whenever ``token`` changes (e.g. a lesson's step), not on the
    first load. Renders nothing."""
    _component("top")(data={"token": str(token)}, key=key)
