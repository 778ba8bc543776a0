"""Page 2 -- Toy landscapes: animated trajectories of every method on 2-D problems."""
from __future__ import annotations

import json

import numpy as np
import streamlit as st

import pcd.methods as registry
from pcd.studio import problem_label
from pcd.studio import toy as T
from pcd.studio.prefetch import foreground
from pcd.studio.registry import this_page
from pcd.ui import (
    claim,
    download_csv,
    download_figure,
    figure_row,
    hand_over,
    method_picker,
    param_widget,
    png_export,
    presenter_mode,
    rest_of_page_follows,
    settings_panel,
    setup_page,
    show_error,
    stop_page,
    text_scale,
    url_default,
    url_json,
    url_sync,
)
from pcd.ui.animation_export import toy_export
from pcd.ui.chart import PRESENT_FIT, plotly_chart
from pcd.ui.controls import frame_controls, reported_width
from pcd.ui.live import live_map, live_value
from pcd.ui.table import html_table
from pcd.viz import toy as toy_map
from pcd.viz.landscape import TRAIL
from pcd.viz.theme import outcome_shade

setup_page(
    **this_page(__file__).setup,
    intro=(
        "Run every method from the same start points on a 2-D problem and watch where it goes. The background "
        "is the primary objective (darker = higher, log scale, contour lines); green marks where the secondary "
        "is at its minimum (zero here); the gold star is where **both** objectives are optimal. Symmetric methods stop where the "
        "gradients cancel — a **conflict equilibrium** — although the primary gradient is not zero; PCD keeps "
        "g₁ as the anchor and crosses the barrier. Press **▶ Play** under the map."
    ),
)

ALL = registry.available()
present = presenter_mode()
DEFAULT_METHODS = T.available(T.METHODS)
LRS = list(T.LRS)      # one home: the basin page links here with these choices
STEPS = list(T.STEP_CHOICES)
PROBLEMS = list(T.PROBLEMS)
FORMULAS = T.FORMULAS
PRESETS = list(FORMULAS)
DEFAULT_F1, DEFAULT_F2 = FORMULAS["valleys"]["f1"], FORMULAS["valleys"]["f2"]
# the figure is laid out for the width it is shown at (the frame controls report the column width)
WIDTH_CLASSES = [("narrow", 760.0), ("medium", 1000.0), ("wide", None)]

MODES = ["presets", "grid", "typed"]
DEFAULT_TYPED = "-2.5, 0.4\n-1.0, 1.5"
# Start-point widgets are driven by session state so that a click on the map can switch them to
# "typed" and append the clicked point before they are drawn.
if "toy_starts" not in st.session_state:
    st.session_state["toy_starts"] = url_default("starts", "presets", MODES)
if "toy_typed" not in st.session_state:
    st.session_state["toy_typed"] = url_default("typed", DEFAULT_TYPED)


