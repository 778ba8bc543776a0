"""Page 9 -- Basin maps: where each method ends from every start point of a dense grid."""
from __future__ import annotations

import os

import numpy as np
import streamlit as st

import pcd.methods as registry
from pcd import studio
from pcd.experiments.basin import BASIN_METHODS, basin, merge_basins
from pcd.ui import (
    download_csv,
    download_json,
    figure_grid,
    method_picker,
    settings_panel,
    setup_page,
    show_error,
    url_default,
    url_sync,
)
from pcd.ui.table import html_table
from pcd.viz.basin import basin_figure, legend_html

setup_page(
    "Basin maps",
    icon=":material/grid_view:",
    intro=(
        "Every method runs from every point of a dense grid of starts; each start is coloured by where its "
        "trajectory ends: **reached CMS** (every objective stationary), **conflict equilibrium** (stopped where "
        "the gradients cancel), **Pareto-stationary at one objective's minimum**, **still moving** at the step "
        "budget, or **diverged**. On the saddle this completes the PCD paper's Fig. 1: the symmetric methods' "
        "maps split at the barrier, PCD's is (almost) all CMS. Hover for a start's end point; **click a start** "
        "to open its trajectory on the Toy landscapes page."
    ),
    full_plotly=True,  # its figures are st.plotly_chart's: Streamlit's full Plotly.js, preloaded
)

ALL = registry.available()
PROBLEMS = list(studio.TOY_PROBLEMS)
DEFAULT_F1 = "(x**2-4)**2/4 + y**2/2"
DEFAULT_F2 = "relu(abs(x-2)-0.5) + relu(abs(y)-0.5)"

with settings_panel(flow=True):
    problem_name = st.selectbox("problem", PROBLEMS, index=PROBLEMS.index(url_default("problem", "saddle2d", PROBLEMS)),
                                format_func=lambda k: studio.TOY_PROBLEMS[k], key="basin_problem")
    f1 = f2 = None
    if problem_name == "custom":
        f1 = st.text_input("primary f₁(x, y)", url_default("f1", DEFAULT_F1), key="basin_f1")
        f2 = st.text_input("secondary f₂(x, y)", url_default("f2", DEFAULT_F2), key="basin_f2")
    methods = method_picker("methods", ALL, default=url_default("methods", list(BASIN_METHODS), allowed=ALL),
                            key="basin_methods")
    tau = st.slider("τ (PCD)", 0.0, 1.0, url_default("tau", 0.02, low=0.0, high=1.0), 0.01, key="basin_tau")
    opt = st.radio("optimizer", ["adam", "sgd"], index=["adam", "sgd"].index(url_default("opt", "adam", ["adam", "sgd"])),
                   horizontal=True, format_func={"adam": "Adam", "sgd": "SGD"}.get, key="basin_opt")
    lr = st.select_slider("learning rate", studio.TOY_LRS, value=url_default("lr", 0.02, studio.TOY_LRS), key="basin_lr")
    steps = st.select_slider("steps", studio.TOY_STEPS, value=url_default("steps", 1000, studio.TOY_STEPS),
                             key="basin_steps")
    grid = st.select_slider("grid (starts per side)", studio.BASIN_GRIDS,
                            value=url_default("grid", 100, studio.BASIN_GRIDS), key="basin_grid",
                            help="grid × grid start points per method (at most 200 × 200)")

url_sync(problem=problem_name, methods=methods, tau=tau, opt=opt, lr=lr, steps=steps, grid=grid,
         **({"f1": f1, "f2": f2} if problem_name == "custom" else {}))

if not methods:
    st.info("Choose at least one method in the settings above.")
    st.stop()


@st.cache_resource(show_spinner=False)
def _results() -> dict:
    """Computed basin maps by (settings, methods) (the last 48), shared by the sessions. Not an
    st.cache of the computation itself: that would replay the progress bar's calls on a cache hit."""
    return {}


def _compute(settings, chunk, progress):
    store = _results()
    key = (settings, tuple(chunk))
    if key not in store:
        name, f1, f2, tau, opt, lr, steps, grid = settings
        prob = studio.toy_problem(name, f1, f2)
        store[key] = basin(prob, list(chunk), grid=grid, steps=steps, lr=lr, tau=tau, optimizer=opt, progress=progress)
        while len(store) > 48:
            store.pop(next(iter(store)))
    return store[key]


