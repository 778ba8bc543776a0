"""Page 09, Basin maps: its choices, the computed maps shared by the sessions, its figures and table.
The learning rates and step budgets are the toy page's (:mod:`pcd.studio.toy`): a click on a start
opens it there."""
from __future__ import annotations

import math
from typing import Any

import numpy as np
import streamlit as st

from pcd.experiments.basin import BASIN_METHODS, basin, merge_basins
from pcd.studio.toy import make_problem

GRIDS = (25, 50, 100, 150, 200)
METHODS = tuple(BASIN_METHODS)
__all__ = ["GRIDS", "METHODS", "basin_table", "compute", "figure", "merge_basins"]  # merge_basins: the page joins its chunks
PROBLEM, TAU, OPT, LR, STEPS, GRID = "saddle2d", 0.02, "adam", 0.02, 1000, 100
DEFAULT_F1 = "(x**2-4)**2/4 + y**2/2"
DEFAULT_F2 = "relu(abs(x-2)-0.5) + relu(abs(y)-0.5)"


@st.cache_resource(show_spinner=False)
def _results() -> dict:
    """Computed basin maps by (settings, methods) (the last 48), shared by the sessions. Not an
    st.cache of the computation itself: that would replay the progress bar's calls on a cache hit."""
    return {}


def compute(settings: tuple, chunk: Any, progress: Any) -> Any:
    """The basin maps of the methods ``chunk`` for ``settings`` = (problem, f1, f2, tau, opt, lr,
    steps, grid), computed once and shared by the sessions."""
    store = _results()
    key = (settings, tuple(chunk))
    if key not in store:
        name, f1, f2, tau, opt, lr, steps, grid = settings
        prob = make_problem(name, f1, f2)
        store[key] = basin(prob, list(chunk), grid=grid, steps=steps, lr=lr, tau=tau, optimizer=opt, progress=progress)
        while len(store) > 48:
            store.pop(next(iter(store)))
    return store[key]


@st.cache_resource(show_spinner=False, max_entries=64)
def figure(key: Any, method: str, _res: Any, optima: Any) -> Any:
    """One method's basin map (a shared figure, never mutated)."""
    from pcd.viz.basin import basin_figure

    return basin_figure(_res, methods=[method], columns=1, optima=optima, legend=False, height=360)


def basin_table(res: Any) -> Any:
    """One row per (method, outcome) with a nonzero fraction: the fraction of starts and the median
    end point of those starts (where the map's colour leads to)."""
    import pandas as pd

    from pcd.experiments.basin import OUTCOME_LABELS
    from pcd.viz.theme import method_label

    rows = []
    for m, name in enumerate(res.methods):
        for k, frac in res.fractions(name).items():
            if frac <= 0:
                continue
            sel = np.asarray(res.outcome[m]) == k
            ends = np.asarray(res.ends[m])[sel]
            fin = ends[np.isfinite(ends).all(axis=1)]
            med = np.median(fin, axis=0) if len(fin) else [math.nan, math.nan]
            rows.append({"method": method_label(name), "outcome": OUTCOME_LABELS[k], "fraction": frac,
                         "median end x": float(med[0]), "median end y": float(med[1])})
    return pd.DataFrame(rows)