@st.fragment
def _settings_and_figures() -> tuple:
    """The settings, the runs and the figures (map, objective space, inset, play controls): a change of
    a setting reruns this fragment first, the new map is drawn, and once the browser has drawn it the rest
    of the page follows in a run of the whole page (pcd.ui.rest_of_page_follows, pcd.ui.hand_over)."""
    hand_over()  # the map of this fragment's last run is drawn: the whole page runs now
    _event = st.session_state.get("toy_map")
    try:
        _pts = list(_event["selection"]["points"]) if _event else []
    except (KeyError, TypeError):
        _pts = []
    if _pts and "x" in _pts[-1] and "y" in _pts[-1]:
        _click = (round(float(_pts[-1]["x"]), 3), round(float(_pts[-1]["y"]), 3))
        if st.session_state.get("toy_last_click") != _click:
            st.session_state["toy_last_click"] = _click
            base = st.session_state.get("toy_last_starts", "")
            st.session_state["toy_starts"] = "typed"
            st.session_state["toy_typed"] = (base + "\n" if base else "") + f"{_click[0]:.3f}, {_click[1]:.3f}"

    settings = settings_panel(flow=True)
    with settings:
        problem_name = st.selectbox("problem", PROBLEMS, index=PROBLEMS.index(url_default("problem", T.PROBLEM, PROBLEMS)),
                                    format_func=problem_label, key="toy_problem")
        f1 = f2 = None
        formula_error = None
        custom_bounds = custom_starts = None
        if problem_name == "custom":
            def _preset_chosen() -> None:  # a preset fills the formula boxes (editable from there)
                chosen = FORMULAS[st.session_state["toy_preset"]]
                st.session_state["toy_f1"], st.session_state["toy_f2"] = chosen["f1"], chosen["f2"]

            preset = st.selectbox("preset formulas", PRESETS, index=PRESETS.index(url_default("preset", "valleys", PRESETS)),
                                  format_func=lambda k: FORMULAS[k]["label"], key="toy_preset", on_change=_preset_chosen,
                                  help="fills the two formula boxes; edit them freely")
            if "toy_f1" not in st.session_state:
                st.session_state["toy_f1"] = url_default("f1", FORMULAS[preset]["f1"])
                st.session_state["toy_f2"] = url_default("f2", FORMULAS[preset]["f2"])
            f1 = st.text_input("primary f₁(x, y)", key="toy_f1")
            f2 = st.text_input("secondary f₂(x, y)", key="toy_f2")
            custom_bounds = FORMULAS[preset]["bounds"]
            custom_starts = FORMULAS[preset].get("starts")
            try:
                problem = T.make_problem("custom", f1, f2, bounds=custom_bounds, starts=custom_starts)
            except ValueError as exc:
                formula_error = exc
        methods = method_picker("methods", ALL, default=url_default("methods", DEFAULT_METHODS, allowed=ALL),
                                key="toy_methods")
        tau = st.slider("τ (PCD)", 0.0, 1.0, url_default("tau", T.TAU, low=0.0, high=1.0), 0.01, key="toy_tau",
                        help="share of each secondary's own progress PCD guarantees per step")
        opt = st.radio("optimizer", ["adam", "sgd"], index=["adam", "sgd"].index(url_default("opt", T.OPT, ["adam", "sgd"])),
                       horizontal=True, format_func={"adam": "Adam", "sgd": "SGD"}.get, key="toy_opt")
        lr = st.select_slider("learning rate", LRS, value=url_default("lr", T.LR, LRS), key="toy_lr")
        steps = st.select_slider("steps", STEPS, value=url_default("steps", T.STEPS, STEPS), key="toy_steps")
        mode = st.radio("start points", MODES, horizontal=True, key="toy_starts",
                        help="or click on the map to add a start point")
        grid_n = 3
        typed = ""
        if mode == "grid":
            grid_n = st.slider("grid (n × n starts)", 2, 5, url_default("grid", 3, low=2, high=5), key="toy_grid")
        elif mode == "typed":
            typed = st.text_area("start points 'x, y' (one per line)", key="toy_typed")
        view_mode = st.radio("map bounds", ["auto", "set"], horizontal=True, key="toy_view",
                             index=["auto", "set"].index(url_default("view", "auto", ["auto", "set"])),
                             format_func={"auto": "fit to trajectories", "set": "type them"}.get,
                             help="fit: the problem's box, grown to cover every trajectory; or type x/y limits")
        bounds_text = ""
        if view_mode == "set":
            bounds_text = st.text_input("x min, x max, y min, y max", url_default("bounds", ""), key="toy_bounds",
                                        placeholder="-3.5, 3.5, -2, 2")
        hp_url = T.url_hparams(url_json("hp", {}))  # validated; hostile values dropped
        # the methods' own settings only on request (a shared link with some turns it on): ~20 widgets
        # fewer for the browser to draw before the map
        show_hp = st.toggle("hyper-parameters", bool(hp_url), key="toy_show_hp",
                            help="each method's own settings (PCD's τ has its slider above); off: the defaults, or "
                                 "the values a shared link carries")
        tuned = [m for m in methods if any(p.name != registry.get(m).primary_knob for p in registry.get(m).params)]
        cells = []
        if show_hp and tuned:  # a row of its own, one column per method (three a row)
            row = st.container(border=True, key="pcd_row_toy_hp")
            per_row = min(len(tuned), 3)
            cells = [c for i in range(0, len(tuned), per_row) for c in row.columns(per_row)][:len(tuned)]
        hparams: dict[str, dict] = {}
        for i, m in enumerate(tuned):
            params = [p for p in registry.get(m).params if p.name != registry.get(m).primary_knob]  # τ: its own slider
            vals = {}
            if cells:
                with cells[i]:
                    st.markdown(f"**{registry.get(m).display_name}**")
                    for p in params:
                        cur = hp_url.get(m, {}).get(p.name, p.default)
                        try:
                            cur = p.validate(cur, m)
                        except ValueError:
                            cur = p.default
                        vals[p.name] = param_widget(p, f"toy_hp_{m}_{p.name}", cur)
            else:
                vals = {p.name: hp_url[m][p.name] for p in params if p.name in hp_url.get(m, {})}
            try:
                hparams[m] = T.hparam_values(m, vals)
            except ValueError as exc:
                show_error(exc)
                hparams[m] = {}
        hparams = {m: v for m, v in hparams.items() if v}

    url_sync(problem=problem_name, methods=methods, tau=tau, opt=opt, lr=lr, steps=steps, starts=mode, view=view_mode,
             **({"grid": grid_n} if mode == "grid" else {}), **({"typed": typed} if mode == "typed" else {}),
             **({"preset": preset, "f1": f1, "f2": f2} if problem_name == "custom" else {}),
             **({"bounds": bounds_text} if view_mode == "set" and bounds_text else {}),
             **({"hp": json.dumps(hparams, separators=(",", ":"))} if hparams else {}))

    if formula_error is not None:  # shown once, here (the parser names the token and its 0-based position)
        st.error(f"Fix the formula in the settings above to run: {formula_error}", icon=":material/function:")
        caret = T.formula_caret(formula_error)
        if caret:
            st.code(caret, language=None)
        stop_page()

    if not methods:
        st.info("Choose at least one method in the settings above.")
        stop_page()


    # the page's cached computations live in pcd.studio.toy: the server fills them with this page's
    # default view when it starts, so a first visitor is served from the cache
    try:
        pbounds = custom_bounds if problem_name == "custom" else None
        pstarts = custom_starts if problem_name == "custom" else None
        problem = T.toy_problem(problem_name, f1, f2, pbounds, pstarts)
        if mode == "presets":
            starts = problem.default_starts()
        elif mode == "grid":
            starts = T.grid_starts(problem.bounds, grid_n)
        else:
            starts = T.parse_starts(typed)
        st.session_state["toy_last_starts"] = "\n".join(f"{x:.3f}, {y:.3f}" for x, y in np.asarray(starts)[:, :2])
        # (foreground: the background prefetch of other views pauses while this page computes)
        with st.spinner("running…"), foreground():  # the view box: typed, or the box grown to cover every trajectory
            problem, res, view, bg, runs_key = T.toy_runs(problem_name, f1, f2, pbounds, pstarts, methods, hparams, tau,
                                                          opt, lr, steps, starts,
                                                          bounds_text if view_mode == "set" else None)
        with settings:
            show_inset = st.toggle("gradient inset", url_default("inset", True), key="toy_inset",
                                   help="g₁, g₂ and each method's step d where its trajectory is, at the frame shown: "
                                        "under the play controls (the objective space beside the map), or with the map")
            inset_start = st.selectbox("inset: start point", list(range(res.S)), format_func=lambda s: f"S{s + 1}",
                                       index=min(url_default("istart", T.INSET_START, low=0, high=res.S - 1), res.S - 1),
                                       key="toy_inset_start", disabled=not show_inset)
        url_sync(inset=show_inset, istart=inset_start)
        width_class = reported_width("toy_map-controls") or T.WIDTH  # a 1280-1440 px window: no second run
        istart = inset_start if show_inset else None
        if width_class not in toy_map.TOY_CHART_PX:  # a stale or odd report: the default layout
            width_class = T.WIDTH
        if present:  # a 1280 x 720 projector: laid out for the map's ~830-px cell
            width_class = T.WIDTH
        with settings:
            obj_log = st.radio("objective space axes", ["log", "linear"], horizontal=True, key="toy_obj_axes",
                               index=["log", "linear"].index(url_default("oaxes", "log" if T.OBJ_LOG else "linear",
                                                                         ["log", "linear"])),
                               help="the (f₁, f₂) panel under the map: log axes draw exact zeros at 1e-12") == "log"
        url_sync(oaxes="log" if obj_log else "linear")
        # the map beside the same runs in objective space (wider than ~800 px), the inset a chart of its own
        with foreground():
            figs = T.toy_figures(problem, res, bg, runs_key, istart, width_class, present, obj_log, PRESENT_FIT["font"],
                                 text_scale=text_scale())  # presenter mode: the labels on the data larger
        fig, lfig, ofig, side = figs["map"], figs["loss"], figs["objective"], figs["side"]
    except ValueError as exc:
        show_error(exc)
        stop_page()

    if problem_name == "custom" and bg["undefined"] > 0:  # log of x <= 0, sqrt, 1/0 ... on part of the map
        why = "; ".join(problem.domain_report()) or f"on {100 * bg['undefined']:.3g}% of the map"
        st.warning(f"The formula is undefined on the hatched part of the map — {why}. A trajectory that enters it "
                   "is reported as diverged.", icon=":material/warning:")
    # the map and its objective space side by side (on a 1280 x 720 projector: both on the first screen), the
    # controls under them, the gradient inset a chart of its own under the controls
    cells = figure_row("toy", (2.1, 1.0)) if side else [st.container()]
    with cells[0]:
        plotly_chart(fig, key="toy_map", click="anywhere", config={"scrollZoom": False}, report_drawn=True)
    if len(cells) > 1:
        with cells[1]:
            plotly_chart(ofig, key="toy_obj", config={"scrollZoom": False})
    frame_names = fig.frame_names  # recorded steps the map animates (toy_map.TOY_FRAMES of them)
    follow = (["toy_obj"] if ofig is not None else []) + (["toy_inset_fig"] if figs["inset"] is not None else [])
    frame_controls("toy_map", frame_names, loss_key="toy_loss", cursor_x=[float(n) + 1 for n in frame_names],
                   width_classes=None if present else WIDTH_CLASSES, width=width_class, follow=follow)
    if figs["inset"] is not None:
        plotly_chart(figs["inset"], key="toy_inset_fig")
    rest_of_page_follows(when_drawn="toy_map")
    return (problem_name, f1, f2, pbounds, pstarts, methods, hparams, tau, opt, lr, steps, mode, view_mode, bounds_text, problem, res, view, bg, runs_key, starts, show_inset, istart, width_class, obj_log, lfig, ofig, side)


