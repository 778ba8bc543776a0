"""Page 06, Jacobian descent: its defaults and cached computations (property table, IWRM)."""
from __future__ import annotations

from typing import Any

import streamlit as st

import pcd.methods as registry

# re-exported for the page: what it shows from the experiment as it is
from pcd.experiments.jd import (  # noqa: F401
    IWRM_DEFAULT_METHODS,
    iwrm_rows,
    measure_gramian_memory,
    memory_rows,
    property_rows,
    torchjd_available,
)

SAMPLES, TAU, SEED = 4, 0.02, 0  # the property table: every method, 4 Jacobians per family and K


@st.cache_data(show_spinner="checking every method on sampled Jacobians…", max_entries=32)
def jd_properties(methods: tuple[str, ...], samples: int, tau: float, seed: int) -> dict:
    """Every method's aggregator properties on sampled Jacobians (:func:`pcd.experiments.jd.property_table`)."""
    from pcd.experiments import jd

    return jd.property_table(list(methods), samples=samples, tau=tau, seed=seed)


def warm() -> None:
    """The page's default view (the property table)."""
    jd_properties(tuple(registry.available()), SAMPLES, TAU, SEED)


@st.cache_data(show_spinner=False, max_entries=16)
def iwrm(methods: tuple[str, ...], seeds: int, steps: int, batch: int, lr: float, tau: float,
         _progress: Any = None) -> dict:
    """Instance-wise risk minimization (:func:`pcd.experiments.jd.run_iwrm`) for those settings."""
    from pcd.experiments import jd

    cfg = jd.IWRMConfig(methods=methods, seeds=tuple(range(seeds)), steps=steps, batch_size=batch, lr=lr, tau=tau,
                        eval_every=max(1, steps // 12))
    return jd.run_iwrm(cfg, progress=_progress)
