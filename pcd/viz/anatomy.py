"""Figures of a run's inside (:mod:`pcd.train.anatomy`): channels kept per layer, the distribution of
channel norms with the export threshold, the whole trade-off curve of one run, and the study's
parallel coordinates. Pure functions: plain data in, ``go.Figure`` out."""
from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

import plotly.graph_objects as go
from plotly.subplots import make_subplots

from pcd.viz import theme
from pcd.viz.theme import base_layout, method_color, method_label, objective_color, rgba, style_axes

KEPT = objective_color(0)
REMOVED = theme.BORDER


def _empty(text: str, height: int = 220) -> go.Figure:
    fig = go.Figure()
    fig.update_layout(**base_layout(height=height))
    fig.add_annotation(text=text, showarrow=False, x=0.5, y=0.5, xref="paper", yref="paper")
    fig.update_xaxes(visible=False)
    fig.update_yaxes(visible=False)
    return fig


def layers_figure(layers: Sequence[Mapping[str, Any]], height: int | None = None) -> go.Figure:
    """Channels kept per layer, before -> after: one horizontal bar per layer (kept dark, removed
    light), layers in network order top to bottom, each bar labelled ``after / before``."""
    rows = [r for r in layers if r.get("kind") in ("conv", "linear")]
    if not rows:
        return _empty("no layer table: the run has no export")
    names = [str(r["layer"]) for r in rows]
    kept = [int(r["out_after"]) for r in rows]
    gone = [int(r["out_before"]) - int(r["out_after"]) for r in rows]
    fig = go.Figure()
    fig.add_trace(go.Bar(y=names, x=kept, orientation="h", name="channels kept", marker_color=KEPT,
                         text=[f"{a} / {a + g}" for a, g in zip(kept, gone)], textposition="outside",
                         cliponaxis=False,
                         hovertemplate="%{y}: %{x} channels kept<extra></extra>"))
    fig.add_trace(go.Bar(y=names, x=gone, orientation="h", name="channels removed", marker_color=REMOVED,
                         hovertemplate="%{y}: %{x} channels removed<extra></extra>"))
    h = height or max(260, 70 + 22 * len(rows))
    fig.update_layout(**base_layout(height=h), barmode="stack")
    fig.update_yaxes(autorange="reversed", title_text=None)
    # room right of the longest bar for its "after / before" label (cliponaxis alone lets the plot's edge cut it)
    fig.update_xaxes(title_text="output channels (features for linear layers)",
                     range=[0, 1.22 * max(a + g for a, g in zip(kept, gone))])
    return style_axes(fig)


def norms_figure(norms: Sequence[float], threshold: float | None, height: int = 320) -> go.Figure:
    """The distribution of channel norms (log10 axis; exact zeros counted apart) with the export
    threshold drawn on it: the channels left of the line are the ones the export removes."""
    vals = [float(v) for v in norms if v is not None and math.isfinite(float(v))]
    if not vals:
        return _empty("no channel norms recorded for this run")
    zeros = sum(v <= 0 for v in vals)
    logs = [math.log10(v) for v in vals if v > 0]
    fig = go.Figure()
    if logs:
        fig.add_trace(go.Histogram(x=logs, nbinsx=40, marker_color=KEPT, name="channels",
                                   hovertemplate="log10 norm %{x}<br>%{y} channels<extra></extra>"))
    if threshold is not None and threshold > 0:
        t = math.log10(threshold)
        below = sum(v < threshold for v in vals)
        fig.add_vline(x=t, line=dict(color=theme.ALERT, width=2, dash="dash"))
        fig.add_annotation(x=t, y=1.0, yref="paper", xanchor="left", yanchor="top", showarrow=False,
                           text=f" export threshold {threshold:.3g}: {below} of {len(vals)} below",
                           font=dict(color=theme.ALERT))
    fig.update_layout(**base_layout(height=height), showlegend=False)
    fig.update_xaxes(title_text="log10 of the channel's filter norm" + (f"  ({zeros} exactly zero, not shown)"
                                                                         if zeros else ""))
    fig.update_yaxes(title_text="channels")
    return style_axes(fig)


CURVE_PANELS = (("test_acc", "test accuracy (%)"), ("flops", "MFLOPs (batch 1)"),
                ("latency_ms", "latency ms (median, 25-75 %)"), ("bytes", "file size (KB)"))