(problem_name, f1, f2, pbounds, pstarts, methods, hparams, tau, opt, lr, steps, mode, view_mode, bounds_text, problem, res, view, bg, runs_key, starts, show_inset, istart, width_class, obj_log, lfig, ofig, side) = _settings_and_figures()


@st.fragment
def _live(problem, methods, hparams, tau, opt, lr, steps, starts, view, objective=None) -> None:
    # Direct manipulation (pcd.ui.live): a drag of a start marker or a move of the τ / lr slider asks
    # for new paths -- and their points in the objective-space panel (``objective``: its axes, the
    # figure's layout.meta) --; this fragment alone reruns to answer (the engine, pcd.studio.toy.live_answer),
    # and a drop commits the moved start (typed starts) with one run of the whole page.
    req = live_value("toy_live", "req")
    answer = None
    if isinstance(req, dict) and req.get("seq") != st.session_state.get("toy_live_seq"):
        with foreground():  # a drag is answered before any prefetch goes on
            answer = T.live_answer(req, problem, methods, hparams, opt, steps, starts, view, objective)
        # answered once (marked after: a run stopped half-way by a page run answers it in that run)
        st.session_state["toy_live_seq"] = req.get("seq")

    def _drop() -> None:
        d = live_value("toy_live", "drop")
        try:
            typed = T.moved_start(st.session_state.get("toy_last_starts", ""), d.get("s"), d.get("x"), d.get("y"), view)
        except (AttributeError, ValueError):
            return  # a malformed drop from the browser is ignored
        st.session_state["toy_starts"], st.session_state["toy_typed"] = "typed", typed
        st.session_state["toy_live_commit"] = True

    live_map("toy_map", methods, tau=tau, lr=lr, trail=TRAIL, sliders={"tau": "toy_tau", "lr": "toy_lr"},
             answer=answer, key="toy_live", on_drop=_drop, objective_key="toy_obj" if objective else None)
    if st.session_state.pop("toy_live_commit", False):
        st.rerun(scope="app")  # the map, frames, inset, objective panel, table and URL agree again


