"""The training-geometry figure of a recorder file (:mod:`pcd.monitor`): cosine and gradient norms
over training, PCD's multipliers with its active constraints, and one row per method of its
counterfactual ``||d|| / ||g_1||`` with the collapse stretches shaded and counted. Pure: a
:class:`pcd.monitor.Trace` in, ``go.Figure`` out."""
from __future__ import annotations

import math

import numpy as np
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from pcd import monitor
from pcd.viz import theme
from pcd.viz.theme import base_layout, method_color, method_label, objective_color, rgba, style_axes

__all__ = ["geometry_figure", "RATIO_FLOOR"]

#: ``||d|| / ||g_1||`` is drawn on a log axis; values below this (an exact 0) are drawn at it.
RATIO_FLOOR = 1e-4


def geometry_figure(trace: monitor.Trace, methods: list[str] | None = None, step: int | None = None,
                    row_height: int = 78) -> go.Figure:
    """Rows: ``cos(g_1, g_j)``; ``||g_i||`` (log); PCD's ``mu_j`` (active constraints marked) when
    PCD was recorded; then one row per method (``methods``: a subset, default all) of
    ``||d|| / ||g_1||`` (log, floored at :data:`RATIO_FLOOR`, the collapse threshold dashed) with
    its collapse stretches shaded and counted in the row's title. ``step``: a recorded step to mark
    with a vertical line (the snapshot)."""
    names = trace.methods if methods is None else [m for m in methods if m in trace.ratio]
    has_mu = "pcd" in trace.mu
    top = ["cos(g₁, gⱼ)", "‖gᵢ‖ (log)"] + (["PCD's μⱼ (● = constraint active)"] if has_mu else [])
    col = monitor.collapsed(trace)
    titles = list(top)
    for n in names:
        runs = monitor.stretches(col[n])
        frac = float(col[n].mean()) if len(col[n]) else 0.0
        titles.append(f"{method_label(n)}: ‖d‖/‖g₁‖ — {len(runs)} collapse stretch{'es' if len(runs) != 1 else ''}, "
                      f"{100 * frac:.0f} % of records")
    rows = len(titles)
    heights = [1.6] * len(top) + [1.0] * len(names)
    fig = make_subplots(rows=rows, cols=1, shared_xaxes=True, subplot_titles=titles, row_heights=heights,
                        vertical_spacing=min(0.04, 0.5 / max(rows, 1)))
    x = trace.steps
    K = trace.K
    objs = trace.header.get("objectives") or [f"f{i + 1}" for i in range(K)]
    cos = trace.cosines
    for j in range(K - 1):
        fig.add_trace(go.Scatter(x=x, y=cos[:, j], mode="lines", name=f"cos(g₁, g{j + 2})",
                                 line=dict(color=objective_color(j + 1), width=2), legendgroup="geo"), row=1, col=1)
    fig.add_hline(y=0.0, line=dict(color="#999", width=1, dash="dot"), row=1, col=1)
    fig.update_yaxes(range=[-1.08, 1.08], tickvals=[-1, 0, 1], row=1, col=1)
    norms = trace.norms
    for i in range(K):
        fig.add_trace(go.Scatter(x=x, y=np.where(norms[:, i] > 0, norms[:, i], np.nan), mode="lines",
                                 name=f"‖g{i + 1}‖ ({objs[i] if i < len(objs) else i + 1})",
                                 line=dict(color=objective_color(i), width=2), legendgroup="geo"), row=2, col=1)
    fig.update_yaxes(type="log", dtick=1, tickformat=".0e", row=2, col=1)  # one tick per decade
    r0 = 3
    if has_mu:
        mu = trace.mu["pcd"]
        act = trace.active.get("pcd", mu > 0)
        for j in range(mu.shape[1]):
            c = objective_color(j + 1)
            fig.add_trace(go.Scatter(x=x, y=mu[:, j], mode="lines", name=f"μ{j + 2} (PCD)", line=dict(color=c, width=1.5),
                                     legendgroup="mu"), row=3, col=1)
            on = act[:, j]
            fig.add_trace(go.Scatter(x=x[on], y=mu[on, j], mode="markers", marker=dict(color=c, size=5),
                                     name=f"constraint {j + 2} active", legendgroup="mu", showlegend=False),
                          row=3, col=1)
        # mu >= 0: from zero, so a flat mu reads as flat (not a 3e-6-wide axis of autoscaled noise)
        fig.update_yaxes(rangemode="tozero", row=3, col=1)
        r0 = 4
    every = float(trace.header.get("every") or 1)
    for k, n in enumerate(names):
        r = r0 + k
        c = method_color(n)
        y = np.where(np.isfinite(trace.ratio[n]), np.maximum(trace.ratio[n], RATIO_FLOOR), np.nan)
        fig.add_trace(go.Scatter(x=x, y=y, mode="lines", name=method_label(n), line=dict(color=c, width=1.8),
                                 showlegend=False, hovertemplate="step %{x}: ‖d‖/‖g₁‖ = %{y:.3g}<extra>"
                                 + method_label(n) + "</extra>"), row=r, col=1)
        for a, b in monitor.stretches(col[n]):
            fig.add_vrect(x0=float(x[a]) - every / 2, x1=float(x[b]) + every / 2, fillcolor=rgba(c, 0.22),
                          line_width=0, row=r, col=1)
        fig.add_hline(y=monitor.COLLAPSE_RATIO, line=dict(color="#888", width=1, dash="dash"), row=r, col=1)
        peak = float(np.nanmax(y)) if np.isfinite(y).any() else 1.0
        hi = max(1.0, min(math.log10(max(peak, 1.0)), 12.0)) + 0.2  # a method far above ||g_1|| stays in view
        vals = [RATIO_FLOOR, 1e-2, 1.0] + [10.0 ** e for e in range(2, int(hi) + 1, 2)]
        fig.update_yaxes(type="log", range=[np.log10(RATIO_FLOOR) - 0.2, hi], tickvals=vals,
                         ticktext=["≤1e-4", "0.01", "1"] + [f"1e{e}" for e in range(2, int(hi) + 1, 2)], row=r, col=1)
    if step is not None:
        for r in range(1, rows + 1):
            fig.add_vline(x=float(step), line=dict(color=theme.INK, width=1, dash="dot"), row=r, col=1)
    fig.update_xaxes(title_text="training step", row=rows, col=1)
    fig.update_annotations(font=dict(size=12), x=0.0, xanchor="left")
    height = 90 + int(row_height * sum(heights))
    fig.update_layout(**base_layout(None, height=height))
    return style_axes(fig)
