"""Page 9 -- Basin maps: where each method ends from every start point of a dense grid."""
from __future__ import annotations

import os

import numpy as np
import streamlit as st

from pcd.studio import available, problem_label
from pcd.studio import basin as B
from pcd.studio import toy as T
from pcd.studio.registry import page, this_page
from pcd.ui import (
    download_csv,
    download_json,
    figure_grid,
    method_picker,
    settings_panel,
    setup_page,
    show_error,
    throttled_progress,
    url_default,
    url_sync,
)
from pcd.ui.chart import plotly_chart
from pcd.ui.table import html_table
from pcd.viz.basin import legend_html
from pcd.viz.theme import method_label

setup_page(
    **this_page(__file__).setup,
    intro=(
        "Every method runs from every point of a dense grid of starts; each start is coloured by where its "
        "trajectory ends: **reached CMS** (every objective stationary), **conflict equilibrium** (stopped where "
        "the gradients cancel), **Pareto-stationary at one objective's minimum**, **still moving** at the step "
        "budget, or **diverged**. On the saddle this completes the PCD paper's Fig. 1: the symmetric methods' "
        "maps split at the barrier, PCD's is (almost) all CMS. Hover for a start's end point; **click a start** "
        "to open its trajectory on the Toy landscapes page."
    ),
)

ALL = available()
PROBLEMS = list(T.PROBLEMS)

with settings_panel(flow=True):
    problem_name = st.selectbox("problem", PROBLEMS, index=PROBLEMS.index(url_default("problem", B.PROBLEM, PROBLEMS)),
                                format_func=problem_label, key="basin_problem")
    f1 = f2 = None
    if problem_name == "custom":
        f1 = st.text_input("primary f₁(x, y)", url_default("f1", B.DEFAULT_F1), key="basin_f1")
        f2 = st.text_input("secondary f₂(x, y)", url_default("f2", B.DEFAULT_F2), key="basin_f2")
    methods = method_picker("methods", ALL, default=url_default("methods", list(B.METHODS), allowed=ALL),
                            key="basin_methods")
    tau = st.slider("τ (PCD)", 0.0, 1.0, url_default("tau", B.TAU, low=0.0, high=1.0), 0.01, key="basin_tau")
    opt = st.radio("optimizer", ["adam", "sgd"], index=["adam", "sgd"].index(url_default("opt", B.OPT, ["adam", "sgd"])),
                   horizontal=True, format_func={"adam": "Adam", "sgd": "SGD"}.get, key="basin_opt")
    lr = st.select_slider("learning rate", T.LRS, value=url_default("lr", B.LR, T.LRS), key="basin_lr")
    steps = st.select_slider("steps", T.STEP_CHOICES, value=url_default("steps", B.STEPS, T.STEP_CHOICES),
                             key="basin_steps")
    grid = st.select_slider("grid (starts per side)", B.GRIDS,
                            value=url_default("grid", B.GRID, B.GRIDS), key="basin_grid",
                            help="grid × grid start points per method (at most 200 × 200)")

url_sync(problem=problem_name, methods=methods, tau=tau, opt=opt, lr=lr, steps=steps, grid=grid,
         **({"f1": f1, "f2": f2} if problem_name == "custom" else {}))

if not methods:
    st.info("Choose at least one method in the settings above.")
    st.stop()


settings = (problem_name, f1, f2, tau, opt, lr, steps, grid)
try:
    problem = T.make_problem(problem_name, f1, f2)
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

        part = B.compute(settings, chunk, throttled_progress(bar, "running", share=(i / len(methods),
                                                                                    len(chunk) / len(methods))))
        parts.append(part)
        for j, m in enumerate(chunk):
            with cells[i + j]:
                # the studio's chart (a WebGL layer: drawn by st.plotly_chart): its click in the session state,
                # presenter mode's type scaled for the room (pcd.ui.chart)
                plotly_chart(B.figure(settings, m, part, optima), key=f"basin_map_{m}", click=True,
                             config={"scrollZoom": False})
                events[m] = st.session_state.get(f"basin_map_{m}")
    bar.empty()
    res = B.merge_basins(parts)
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
    query = T.toy_query(problem_name, method, res.starts[s], tau=tau, optimizer=opt, lr=lr, steps=steps,
                             f1=f1, f2=f2)
    for k in [k for k in st.session_state if str(k).startswith("toy_")]:
        del st.session_state[k]  # the toy page reads its settings from the link, not from an old visit
    st.switch_page(page("02_Toy_landscapes.py").link, query_params=query)

for name, msg in res.errors.items():
    st.warning(f"{method_label(name)} failed: {msg}")

st.subheader("Where the starts end")
table = B.basin_table(res)
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
