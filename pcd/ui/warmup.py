"""The cached computations of the Studio pages 01 to 07, their default settings, and the
server warm-up that fills those caches once per server process.

Why: a page's first visitor would otherwise pay, on top of the page's own work, the first imports
(pandas, pyarrow, Plotly's figure classes, numba and its compiled kernels) and the
page's default computation (the K-objective benchmark's 21 runs of 800 steps take ~2.5 s of CPU).
:func:`start` (called by ``app.py``, the entry script of every page) runs :func:`warm_up` once per
process in a background thread: it imports those modules and calls the *same* cached functions
the pages call, with the pages' default settings (the constants below, which the pages use as
their widgets' defaults), so the first visitor of a page is served from the cache. Results are
exactly the ones the page would compute (``st.cache_data`` returns a copy of the function's own
result); nothing is stored across server restarts. ``PCD_NO_WARMUP=1`` turns the warm-up off.
"""
from __future__ import annotations

import importlib
import logging
import os
import threading
import time
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import streamlit as st

import pcd.methods as registry
from pcd import studio
from pcd.experiments import synthetic

_LOG = logging.getLogger(__name__)

# ---- default settings of the pages (one home: the page's widgets start at these) ----------------
GEO_METHODS = ("pcd", "ws", "mgda", "pcgrad", "cagrad", "upgrad")
GEO_ANGLE, GEO_NORM2, GEO_TAU = 150, 1.0, 0.3

KB_KS = (2, 3, 5, 9, 17, 33, 65)
KB_METHODS = ("pcd", "mgda", "ws")
# 800 Adam steps at lr 0.03 take PCD to an exactly zero residual at every K (measured; 600 leave ~1e-12).
KB_STEPS, KB_LR, KB_TAU, KB_OPT = 800, 0.03, 0.3, "adam"

SC_METHODS = tuple(synthetic.SCALE_METHODS)
SC_TAU, SC_STEPS = 0.3, synthetic.SCALE_STEPS
PCD_EPS = float(next(p.default for p in registry.get("pcd").params if p.name == "eps"))

TD_PROBLEM, TD_BUDGETS, TD_LR, TD_TAU = "quadratic", (100, 300, 1000), 0.02, 0.1
TD_TAUS = (0.0, 0.005, 0.01, 0.02, 0.05, 0.1, 0.2, 0.3, 0.5, 0.7, 1.0)

TOY_PROBLEM, TOY_METHODS = "saddle2d", ("pcd", "ws", "mgda", "pcgrad", "cagrad", "famo")
TOY_TAU, TOY_OPT, TOY_LR, TOY_STEPS = 0.02, "adam", 0.02, 1000
TOY_INSET_START, TOY_WIDTH = 0, "medium"  # the inset at S1; the map laid out for a 1280-1440 px window
TOY_OBJ_LOG = True  # the objective-space panel on log axes (exact zeros drawn at the floor)

JD_SAMPLES, JD_TAU, JD_SEED = 4, 0.02, 0  # page 06's property table: every method, 4 Jacobians per family and K

CP_EPS_GRID = tuple(round(0.05 * k, 2) for k in range(1, 19))  # 0.05 ... 0.90: the 1-D example's ε grid
CP_LAG_METHODS = ("gda", "auglag", "nupi", "pcd")
CP_EPS, CP_C, CP_X0, CP_TOY_STEPS, CP_TOL = 0.5, 0.5, 0.6, 500, 1.0


def available(names: Sequence[str]) -> list[str]:
    """``names`` that the method registry has (a page's default method list)."""
    have = set(registry.available())
    return [m for m in names if m in have]


# ---- the pages' cached computations ---------------------------------------------------------------
@st.cache_data(show_spinner=False, max_entries=256)
def geometry(angle: float, norm2: float, third: tuple[float, float] | None, tau: float,
             methods: tuple[str, ...]) -> dict[str, Any]:
    """Page 01: every method's update for the page's gradients (:func:`pcd.studio.method_directions`)."""
    J = studio.gradient_vectors(angle, norm2, third)
    return studio.method_directions(J, list(methods), tau=tau)


