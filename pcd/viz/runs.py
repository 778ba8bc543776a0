"""Figures of the Pruning lab: live training curves, the results scatter with its Pareto front,
matched-sparsity comparison and hypervolume bars. Pure functions: plain data in, ``go.Figure`` out.
"""
from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

import plotly.graph_objects as go
from plotly.subplots import make_subplots

from pcd.viz import theme
from pcd.viz.theme import base_layout, method_color, method_label, style_axes

CURVE_KEYS: dict[str, str] = {
    "test_acc": "test accuracy (%)",
    "train_loss": "training loss (cross-entropy)",
    "group_sparsity": "group sparsity (%)",
    "secondary_1": "secondary 1 (group lasso / l1)",
    "mu": "PCD's mu (mean per epoch)",
    "cosine": "cos(primary, secondary gradient)",
    "param_sparsity": "parameter sparsity (%)",
    "effective_rank": "effective rank",
}
_SYMBOLS = ("circle", "diamond", "square", "triangle-up", "x", "star", "cross", "triangle-down",
            "pentagon", "hexagon", "hourglass", "bowtie", "star-square", "circle-open", "diamond-open")


def _finite(v: Any) -> bool:
    try:
        return math.isfinite(float(v))
    except (TypeError, ValueError):
        return False


def _two_lines(title: str, width: int = 16) -> str:
    """``title`` broken before its parenthesis, or at the space nearest its middle, when longer than ``width``."""
    if len(title) <= width:
        return title
    if " (" in title:
        head, _, tail = title.partition(" (")
        return f"{head}<br>({tail}"
    spaces = [i for i, c in enumerate(title) if c == " "]
    if not spaces:
        return title
    cut = min(spaces, key=lambda i: abs(i - len(title) / 2))
    return title[:cut] + "<br>" + title[cut + 1:]


