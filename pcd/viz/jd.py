"""Figures for the Jacobian-descent page (arXiv 2406.16232 next to PCD): pure functions taking
the plain data of :mod:`pcd.experiments.jd` and returning ``go.Figure``.
"""
from __future__ import annotations

import math
from typing import Any

import numpy as np
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from pcd.viz import theme
from pcd.viz.theme import base_layout, method_color, method_label, rgba, style_axes

PROPERTY_LABELS = {
    "non_conflicting": "non-conflicting",
    "linear_under_scaling": "linear under scaling",
    "weighted": "weighted",
    "primary_anchored": "primary-anchored (PCD)",
    "per_secondary_progress": "per-secondary progress (PCD)",
}
MODE_COLORS = {"erm": theme.SERIES_GREY, "jacobian": theme.SERIES_BLUE, "autojac": theme.SERIES_ORANGE, "autogram": theme.SERIES_GREEN}
MODE_NAMES = {"erm": "ERM backward (reference)", "jacobian": "per-sample Jacobian (ours, torch.func)",
              "autojac": "TorchJD autojac (materialized J)", "autogram": "TorchJD autogram (Gramian)"}
_YES, _NO = theme.YES_FILL, theme.NO_FILL
_ROW_PX, _HEAD_PX = 50, 30  # a two-line cell; the header grows by its line count
# Legend below the panels, so it never covers the subplot titles.
_LEGEND_BELOW = dict(orientation="h", yanchor="top", y=-0.25, xanchor="left", x=0.0)


def _fmt(v: Any) -> str:
    if v is None or (isinstance(v, float) and not math.isfinite(v)):
        return "n/a"
    return "0" if v == 0 else f"{v:.1e}"