@st.cache_resource(show_spinner=False, max_entries=64)
def geometry_fig(angle: float, norm2: float, third: tuple[float, float] | None, tau: float,
                 methods: tuple[str, ...]) -> Any:
    """Page 01's figure for those settings (built once, ~0.15 s; a shared figure, never mutated)."""
    from pcd.viz.geometry import geometry_figure

    return geometry_figure(geometry(angle, norm2, third, tau, methods))


@st.cache_data(show_spinner=False, max_entries=512)
def kbench_one(K: int, method: str, steps: int, lr: float, tau: float | None, opt: str) -> list[dict[str, Any]]:
    """Page 03: one (K, method) run of the double well (one cache entry each, so changing the K range
    or adding a method runs only what is new). ``tau`` only for methods with a primary knob."""
    return synthetic.kdw(Ks=[K], methods=[method], steps=steps, lr=lr, optimizer=opt,
                         tau=tau if registry.get(method).primary_knob else None)


def kbench_tau(method: str, tau: float) -> float | None:
    """The τ a (K, method) entry is keyed by: τ for methods that have it, else None (one entry)."""
    return tau if registry.get(method).primary_knob else None


@st.cache_data(show_spinner=False, max_entries=64)
def scale_sweep(methods: tuple[str, ...], tau: float, eps: float, steps: int) -> dict[str, Any]:
    """Page 04: the scale sweep (:func:`pcd.experiments.synthetic.scale`) with PCD's ε."""
    mp = {"pcd": {"eps": eps}} if "pcd" in methods else None
    return synthetic.scale(methods=list(methods), steps=steps, tau=tau, method_params=mp)


@st.cache_resource(show_spinner=False, max_entries=64)
def scale_drift_fig(methods: tuple[str, ...], tau: float, eps: float, steps: int) -> Any:
    """Page 04's drift figure (independent of the highlighted scale, so moving the highlight does not
    rebuild it: ~0.2 s; a shared figure, never mutated)."""
    from pcd.viz.scale import drift_figure

    return drift_figure(scale_sweep(methods, tau, eps, steps))


@st.cache_data(show_spinner=False, max_entries=64)
def tau_sweep(problem: str, budgets: tuple[int, ...], lr: float) -> list[dict[str, Any]]:
    """Page 05: every τ of :data:`TD_TAUS` in one batched run of max(budgets) steps; each budget is
    read off the same trajectories."""
    return synthetic.tau_sweep(problem, taus=list(TD_TAUS), lr=lr, budgets=list(budgets))


@st.cache_data(show_spinner=False, max_entries=512)
def tau_reference(problem: str, method: str, steps: int, lr: float) -> dict[str, Any]:
    """Page 05: where one other method ends on the problem after ``steps`` (Adam, its defaults;
    :func:`pcd.experiments.synthetic.tau_references`), one cache entry per method."""
    return synthetic.tau_references(problem, [method], steps=steps, lr=lr)[method]


@st.cache_data(show_spinner=False, max_entries=32)
def tau_front(problem: str) -> np.ndarray | None:
    """Page 05: the problem's Pareto front (200 points), None where it has none."""
    import pcd.problems as problems

    p = problems.make("scale") if problem == "scale" else studio.toy_problem(problem)
    front = p.pareto_front(200)
    return None if front is None else np.asarray(front)


@st.cache_resource(show_spinner=False, max_entries=64)
def tau_trajectory_figure(problem: str, tau: float, steps: int, lr: float) -> Any:
    """Page 05: PCD's trajectories at one τ on the problem's map (a figure: shared, never mutated)."""
    import pcd.problems as problems
    from pcd.viz.landscape import landscape_figure

    prob = problems.make(problem)
    res = synthetic.toy_run(problem, ["pcd"], steps=steps, lr=lr, tau=tau, record=200)
    # the page's one play control (frame_controls) instead of Plotly's buttons: the legend goes
    # under the map, which keeps the half-width column's map large
    return landscape_figure(res, prob.grid(240, 160), pareto_set=prob.pareto_set(), optima=prob.optima(),
                            height=560, controls=False)


