"""Guided lesson: the argument in seven steps, each a live view of the Studio pages' own builders."""
from __future__ import annotations

import inspect

import plotly.graph_objects as go
import streamlit as st

from pcd.studio import lesson as L
from pcd.studio.registry import page, this_page
from pcd.ui import figure_row, page_link, presenter_mode, setup_page, show_error, text_scale, url_default, url_sync
from pcd.ui.animation_export import lesson_export
from pcd.ui.chart import plotly_chart
from pcd.ui.controls import frame_controls, scroll_to_top
from pcd.viz.basin import basin_figure, fractions_text
from pcd.viz.geometry import geometry_figure
from pcd.viz.kbench import residual_figure
from pcd.viz.scale import eps_window_text, power_label, sweep_figure
from pcd.viz.tau import tradeoff_figure
from pcd.viz.teaching import gradients_figure
from pcd.viz.theme import method_label

setup_page(**this_page(__file__).setup, presenter_title=False)

SYMMETRIC = [m for m in L.available(L.SADDLE_METHODS) if m != "pcd"]
STEPS = [
    ("one_d", "One dimension: symmetric methods stop, PCD moves"),
    ("saddle", "The saddle, animated"),
    ("basins", "Where it stalls from: basin maps"),
    ("stall", "The gradients at the stall"),
    ("kbench", "K objectives: the 1.536·√(K−1) law"),
    ("scale", "Scale invariance"),
    ("tau", "τ, PCD's only dial"),
]
N = len(STEPS)
_NAV_PX = 56  # the back / next row above the figure, in presenter mode taken off the figure's height
# step 2: the map and its objective space side by side (their height; presenter mode: the row, its controls
# and the paragraph on a 1280 x 720 projector's first screen), the gradient inset under the controls
SADDLE_PX = {False: 520, True: 410 + _NAV_PX}
SADDLE_ROW = (2.2, 1.0)  # the map's share of the row, the objective panel's
SADDLE_MAP_PX, SADDLE_OBJ_PX = 760.0, 430.0  # their widths in a 1280-1440 px window (the legends' rows)
TAU_ROW = (1.6, 1.0)  # step 7: the trade-off curves' share of the row, the animated objective space's


# ---- the steps: (figure, paragraph, page to explore it, chart extras) -----------------------
def step_one_d():
    r = L.one_d(0.3)
    rows = {row["method"]: row for row in r["rows"]}
    pcd_row = rows["pcd"]
    zero = [row["label"] for m, row in rows.items() if m != "pcd" and not row["error"] and row["norm"] == 0.0]
    text = (f"g₁ = 0.5 and g₂ = −0.5 on one axis. {', '.join(zero)} all return **d = 0** and stop, although the "
            "primary gradient is 0.5: a conflict equilibrium. PCD pins g₁'s coefficient to 1, so g₁ cancels "
            f"only itself and what remains is g₂'s guaranteed share τ = 0.3 (μ = {pcd_row['mu'][0]:.2f}), "
            f"rescaled to ‖g₁‖: **d = {pcd_row['direction'][0]:+.2f}**. It costs the primary this step "
            f"(g₁·d = {pcd_row['progress'][0]:+.2f}), but PCD keeps moving.")
    return geometry_figure(r, height=430, text_scale=text_scale()), text, page("01_Gradient_geometry.py").link, {"angle": 180, "norm2": 1.0}


def step_saddle():
    res = L.saddle()
    diag = {m: list(res.diagnosis[res.index(m)]) for m in res.methods}
    n_pcd = sum(d == "cms" for d in diag.get("pcd", []))
    stalled = [method_label(m) for m in SYMMETRIC
               if all(d != "cms" for d in diag.get(m, []))]
    text = (f"The saddle toy (PCD paper, Fig. 1), {res.steps} Adam steps from {res.S} starts. "
            f"{', '.join(stalled)} stop in the left valley where the gradients cancel; PCD crosses the barrier "
            f"and reaches the point where both objectives are optimal from {n_pcd} of {res.S} starts. "
            "Press ▶ Play or step: beside the map the same runs in objective space, (f₁, f₂), move with it; "
            "under it the gradients of start S1 for PCD, the weighted sum and MGDA.")
    present = presenter_mode()  # a projector: the map's legend beside it (the height is the scarce side)
    return (L.saddle_figure(SADDLE_PX[present], None if present else SADDLE_MAP_PX, text_scale()), text,
            page("02_Toy_landscapes.py").link, {})