_live(problem, list(res.methods), hparams, tau, opt, lr, steps, np.asarray(starts, dtype=float)[:, :2], view,
      dict(ofig.meta) if ofig is not None else None)
st.caption("Drag a start point's ring and every method's path from there follows while you drag; moving the τ or "
           "learning-rate slider redraws the paths as it moves. "
           "Click anywhere on the map to add a start point there (the start points switch to *typed*). "
           "Play, step (or ← / →) and drag the bar to any step; the dotted cursor on the loss plot follows the frame. "
           "Each path grows as it plays; at the last frame a diamond marks where it ends and one label names every "
           "method ending at the same place."
           + (" Inset: d is the vector fed to the optimizer (it moves along −d); one fixed scale, the dotted "
              "circle — longer arrows are clipped to it, their lengths are in the numbers." if show_inset else ""))
if ofig is not None:  # the same runs in the (f1, f2) plane, on the same frames (the controls above play both)
    if not side:
        st.subheader("The same runs in objective space")
        plotly_chart(ofig, key="toy_obj", config={"scrollZoom": False})
    front_note = ("the dashed line is the Pareto front computed numerically: the non-dominated points of the "
                  "map's grid" if ofig.meta["numerical"] else
                  "the dashed line is the problem's Pareto front (its Pareto set's losses)")
    st.caption(f"Each method's (f₁, f₂) as it runs, on the map's frames: ▶ Play, Step and the bar above move both. "
               f"The star is where both objectives are optimal; {front_note} (a single point when the star is the "
               "whole front). At the last frame each group of end points is labelled with what it is: Pareto-"
               "stationary (the gradients cancel) and which points dominate it." + (
                   " Log axes: exact zeros are drawn at 1e-12." if obj_log else ""))

