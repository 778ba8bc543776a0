"""Scale-invariance figure (page 4): each method's operating point for every scale 10^k of the
secondary, on top of the Pareto set; the current scale highlighted.

Input: the dict of :func:`pcd.experiments.synthetic.scale` (``exponents``, ``methods[name]
["endpoints"]`` ``[E, 2]``, ``["drift"]``, ``pareto_set`` ``[P, 2]``, optional ``ws_theory``).
"""
from __future__ import annotations

import numpy as np
import plotly.graph_objects as go

from pcd.viz.theme import base_layout, method_color, method_label, rgba, style_axes


def _check(result: dict) -> tuple[np.ndarray, dict]:
    if not isinstance(result, dict) or "exponents" not in result or "methods" not in result:
        raise ValueError("scale figures need the dict returned by pcd.experiments.synthetic.scale")
    exps = np.asarray(result["exponents"], dtype=float)
    if not result["methods"]:
        raise ValueError("no methods in the scale result")
    for name, r in result["methods"].items():
        if np.asarray(r["endpoints"]).shape != (exps.size, 2):
            raise ValueError(f"{name}: endpoints must have shape [{exps.size}, 2]")
    return exps, result["methods"]


def sweep_figure(result: dict, current: float | None = None, height: int = 540) -> go.Figure:
    """Operating points (markers, labelled by the exponent k) per method, joined in order of k;
    the Pareto set as a line; ``current`` (an exponent in the sweep) drawn as large rings."""
    exps, methods = _check(result)
    fig = go.Figure()
    if result.get("pareto_set") is not None:
        ps = np.asarray(result["pareto_set"], dtype=float)
        fig.add_trace(go.Scatter(x=ps[:, 0], y=ps[:, 1], mode="lines", name="Pareto set",
                                 line=dict(color="#8250df", width=4), opacity=0.45, hoverinfo="name"))
    if result.get("ws_theory") is not None:
        wt = np.asarray(result["ws_theory"], dtype=float)
        fig.add_trace(go.Scatter(x=wt[:, 0], y=wt[:, 1], mode="markers", name="WS theory x*(10^k)",
                                 marker=dict(symbol="x-thin", size=10, color="#57606a", line=dict(width=2)),
                                 hovertemplate="WS theory (%{x:.3f}, %{y:.3f})<extra></extra>"))
    cur_idx = None
    if current is not None:
        d = np.abs(exps - float(current))
        if d.min() > 1e-9:
            raise ValueError(f"current exponent {current} is not in the sweep {exps.tolist()}")
        cur_idx = int(d.argmin())
    for name, r in methods.items():
        P = np.asarray(r["endpoints"], dtype=float)
        col = method_color(name)
        fig.add_trace(go.Scatter(
            x=P[:, 0], y=P[:, 1], mode="lines+markers+text", name=f"{method_label(name)} (drift {r['drift']:.3g})",
            legendgroup=name, line=dict(color=rgba(col, 0.6), width=2), text=[f"{k:g}" for k in exps],
            textposition="bottom right", textfont=dict(size=10, color=col),
            marker=dict(color=col, size=9), customdata=exps,
            hovertemplate=f"<b>{method_label(name)}</b><br>scale 10^%{{customdata:g}}<br>"
                          "(%{x:.4f}, %{y:.4f})<extra></extra>"))
        if cur_idx is not None:
            fig.add_trace(go.Scatter(x=[P[cur_idx, 0]], y=[P[cur_idx, 1]], mode="markers", legendgroup=name,
                                     showlegend=False, name=f"{method_label(name)} at 10^{exps[cur_idx]:g}",
                                     marker=dict(color="rgba(0,0,0,0)", size=22, line=dict(color=col, width=3)),
                                     hovertemplate=f"{method_label(name)} at 10^{exps[cur_idx]:g}<extra></extra>"))
    fig.update_layout(**base_layout(height=height))
    style_axes(fig)
    fig.update_xaxes(title_text="x₁")
    fig.update_yaxes(title_text="x₂", scaleanchor="x", scaleratio=1)
    return fig


def drift_figure(result: dict, height: int = 360) -> go.Figure:
    """Distance of each operating point from the method's point at the middle scale, vs the
    exponent k (linear y): a flat line at 0 = scale invariant."""
    exps, methods = _check(result)
    mid = int(np.argmin(np.abs(exps - np.median(exps))))
    fig = go.Figure()
    for name, r in methods.items():
        P = np.asarray(r["endpoints"], dtype=float)
        dist = np.linalg.norm(P - P[mid], axis=1)
        fig.add_trace(go.Scatter(x=exps, y=dist, mode="lines+markers", name=method_label(name),
                                 line=dict(color=method_color(name), width=2.5), marker=dict(size=8),
                                 hovertemplate=f"{method_label(name)}<br>k = %{{x:g}}<br>distance %{{y:.4f}}<extra></extra>"))
    fig.update_layout(**base_layout(height=height))
    style_axes(fig)
    fig.update_xaxes(title_text="scale exponent k (secondary × 10^k)", dtick=1)
    fig.update_yaxes(title_text=f"distance from the point at 10^{exps[mid]:g}", rangemode="tozero")
    return fig


def drift_table(result: dict):
    """One row per method: drift (max pairwise distance of the operating points) and final-iterate drift."""
    import pandas as pd

    _, methods = _check(result)
    return pd.DataFrame([{"method": method_label(n), "drift (operating point)": float(r["drift"]),
                          "drift (final iterate)": float(r.get("drift_final", np.nan))} for n, r in methods.items()])
