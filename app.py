"""PCD Studio: the router (``st.navigation``) and the home page -- what PCD is, its QP, where to go next.

Run with ``streamlit run app.py`` (binds to 127.0.0.1 by default, see .streamlit/config.toml).
The menu lists the home page first, then every page of the registry (:data:`pcd.studio.registry.PAGES`:
script in ``pages/``, title, icon, blurb) in order, served at the old multipage URL ``/Name`` of
``pages/NN_Name.py``, so shared links keep working.

Streamlit's own listing of a ``pages/`` folder (by file name: "app", "Tau dial", ...) is switched off
(``client.showSidebarNavigation = false`` in .streamlit/config.toml); the menu is drawn here from the
registry, with ``st.page_link``, in every session including a fresh server's first one (where
Streamlit runs a deep link's page script directly: the page's ``this_page(__file__)`` runs this
router in its place, see :func:`pcd.studio.registry.this_page`).
"""
from __future__ import annotations

import os

import streamlit as st

from pcd import solve_qp
from pcd.experiments.geometry import gradient_vectors
from pcd.jobs import default_data_dir, ensure_supervisor
from pcd.studio import warmup
from pcd.studio.registry import HOME_ICON, HOME_TITLE, PAGES
from pcd.ui import FAVICON, claim, preload_plotly, setup_page, url_default, url_sync


def home() -> None:
    setup_page(
        HOME_TITLE,
        icon=HOME_ICON,
        charts=False,
        intro=(
            "Hierarchical multi-objective optimization: **one objective is the deliverable** (accuracy) and "
            "the others only **constrain** it (sparsity, low rank, a rate). Symmetric methods such as the "
            "weighted sum, MGDA, PCGrad or CAGrad treat every objective as an equal and stop where the "
            "gradients *cancel* — a **conflict equilibrium** — even though the primary gradient is not zero. "
            "**Priority-Constrained Descent (PCD)** keeps the primary gradient as the anchor and bends it only "
            "as much as each secondary needs to make a guaranteed share τ of its own progress."
        ),
    )

    left, right = st.columns([1.15, 1])
    with left:
        st.subheader("The PCD direction")
        st.markdown("With per-objective normalized gradients $\\tilde g_i = s_i g_i$, PCD solves a small quadratic programme:")
        st.latex(r"\begin{gathered}\tilde d=\arg\min_d \|d-\tilde g_1\|^2\\ \text{s.t.}\quad \tilde g_j\cdot d\ \ge\ "
                 r"\tau_j\,\|\tilde g_j\|^2,\quad j=2,\dots,K\end{gathered}")
        st.markdown(
            "Its solution is $\\tilde d = \\tilde g_1 + \\sum_j \\mu_j \\tilde g_j$ with $\\mu_j \\ge 0$: the primary's "
            "coefficient is **pinned to 1**, so no secondary can outvote the deliverable. Everything depends only on "
            "the $K\\times K$ Gram matrix $G = JJ^\\top$. For one secondary ($K=2$) the answer is a closed form:"
        )
        st.latex(r"\mu=\max\!\Big(0,\ \frac{\tau\,\|\tilde g_2\|^2-\tilde g_1\cdot\tilde g_2}{\|\tilde g_2\|^2}\Big)")
        st.markdown(
            "The normalization is a bias-corrected EMA of each squared gradient norm, "
            "$s_i = 1/\\sqrt{\\hat v_i+\\epsilon}$, so the same dimensionless τ means the same thing whatever the "
            "losses' units. The deployed update is rescaled to $\\|g_1\\|$, so learning rates and schedules keep "
            "their meaning (a known limitation: where $g_1 = 0$ the deployed update stops)."
        )
        claim("WS, MGDA, PCGrad, CAGrad and FAMO stall at a conflict equilibrium on the 2-D saddle toy; PCD crosses "
              "from three starts. ResNet-34/CIFAR-100 at 80–85 % parameter reduction: PCD 73.0 % vs MGDA 1.2 % "
              "(unpruned 73.3 %).")

    with right:
        st.subheader("Try the K = 2 case")
        st.caption("Two unit gradients at an angle. When they conflict, PCD adds just enough of g₂.")
        angle = st.slider("angle between g₁ and g₂ (degrees)", 0, 180, url_default("angle", 150, low=0, high=180),
                          key="home_angle")
        tau = st.slider("τ (share of g₂'s own progress required)", 0.0, 1.0,
                        url_default("tau", 0.3, low=0.0, high=1.0), 0.01, key="home_tau")
        url_sync(angle=angle, tau=tau)
        J = gradient_vectors(angle, 1.0)  # unit g1 along x, unit g2 at the chosen angle
        res = solve_qp(J @ J.T, tau)
        d = res.weights @ J
        c1, c2, c3 = st.columns(3)
        c1.metric("μ", f"{res.mu[0]:.3f}")
        c2.metric("progress on g₁", f"{J[0] @ d:+.3f}")
        c3.metric("progress on g₂", f"{J[1] @ d:+.3f}", help=f"required: τ‖g₂‖² = {tau:.2f}")
        if res.active:
            st.info("The constraint binds: g₁ alone would not give g₂ its τ share, so PCD bends the step.")
            if J[0] @ d < 0:
                st.caption("With strongly opposed gradients, g₂'s τ share can cost the primary a little in this "
                           "step; a smaller τ asks for less.")
        else:
            st.success("g₁ alone already gives g₂ its share: PCD is plain gradient descent here (μ = 0).")

    st.subheader("Pages")
    cols = st.columns(2)
    for i, page in enumerate(PAGES):
        with cols[i % 2]:
            st.page_link(page.link, label=page.title, icon=":material/arrow_forward:")
            st.caption(page.blurb)

    st.caption("Command line: `python -m pcd --help` · every figure on these pages can be produced by the CLI.")


# the tab's icon for every page, served by the app (a page's ":material/...:" icon would be fetched
# from Google's font CDN as the favicon; the menu draws its icons with the bundled font)
st.set_page_config(page_icon=str(FAVICON))
MENU = [st.Page(home, title=HOME_TITLE, icon=HOME_ICON, default=True)] + [
    st.Page(p.link, title=p.title, icon=p.icon, url_path=p.url_path) for p in PAGES]
nav = st.navigation(MENU, position="hidden")  # Streamlit's own menu stays off: the registry's is drawn here
with st.sidebar.container(key="pcd_menu"):
    for entry in MENU:
        st.page_link(entry)

# First of the run: the browser starts fetching and evaluating Plotly.js while the page runs (every
# page but home draws charts; home preloads it once idle; pages 06-09 need Streamlit's full one).
try:
    on_home = nav.title == HOME_TITLE
except AttributeError:  # app.py run without a server (bare mode): no page is selected
    on_home = True
full = not on_home and any(p.full_plotly and p.title == nav.title for p in PAGES)
preload_plotly(now=not on_home, full=full)

# Once per server process: import what the pages need and compute their default views in a
# background thread, so a page's first visitor does not wait for either (PCD_NO_WARMUP=1: off).
warmup.start()

# Running the app is enough: queued pruning runs need a supervisor, so start one unless it is
# alive already (or PCD_NO_AUTOSTART=1, e.g. when a supervisor runs under systemd).
if os.environ.get("PCD_NO_AUTOSTART") != "1":
    try:
        ensure_supervisor(default_data_dir())
    except Exception as exc:  # never block the home page on the queue
        st.sidebar.warning(f"The run queue's supervisor could not start: {exc}")

nav.run()
