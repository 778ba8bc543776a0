"""Page 10 -- Training geometry: a recorded training run's gradient conflict, and which methods would have stalled."""
from __future__ import annotations

import streamlit as st

from pcd.studio import training_geometry as TG
from pcd.studio.registry import this_page
from pcd.ui import settings_panel, setup_page, show_error
from pcd.ui.geometry_view import show_trace

setup_page(
    **this_page(__file__).setup,
    intro=(
        "The conflict of the toy pages, in a real network. A recorder (`pcd.monitor.Recorder`, a few lines in any "
        "PyTorch loop; every Gram-based pruning run writes one) stores, every few steps, the Gram matrix of the "
        "objectives' gradients and what **every** method would have done with it. Where a symmetric method's "
        "update ‖d‖ falls far below ‖g₁‖ while ‖g₁‖ is not small, the gradients cancel: a **conflict "
        "equilibrium**. PCD's update keeps ‖g₁‖ by construction."
    ),
)

folders = TG.recorded_runs()
panel = settings_panel()
source = panel.radio("recorder file", ["a run of the Pruning lab", "upload a file"],
                  index=0 if folders else 1, horizontal=True, key="tg_source")
trace = None
try:
    if source == "upload a file":
        up = panel.file_uploader("recorder file (JSON lines, `pcd.monitor`)", type=["jsonl", "json"], key="tg_upload",
                              max_upload_size=TG.MAX_BYTES // (1024 * 1024))
        if up is None:
            st.caption("Record one with `pcd.monitor.Recorder` (see the README's digits example), or summarise it "
                       "from the command line: `python -m pcd monitor summary FILE`.")
            st.stop()
        trace = TG.read_upload(up.name, up.getvalue())
    elif not folders:
        st.info("No run of the Pruning lab has a recorder file yet (Gram-based methods write `monitor.jsonl`).")
        st.stop()
    else:
        ids = [p.name for p in folders]
        rid = panel.selectbox("run", ids, index=len(ids) - 1, format_func=lambda i: f"run {i}", key="tg_run")
        trace = TG.read_run(int(rid))  # a linked run folder is refused
except ValueError as exc:
    show_error(exc)
    st.stop()

show_trace(trace, "tg", panel)