# Page 02 (toy landscapes). The figures are keyed by ``key`` (everything they depend on): the
# problem, results and background objects are not hashed (leading underscore).
@st.cache_resource(show_spinner=False, max_entries=32)
def toy_problem(name: str, f1: str | None, f2: str | None, bounds: Any, starts: Any = None) -> Any:
    """Page 02: the problem (a custom formula pair parsed once per text)."""
    return studio.toy_problem(name, f1, f2, bounds=bounds, starts=starts)


@st.cache_resource(show_spinner=False, max_entries=16)
def toy_background(name: str, f1: str | None, f2: str | None, pbounds: Any, view: Any) -> dict[str, Any]:
    """Page 02: the landscape under the map (grid, PNG image, Pareto set, optima), once per problem and box."""
    from pcd.viz import toy as toy_map

    return toy_map.toy_background(toy_problem(name, f1, f2, pbounds), view)


@st.cache_data(show_spinner=False, max_entries=256)
def toy_run_one(name: str, f1: str | None, f2: str | None, pbounds: Any, method: str, hp_json: str,
                tau: float | None, opt: str, lr: float, steps: int, starts: tuple) -> Any:
    """Page 02: one method from every start (one cache entry per method, so adding a method runs
    only that one); ``tau`` only for methods with a primary knob."""
    import json

    from pcd.engine import run

    hp = json.loads(hp_json)
    knob = registry.get(method).primary_knob
    if knob is not None:
        hp[knob] = tau
    return run(toy_problem(name, f1, f2, pbounds), [method], starts=np.array(starts), steps=steps, optimizer=opt,
               lr=lr, method_params={method: hp} if hp else None, record=200)


@st.cache_resource(show_spinner=False, max_entries=32)
def toy_map(key: tuple, _prob: Any, _res: Any, _bg: Any, inset_start: int | None, width: str,
            controls: bool = False, animate: bool = True) -> Any:
    """Page 02's map (:func:`pcd.viz.toy.toy_map_figure`), serialized once (:func:`pcd.ui.chart.frozen`)."""
    from pcd.ui.chart import frozen
    from pcd.viz.toy import toy_map_figure

    return frozen(toy_map_figure(_prob, _res, _bg, inset_start=inset_start, width=width, controls=controls,
                                 animate=animate))


@st.cache_resource(show_spinner=False, max_entries=32)
def toy_objective(key: tuple, _prob: Any, _res: Any, _bg: Any, log: bool, width: str) -> Any:
    """Page 02's objective-space panel (:func:`pcd.viz.objective.objective_space_figure` of
    :func:`pcd.studio.objective_space`), on the map's frames, its legend laid out for the page's
    width class (as the map's), serialized once."""
    from pcd.ui.chart import frozen
    from pcd.viz.objective import objective_space_figure
    from pcd.viz.toy import TOY_CHART_PX, TOY_FRAMES

    space = studio.objective_space(_prob, _res, _bg["grid"])
    return frozen(objective_space_figure(space, log=log, max_frames=TOY_FRAMES, width_px=TOY_CHART_PX[width]))


@st.cache_resource(show_spinner=False, max_entries=32)
def toy_loss(key: tuple, _res: Any, names: tuple[str, ...]) -> Any:
    """Page 02's loss-vs-step figure with its step cursor at 0, serialized once."""
    from pcd.ui.chart import frozen
    from pcd.viz.landscape import loss_figure
    from pcd.viz.teaching import with_step_cursor

    return frozen(with_step_cursor(loss_figure(_res, names), 0))


