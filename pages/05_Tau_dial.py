"""Page 5 -- τ dial: PCD's trade-off curve as τ moves from 0 to 1."""
from __future__ import annotations

import streamlit as st

from pcd.studio import available, problem_label
from pcd.studio import tau as TD
from pcd.studio.registry import this_page
from pcd.ui import claim, download_row, method_picker, settings_panel, setup_page, show_error, url_default, url_sync
from pcd.ui.animation_export import tau_export
from pcd.ui.chart import plotly_chart
from pcd.ui.controls import frame_controls
from pcd.ui.presenter import text_scale
from pcd.ui.table import html_table
from pcd.viz.tau import tau_table, tradeoff_figure
from pcd.viz.theme import method_label

setup_page(
    **this_page(__file__).setup,
    intro=(
        "τ is PCD's only hyper-parameter: every secondary must get at least a share τ of its own first-order "
        "progress, g̃ⱼ·d ≥ τ‖g̃ⱼ‖². τ = 0 only forbids making a secondary worse; larger τ lets the secondaries "
        "bend the step more. Sweep τ and see where PCD is in loss space after a given number of steps, next to the "
        "Pareto front. **Click a point** (or pick τ below) to see that run's trajectories."
    ),
)

TAUS = list(TD.TAUS)
BUDGETS = [30, 100, 300, 1000, 3000]
DEFAULT_BUDGETS = list(TD.BUDGETS)
LRS = [0.005, 0.01, 0.02, 0.05]

OTHERS = [m for m in available() if m != "pcd"]  # PCD is the curve

panel = settings_panel()
c1, c2, c3 = panel.columns([1.6, 1.6, 1])
with c1:
    names = list(TD.PROBLEMS)
    problem = st.selectbox("problem", names, index=names.index(url_default("problem", TD.PROBLEM, names)),
                           format_func=problem_label, key="td_problem")
with c2:
    url_budgets = url_default("budgets", DEFAULT_BUDGETS, allowed=BUDGETS)
    budgets = st.multiselect("step budgets (one curve each)", BUDGETS, default=url_budgets,
                             format_func=lambda b: f"{b} steps", key="td_budgets",
                             help="PCD runs once per τ for the largest budget; each curve is where the runs are "
                                  "after that many steps")
    budgets = sorted(int(b) for b in budgets) or DEFAULT_BUDGETS
with c3:
    lr = st.select_slider("learning rate (Adam)", LRS, value=url_default("lr", TD.LR, LRS), key="td_lr")
steps = budgets[-1]
others = method_picker("compare with (where each ends after the largest budget, its own defaults)", OTHERS,
                       default=url_default("others", [], allowed=OTHERS), key="td_others", container=panel)


try:
    with st.spinner("sweeping τ…"):
        records = TD.tau_sweep(problem, tuple(budgets), lr)
        refs = {m: TD.tau_reference(problem, m, steps, lr) for m in others}
    front = TD.tau_front(problem)
except ValueError as exc:
    show_error(exc)
    st.stop()

sel_default = url_default("tau", TD.TAU, TAUS)
event = st.session_state.get("td_chart")
clicked = None
try:
    pts = event["selection"]["points"] if event else []
    # a point of a τ curve carries [τ, budget, outcome, f₁, f₂] (the Pareto front's points do not)
    cds = [p.get("customdata") for p in pts if isinstance(p.get("customdata"), (list, tuple))]
    cds = [cd for cd in cds if len(cd) == 5]
    if cds:
        clicked = float(cds[0][0])
except (KeyError, TypeError, ValueError, IndexError):
    clicked = None
if clicked is not None and clicked in TAUS and st.session_state.get("td_last_click") != clicked:
    st.session_state["td_last_click"] = clicked
    st.session_state["td_tau"] = clicked

if "td_tau" not in st.session_state:
    st.session_state["td_tau"] = sel_default
left, right = st.columns([1, 1])
with right:
    tau_sel = st.select_slider("show the trajectories for τ", TAUS, key="td_tau", format_func=lambda t: f"τ = {t:g}")