@st.cache_resource(show_spinner=False, max_entries=64)
def _figure(key, method, _res, optima):
    return basin_figure(_res, methods=[method], columns=1, optima=optima, legend=False, height=360)


settings = (problem_name, f1, f2, tau, opt, lr, steps, grid)
try:
    problem = studio.toy_problem(problem_name, f1, f2)
    if problem.dim != 2:
        raise ValueError(f"basin maps need a 2-D problem; {problem_name} has {problem.dim} coordinates")
    optima = None if problem.optima() is None else np.asarray(problem.optima())
    st.markdown(legend_html(), unsafe_allow_html=True)
    bar = st.progress(0.0, text="running every method from every start…")
    cells = figure_grid(len(methods), key="basin")  # one size, one grid (pcd.ui.page)
    # a few methods at a time (one per core, side by side): each map shows as soon as its method is done
    width = max(1, min(len(methods), os.cpu_count() or 1))
    parts, events = [], {}
    for i in range(0, len(methods), width):
        chunk = methods[i:i + width]

        def _progress(fraction, message, i=i, chunk=chunk):
            done = (i + fraction * len(chunk)) / len(methods)
            bar.progress(min(max(done, 0.0), 1.0), text=f"running… {message}")

        part = _compute(settings, chunk, _progress)
        parts.append(part)
        for j, m in enumerate(chunk):
            with cells[i + j]:
                events[m] = st.plotly_chart(_figure(settings, m, part, optima), theme=None, key=f"basin_map_{m}",
                                            on_select="rerun", selection_mode="points",
                                            config={"displaylogo": False, "scrollZoom": False})
    bar.empty()
    res = merge_basins(parts)
except ValueError as exc:
    show_error(exc)
    st.stop()

st.caption(f"{res.n} × {res.n} starts per method, {res.settings['steps']} steps, computed in {res.elapsed_s:.2f} s "
           f"(engine fast path: {', '.join(f'{m} {s:.2f} s' for m, s in res.method_seconds.items())}). "
           "Click a start to open its trajectory on the toy page.")

# A click on a start: open that start's trajectory on the toy page (once per new click).
for method, event in events.items():
    try:
        points = list(event["selection"]["points"]) if event else []
    except (KeyError, TypeError):
        points = []
    if not (points and "x" in points[-1] and "y" in points[-1]):
        continue
    s = res.start_index(points[-1]["x"], points[-1]["y"])
    click = (s, settings, tuple(methods))
    last = st.session_state.setdefault("basin_last_clicks", {})
    if last.get(method) == click:
        continue
    last[method] = click
    query = studio.toy_query(problem_name, method, res.starts[s], tau=tau, optimizer=opt, lr=lr, steps=steps,
                             f1=f1, f2=f2)
    for k in [k for k in st.session_state if str(k).startswith("toy_")]:
        del st.session_state[k]  # the toy page reads its settings from the link, not from an old visit
    st.switch_page("views/02_Toy_landscapes.py", query_params=query)

for name, msg in res.errors.items():
    st.warning(f"{registry.get(name).display_name} failed: {msg}")

st.subheader("Where the starts end")
table = studio.basin_table(res)
html_table(table, formats={"fraction": "{:.1%}", "median end x": "{:.3f}", "median end y": "{:.3f}"})  # wraps at 800 px
st.caption("Median end point of the starts with each outcome. PCD's few non-CMS starts end where ∇f₁ = 0 "
           "(e.g. on the saddle at (0, 0)): its deployed update is rescaled to ‖∇f₁‖ and halts there — a known "
           "limitation of the method, not a conflict equilibrium. *Still moving* starts need more steps.")

cli = (f"python -m pcd basin --problem {problem_name} --grid {grid} --methods {','.join(methods)} --steps {steps} "
       f"--lr {lr:g} --tau {tau:g} --optimizer {opt}"
       + (f" --f1 '{f1}' --f2 '{f2}'" if problem_name == "custom" else "") + " --json basin.json")
st.markdown("Reproduce this view from the command line:")
st.code(cli, language="bash")
c1, c2 = st.columns(2)
with c1:
    download_json(res.to_json(), "basin_maps.json", "Basin data (JSON, the CLI's format)", key="basin_json")
with c2:
    download_csv(table, "basin_outcomes.csv", "Outcome table (CSV)", key="basin_csv",
                 settings={"problem": problem_name, **({"f1": f1, "f2": f2} if problem_name == "custom" else {}),
                           "methods": methods, "grid": grid, "τ": tau, "optimizer": opt, "lr": lr, "steps": steps})
