"""Page 05, τ dial: its defaults, problems, and cached sweeps, references, fronts and figures."""
from __future__ import annotations

from typing import Any

import numpy as np
import streamlit as st

import pcd.problems as problems
from pcd.experiments import synthetic

# the page's problems (keys of pcd.problems.NAMED; the menu shows each one's display_name)
PROBLEMS = ("quadratic", "saddle2d", "scale", "two_task")
PROBLEM, BUDGETS, LR, TAU = "quadratic", (100, 300, 1000), 0.02, 0.1
TAUS = (0.0, 0.005, 0.01, 0.02, 0.05, 0.1, 0.2, 0.3, 0.5, 0.7, 1.0)


@st.cache_data(show_spinner=False, max_entries=64)
def tau_sweep(problem: str, budgets: tuple[int, ...], lr: float) -> list[dict[str, Any]]:
    """Every τ of :data:`TAUS` in one batched run of max(budgets) steps; each budget is
    read off the same trajectories."""
    return synthetic.tau_sweep(problem, taus=list(TAUS), lr=lr, budgets=list(budgets))


@st.cache_data(show_spinner=False, max_entries=512)
def tau_reference(problem: str, method: str, steps: int, lr: float) -> dict[str, Any]:
    """Where one other method ends on the problem after ``steps`` (Adam, its defaults;
    :func:`pcd.experiments.synthetic.tau_references`), one cache entry per method."""
    return synthetic.tau_references(problem, [method], steps=steps, lr=lr)[method]


@st.cache_data(show_spinner=False, max_entries=32)
def tau_front(problem: str) -> np.ndarray | None:
    """The problem's Pareto front (200 points), None where it has none."""
    front = problems.named(problem).pareto_front(200)
    return None if front is None else np.asarray(front)


@st.cache_resource(show_spinner=False, max_entries=64)
def tau_trajectory_figure(problem: str, tau: float, steps: int, lr: float, text_scale: float = 1.0) -> Any:
    """PCD's trajectories at one τ on the problem's map (a figure: shared, never mutated); ``text_scale``:
    its end labels' (presenter mode: :func:`pcd.ui.presenter.text_scale`). As the toy map: frame 0 shows
    no ending (the paths grow as it plays; the end markers and labels at the last frame only) on the toy
    map's number of frames."""
    from pcd.viz.landscape import landscape_figure
    from pcd.viz.toy import TOY_FRAMES

    prob = problems.named(problem)
    res = synthetic.toy_run(problem, ["pcd"], steps=steps, lr=lr, tau=tau, record=200)
    # the page's one play control (frame_controls) instead of Plotly's buttons: the legend goes
    # under the map, which keeps the half-width column's map large
    return landscape_figure(res, prob.grid(240, 160), pareto_set=prob.pareto_set(), optima=prob.optima(),
                            height=560, controls=False, text_scale=text_scale, reveal=True, max_frames=TOY_FRAMES)


def warm() -> None:
    """The page's default view."""
    tau_sweep(PROBLEM, BUDGETS, LR)
    tau_front(PROBLEM)
    tau_trajectory_figure(PROBLEM, TAU, max(BUDGETS), LR, 1.0)  # as the page calls it (the cache key)
