"""Page 00, Guided lesson: its steps' data (the 1-D conflict, which frame shows the stall) and its
cached computations -- the same library calls, with the same defaults, as the pages each step
links to. (Formerly ``pcd.teaching``; the gradients along a trajectory are
:func:`pcd.experiments.toy.trajectory_gradients`.)"""
from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import streamlit as st

import pcd.methods as registry
import pcd.problems as problems
from pcd.experiments import synthetic
from pcd.experiments.geometry import method_directions
from pcd.experiments.toy import trajectory_gradients
from pcd.studio import available, kbench, scale
from pcd.studio import tau as tau_page

SYMMETRIC = ("ws", "mgda", "pcgrad", "cagrad", "famo", "upgrad")
SADDLE_METHODS = ("pcd", "ws", "mgda", "pcgrad", "cagrad", "famo")
BASIN_METHODS = ("pcd", "ws", "mgda")
KS = (2, 3, 5, 9, 17, 33)


def stall_frames(res: Any, start: int = 0, reference: str = "mgda") -> dict[str, int]:
    """Which recorded frame shows each method "at the stall" of start ``start``: the last frame
    for every method except the hierarchical ones (PCD, DBGD: ``Method.hierarchical``), and for
    those the frame where their trajectory passes
    closest to ``reference``'s end point (where the symmetric method stopped) -- so PCD's panel
    shows its step at (almost) the same place. Returns ``{method: frame index}``."""
    pos = np.asarray(res.positions, dtype=np.float64)
    T = pos.shape[2]
    out = {name: T - 1 for name in res.methods}
    if reference not in res.methods:
        return out
    end = np.asarray(res.end, dtype=np.float64)[res.methods.index(reference), int(start)]
    for name in res.methods:
        if name != reference and name in registry.available() and registry.get(name).hierarchical:
            dist = np.linalg.norm(pos[res.methods.index(name), int(start)] - end, axis=1)
            if np.isfinite(dist).any():
                out[name] = int(np.nanargmin(dist))
    return out


def one_d_case(g1: float = 0.5, g2: float = -0.5, methods: Sequence[str] = ("pcd",) + SYMMETRIC,
               tau: float = 0.3) -> dict[str, Any]:
    """The 1-D conflict: ``g1 = 0.5``, ``g2 = -0.5`` (drawn on the x axis of the geometry figure).
    Every symmetric method's update is exactly 0 there although ``g1 != 0``; PCD's is not. The
    plain data of :func:`pcd.experiments.geometry.method_directions`."""
    J = np.array([[float(g1), 0.0], [float(g2), 0.0]])
    return method_directions(J, list(methods), tau=tau)


# ---- cached computations (the same library calls the pages make) ---------------------------
@st.cache_data(show_spinner=False)
def one_d(tau: float) -> dict[str, Any]:
    """Step 1: the 1-D conflict for PCD and every symmetric method."""
    return one_d_case(0.5, -0.5, ["pcd"] + available(SYMMETRIC), tau)


@st.cache_resource(show_spinner=False)
def saddle() -> Any:
    """Steps 2 and 4: the saddle run of the toy page's settings (Adam, lr 0.02, 1000 steps, τ 0.02)."""
    return synthetic.toy_run("saddle2d", available(SADDLE_METHODS), steps=1000, lr=0.02, tau=0.02, record=200)


@st.cache_resource(show_spinner=False)
def saddle_problem() -> Any:
    return problems.named("saddle2d")


@st.cache_resource(show_spinner=False)
def saddle_figure(height: int) -> Any:
    """Step 2's figure: the animated saddle with the gradient inset of PCD, WS and MGDA."""
    from pcd.viz.landscape import landscape_figure
    from pcd.viz.teaching import add_gradient_inset

    prob, res = saddle_problem(), saddle()
    fig = landscape_figure(res, prob.grid(300, 200), pareto_set=prob.pareto_set(), optima=prob.optima(),
                           height=height, validate=False, controls=False)  # the page's one play control
    shown = [m for m in ("pcd", "ws", "mgda") if m in res.methods]  # one row of panels: large enough to read
    return add_gradient_inset(fig, trajectory_gradients(prob, res, 0, methods=shown), cols=len(shown))


@st.cache_resource(show_spinner=False)
def basins() -> Any:
    """Step 3: the toy run's settings (Adam, lr 0.02, 1000 steps, τ 0.02) from a 50 x 50 grid of starts."""
    from pcd.experiments.basin import basin

    return basin("saddle2d", available(BASIN_METHODS), grid=50, steps=1000, lr=0.02, tau=0.02)


@st.cache_data(show_spinner=False)
def kbench_records() -> Any:
    """Step 5: the K-objective page's defaults."""
    return synthetic.kdw(Ks=list(KS), methods=list(kbench.METHODS), steps=kbench.STEPS, lr=kbench.LR, tau=kbench.TAU)


@st.cache_data(show_spinner=False)
def scale_sweep() -> Any:
    """Step 6: the Scale invariance page's defaults."""
    return synthetic.scale(methods=list(scale.METHODS), steps=scale.STEPS, tau=scale.TAU)


@st.cache_data(show_spinner=False)
def tau_curves() -> tuple[Any, np.ndarray | None]:
    """Step 7: the τ dial page's defaults: the convex pair, one curve per step budget."""
    records = synthetic.tau_sweep(tau_page.PROBLEM, taus=list(tau_page.TAUS), lr=tau_page.LR, budgets=list(tau_page.BUDGETS))
    front = problems.named(tau_page.PROBLEM).pareto_front(200)
    return records, None if front is None else np.asarray(front)