url_sync(problem=problem, budgets=budgets, lr=lr, tau=tau_sel, others=others)
try:
    fig = tradeoff_figure(records, pareto_front=front, selected=tau_sel, log_axes=problem in ("saddle2d",),
                          references=refs, text_scale=text_scale())  # presenter mode: larger labels
    tfig = TD.tau_trajectory_figure(problem, tau_sel, steps, lr, text_scale())
except ValueError as exc:
    show_error(exc)
    st.stop()
with left:
    plotly_chart(fig, key="td_chart", click=True)
    st.caption("Filled markers: every start has ended (stalled, reached CMS, …); **open markers: still moving** — "
               "not an end point. Lighter, dotted curves = fewer steps. Click a legend entry to hide a curve, "
               "double-click to show it alone."
               + (" Log axes; values below 10⁻¹² (exact zeros at CMS) sit on the line labelled 0."
                  if problem == "saddle2d" else "")
               + (f" Other methods: one marker each, the mean of their end losses over the same starts after {steps} "
                  f"steps with their own defaults (`python -m pcd toy --problem {problem} --methods {','.join(others)} "
                  f"--steps {steps} --lr {lr:g}`)." if others else ""))
for m, r in refs.items():
    if r["error"]:
        st.warning(f"{method_label(m)} failed: {r['error']}")
with right:
    st.markdown(f"**PCD trajectories at τ = {tau_sel:g}** ({steps} steps, Adam lr {lr})")
    plotly_chart(tfig, key="td_traj")
    frame_controls("td_traj", [f.name for f in tfig.frames])

moving_last = max(r["budgets"][steps]["moving_fraction"] for r in records if r["tau"] > 0)
by_budget = {b: [r["budgets"][b]["losses"][1] for r in records if r["tau"] > 0] for b in budgets}
if problem in ("quadratic", "two_task"):
    st.info(
        "**What τ controls on a genuine trade-off.** The two objectives have no common minimizer, so there is no "
        "point where PCD's direction vanishes: for every τ > 0 the secondary keeps being owed its share of progress "
        "and PCD keeps trading primary for secondary, **faster for larger τ**. τ sets the *rate* of the trade, not "
        "where it stops, and each curve is a property of its step budget: "
        + ", ".join(f"after {b} steps the secondary is at {min(v):.3g} … {max(v):.3g}" for b, v in by_budget.items())
        + ". In the paper's setting — a primary with regulariser-like secondaries, where a point with every objective "
        "stationary (CMS) exists — every τ > 0 ends at that point and τ only sets how fast (pick the saddle problem).",
        icon=":material/info:")
table = tau_table(records)
fmt = {c: "{:.4g}" for c in table.columns if c.startswith("mean")}
html_table(table, formats=fmt)
if problem == "saddle2d":
    final = [r["budgets"][steps] for r in records]
    cms0 = final[0]["cms_fraction"]
    cms_pos = min(f["cms_fraction"] for f in final[1:])
    claim("only hyper-parameter τ ∈ [0, 1]; on the saddle toy PCD crosses to where both objectives are optimal",
          here=f"after {steps} steps τ = 0: {100 * cms0:.0f} % of starts reach CMS; every τ > 0 in the sweep: "
               f"≥ {100 * cms_pos:.0f} %")
else:
    claim("τ ∈ [0, 1] is PCD's only hyper-parameter; protocol grid 0, 0.01…0.1, 0.2…1.0, representative τ = 0.02",
          here=f"{len(TAUS)} values of τ, Adam lr {lr}, budgets {', '.join(map(str, budgets))} steps, mean over "
               f"{len(records[0]['diagnosis'])} starts; after {steps} steps {100 * moving_last:.0f} % of the τ > 0 "
               "runs are still moving at worst",
          note="The paper's τ experiments are on regulariser-style hierarchies; this convex pair is a genuine trade-off, "
               "where τ sets a rate (see above).")

download_row(fig, "tau_dial", key="td", table=table,
             settings={"problem": problem, "method": "pcd", "compare with": others, "τ": TAUS, "optimizer": "Adam", "lr": lr,
                       "steps": budgets})
tau_export(problem, TAUS, budgets, lr)  # the budget curves played, as GIF / MP4 for slides
