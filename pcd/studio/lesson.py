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
from pcd.studio.toy import objective_space

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


SADDLE_INSET = ("pcd", "ws", "mgda")  # step 2's gradient inset: one row of panels, large enough to read


def saddle_frames() -> list[str]:
    """Step 2's animation frames: every recorded step of the saddle run (the map's, the objective
    space's and the inset's frames, played by one set of controls)."""
    return [str(int(k)) for k in saddle().record]


@st.cache_resource(show_spinner=False)
def saddle_figure(height: int, width_px: float | None = 760.0, text_scale: float = 1.0) -> Any:
    """Step 2's map, ``height`` px tall: the animated saddle, its ending revealed as it plays (as the toy
    page's map, ``landscape_figure(reveal=True)``: frame 0 shows the starts only, the paths grow, the end
    diamonds and end labels are shown at the last frame by the page's frame controls), its
    legend under it in the rows a chart ``width_px`` wide needs (None: one column right of the map,
    where a wide, short chart has room to spare -- a projector); the gradient inset is a chart of its
    own (:func:`saddle_inset`), the objective space another (:func:`saddle_objective`). ``text_scale``: its
    end labels' (presenter mode: :func:`pcd.ui.presenter.text_scale`)."""
    from pcd.viz.landscape import fit_legend, landscape_figure
    from pcd.viz.theme import figure_from_spec

    prob, res = saddle_problem(), saddle()
    spec = landscape_figure(res, prob.grid(300, 200), pareto_set=prob.pareto_set(), optima=prob.optima(),
                            height=height, validate=False, controls=False, spec_only=True,  # the page's one play control
                            reveal=True,  # frame 0 shows no ending: the class sees it when it is reached
                            text_scale=text_scale)
    if width_px is None:
        lay = spec["layout"]
        lay["legend"] = dict(lay["legend"], orientation="v", yanchor="top", y=1.0, yref="paper", xanchor="left", x=1.02,
                             tracegroupgap=0, itemsizing="constant")
        return figure_from_spec(spec)
    return figure_from_spec(fit_legend(spec, width_px))


@st.cache_resource(show_spinner=False)
def saddle_objective(height: int, width_px: float, legend: bool = True, log: bool = True,
                     text_scale: float = 1.0) -> Any:
    """Step 2's objective-space panel beside the map: the saddle run in the (f1, f2) plane on the
    map's frames (:func:`pcd.studio.toy.objective_space`, :func:`pcd.viz.objective.objective_space_figure`),
    ``height`` px tall in all, its legend (when ``legend``) laid out for a chart ``width_px`` wide;
    ``text_scale``: its verdict labels' (presenter mode)."""
    from pcd.viz.objective import objective_space_figure

    space = objective_space(saddle_problem(), saddle())
    fig = objective_space_figure(space, log=log, plot_height=max(150, int(height) - 90), width_px=width_px,
                                 legend=legend, text_scale=text_scale)
    extra = int(fig.layout.height) - int(height)  # the legend's rows: taken off the plot, the panel as tall as the map
    if extra > 0:
        fig = objective_space_figure(space, log=log, plot_height=max(150, int(height) - 90 - extra),
                                     width_px=width_px, legend=legend, text_scale=text_scale)
    return fig


@st.cache_resource(show_spinner=False)
def saddle_inset(width_px: float, height: int, text_scale: float = 1.0) -> Any:
    """Step 2's gradient inset (start S1; PCD, weighted sum, MGDA) as a chart of its own on the map's
    frames (:func:`pcd.viz.teaching.inset_figure`)."""
    from pcd.viz.teaching import inset_figure

    prob, res = saddle_problem(), saddle()
    shown = [m for m in SADDLE_INSET if m in res.methods]
    return inset_figure(trajectory_gradients(prob, res, 0, methods=shown), saddle_frames(), width_px=width_px,
                        height=height, text_scale=text_scale)


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


@st.cache_resource(show_spinner=False)
def tau_space() -> dict[str, Any]:
    """Step 7, animated: PCD for every τ of the τ dial (its problem, starts, lr; one batched run of the
    largest budget, :func:`pcd.experiments.animation.tau_budget_run`, the GIF export's) in objective
    space -- each τ's losses, mean over the starts as the step's trade-off figure plots them, on the
    problem's Pareto front (:func:`pcd.studio.toy.objective_space`), coloured on the export's τ ramp."""
    from pcd.experiments.animation import tau_budget_run
    from pcd.viz.export import tau_colors

    taus = list(tau_page.TAUS)
    res = tau_budget_run(tau_page.PROBLEM, taus, tau_page.BUDGETS, tau_page.LR)
    space = objective_space(problems.named(tau_page.PROBLEM), res)
    space["losses"] = np.asarray(space["losses"]).mean(axis=1, keepdims=True)  # [M, 1, T, 2]: over the starts
    space["verdicts"] = [[""] for _ in res.methods]  # no end labels: the trade-off figure beside it names the τ
    space["labels"] = {m: f"τ = {t:g}" for m, t in zip(res.methods, taus)}
    space["colors"] = {m: "#{:02x}{:02x}{:02x}".format(*c) for m, c in zip(res.methods, tau_colors(taus))}
    return space


def tau_frames() -> list[str]:
    """Step 7's animation frames: the recorded steps of :func:`tau_space`'s run."""
    return [str(int(k)) for k in tau_space()["record"]]


@st.cache_resource(show_spinner=False)
def tau_objective(height: int, width_px: float) -> Any:
    """Step 7's animated panel: :func:`tau_space` played from step 0 to the largest budget (linear
    axes, as the trade-off figure), ``height`` px tall, no legend (the colour ramp runs from τ = 0,
    dark violet, to τ = 1, yellow; hover names each)."""
    from pcd.viz.objective import objective_space_figure

    fig = objective_space_figure(tau_space(), log=False, plot_height=max(150, int(height) - 90), width_px=width_px,
                                 legend=False)
    return fig.update_layout(height=int(height))