def toy_runs(name: str, f1: str | None, f2: str | None, pbounds: Any, pstarts: Any, methods: Sequence[str],
             hparams: dict[str, dict[str, Any]], tau: float, opt: str, lr: float, steps: int, starts: Any,
             bounds_text: str | None = None) -> tuple[Any, Any, Any, dict[str, Any], tuple]:
    """Page 02's runs for its settings: ``(problem, results, view box, background, key)``. The view
    box is ``bounds_text`` (typed "x min, x max, y min, y max") or the problem's box grown to cover
    every trajectory; ``key`` is what the figures depend on (:func:`toy_map`, :func:`toy_loss`)."""
    import json

    from pcd import _validate as V

    problem = toy_problem(name, f1, f2, pbounds, pstarts)
    starts_key = tuple(map(tuple, np.round(np.asarray(starts, dtype=float), 10).tolist()))
    runs = [toy_run_one(name, f1, f2, pbounds, m, json.dumps(hparams.get(m, {}), sort_keys=True),
                        tau if registry.get(m).primary_knob else None, opt, lr, steps, starts_key) for m in methods]
    res = studio.merge_results(runs)
    box = V.box(bounds_text, "map bounds") if bounds_text and bounds_text.strip() else studio.fit_bounds(
        res, problem.bounds)
    view = tuple(tuple(round(v, 6) for v in b) for b in box)
    bg = toy_background(name, f1, f2, pbounds, view)
    key = (name, f1, f2, pbounds, tuple(methods), json.dumps(hparams, sort_keys=True), tau, opt, lr, steps,
           starts_key, view)
    return problem, res, view, bg, key


@st.cache_data(show_spinner="checking every method on sampled Jacobians…", max_entries=32)
def jd_properties(methods: tuple[str, ...], samples: int, tau: float, seed: int) -> dict:
    """Page 06: every method's aggregator properties on sampled Jacobians (:func:`pcd.experiments.jd.property_table`)."""
    from pcd.experiments import jd

    return jd.property_table(list(methods), samples=samples, tau=tau, seed=seed)


# Page 07 (constraints vs fixed penalties): plain data, keyed by the settings.
@st.cache_data(show_spinner="Running the 1-D example (Cooper + PCD)…", max_entries=32)
def cp_toy(eps: tuple, x0: float, steps: int) -> Any:
    """Page 07: the Lagrangian methods and PCD on the 1-D example for every ε in ``eps``."""
    from pcd.experiments import constraints as C

    return C.run_toy(list(eps), 0.0, CP_LAG_METHODS, x0=x0, steps=steps)


@st.cache_data(show_spinner=False, max_entries=256)
def cp_toy_penalty(eps: tuple, c: float, x0: float, steps: int) -> Any:
    """Page 07: the fixed penalty c on the 1-D example."""
    from pcd.experiments import constraints as C

    return C.run_toy(list(eps), c, ("penalty",), x0=x0, steps=steps)[0]


def cp_toy_runs(eps: float, c: float, x0: float, steps: int) -> tuple[list, list, tuple]:
    """Page 07: ``(shown, grid runs, grid)``: the penalty run and the Lagrangian/PCD runs at ``eps``
    (read off the cached grid when ``eps`` is on it), the grid's runs and the grid."""
    from pcd.experiments import constraints as C

    grid = tuple(sorted(set(CP_EPS_GRID) | set(C.PAPER_EPS)))
    if round(eps, 2) in grid and abs(eps - round(eps, 2)) < 1e-12:
        runs, idx = cp_toy(grid, x0, steps), grid.index(round(eps, 2))
    else:
        runs, idx = cp_toy((eps,), x0, steps), 0
    pen = cp_toy_penalty((eps,), c, x0, steps)
    pick = [C.ToyRun(r.method, r.family, r.param, r.eps[idx:idx + 1], r.x[:, idx:idx + 1], r.lam[:, idx:idx + 1],
                     r.settings) for r in runs]
    return [pen] + pick, runs, grid


@st.cache_data(show_spinner="Training the rate-constrained classifiers…", max_entries=4)
def cp_sweep() -> Any:
    """Page 07: the rate-constrained classifiers (penalty, Lagrangian and PCD sweeps)."""
    from pcd.experiments import constraints as C

    return C.rate_sweep()