for name, msg in res.errors.items():
    st.warning(f"{registry.get(name).display_name} failed: {msg}")

names = bg["names"]
st.subheader("Where each trajectory ended")
table = T.endpoint_table(res)
st.caption(" · ".join(f"f{k + 1} = {n}" for k, n in enumerate(names)))


def _shade(v):
    bg = outcome_shade(str(v))
    return f"background-color: {bg}" if bg else ""


num_cols = [c for c in table.columns if c.startswith("final") or c in ("‖∇f₁‖", "CMS residual")]
html_table(table, formats={c: "{:.3e}" for c in num_cols}, styles={"diagnosis": _shade})
st.caption("CMS residual = max over objectives of ‖∇fᵢ‖ at the end (0 ⇔ every objective stationary). "
           "*Stalled: gradients cancel* = the update vanished while ‖∇f₁‖ > 1e-3 (a conflict equilibrium). "
           "*Pareto-stationary at ∇f₁ = 0* = a symmetric method stopped at the primary's stationary point with the "
           "secondary not optimal (e.g. FAMO at the primary's minimum) — a different thing from *PCD halted: ∇f₁ = 0*, "
           "PCD's known limitation: its rescaled step ‖g₁‖·d̃/‖d̃‖ is zero wherever g₁ = 0 (e.g. exactly on the "
           "saddle). *PCD held by a constraint* = PCD stopped because a secondary's τ constraint binds against the "
           "primary.")
if problem_name == "saddle2d":
    n_cross = int(sum(str(d) == "cms" for d in res.diagnosis[res.methods.index("pcd")])) if "pcd" in res.methods else None
    claim("WS, MGDA, PCGrad, CAGrad, FAMO stall at a Pareto-stationary point with the secondary > 0; PCD crosses "
          "from 3 different starts to where both objectives are optimal",
          here=(f"PCD reached CMS from {n_cross} of {res.S} starts" if n_cross is not None else "add PCD to compare"))

st.subheader("Loss vs step")
plotly_chart(lfig, key="toy_loss")
st.caption("Log scales; line style = start point (solid S1, dashed S2, dotted S3, …). Exact zeros are drawn at 1e-12.")

export_settings = {"problem": problem_name, **({"f1": f1, "f2": f2} if problem_name == "custom" else {}), "methods": methods,
            "tau": tau, "optimizer": opt, "lr": lr, "steps": steps, "starts": mode,
            "map bounds": ", ".join(f"{v:g}" for b in view for v in b)}
c1, c2, c3, c4 = st.columns(4)
with c4:  # the last frame as a still, built only when asked for
    png_export(lambda: T.toy_map(runs_key + (istart, "last"), problem, res, bg, istart, "wide", animate=False).figure(),
               "toy_landscape.png", key="toy_png", label="Map (PNG, last frame)", settings=export_settings)
with c1:
    download_csv(T.trajectories_table(res), "toy_trajectories.csv", "Trajectories (CSV)", key="toy_csv",
                 settings=export_settings)
with c2:
    download_csv(table, "toy_endpoints.csv", "Endpoint table (CSV)", key="toy_end_csv", settings=export_settings)
with c3:  # a standalone file: Plotly's own play button and slider (no page controls there); built on the click
    download_figure(lambda: T.map_figure(problem, res, bg, inset_start=istart, controls=True),
                    "toy_landscape.html", "Animated figure (HTML)", key="toy_html", settings=export_settings)
toy_export(problem, res, bg, export_settings, log=obj_log, inset_start=istart)  # GIF / MP4 for slides (+ progress bar)
# the views one click away (the other optimizer, lr and steps one notch down and up), computed while idle
T.prefetch(T.view_setting(problem_name, f1, f2, pbounds, pstarts, methods, hparams, tau, opt, lr, steps, starts,
                          bounds_text if view_mode == "set" else None, istart, width_class, present, obj_log,
                          PRESENT_FIT["font"], text_scale()))