def curves_figure(series: Mapping[str, Sequence[Mapping[str, Any]]], methods: Mapping[str, str] | None = None,
                  keys: Sequence[str] | None = None, height: int = 520) -> go.Figure:
    """Per-epoch curves of several runs: one panel per metric key present, one line per run.

    ``series``: ``{run label: [epoch row, ...]}`` (rows hold ``epoch`` and metric values);
    ``methods``: ``{run label: method}`` to colour each run by its method."""
    if not isinstance(series, Mapping):
        raise ValueError("series must map a run label to its list of epoch rows")
    methods = dict(methods or {})
    wanted = list(keys) if keys is not None else list(CURVE_KEYS)
    bad = [k for k in wanted if not isinstance(k, str)]
    if bad:
        raise ValueError(f"keys must be strings, got {bad}")
    present = [k for k in wanted if any(_finite(r.get(k)) for rows in series.values() for r in rows)]
    if not present:
        fig = go.Figure()
        fig.update_layout(**base_layout(height=220))
        fig.add_annotation(text="no epoch finished yet", showarrow=False, x=0.5, y=0.5, xref="paper", yref="paper")
        fig.update_xaxes(visible=False)
        fig.update_yaxes(visible=False)
        return fig
    ncols = min(3, len(present))
    nrows = math.ceil(len(present) / ncols)
    # titles in two lines (a panel is ~130 px wide at 800 px) and room for the next panel's y ticks
    fig = make_subplots(rows=nrows, cols=ncols, subplot_titles=[_two_lines(CURVE_KEYS.get(k, k)) for k in present],
                        horizontal_spacing=0.11,
                        # ~110 px between rows: the x title, a two-line panel title
                        vertical_spacing=min(0.3, 110.0 / (max(height, 320 * nrows) - 140)) if nrows > 1 else 0.1)
    for label, rows in series.items():
        m = methods.get(label)
        color = method_color(m) if m else None
        for i, key in enumerate(present):
            pts = [(r.get("epoch"), float(r[key])) for r in rows if _finite(r.get(key)) and r.get("epoch") is not None]
            if not pts:
                continue
            fig.add_trace(go.Scatter(x=[p[0] for p in pts], y=[p[1] for p in pts], mode="lines+markers",
                                     name=str(label), legendgroup=str(label), showlegend=(i == 0),
                                     line=dict(color=color, width=2), marker=dict(size=5),
                                     hovertemplate=f"{label}<br>epoch %{{x}}<br>{key} %{{y:.4g}}<extra></extra>"),
                          row=i // ncols + 1, col=i % ncols + 1)
    layout = base_layout(height=max(height, 320 * nrows))
    layout["margin"] = dict(l=60, r=20, t=90, b=50)
    layout["legend"] = dict(layout["legend"], y=1.0 + 60.0 / max(height, 320 * nrows))
    fig.update_layout(**layout)
    fig.update_xaxes(title_text="epoch", title_standoff=4)
    return style_axes(fig)


def _finish_scatter(fig: go.Figure, has_points: bool, x_label: str, y_label: str, height: int) -> go.Figure:
    fig.update_layout(**base_layout(height=height))
    fig.update_xaxes(title_text=x_label)
    fig.update_yaxes(title_text=y_label)
    if not has_points:
        fig.add_annotation(text="no finished run with these measures yet", showarrow=False, x=0.5, y=0.5,
                           xref="paper", yref="paper")
    return style_axes(fig)


def results_scatter(points: Sequence[Mapping[str, Any]], x: str, y: str = "test_acc",
                    front: Sequence[int] | None = None, x_label: str | None = None, y_label: str | None = None,
                    height: int = 560) -> go.Figure:
    """Accuracy vs a compression measure: one marker per run (symbol = method, colour = tau), the
    Pareto front (``front`` = indices into ``points``, sorted by x) as a line."""
    if not isinstance(x, str) or not isinstance(y, str):
        raise ValueError("x and y must be key names")
    pts = [p for p in points if _finite(p.get(x)) and _finite(p.get(y))]
    fig = go.Figure()
    methods = sorted({str(p.get("method")) for p in pts})
    taus = [float(p["tau"]) for p in pts if _finite(p.get("tau"))]
    cmin, cmax = 0.0, (max(taus) if taus and max(taus) > 0 else 1.0)  # τ >= 0: the scale starts at 0
    for k, m in enumerate(methods):
        sel = [p for p in pts if str(p.get("method")) == m]
        fig.add_trace(go.Scatter(
            x=[p[x] for p in sel], y=[p[y] for p in sel], mode="markers", name=method_label(m),
            marker=dict(symbol=_SYMBOLS[k % len(_SYMBOLS)], size=13,
                        color=[p["tau"] if _finite(p.get("tau")) else cmin for p in sel],
                        cmin=cmin, cmax=cmax, colorscale="Viridis", showscale=(k == 0),
                        colorbar=dict(title="τ", x=1.02), line=dict(color=method_color(m), width=2.5)),
            customdata=[[p.get("id"), p.get("tau"), p.get("seed")] for p in sel],
            hovertemplate=(f"{method_label(m)} · run %{{customdata[0]}}<br>τ %{{customdata[1]}} · seed "
                           f"%{{customdata[2]}}<br>{x} %{{x:.4g}}<br>{y} %{{y:.4g}}<extra></extra>")))
    if front:
        fp = [points[i] for i in front if 0 <= i < len(points)]
        fig.add_trace(go.Scatter(x=[p[x] for p in fp], y=[p[y] for p in fp], mode="lines", name="Pareto front",
                                 line=dict(color=theme.INK, width=1.5, dash="dot"), hoverinfo="skip"))
    return _finish_scatter(fig, bool(pts), x_label or x, y_label or y, height)


def method_bars(values: Mapping[str, float], title: str, y_label: str, height: int = 380,
                text_format: str = ".1f") -> go.Figure:
    """One bar per method in the method's colour (matched-sparsity accuracy, hypervolume)."""
    if not isinstance(values, Mapping):
        raise ValueError("values must map method -> number")
    items = [(m, float(v)) for m, v in values.items() if _finite(v)]
    fig = go.Figure(go.Bar(
        x=[method_label(m) for m, _ in items], y=[v for _, v in items],
        marker_color=[method_color(m) for m, _ in items],
        text=[format(v, text_format) for _, v in items], textposition="outside"))
    fig.update_layout(**base_layout(title=title, height=height), showlegend=False)
    fig.update_yaxes(title_text=y_label)
    return style_axes(fig)


def study_scatter(rows: Sequence[Mapping[str, Any]], x: str, y: str = "test_acc",
                  fronts: Mapping[str, Sequence[int]] | None = None, x_label: str | None = None,
                  y_label: str | None = None, reference: str = "unpruned", height: int = 580) -> go.Figure:
    """One marker per (method, setting): the mean over seeds with ±1 std error bars on both axes,
    symbol and colour per method; each method's own Pareto front (``fronts[method]`` = indices into
    ``rows``) as a line in its colour; the ``reference`` method's mean accuracy as a dashed line."""
    if not isinstance(x, str) or not isinstance(y, str):
        raise ValueError("x and y must be key names")
    fig = go.Figure()
    pts = [(i, r) for i, r in enumerate(rows) if _finite(r.get(x)) and _finite(r.get(y))]
    methods = list(dict.fromkeys(str(r["method"]) for _, r in pts))
    for k, m in enumerate(methods):
        sel = [r for _, r in pts if str(r["method"]) == m]
        fig.add_trace(go.Scatter(
            x=[r[x] for r in sel], y=[r[y] for r in sel], mode="markers", name=method_label(m),
            legendgroup=m,
            marker=dict(symbol=_SYMBOLS[k % len(_SYMBOLS)], size=12, color=method_color(m),
                        line=dict(color="white", width=1)),
            error_x=dict(type="data", array=[r.get(f"{x}_std") or 0.0 for r in sel], thickness=1, width=0,
                         color=method_color(m)),
            error_y=dict(type="data", array=[r.get(f"{y}_std") or 0.0 for r in sel], thickness=1, width=0,
                         color=method_color(m)),
            customdata=[[r.get("setting"), r.get("n")] for r in sel],
            hovertemplate=(f"{method_label(m)} %{{customdata[0]}}<br>%{{customdata[1]}} seed(s)<br>"
                           f"{x} %{{x:.4g}}<br>{y} %{{y:.4g}}<extra></extra>")))
        front = [rows[i] for i in (fronts or {}).get(m, []) if 0 <= i < len(rows)]
        if len(front) > 1:
            fig.add_trace(go.Scatter(x=[r[x] for r in front], y=[r[y] for r in front], mode="lines",
                                     name=f"{method_label(m)} front", legendgroup=m, showlegend=False,
                                     line=dict(color=method_color(m), width=1.5, dash="dot"), hoverinfo="skip"))
    ref = [r[y] for _, r in pts if r["method"] == reference]
    if ref:
        xs = [r[x] for _, r in pts]
        fig.add_trace(go.Scatter(x=[min(xs), max(xs)], y=[sum(ref) / len(ref)] * 2, mode="lines",
                                 name=f"{method_label(reference)} accuracy", hoverinfo="skip",
                                 line={"color": theme.INK, "width": 1, "dash": "dash"}))
    return _finish_scatter(fig, bool(pts), x_label or x, y_label or y, height)