def step_basins():
    res = L.basins()
    fr = {m: res.fractions(m) for m in res.methods}
    sym = [m for m in res.methods if m != "pcd"]
    text = (f"Every start of a {res.n} × {res.n} grid, coloured by where it ends (the animation's settings). "
            + (f"PCD: {fractions_text(fr['pcd'])}. " if "pcd" in fr else "")
            + " ".join(f"{method_label(m)}: {fractions_text(fr[m])}." for m in sym)
            + " The symmetric maps split near the barrier: starts on its left end in the conflict equilibrium (red).")
    link = page("09_Basin_maps.py").link
    params = {"problem": "saddle2d", "methods": ",".join(res.methods), "tau": 0.02, "lr": 0.02, "steps": 1000,
              "grid": res.n}  # the same maps, larger, with a click to each trajectory
    return (basin_figure(res, columns=len(res.methods), optima=L.saddle_problem().optima(), height=380), text,
            link, params)


def step_stall():
    prob, res = L.saddle_problem(), L.saddle()
    stalled = [m for m in SYMMETRIC if str(res.diagnosis[res.index(m), 0]) == "conflict_equilibrium"]
    shown = ["pcd"] + stalled if "pcd" in res.methods else stalled
    grads = L.trajectory_gradients(prob, res, 0, methods=shown)
    frames = L.stall_frames(res, 0, reference="mgda" if "mgda" in stalled else (stalled or ["pcd"])[0])
    fig = gradients_figure(grads, frame=frames, cols=len(shown), height=330,
                           text_scale=text_scale())  # a projector: the numbers read from the back
    ref = grads["methods"][stalled[0]] if stalled else None
    t = frames.get(stalled[0], -1) if stalled else -1
    text = (f"Start S1, where {', '.join(method_label(m) for m in stalled)} stopped: g₁ and g₂ point "
            f"against each other (cos = {ref['cos'][t]:.3f}), ‖g₁‖ = {ref['norms'][t, 0]:.2f} is far from zero and "
            f"‖d‖ = {ref['d_norm'][t]:.0e}: the update vanished, not the gradient. PCD, where it passed MGDA's "
            "stopping point: g₁ cancels in its direction and g₂'s share τ remains, so d ≠ 0 and it climbs on."
            if ref is not None else "No symmetric method stalled at a conflict equilibrium from start S1 in this run.")
    return fig, text, page("02_Toy_landscapes.py").link, {}


def step_kbench():
    records = L.kbench_records()
    law_rows = [r for r in records if r["method"] == "mgda"]
    worst = max(abs(r["ratio"] - 1) for r in law_rows) if law_rows else float("nan")
    pcd_res = max(r["primary_grad_norm"] for r in records if r["method"] == "pcd")
    text = ("A double well in every coordinate and K−1 secondaries, all starting at xⱼ = −0.6, where a convex "
            "combination of the gradients is exactly zero. MGDA's final primary-gradient norm follows "
            f"1.536·√(K−1) (within {100 * worst:.2g} % here); PCD ends with ‖∇f₁‖ ≤ {pcd_res:.1e} at every K.")
    return residual_figure(records, height=430), text, page("03_K_objective_benchmark.py").link, {}


def step_scale():
    result = L.scale_sweep()
    d = {m: r["drift"] for m, r in result["methods"].items()}
    ks = result["exponents"]
    span = eps_window_text(result) or f"{power_label(ks[0])} … {power_label(ks[-1])}"
    text = (f"Multiply the secondary loss by 10ᵏ, {power_label(ks[0])} … {power_label(ks[-1])}: only its units "
            f"change. The weighted sum's operating point slides along the front (drift {d.get('ws', float('nan')):.3g}); "
            f"PCD normalizes every gradient by its own running norm and stays put (drift {d.get('pcd', float('nan')):.3g} "
            f"over {span}, where the secondary's gradient is well above the normalizer's ε).")
    return sweep_figure(result, current=0, height=430), text, page("04_Scale_invariance.py").link, {}


def step_tau():
    records, front = L.tau_curves()
    by_budget = {b: [r["budgets"][b]["losses"][1] for r in records if r["tau"] > 0] for b in L.tau_page.BUDGETS}
    text = ("τ is the share of its own progress every secondary is guaranteed at every step. On this convex pair "
            "(no common minimizer) τ sets the *rate* at which PCD trades primary for secondary, not an end point: "
            + ", ".join(f"after {b} steps f₂ = {min(v):.2g} … {max(v):.2g}" for b, v in by_budget.items())
            + ". Where a point with every objective stationary exists (the saddle), every τ > 0 ends there.")
    return (tradeoff_figure(records, pareto_front=front, selected=0.1, height=430, text_scale=text_scale()), text, page("05_Tau_dial.py").link,
            {"problem": "quadratic"})


RENDER = {"one_d": step_one_d, "saddle": step_saddle, "basins": step_basins, "stall": step_stall, "kbench": step_kbench,
          "scale": step_scale, "tau": step_tau}


