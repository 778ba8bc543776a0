"""Page 04, Scale invariance: its defaults, the cached sweep and drift figure."""
from __future__ import annotations

from typing import Any

import streamlit as st

import pcd.methods as registry
from pcd.experiments import synthetic
from pcd.studio import available

METHODS = tuple(synthetic.SCALE_METHODS)
TAU, STEPS = 0.3, synthetic.SCALE_STEPS
EXPONENTS = tuple(synthetic.SCALE_EXPONENTS)  # the sweep's range: secondary x 10^k
PCD_EPS = float(next(p.default for p in registry.get("pcd").params if p.name == "eps"))


@st.cache_data(show_spinner=False, max_entries=64)
def scale_sweep(methods: tuple[str, ...], tau: float, eps: float, steps: int) -> dict[str, Any]:
    """The scale sweep (:func:`pcd.experiments.synthetic.scale`) with PCD's ε."""
    mp = {"pcd": {"eps": eps}} if "pcd" in methods else None
    return synthetic.scale(methods=list(methods), steps=steps, tau=tau, method_params=mp)


@st.cache_resource(show_spinner=False, max_entries=64)
def scale_drift_fig(methods: tuple[str, ...], tau: float, eps: float, steps: int) -> Any:
    """The page's drift figure (independent of the highlighted scale, so moving the highlight does not
    rebuild it: ~0.2 s; a shared figure, never mutated)."""
    from pcd.viz.scale import drift_figure

    return drift_figure(scale_sweep(methods, tau, eps, steps))


def warm() -> None:
    """The page's default view."""
    scale_drift_fig(tuple(available(METHODS)), TAU, PCD_EPS, STEPS)
