"""Page 03, K-objective benchmark: its defaults and its one cached run per (K, method)."""
from __future__ import annotations

from typing import Any

import streamlit as st

import pcd.methods as registry
from pcd.experiments import synthetic
from pcd.studio import available

KS = (2, 3, 5, 9, 17, 33, 65)
METHODS = ("pcd", "mgda", "ws")
# 800 Adam steps at lr 0.03 take PCD to an exactly zero residual at every K (measured; 600 leave ~1e-12).
STEPS, LR, TAU, OPT = 800, 0.03, 0.3, "adam"


@st.cache_data(show_spinner=False, max_entries=512)
def kbench_one(K: int, method: str, steps: int, lr: float, tau: float | None, opt: str) -> list[dict[str, Any]]:
    """One (K, method) run of the double well (one cache entry each, so changing the K range
    or adding a method runs only what is new). ``tau`` only for methods with a primary knob."""
    return synthetic.kdw(Ks=[K], methods=[method], steps=steps, lr=lr, optimizer=opt,
                         tau=tau if registry.get(method).primary_knob else None)


def kbench_tau(method: str, tau: float) -> float | None:
    """The τ a (K, method) entry is keyed by: τ for methods that have it, else None (one entry)."""
    return tau if registry.get(method).primary_knob else None


def law_table() -> Any:
    """The measured 1.536·√(K−1) law at the page's defaults (:func:`pcd.experiments.kdw_law.table`)."""
    from pcd.experiments import kdw_law

    return kdw_law.table()


def warm() -> None:
    """The page's default view."""
    for K in KS:
        for m in available(METHODS):
            kbench_one(K, m, STEPS, LR, kbench_tau(m, TAU), OPT)
