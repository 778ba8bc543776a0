"""Direct manipulation of a trajectory map (presentation only, no math): drag a start point, or move
a slider, and the paths redraw while you do it.

:func:`live_map` is a small Streamlit component (``st.components.v2``, no iframe; its JavaScript is
``pcd/ui/static/toy_live.js``) that attaches to a map already on the page (:func:`pcd.ui.chart.plotly_chart`,
found by its widget key) and to the page's own τ / learning-rate sliders (found by their keys; they stay
the one control of each value, with their URL state, keyboard use and ``?hide=``):

* a drag of a start marker moves it at once in the browser and sends ``{"kind": "start", "s", "x", "y",
  "tau", "lr", "seq"}`` as the component's ``req`` state; a move of a slider sends ``{"kind": "tau" |
  "lr", ...}``. At most ONE request is in flight: a newer one waits (only the latest) until the answer
  arrives, so a slow server is never handed a queue of stale positions;
* the page answers in the next run with ``answer={"seq", "kind", "s", "methods", "record", "x", "y"}``
  (or ``{"seq", "error"}``), which the component restyles into the map's path traces, end markers
  and heads; with ``"ox", "oy"`` (the same points' losses as the objective-space panel plots them)
  also into that panel's paths, end markers and current points (``objective_key``: its chart's key).
  The end labels of both (annotations named ``"end label"``: verdicts that only a full run computes)
  are hidden from the first redraw until the page draws the committed figure -- or, when the page
  draws no new one (nothing changed), shown again once it is idle;
* on release of a drag, ``{"s", "x", "y", "n"}`` arrives as the ``drop`` state and ``on_drop`` runs
  as the widget callback (it may set other widgets' session state, e.g. switch the starts to typed).

Drawn inside an ``@st.fragment``, a request reruns the fragment only (not the page). The browser keeps
a count of redraws in ``window.__pcdLiveRedraws`` and their timings in ``window.__pcdLiveLog``.
"""
from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

import streamlit as st

from pcd.ui._assets import asset

_component: list[Any] = []


def _live_component() -> Any:
    if not _component:
        _component.append(st.components.v2.component("pcd_live_map", html="<div class='pcd-live'></div>",
                                                     js=asset("toy_live.js")))
    return _component[0]


def live_value(key: str, name: str) -> Any:
    """The component's last ``name`` state (``"req"`` or ``"drop"``) in session state, or None."""
    val: Any = st.session_state.get(key)
    try:
        return val.get(name) if hasattr(val, "get") else getattr(val, name, None)
    except Exception:  # a malformed value from the browser
        return None


def live_map(chart_key: str, methods: Sequence[str], *, tau: float, lr: float, trail: int,
             sliders: Mapping[str, str] | None = None, answer: dict | None = None, key: str = "live",
             on_drop: Callable[[], None] | None = None, objective_key: str | None = None) -> None:
    """Attach direct manipulation to the map with widget key ``chart_key`` whose paths are those of
    ``methods`` (in the figure's order; ``trail``: the heads' tail length, :data:`pcd.viz.landscape.TRAIL`).
    ``tau`` / ``lr``: the values the map was drawn with (sent when a slider is not on the page);
    ``sliders``: ``{"tau": widget key, "lr": widget key}`` of the sliders to follow while they move;
    ``answer``: the reply to the last request (module docstring), None when there is none to send;
    ``objective_key``: the widget key of the objective-space panel drawn from the same runs (its
    ``"ox"/"oy"`` points are restyled there), None when there is none."""
    if trail < 1:
        raise ValueError(f"trail must be >= 1, got {trail}")
    drawn = {"tau": tau, "lr": lr}
    if any(st.session_state.get(w, drawn.get(k)) != drawn.get(k) for k, w in (sliders or {}).items()):
        # a slider's release reached the server with a live (fragment) run -- the browser sends every
        # widget value with each rerun request --: the page has not run with it yet. Run it now, or the
        # slider would show a value that the map, the URL and the table never got.
        st.rerun(scope="app")
    data = {"target": str(chart_key), "methods": [str(m) for m in methods], "tau": float(tau), "lr": float(lr),
            "trail": int(trail), "sliders": {str(k): str(v) for k, v in (sliders or {}).items()}, "answer": answer,
            "objective": None if objective_key is None else str(objective_key)}
    _live_component()(data=data, key=key, on_req_change=lambda: None, on_drop_change=on_drop or (lambda: None))
