"""Page 1 -- Gradient geometry: every method's update for two (or three) gradients."""
from __future__ import annotations

import streamlit as st

from pcd.studio import available
from pcd.studio import geometry as G
from pcd.studio.registry import this_page
from pcd.ui import claim, download_row, method_picker, settings_panel, setup_page, show_error, url_default, url_sync
from pcd.ui.chart import plotly_chart
from pcd.ui.controls import vector_drag
from pcd.ui.presenter import text_scale
from pcd.ui.table import html_table
from pcd.viz.theme import method_color

setup_page(
    **this_page(__file__).setup,
    intro=(
        "One step of every method, drawn. Two gradients g₁ (the **primary**) and g₂ (a secondary) meet at an "
        "angle; each method turns them into one update vector d (the optimizer steps along −d). Progress on "
        "objective i is the first-order decrease gᵢ·d. A symmetric method balances the gradients, so when they "
        "point against each other its update shrinks towards zero — the seed of a **conflict equilibrium**. PCD "
        "keeps g₁ as the anchor: it finds the point of the shaded region (every secondary gets at least a share τ "
        "of its own progress) closest to g₁."
    ),
)
st.latex(r"\begin{gathered}\tilde d=\arg\min_d\|d-\tilde g_1\|^2\ \ \text{s.t.}\ \ \tilde g_j\cdot d\ge\tau\|\tilde g_j\|^2"
         r"\\ \Rightarrow\quad \tilde d=\tilde g_1+\textstyle\sum_j\mu_j\tilde g_j,\ \ \mu_j\ge 0\end{gathered}")

ALL = available()
DEFAULT_METHODS = G.available(G.METHODS)

panel = settings_panel()
methods = method_picker("methods", ALL, default=url_default("methods", DEFAULT_METHODS, allowed=ALL),
                        key="geo_methods", container=panel)
# The vectors' sliders are driven by session state only (a click in the figure sets them, _dropped):
# a widget given a value AND set through session state logs a warning on every such click
for _key, _val in (("geo_angle", lambda: url_default("angle", G.ANGLE, low=0, high=180)),
                   ("geo_norm2", lambda: url_default("norm2", G.NORM2, low=0.1, high=3.0)),
                   ("geo_angle3", lambda: url_default("angle3", -110, low=-180, high=180)),
                   ("geo_norm3", lambda: url_default("norm3", 0.8, low=0.1, high=3.0))):
    if _key not in st.session_state:
        st.session_state[_key] = _val()
c1, c2, c3, c4 = panel.columns(4)
with c1:
    angle = st.slider("angle ∠(g₁, g₂) in degrees", 0, 180, key="geo_angle")
with c2:
    norm2 = st.slider("‖g₂‖ (‖g₁‖ = 1)", 0.1, 3.0, step=0.05, key="geo_norm2")
with c3:
    tau = st.slider("τ (PCD)", 0.0, 1.0, url_default("tau", G.TAU, low=0.0, high=1.0), 0.01, key="geo_tau")
with c4:
    use_g3 = st.toggle("g₃ (K = 3)", url_default("g3", False), key="geo_g3",
                       help="a third gradient g₃: PCD with two secondaries")
third = None
if use_g3:
    c5, c6, _ = panel.columns([1, 1, 2])
    with c5:
        a3 = st.slider("angle of g₃ from g₁", -180, 180, key="geo_angle3")
    with c6:
        n3 = st.slider("‖g₃‖", 0.1, 3.0, step=0.05, key="geo_norm3")
    third = (a3, n3)
url_sync(angle=angle, norm2=norm2, tau=tau, g3=use_g3, methods=methods,
         **({"angle3": third[0], "norm3": third[1]} if third else {}))


def _dropped(tip):
    """A click/drag in the figure: the vector's new tip -> the sliders (before they are drawn)."""
    if tip.get("name") == "g3":
        a, n = G.vector_to_polar(tip["x"], tip["y"], angle_range=(-180.0, 180.0))
        st.session_state["geo_angle3"], st.session_state["geo_norm3"] = int(a), n
    else:
        a, n = G.vector_to_polar(tip["x"], tip["y"], angle_range=(0.0, 180.0))
        st.session_state["geo_angle"], st.session_state["geo_norm2"] = int(a), n


try:
    result = G.geometry(angle, norm2, third, tau, tuple(methods))
    fig = G.geometry_fig(angle, norm2, third, tau, tuple(methods), text_scale())  # presenter mode: larger labels
except ValueError as exc:
    show_error(exc)
    st.stop()
plotly_chart(fig, key="geo_chart")
names = [t.name for t in fig.data]
J = result["J"]
vector_drag("geo_chart", [{"name": f"g{k + 1}", "tip": J[k], "trace": names.index(f"g{k + 1}") if f"g{k + 1}" in names
                           else None} for k in range(1, J.shape[0])], on_drop=_dropped)
st.caption("Click or drag in the figure to move g₂" + (" or g₃ (whichever tip is nearer)" if third else "")
           + "; the sliders follow. g₂'s angle is measured either side of g₁, so a point below the axis "
           "sets its mirror image. Arrows along one ray are drawn longest first and share one label; arrows that "
           "coincide are nested (the widest underneath). Click a legend entry to hide a method, double-click to "
           "show it alone.")