@st.cache_data(show_spinner="Bisection on the penalty coefficient…", max_entries=4)
def cp_bisection(tol: float) -> Any:
    """Page 07: bisection on the penalty coefficient to the rate target."""
    from pcd.experiments import constraints as C

    return C.penalty_bisection(tol=tol)


@st.cache_data(show_spinner="Timing both loops…", max_entries=4)
def cp_cost(steps: int, repeats: int) -> Any:
    """Page 07: the constrained loop's cost over the penalty loop (timed when asked, never warmed)."""
    from pcd.experiments import constraints as C

    return C.rate_cost(steps=steps, repeats=repeats)


# ---- the warm-up --------------------------------------------------------------------------------------
# What Plotly uses only if it is in sys.modules already (see start): never imported by the thread.
PEEKED_BY_PLOTLY = ("numpy", "pandas", "PIL.Image")
# What a page's first run imports on top of what app.py has imported (measured with sys.modules);
# only modules of the product's dependencies (orjson, which Plotly uses when it is there, is not one:
# listed, it failed the whole step on every install without it)
IMPORTS = ("pandas", "pyarrow", "PIL.Image", "narwhals",
           "plotly.graph_objects", "plotly.io", "streamlit.elements.arrow", "streamlit.dataframe_util",
           "pcd.engine", "pcd.teaching", "pcd.ui.controls", "pcd.ui.table",
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
    """The pages' default views, cheapest first."""
    def geo() -> None:
        geometry_fig(GEO_ANGLE, GEO_NORM2, None, GEO_TAU, tuple(available(GEO_METHODS)))

    def td() -> None:
        tau_sweep(TD_PROBLEM, TD_BUDGETS, TD_LR)
        tau_front(TD_PROBLEM)
        tau_trajectory_figure(TD_PROBLEM, TD_TAU, max(TD_BUDGETS), TD_LR)

    def sc() -> None:
        scale_drift_fig(tuple(available(SC_METHODS)), SC_TAU, PCD_EPS, SC_STEPS)

    def kb() -> None:
        for K in KB_KS:
            for m in available(KB_METHODS):
                kbench_one(K, m, KB_STEPS, KB_LR, kbench_tau(m, KB_TAU), KB_OPT)

    def toy() -> None:
        methods = available(TOY_METHODS)
        problem = toy_problem(TOY_PROBLEM, None, None, None)
        prob, res, _view, bg, key = toy_runs(TOY_PROBLEM, None, None, None, None, methods, {}, TOY_TAU, TOY_OPT,
                                             TOY_LR, TOY_STEPS, problem.default_starts())
        toy_map(key + (TOY_INSET_START, TOY_WIDTH), prob, res, bg, TOY_INSET_START, TOY_WIDTH)
        toy_loss(key, res, tuple(bg["names"]))
        toy_objective(key, prob, res, bg, TOY_OBJ_LOG, TOY_WIDTH)

    def jdp() -> None:
        jd_properties(tuple(registry.available()), JD_SAMPLES, JD_TAU, JD_SEED)

    def cp() -> None:  # torch + Cooper: the most expensive default view (~10 s of CPU), last
        from pcd.experiments import constraints as C

        cp_toy_runs(CP_EPS, CP_C, CP_X0, CP_TOY_STEPS)
        cp_toy_penalty(tuple(C.PAPER_EPS), CP_C, CP_X0, CP_TOY_STEPS)
        cp_sweep()
        cp_bisection(CP_TOL)

    return [("geometry", geo), ("tau dial", td), ("scale", sc), ("toy", toy), ("k-objective", kb),
            ("jd properties", jdp), ("constraints", cp)]


def warm_up() -> dict[str, float]:
    """Import what the pages need and compute their default views into the caches; returns the
    seconds each part took (a part that fails is logged and skipped: the page then computes it)."""
    took: dict[str, float] = {}
    parts: list[tuple[str, Callable[[], Any]]] = [("imports", _imports),
                                                  ("first use", _first_use)]
    parts += _defaults()
    parts.append(("numba kernels", _numba_kernels))
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