def properties_figure(table: dict[str, dict[str, Any]], columns: int = 1, height: int | None = None) -> go.Figure:
    """A table: one row per method, one column per property with ✓/✗ and the worst violation,
    plus the paper's verdict for the three JD properties where the paper lists the method.

    ``columns=2`` (a projector): the methods split over two tables side by side, every cell on one
    line; with ``height`` (px) the rows share that height (at least 22 px each), so the whole table
    is on one screen."""
    if not isinstance(table, dict) or not table:
        raise ValueError("properties table must be a non-empty {method: report} dict")
    if columns not in (1, 2):
        raise ValueError(f"columns must be 1 or 2, got {columns!r}")
    props = list(PROPERTY_LABELS)
    for name, rep in table.items():
        missing = [p for p in props + ["worst_violation"] if p not in rep]
        if missing:
            raise ValueError(f"report for {name!r} lacks {missing}")
    names = list(table)
    sep = " " if columns == 2 else "<br>"
    # Every row is two lines (mark, then value; one line in two columns) and the headers break at their
    # own hyphens and spaces, so the rows keep one height from 1440 px down to 800 px (a Plotly table
    # whose rows wrap grows past the figure's height and hides its last rows).
    heads = (["method"] + [PROPERTY_LABELS[p].replace("-", "-<br>").replace(" ", "<br>") for p in props]
             + ["paper<br>(NC / LS / W)" if columns == 1 else "paper<br>NC/LS/W"])
    lines = max(h.count("<br>") + 1 for h in heads)
    head_px = max(_HEAD_PX, 18 * lines + 12)
    per = -(-len(names) // columns)
    row_px = _ROW_PX if columns == 1 else 26
    if height is not None:
        row_px = max(22, int((int(height) - 20 - head_px) / per) - 1)
    fig = go.Figure()
    for c in range(columns):
        part = names[c * per:(c + 1) * per]
        cols: list[list[str]] = [[method_label(n) for n in part]]
        fills: list[list[str]] = [["white"] * len(part)]
        for p in props:
            cols.append([f"{'✓' if table[n][p] else '✗'}{sep}{_fmt(table[n]['worst_violation'][p]['value'])}"
                         for n in part])
            fills.append([_YES if table[n][p] else _NO for n in part])
        paper = []
        for n in part:
            pp = table[n].get("paper")
            paper.append("—" if not pp else (" / " if columns == 1 else "/").join("✓" if pp[k] else "✗" for k in
                                                       ("non_conflicting", "linear_under_scaling", "weighted")))
        cols.append(paper)
        fills.append(["white"] * len(part))
        lo, hi = c / columns, (c + 1) / columns
        fig.add_trace(go.Table(
            domain=dict(x=[lo + (0.01 if c else 0.0), hi - (0.01 if c < columns - 1 else 0.0)]),
            columnwidth=[1.1, *[1.0] * len(props), 1.0] if columns == 1 else [1.3, *[1.0] * len(props), 0.8],
            header=dict(values=[f"<b>{h}</b>" for h in heads], fill_color=theme.HEADER_FILL, align="left",
                        font=dict(size=12), height=_HEAD_PX),
            cells=dict(values=cols, fill_color=fills, align="left", height=row_px,
                       font=dict(size=13, color=[[method_color(n) for n in part]] + [[theme.INK] * len(part)] * (len(cols) - 1))),
        ))
    fig.update_layout(**base_layout(None, height=20 + head_px + (row_px + 1) * per))
    fig.update_layout(margin=dict(l=5, r=5, t=5, b=5))
    return fig


def _label(name: str) -> str:
    return "Mean (= SGD / ERM)" if name == "ws" else method_label(name)


def _band(fig: go.Figure, x: list, runs: np.ndarray, name: str, row: int, col: int, show: bool,
          scale: float = 1.0) -> None:
    runs = np.asarray(runs, dtype=float) * scale
    with np.errstate(all="ignore"):
        mean = np.nanmean(runs, axis=0) if runs.shape[0] else runs
        lo, hi = np.nanmin(runs, axis=0), np.nanmax(runs, axis=0)
    c = method_color(name)
    if runs.shape[0] > 1:
        fig.add_trace(go.Scatter(x=list(x) + list(x)[::-1], y=list(hi) + list(lo)[::-1], fill="toself",
                                 fillcolor=rgba(c, 0.15), line=dict(width=0), hoverinfo="skip",
                                 showlegend=False, legendgroup=name), row=row, col=col)
    fig.add_trace(go.Scatter(x=list(x), y=list(mean), mode="lines", name=_label(name),
                             line=dict(color=c, width=2.5 if name == "pcd" else 2), legendgroup=name,
                             showlegend=show), row=row, col=col)


def iwrm_figure(result: dict[str, Any]) -> go.Figure:
    """Training loss, test accuracy and cosine(update, SGD gradient) against steps; mean over seeds
    with a min-max band."""
    if not isinstance(result, dict) or "methods" not in result or "steps" not in result:
        raise ValueError("IWRM result must be the dict returned by pcd.experiments.jd.run_iwrm")
    if not result["methods"]:
        raise ValueError("IWRM result has no methods")
    # titles in two lines and 0.12 between panels: at 800 px (a 480-px plot, 137 px a panel) the titles and
    # the next panel's y ticks overlapped
    fig = make_subplots(rows=1, cols=3, horizontal_spacing=0.12,
                        subplot_titles=("training loss<br>(full training subset)", "test accuracy (%)",
                                        "cosine(update,<br>SGD gradient)"))
    steps = list(result["steps"])
    for name, r in result["methods"].items():
        T = len(r["cosine"][0]) if r["cosine"] else 0
        _band(fig, steps, np.asarray(r["train_loss"], dtype=float), name, 1, 1, True)
        _band(fig, steps, np.asarray(r["test_acc"], dtype=float), name, 1, 2, False, scale=100.0)
        _band(fig, list(range(1, T + 1)), np.asarray(r["cosine"], dtype=float), name, 1, 3, False)
    fig.update_layout(**base_layout(None, height=490))
    fig.update_layout(legend=_LEGEND_BELOW, margin=dict(l=60, r=20, t=60, b=110))
    fig.update_xaxes(title_text="step")
    fig.update_yaxes(type="log", dtick="D2", row=1, col=1)  # 1, 2, 5 a decade: the 3-9 labels crowded
    fig.update_yaxes(range=[-1.05, 1.05], row=1, col=3)
    return style_axes(fig)


def memory_figure(mem: dict[str, Any]) -> go.Figure:
    """Peak memory and time per step against the batch size (= number of objectives), log-log."""
    if not isinstance(mem, dict) or "modes" not in mem or "batch_sizes" not in mem:
        raise ValueError("memory result must be the dict returned by pcd.experiments.jd.measure_gramian_memory")
    if not mem["modes"]:
        raise ValueError("memory result has no modes")
    fig = make_subplots(rows=1, cols=2, horizontal_spacing=0.12,
                        subplot_titles=(f"peak memory above baseline<br>(MB, {mem.get('device', 'cpu')})",
                                        "time per step (s)"))
    bs = list(mem["batch_sizes"])
    for mode, r in mem["modes"].items():
        c = MODE_COLORS.get(mode, theme.UNKNOWN_COLOR)
        name = MODE_NAMES.get(mode, mode)
        peaks = [None if v is None else max(float(v), 1e-2) for v in r["peak_mb"]]
        fig.add_trace(go.Scatter(x=bs, y=peaks, mode="lines+markers", name=name, legendgroup=mode,
                                 line=dict(color=c, width=2)), row=1, col=1)
        fig.add_trace(go.Scatter(x=bs, y=r["seconds"], mode="lines+markers", name=name, legendgroup=mode,
                                 showlegend=False, line=dict(color=c, width=2)), row=1, col=2)
    fig.update_layout(**base_layout(None, height=470))
    fig.update_layout(legend=_LEGEND_BELOW, margin=dict(l=60, r=20, t=60, b=110))
    fig.update_xaxes(type="log", title_text="batch size B (= objectives)", tickvals=bs)
    fig.update_yaxes(type="log")
    return style_axes(fig)
