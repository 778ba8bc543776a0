"""Plotly.js preloading. The browser loads Plotly.js only when the first chart arrives, then spends
CPU evaluating it before it draws anything. Loading it as soon as the page starts overlaps that with
the server's run. Studio charts (:mod:`pcd.ui.chart`) use the basic bundle; pages that draw
``st.plotly_chart`` figures (heatmaps, contours: pages 06-09) import Streamlit's own chunk too (same
URL as the frontend's own import, so the frontend gets the module already evaluated). The scripts
are ``static/plotly_loader.js`` and ``static/preload.js``."""
from __future__ import annotations

import functools
import json
import threading
from pathlib import Path

import streamlit as st

from pcd.ui._assets import asset


@functools.cache
def plotly_chunk() -> str | None:
    """File name of the Streamlit frontend's Plotly.js chunk (``static/js/PlotlyChart.<hash>.js``,
    ~4.7 MB), None unless the installed Streamlit has exactly one."""
    found = sorted((Path(st.__file__).parent / "static" / "static" / "js").glob("PlotlyChart.*.js"))
    return found[0].name if len(found) == 1 else None


_preloaded = threading.local()  # set by preload_plotly in the router for this run; setup_page then skips it


def preload_plotly(now: bool = True, full: bool = False) -> None:
    """Let the browser fetch and evaluate the charts' Plotly.js while the page runs: the studio
    charts' basic bundle (:mod:`pcd.ui.chart`), or with ``full=True`` (a page whose figures are
    ``st.plotly_chart``'s) Streamlit's full chunk, the basic bundle then once the page is idle.
    ``now=False``: only once the page is idle (a page without charts whose visitor may open one next).

    The router (``app.py``) calls it before anything else of a run, ~0.15 s before the page's own
    first element; :func:`pcd.ui.setup_page` then does not emit it a second time (a page run on its
    own, e.g. under AppTest, still gets it from :func:`pcd.ui.setup_page`). One flag per script
    thread: a session's reruns run one after another on its thread."""
    _preloaded.done = True
    name = plotly_chunk() if full else None
    if name is not None:
        st.html(f"<script>{asset('preload.js')}\nwindow.__pcdImportChunk({json.dumps(name)});</script>",
                unsafe_allow_javascript=True)
    preload_charts(now and name is None)


def preload_charts(now: bool = True) -> None:
    """Start loading the studio charts' Plotly.js in the browser (``now=False``: once the page is
    idle). Renders nothing."""
    from pcd.ui.chart import bundle_src

    src, chunk = bundle_src(), plotly_chunk()
    if src is None and chunk is None:
        return
    # st.html, not a component: measured ~0.5 s earlier (the component chunk mounts later)
    call = f"window.__pcdPreloadCharts({json.dumps(src)}, {json.dumps(chunk)}, {json.dumps(bool(now))});"
    st.html(f"<script>{asset('plotly_loader.js')}\n{asset('preload.js')}\n{call}</script>", unsafe_allow_javascript=True)


def preload_for_page(now: bool = True, full: bool = False) -> None:
    """:func:`preload_plotly` for a page's set-up, unless the router has emitted it for this run
    already (the flag is cleared: the next run starts afresh)."""
    if not getattr(_preloaded, "done", False):
        preload_plotly(now=now, full=full)
    _preloaded.done = False