table = G.directions_table(result)


_method_colors = {r["label"]: method_color(r["method"]) for r in result["rows"]}


st.subheader("What each update does")
st.caption("gᵢ·d > 0: objective i decreases to first order. **conflicts** = some objective gets worse. "
           "**w** = the raw-space coefficients (d = Σ wᵢ gᵢ); **w̃ × scale** (PCD) = the normalized weights "
           "(w̃₁ = 1, the pinned primary) and the deployed rescale ‖g₁‖/‖d̃‖.")
fmt = {c: "{:+.4f}" for c in table.columns if c.startswith("g")}
fmt["‖d‖"] = "{:.4f}"
html_table(table, formats=fmt, na_rep="—",
           styles={"method": lambda v: f"color: {_method_colors.get(v, '#24292f')}; font-weight: 600"})
for r in result["rows"]:
    if r["error"]:
        st.warning(f"{r['label']}: {r['error']}")

pcd_row = next((r for r in result["rows"] if r["method"] == "pcd"), None)
if pcd_row is not None and not pcd_row["error"]:
    mu = ", ".join(f"μ{j + 2} = {m:.3f}" for j, m in enumerate(pcd_row["mu"]))
    wt = ", ".join(f"{w:.3g}" for w in pcd_row["normalized_weights"])
    if not pcd_row["feasible"]:
        st.warning("The secondaries' constraints are mutually incompatible here (K ≥ 3): PCD reports "
                   "`feasible = False` and falls back to the primary for this step.")
    st.markdown(
        f"**PCD:** in the normalized space the coefficient of g̃₁ is pinned to 1 — d̃ = g̃₁ + Σ μⱼ g̃ⱼ with {mu}, "
        f"i.e. normalized weights **w̃ = ({wt})**. The deployed update is d̃ rescaled to ‖g₁‖, here by "
        f"**× {pcd_row['deployed_scale']:.4g}** = ‖g₁‖/‖d̃‖, so the raw weights in the table are "
        "wᵢ = w̃ᵢ · sᵢ · scale (sᵢ = 1/‖gᵢ‖ at the first step). The dotted segment shows the bend from g₁ to d̃ "
        "(open circle); the solid red arrow is the deployed update.")
    if len(result["J"]) == 3 and pcd_row["feasible"]:
        active = [j + 2 for j, m in enumerate(pcd_row["mu"]) if m > 1e-12]
        g1d = float(pcd_row["progress"][0])
        if len(active) == 2:
            why = ("both secondaries' constraints bind, so d̃ is the corner of the shaded wedge where g̃₂·d = τ‖g̃₂‖² "
                   "and g̃₃·d = τ‖g̃₃‖² meet — the point of the region closest to g̃₁.")
        elif active:
            why = f"only g{active[0]}'s constraint binds; d̃ is g̃₁ projected onto its edge of the region."
        else:
            why = "no constraint binds: g₁ alone already gives every secondary its share."
        extra = ""
        if g1d < 0:
            extra = (f" Here g₁·d = {g1d:+.2f}: g₂ and g₃ both point away from g₁, from opposite sides, so every "
                     "direction that gives each of them its τ share points backwards from g₁ and PCD spends this "
                     "step on the secondaries (the primary keeps weight 1 in d̃, but the constraints outvote its "
                     "*direction*). A smaller τ moves the corner towards the origin and shrinks the cost to g₁; the "
                     "same happens with one secondary only when it is nearly opposite to g₁ (try 180°).")
        st.info(f"**Why K = 3 looks like this:** {why}{extra}", icon=":material/info:")

with st.expander("Why do weighted sum, MGDA and CAGrad coincide when ‖g₂‖ = ‖g₁‖?"):
    st.markdown(
        "With equal norms the problem is symmetric under swapping g₁ and g₂. MGDA's min-norm point of the "
        "segment [g₁, g₂] is then its midpoint, ½(g₁ + g₂) — exactly the equal-weight sum. CAGrad searches "
        "around the average gradient, and for two equal-norm gradients its optimum stays on the bisector, "
        "so it returns a multiple of the same vector. All three point along g₁ + g₂: as the angle goes to "
        "180° that vector goes to zero, although neither gradient is zero. Move ‖g₂‖ away from 1 and they "
        "separate: WS follows the larger gradient, MGDA the smaller one."
    )
claim("1-D conflict equilibrium: primary gradient 0.5, secondary −0.5 → symmetric methods stop although the "
      "primary gradient is 0.5 (exact)", here="set the angle to 180° and ‖g₂‖ = 1: WS and MGDA return d = 0 "
      "while PCD (τ > 0) still returns a non-zero d = g₁ + μ g₂, rescaled")

download_row(fig, "gradient_geometry", key="geo", table=table,
             settings={"angle(g1, g2) deg": angle, "|g2| (|g1| = 1)": norm2, "τ": tau, "methods": methods,
                       **({"angle(g1, g3) deg": third[0], "|g3|": third[1]} if third else {})})
