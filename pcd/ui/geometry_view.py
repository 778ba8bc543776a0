"""The training-geometry view (:mod:`pcd.monitor`), shared by the Training geometry page and the
Pruning lab's run detail: the computed finding, the figure, the per-method table, and a Gram
snapshot at a chosen step that opens the Gradient geometry page with those gradients."""
from __future__ import annotations

from typing import Any

import pandas as pd
import streamlit as st

from pcd import monitor
from pcd.ui import method_picker, page_link, settings_panel, show_error
from pcd.ui.chart import plotly_chart
from pcd.ui.table import html_table
from pcd.viz.theme import method_label
from pcd.viz.training_geometry import geometry_figure


def show_trace(trace: monitor.Trace, key: str, panel: Any = None) -> None:
    """Draw one recorder file's view (widgets keyed by ``key``, in the page's settings ``panel``;
    None: a settings panel of its own)."""
    panel = settings_panel(key) if panel is None else panel
    text = monitor.finding(trace)
    if text:
        st.info(text, icon=":material/insights:")
    else:
        st.caption("No symmetric method's counterfactual update collapsed for two recorded steps in a row "
                   f"(collapse: ‖d‖/‖g₁‖ < {monitor.COLLAPSE_RATIO:g} while ‖g₁‖ is not small).")
    names = trace.methods
    shown = method_picker("methods (one row each)", names, default=names, key=f"{key}_methods", container=panel)
    steps = [int(s) for s in trace.steps]
    step = panel.select_slider("Gram snapshot at step", steps, value=steps[-1], key=f"{key}_step") if len(steps) > 1 \
        else steps[0]
    plotly_chart(geometry_figure(trace, shown, step=step), key=f"{key}_chart")
    st.caption(f"Collapse (shaded): ‖d‖/‖g₁‖ < {monitor.COLLAPSE_RATIO:g} while ‖g₁‖ ≥ {monitor.G1_FLOOR:g} × its "
               f"largest value over the last {monitor.SCALE_WINDOW} records (and ≥ {monitor.G1_RUN_FLOOR:g} × its "
               "largest so far). Each method's weights are what it would have chosen from the recorded Gram "
               "matrix; the training itself followed its own method. "
               + (f"Not evaluable on a Gram matrix: {', '.join(method_label(n) for n in trace.header['skipped'])}."
                  if trace.header.get("skipped") else ""))
    html_table(pd.DataFrame(monitor.summary_rows(trace)),
               formats={"collapsed (% of records)": "{:.0f}", "median ‖d‖/‖g₁‖": "{:.3g}"})
    _snapshot(trace, steps.index(step), key)


def _snapshot(trace: monitor.Trace, index: int, key: str) -> None:
    if trace.K < 2:
        return
    try:
        snap = monitor.snapshot_query(trace, index)
    except ValueError as exc:
        show_error(exc)
        return
    q: dict[str, Any] = snap["query"]
    G = trace.gram[index]
    cos = trace.cosines[index]
    st.markdown(f"**Step {int(trace.steps[index])}:** ‖g₁‖ = {G[0, 0] ** 0.5:.3g}, "
                + ", ".join(f"cos(g₁, g{j + 2}) = {c:+.3f}" for j, c in enumerate(cos)))
    note = []
    if trace.K >= 3:
        note.append(f"g₃ projected onto the plane of g₁, g₂ ({100 * snap['g3_out']:.0f} % of ‖g₃‖ lies outside it)")
    if trace.K > 3:
        note.append(f"objectives 4–{trace.K} left out")
    if snap["clipped"]:
        note.append("a norm is outside the page's 0.1–3 × ‖g₁‖ range and is drawn at its end")
    page_link("views/01_Gradient_geometry.py", "Open these gradients on the Gradient geometry page", q)
    if note:
        st.caption("; ".join(note).capitalize() + ".")


def show_file(path: Any, key: str, folder: Any = None, panel: Any = None) -> None:
    """:func:`show_trace` of a recorder file (read from inside ``folder``; one-line error when it
    cannot be read)."""
    try:
        trace = monitor.read(path, folder=folder)
    except ValueError as exc:
        show_error(exc)
        return
    show_trace(trace, key, panel)
