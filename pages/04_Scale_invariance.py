"""Page 4 -- Scale invariance: multiply the secondary by 10^k and watch the operating points."""
from __future__ import annotations

import pandas as pd
import streamlit as st

from pcd.studio import available
from pcd.studio import scale as SC
from pcd.studio.registry import this_page
from pcd.ui import claim, download_row, method_picker, settings_panel, setup_page, show_error, url_default, url_sync
from pcd.ui.chart import plotly_chart
from pcd.ui.table import html_table
from pcd.viz.scale import drift_table, eps_window_text, power_label, sweep_figure
from pcd.viz.theme import method_label

_K = [int(k) for k in SC.EXPONENTS]  # the sweep's range, written once (the intro says it)
_KR = " … ".join(str(k).replace("-", "−") for k in (_K[0], _K[-1]))
setup_page(
    **this_page(__file__).setup,
    intro=(
        f"The same problem, with the secondary loss multiplied by 10ᵏ for k = {_KR} (the units changed, nothing "
        "else). The weighted sum's operating point depends on the ratio of the raw losses, so it **slides along "
        "the whole Pareto front**. PCD normalizes every gradient by a running estimate of its own norm, so τ means "
        "the same thing at every scale and its operating point **stays put** — as long as the scaled gradient "
        "stays above the normalizer's ε (below that, shaded in the figures, ε takes over)."
    ),
)
st.latex(r"\begin{gathered}\tilde g_i = \frac{g_i}{\sqrt{\hat v_i+\epsilon}},\qquad \hat v_i \approx \|g_i\|^2\\"
         r"\Rightarrow\quad \tilde g_i(10^k g_i)\approx\tilde g_i(g_i)\ \ \text{when}\ \ 10^{2k}\|g_i\|^2\gg\epsilon"
         r"\end{gathered}")

ALL = available()
# ε options as text: Streamlit matches float options within ~1e-12, which would turn 1e-16 into 1e-12
EPS = ["1e-04", "1e-06", "1e-08", "1e-12", "1e-16", "1e-20", "0"]
STEPS = [200, 300, 500, 1000, 2000, 3000]
EXPS = _K
PCD_EPS = SC.PCD_EPS
panel = settings_panel()
c1, c2, c3, c4 = panel.columns([2, 1, 1, 1])
with c1:
    methods = method_picker("methods", ALL, default=url_default("methods", SC.available(SC.METHODS), allowed=ALL),
                            key="sc_methods")
with c2:
    tau = st.slider("τ (PCD)", 0.0, 1.0, url_default("tau", SC.TAU, low=0.0, high=1.0), 0.01, key="sc_tau")
with c3:
    eps_url = url_default("eps", PCD_EPS, [float(e) for e in EPS])
    eps_text = st.select_slider("PCD ε", EPS, value=next(e for e in EPS if float(e) == eps_url), key="sc_eps",
                                help=f"the normalizer's ε; the library's (and the paper's) default is {PCD_EPS:g}")
    eps = float(eps_text)
with c4:
    steps = st.select_slider("steps", STEPS, value=url_default("steps", SC.STEPS, STEPS), key="sc_steps",
                             help="Adam, lr 0.01. 300 steps are not enough: PCD is still on its way to the operating "
                                  "point there")
k = panel.slider("highlight the scale 10ᵏ of the secondary", EXPS[0], EXPS[-1], url_default("k", 0, low=EXPS[0], high=EXPS[-1]),
              key="sc_k", help="rings the operating points at this scale; the sweep covers every k")
url_sync(methods=methods, tau=tau, eps=eps_text, steps=steps, k=k)
if not methods:
    st.info("Choose at least one method.")
    st.stop()


try:
    with st.spinner(f"running {len(EXPS)} scales…"):
        result = SC.scale_sweep(tuple(methods), tau, eps, steps)
    fig = sweep_figure(result, current=k)
    dfig = SC.scale_drift_fig(tuple(methods), tau, eps, steps)
    table = drift_table(result)
except ValueError as exc:
    show_error(exc)
    st.stop()

window = eps_window_text(result)
left, right = st.columns([1.5, 1])
with left:
    plotly_chart(fig, key="sc_chart")
with right:
    span = window or f"{power_label(EXPS[0])} … {power_label(EXPS[-1])}"
    for name, r in result["methods"].items():
        st.metric(f"{method_label(name)}: drift over {span}", f"{r['drift']:.3g}",
                  help="largest distance between two operating points over the scales where PCD's normalizer "
                       f"is scale-free; over every scale {power_label(EXPS[0])} … {power_label(EXPS[-1])}: "
                       f"{r['drift_all']:.3g}")
plotly_chart(dfig, key="sc_drift")
html_table(table, formats={c: "{:.4g}" for c in table.columns if c != "method"})
st.caption("Operating point = mean position over the last 20 % of the steps (methods chattering on the box's kinks "
           "oscillate with an amplitude ~ lr). Drift = the largest distance between two operating points over the "
           "scale-free scales; *drift, every scale* includes the ε-dominated ones. Points that coincide share one label "
           "(10ᵃ … 10ᵇ, n scales), and so do points too close to label apart (10ᵃ … 10ᵇ: hover for each); open "
           "markers are ε-dominated scales. Click a legend entry to hide a method, double-click to show it alone.")
if result.get("eps") is not None and window:
    bad = [kk for kk, f in zip(result["exponents"], result["scale_free"]) if not f]
    st.warning(
        f"**Where ε takes over ({power_label(min(bad))} … {power_label(max(bad))}, shaded):** outside the box the "
        f"secondary's squared gradient is 10²ᵏ (one active side), so at 10ᵏ ≤ {power_label(max(bad))} it is at most "
        f"{10.0 ** (2 * max(bad)):.0e} ≤ 100·ε = {100 * result['eps']:.0e}. Then "
        "‖g̃₂‖ = √(v̂/(v̂+ε)) < 1: the secondary is normalized to *less* than unit length, τ asks it for less, and "
        "PCD's point slides towards the primary's minimum. Lower ε (or ε = 0) and the band moves down.",
        icon=":material/info:")
pcd_r = result["methods"].get("pcd")
ws_r = result["methods"].get("ws")
claim("secondary scaled over 10 orders of magnitude: WS's operating point slides along the whole front; PCD drifts by 0.0075",
      here=(f"PCD drift {pcd_r['drift']:.3g} over {window or span} with ε = {eps:g}" if pcd_r else "add PCD")
      + (f", WS drift {ws_r['drift']:.3g}" if ws_r else ""),
      note="Our scale problem is our own (the paper's is not in our seed), so the drift is not the same number; "
           "what matches is the property: PCD stays put wherever the secondary's ‖g‖² is well above ε, WS slides "
           "from the primary's minimum to the box.")

rows = []
for name, r in result["methods"].items():
    for kk, (x, y) in zip(result["exponents"], r["endpoints"]):
        rows.append({"method": method_label(name), "k": kk, "x₁": x, "x₂": y,
                     "scale-free for PCD": bool(result["scale_free"][result["exponents"].index(kk)])})
download_row(fig, "scale_invariance", key="sc", table=pd.DataFrame(rows),
             settings={"problem": "scale", "methods": methods, "τ": tau, "PCD ε": eps, "optimizer": "Adam",
                       "lr": 0.01, "steps": steps, "exponents": result["exponents"]})