# ---- navigation -----------------------------------------------------------------------------
if "lesson_step" not in st.session_state:
    st.session_state["lesson_step"] = url_default("step", 1, low=1, high=N) - 1


def _go(delta: int) -> None:
    st.session_state["lesson_step"] = int(min(max(st.session_state["lesson_step"] + delta, 0), N - 1))


def _jump() -> None:
    choice = st.session_state.get("lesson_jump")
    if choice is not None:
        st.session_state["lesson_step"] = int(choice) - 1


i = int(st.session_state["lesson_step"])
key, title = STEPS[i]
url_sync(step=i + 1)
st.session_state["lesson_jump"] = i + 1
_kw = "shortcut" in inspect.signature(st.button).parameters
scroll_to_top(f"lesson-{i}")  # a new step opens at its top, also after "next" at the bottom
pills, head = st.columns([1.25, 3], vertical_alignment="center")
with pills:
    st.segmented_control("step", list(range(1, N + 1)), key="lesson_jump", on_change=_jump,
                         label_visibility="collapsed", format_func=lambda k: f"{k}")
with head:
    st.markdown(f"<h3 style='margin:0;padding:0'>{i + 1} · {title}</h3>", unsafe_allow_html=True)
try:
    with st.spinner("computing…"):
        fig, text, page, params = RENDER[key]()
except ValueError as exc:
    show_error(exc)
    st.stop()
# back / next above the figure: always on screen without scrolling (a 1280 x 720 projector, 800 px)
back, explore, nxt = st.columns([1, 1.3, 1], vertical_alignment="center")
with back:
    st.button("← back", key="lesson_back", on_click=_go, args=(-1,), disabled=i == 0, width="stretch",
              **({"shortcut": "PageUp"} if _kw else {}))
with explore:
    page_link(page, "explore this on its page", params)
with nxt:
    st.button("next →", key="lesson_next", on_click=_go, args=(1,), disabled=i == N - 1, type="primary",
              width="stretch", **({"shortcut": "PageDown"} if _kw else {}))
if presenter_mode() and fig.layout.height:  # the navigation row's height, given back by the figure
    fig = go.Figure(fig).update_layout(height=max(320, int(fig.layout.height) - _NAV_PX))
if key == "saddle":  # the map, beside it the same runs in objective space, under them the gradient inset
    present = presenter_mode()
    h = int(fig.layout.height)
    in_map, in_obj = figure_row("lesson_saddle", SADDLE_ROW)
    with in_map:
        plotly_chart(fig, key="lesson_fig_saddle")
    with in_obj:
        plotly_chart(L.saddle_objective(h, SADDLE_OBJ_PX, legend=not present, text_scale=text_scale()),
                     key="lesson_obj_saddle")
    frame_controls("lesson_fig_saddle", L.saddle_frames(), follow=["lesson_obj_saddle", "lesson_inset_saddle"])
    st.markdown(text)
    plotly_chart(L.saddle_inset(1200.0, 270, text_scale()), key="lesson_inset_saddle")
    st.caption("Objective space: the dashed line is the Pareto front, the star the point where both objectives are "
               "optimal; at the last frame each group of end points says what it is (Pareto-stationary, dominated "
               "by …). Inset: d is the vector fed to the optimizer (it moves along −d), one fixed scale.")
elif key == "tau":  # the trade-off curves, beside them the same PCD runs played in objective space
    h = int(fig.layout.height)
    in_fig, in_obj = figure_row("lesson_tau", TAU_ROW)
    with in_fig:
        plotly_chart(fig, key="lesson_fig_tau")
    with in_obj:
        plotly_chart(L.tau_objective(h, SADDLE_OBJ_PX), key="lesson_obj_tau")
    frame_controls("lesson_obj_tau", L.tau_frames())
    st.markdown(text)
    st.caption("The animated panel: PCD for every τ from the same starts, the mean (f₁, f₂) over the starts as it "
               "runs (dark violet τ = 0 … yellow τ = 1; hover names each), over the Pareto front (dashed): ▶ Play, "
               "Step or the bar. The curves: where each τ is after 100, 300 and 1000 steps.")
else:
    plotly_chart(fig, key=f"lesson_fig_{key}")
    st.markdown(text)
if not presenter_mode():
    st.caption("PageDown / PageUp (a presenter's clicker) go to the next / previous step; on the animation, ← / → "
               "step through the frames. Every figure is computed live by the same functions as the pages.")
    lesson_export(key, lambda: (L.saddle_problem(), L.saddle()),
                  (L.tau_page.PROBLEM, L.tau_page.TAUS, L.tau_page.BUDGETS, L.tau_page.LR))  # GIF / MP4
