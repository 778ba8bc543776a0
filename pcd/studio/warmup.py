"""The server warm-up: imports what the pages need and fills their caches with their default views,
once per server process, in a background thread.

Why: a page's first visitor would otherwise pay, on top of the page's own work, the first imports
(pandas, pyarrow, Plotly's figure classes, numba and its compiled kernels) and the
page's default computation (the K-objective benchmark's 21 runs of 800 steps take ~2.5 s of CPU).
After every page's default view, each page's ``warm_later()`` runs (the K-objective page's every step
budget: a change of the budget at its default view is then a lookup).
:func:`start` (called by ``app.py``, the entry script of every page) runs :func:`warm_up` once per
process in a background thread: it imports those modules and, for every page of the registry
(:data:`pcd.studio.registry.PAGES`), calls its module's ``warm()`` -- the *same* cached functions
the page calls, with the page's default settings -- so the first visitor of a page is served from
the cache. Results are exactly the ones the page would compute (``st.cache_data`` returns a copy of
the function's own result); nothing is stored across server restarts. ``PCD_NO_WARMUP=1`` turns
the warm-up off.
"""
from __future__ import annotations

import importlib
import logging
import os
import sys
import threading
import time
from collections.abc import Callable
from typing import Any

import streamlit as st

from pcd.experiments import synthetic
from pcd.studio import registry

_LOG = logging.getLogger(__name__)


# ---- the warm-up --------------------------------------------------------------------------------------
# What Plotly uses only if it is in sys.modules already (see start): never imported by the thread.
PEEKED_BY_PLOTLY = ("numpy", "pandas", "PIL.Image")
# What a page's first run imports on top of what app.py has imported (measured with sys.modules);
# only modules of the product's dependencies (orjson, which Plotly uses when it is there, is not one:
# listed, it failed the whole step on every install without it)
IMPORTS = ("pandas", "pyarrow", "PIL.Image", "narwhals",
           "plotly.graph_objects", "plotly.io", "streamlit.elements.arrow", "streamlit.dataframe_util",
           "pcd.engine", "pcd.ui.controls", "pcd.ui.table",
           "pcd.viz.geometry", "pcd.viz.kbench", "pcd.viz.scale", "pcd.viz.tau", "pcd.viz.landscape",
           "pcd.viz.toy")


def _imports() -> None:
    """Import :data:`IMPORTS`, each on its own: one that fails is logged and the others still load."""
    failed = []
    for name in IMPORTS:
        try:
            importlib.import_module(name)
        except Exception as exc:  # a warm-up never stops the server
            failed.append(f"{name} ({exc})")
    if failed:
        raise ImportError("could not import " + ", ".join(failed))


def _first_use() -> None:
    """Code paths whose first call is slow: Plotly's default template (imports every trace class),
    and a DataFrame through Streamlit's Arrow conversion (the data grids of pages 06-09)."""
    import pandas as pd
    import plotly.graph_objects as go
    from streamlit import dataframe_util

    go.Figure(go.Scatter(x=[0, 1], y=[0, 1])).to_plotly_json()
    df = pd.DataFrame({"a": [1.0, 2.0], "b": ["x", "y"]})
    dataframe_util.convert_pandas_df_to_arrow_bytes(df)


def _numba_kernels() -> None:
    """numba and the engine's compiled end-point kernels (loaded from numba's on-disk cache; the
    first run on a machine compiles them): the toy and basin pages' fast path."""
    from pcd import _kernels
    from pcd.engine import run

    if _kernels.AVAILABLE:
        run("saddle2d", list(synthetic.TOY_METHODS), steps=2, record=[2])


def _defaults() -> list[tuple[str, Callable[[], Any]]]:
    """Every registered page's default view: the ``warm()`` of its module (:mod:`pcd.studio.registry`),
    in menu order (the constraints page, the most expensive, comes after the cheap ones)."""
    out: list[tuple[str, Callable[[], Any]]] = []
    for page in registry.PAGES:
        if page.module is None:
            continue
        try:
            mod = importlib.import_module(f"pcd.studio.{page.module}")
        except Exception:  # that page computes its own view; the others are still warmed
            _LOG.warning("warm-up: page module %r failed to import", page.module, exc_info=True)
            continue
        warm = getattr(mod, "warm", None)
        if callable(warm):
            out.append((page.title, warm))
    return out


def _later(titles: set[str]) -> list[tuple[str, Callable[[], Any]]]:
    """The second parts, run after every page's default view: the ``warm_later()`` of the page modules
    warmed (``titles``), e.g. the K-objective page's every step budget, in menu order."""
    out: list[tuple[str, Callable[[], Any]]] = []
    for page in registry.PAGES:
        if page.title not in titles:
            continue
        mod = sys.modules.get(f"pcd.studio.{page.module}") if page.module else None
        later = getattr(mod, "warm_later", None)
        if callable(later):
            out.append((f"{page.title}: later", later))
    return out


def warm_up() -> dict[str, float]:
    """Import what the pages need and compute their default views into the caches; returns the
    seconds each part took (a part that fails is logged and skipped: the page then computes it)."""
    took: dict[str, float] = {}
    parts: list[tuple[str, Callable[[], Any]]] = [("imports", _imports),
                                                  ("first use", _first_use)]
    defaults = _defaults()
    parts += defaults
    parts.append(("numba kernels", _numba_kernels))
    parts += _later({title for title, _ in defaults})
    for name, fn in parts:
        t = time.perf_counter()
        try:
            fn()
        except Exception:  # never take the server down: the page computes it itself
            _LOG.warning("warm-up step %r failed", name, exc_info=True)
        took[name] = time.perf_counter() - t
    _LOG.info("warm-up: %s", ", ".join(f"{k} {v:.2f} s" for k, v in took.items()))
    return took


@st.cache_resource(show_spinner=False)
def start() -> threading.Thread | None:
    """Start :func:`warm_up` in a daemon thread, once per server process (None when
    ``PCD_NO_WARMUP=1``)."""
    if os.environ.get("PCD_NO_WARMUP") == "1":
        return None
    # Modules that Plotly looks up in sys.modules without importing them (``get_module(name,
    # should_load=False)``) are imported here, before the thread starts: a page building a figure
    # while the thread is half-way through ``import pandas`` would otherwise be handed the partly
    # initialized module ("module 'pandas' has no attribute 'Series'", seen on a deep link opened
    # right after a server start). ~0.4 s, once per server process.
    for name in PEEKED_BY_PLOTLY:
        importlib.import_module(name)
    thread = threading.Thread(target=warm_up, name="pcd-warm-up", daemon=True)
    thread.start()
    return thread