def curve_figure(curves: Mapping[str, Sequence[Mapping[str, Any]]], methods: Mapping[str, str] | None = None,
                 budget: Mapping[str, Any] | None = None, height: int = 560) -> go.Figure:
    """Trade-off curves of one or more runs against the parameter reduction: accuracy, FLOPs, latency
    and file size, one panel each; each point is a physically exported, reloaded model. ``budget``
    (a curve row) is ringed on every panel."""
    series = {k: [r for r in v if r] for k, v in curves.items()}
    if not any(series.values()):
        return _empty("no curve yet: compute it for a finished run")
    methods = dict(methods or {})
    fig = make_subplots(rows=2, cols=2, subplot_titles=[t for _, t in CURVE_PANELS],
                        horizontal_spacing=0.1, vertical_spacing=0.2)
    scale = {"flops": 1e-6, "bytes": 1e-3}
    for label, rows in series.items():
        color = method_color(methods[label]) if label in methods else None
        x = [100.0 * float(r["param_reduction"]) for r in rows]
        for i, (key, title) in enumerate(CURVE_PANELS):
            y = [float(r[key]) * scale.get(key, 1.0) for r in rows]
            err = None
            if key == "latency_ms" and all("latency_p25" in r for r in rows):  # the 25-75 % spread
                err = dict(type="data", symmetric=False, thickness=1.2, width=3,
                           array=[float(r["latency_p75"]) - float(r["latency_ms"]) for r in rows],
                           arrayminus=[float(r["latency_ms"]) - float(r["latency_p25"]) for r in rows])
            fig.add_trace(go.Scatter(
                x=x, y=y, mode="lines+markers", name=str(label), legendgroup=str(label), showlegend=i == 0,
                line=dict(color=color, width=2), marker=dict(size=7), error_y=err,
                customdata=[[r["threshold"], r["channels_removed"], r["channels_total"]] for r in rows],
                hovertemplate=(f"{label}<br>threshold %{{customdata[0]:.3g}}: %{{customdata[1]}}/%{{customdata[2]}} "
                               f"channels removed<br>%{{x:.1f}} % fewer parameters<br>{title} %{{y:.4g}}<extra></extra>")),
                row=i // 2 + 1, col=i % 2 + 1)
    if budget:
        for i, (key, _) in enumerate(CURVE_PANELS):
            fig.add_trace(go.Scatter(
                x=[100.0 * float(budget["param_reduction"])], y=[float(budget[key]) * scale.get(key, 1.0)],
                mode="markers", marker=dict(size=16, color=rgba(theme.ALERT, 0.0), line=dict(color=theme.ALERT, width=2.5)),
                name="meets the budget", showlegend=i == 0, hoverinfo="skip"), row=i // 2 + 1, col=i % 2 + 1)
    layout = base_layout(height=height)
    layout["margin"] = dict(l=60, r=20, t=100, b=50)
    layout["legend"] = dict(layout["legend"], y=1.0 + 70.0 / height)
    fig.update_layout(**layout)
    fig.update_xaxes(title_text="parameters removed (%)", title_standoff=4)
    fig.update_yaxes(rangemode="tozero")
    return style_axes(fig)


# run_point keys (param_reduction is already in %)
PARALLEL_AXES = (("test_acc", "accuracy %"), ("param_reduction", "params removed %"),
                 ("flops_factor", "FLOPs ÷"), ("latency_factor", "latency ÷"), ("size_factor", "size ÷"))


def parallel_figure(points: Sequence[Mapping[str, Any]], height: int = 460) -> go.Figure:
    """Parallel coordinates over (method, accuracy, sparsity, FLOPs, latency, size) of a study's runs,
    lines coloured by method (drag along an axis to brush). ``points`` are
    :func:`pcd.train.studies.run_point` rows."""
    pts = [p for p in points if p.get("method")]
    if not pts:
        return _empty("no finished run to compare yet")
    methods = list(dict.fromkeys(str(p["method"]) for p in pts))
    idx = {m: i for i, m in enumerate(methods)}
    n = max(1, len(methods) - 1)
    colorscale = [[i / n, method_color(m)] for i, m in enumerate(methods)] if len(methods) > 1 else \
        [[0, method_color(methods[0])], [1, method_color(methods[0])]]
    dims = [dict(label="method", values=[idx[str(p["method"])] for p in pts], tickvals=list(range(len(methods))),
                 ticktext=[method_label(m) for m in methods])]
    for key, label in PARALLEL_AXES:
        vals = [p.get(key) for p in pts]
        if not any(v is not None and math.isfinite(float(v)) for v in vals):
            continue
        dim = dict(label=label, values=[float(v) if v is not None and math.isfinite(float(v))
                                        else float("nan") for v in vals])
        if key == "param_reduction":  # a share: 0-100 % (one run, or all alike, would draw a -1..1 axis)
            dim["range"] = [0.0, 100.0]
        dims.append(dim)
    fig = go.Figure(go.Parcoords(line=dict(color=[idx[str(p["method"])] for p in pts], colorscale=colorscale,
                                           cmin=0, cmax=max(1, len(methods) - 1)),
                                 dimensions=dims, labelangle=0, labelside="top"))
    layout = base_layout(height=height)
    # the method axis' tick labels sit left of the first axis: room for the longest ("unpruned (primary
    # only)" was cut to "uned (primary only)" with a fixed 110 px)
    longest = max(len(method_label(m)) for m in methods)
    layout["margin"] = dict(l=max(110, int(6.5 * longest) + 30), r=40, t=70, b=30)
    fig.update_layout(**layout)
    return fig
