"""Scale-invariance figures (page 4): each method's operating point for every scale 10^k of the
secondary, on top of the Pareto set; the current scale highlighted; the scales where PCD's
normalizer is eps-dominated marked as such.

Input: the dict of :func:`pcd.experiments.synthetic.scale` (``exponents``, ``methods[name]
["endpoints"]`` ``[E, 2]``, ``["drift"]``, ``pareto_set`` ``[P, 2]``, optional ``ws_theory``,
``scale_free`` and ``eps``).
"""
from __future__ import annotations

import numpy as np
import plotly.graph_objects as go

from pcd.viz import theme
from pcd.viz.theme import base_layout, method_color, method_label, method_style, rgba, style_axes

EPS_REGION = theme.AMBER   # amber: where the normalizer's eps takes over
_SUP = str.maketrans("-0123456789.", "⁻⁰¹²³⁴⁵⁶⁷⁸⁹·")
COINCIDE_TOL = 0.01      # operating points closer than this share one label


def power_label(k: float) -> str:
    """``10^k`` with a superscript exponent: ``-6 -> "10⁻⁶"`` (readable at any zoom, no '^')."""
    return "10" + f"{float(k):g}".translate(_SUP)


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


def _free(result: dict, n: int) -> np.ndarray:
    free = result.get("scale_free")
    return np.ones(n, dtype=bool) if free is None else np.asarray(free, dtype=bool)


def coincident_groups(P: np.ndarray, tol: float = COINCIDE_TOL) -> list[list[int]]:
    """Runs of consecutive indices whose points lie within ``tol`` of the run's first point."""
    groups: list[list[int]] = []
    for i in range(len(P)):
        if groups and np.all(np.isfinite(P[i])) and np.linalg.norm(P[i] - P[groups[-1][0]]) <= tol:
            groups[-1].append(i)
        else:
            groups.append([i])
    return groups


LABEL_SPAN = 0.07        # labels of points closer than this share of the plot's span are merged


def _group_text(exps: np.ndarray, idx: list[int], coincide: bool = True) -> str:
    if len(idx) == 1:
        return power_label(exps[idx[0]])
    span = f"{power_label(exps[idx[0]])} … {power_label(exps[idx[-1]])}"
    return f"{span} ({len(idx)} scales)" if coincide else span


def _labels(P: np.ndarray, exps: np.ndarray, near: float) -> list[str]:
    """One text per point: a label at the first point of each run of points that coincide
    (``COINCIDE_TOL``: ``10ᵃ … 10ᵇ (n scales)``) or lie within ``near`` of each other (``10ᵃ … 10ᵇ``:
    labels that would overprint merge), empty elsewhere."""
    text = [""] * len(P)
    for g in coincident_groups(P, max(near, COINCIDE_TOL)):
        exact = all(np.linalg.norm(P[i] - P[g[0]]) <= COINCIDE_TOL for i in g)
        text[g[0]] = _group_text(exps, g, coincide=exact)
    return text


def eps_window_text(result: dict) -> str | None:
    """``"10⁻³ … 10⁷ (10 orders)"``: the scale-free window, or None when every scale is."""
    exps, _ = _check(result)
    free = _free(result, exps.size)
    if free.all() or not free.any():
        return None
    lo, hi = exps[free].min(), exps[free].max()
    return f"{power_label(lo)} … {power_label(hi)} ({hi - lo:g} orders)"


def sweep_figure(result: dict, current: float | None = None, height: int = 540) -> go.Figure:
    """Operating points (markers) per method, joined in order of k; points within
    ``COINCIDE_TOL`` of each other share one label ``10ᵃ … 10ᵇ (n scales)`` so coinciding scales
    stay legible. Scales where PCD's eps dominates are drawn as open markers. The Pareto set as a
    line; ``current`` (an exponent in the sweep) drawn as large rings."""
    exps, methods = _check(result)
    free = _free(result, exps.size)
    fig = go.Figure()
    if result.get("pareto_set") is not None:
        ps = np.asarray(result["pareto_set"], dtype=float)
        fig.add_trace(go.Scatter(x=ps[:, 0], y=ps[:, 1], mode="lines", name="Pareto set",
                                 line=dict(color=theme.FRONT, width=4), opacity=0.45, hoverinfo="name"))
    if result.get("ws_theory") is not None:
        wt = np.asarray(result["ws_theory"], dtype=float)
        fig.add_trace(go.Scatter(x=wt[:, 0], y=wt[:, 1], mode="markers", name="WS theory x*(10ᵏ)",
                                 marker=dict(symbol="x-thin", size=10, color=theme.MUTED, line=dict(width=2)),
                                 hovertemplate="WS theory (%{x:.3f}, %{y:.3f})<extra></extra>"))
    cur_idx = None
    if current is not None:
        d = np.abs(exps - float(current))
        if d.min() > 1e-9:
            raise ValueError(f"current exponent {current} is not in the sweep {exps.tolist()}")
        cur_idx = int(d.argmin())
    positions = ("bottom right", "top left", "bottom left", "top right")
    pts = np.concatenate([np.asarray(r["endpoints"], dtype=float) for r in methods.values()]
                         + ([np.asarray(result["pareto_set"], dtype=float)] if result.get("pareto_set") is not None else []))
    pts = pts[np.isfinite(pts).all(axis=1)]
    lo, hi = (pts.min(axis=0), pts.max(axis=0)) if len(pts) else (np.zeros(2), np.ones(2))
    span = float(max(np.max(hi - lo), 1e-9))
    for j, (name, r) in enumerate(methods.items()):
        P = np.asarray(r["endpoints"], dtype=float)
        col = method_color(name)
        text = _labels(P, exps, LABEL_SPAN * span)
        eps_note = ["" if f else "<br>ε-dominated scale" for f in free]
        fig.add_trace(go.Scatter(
            x=P[:, 0], y=P[:, 1], mode="lines+markers+text", name=f"{method_label(name)} (drift {r['drift']:.3g})",
            legendgroup=name, line=dict(color=rgba(col, 0.6), width=2), text=text,
            textposition=positions[j % len(positions)], textfont=dict(size=12, color=col),
            marker=dict(color=[col if f else "white" for f in free], size=10, line=dict(color=col, width=2),
                        symbol=["circle" if f else "circle-open-dot" for f in free]),
            customdata=np.c_[exps, np.array(eps_note, dtype=object)],
            hovertemplate=f"<b>{method_label(name)}</b><br>scale 10^%{{customdata[0]:g}}<br>"
                          "(%{x:.4f}, %{y:.4f})%{customdata[1]}<extra></extra>"))
        if cur_idx is not None:
            fig.add_trace(go.Scatter(x=[P[cur_idx, 0]], y=[P[cur_idx, 1]], mode="markers", legendgroup=name,
                                     showlegend=False, name=f"{method_label(name)} at 10^{exps[cur_idx]:g}",
                                     marker=dict(color="rgba(0,0,0,0)", size=22, line=dict(color=col, width=3)),
                                     hovertemplate=f"{method_label(name)} at {power_label(exps[cur_idx])}<extra></extra>"))
    fig.update_layout(**base_layout(height=height))
    style_axes(fig)
    # room for the end points' labels inside the plot: "10⁴ … 10⁷ (4 scales)" written to the right of
    # the rightmost point takes ~1/3 of the plot's span
    pad = 0.1 * span
    fig.update_xaxes(title_text="x₁", range=[float(lo[0] - pad), float(hi[0] + 4.5 * pad)])
    fig.update_yaxes(title_text="x₂", scaleanchor="x", scaleratio=1, range=[float(lo[1] - pad), float(hi[1] + pad)])
    return fig


def drift_figure(result: dict, height: int = 330) -> go.Figure:
    """Distance of each operating point from the method's point at the middle scale, vs the
    exponent k (linear y, ticks ``10ᵏ``): a flat line at 0 = scale invariant. The scales where
    PCD's normalizer is eps-dominated (``result["scale_free"]`` False) are a shaded, labelled band."""
    exps, methods = _check(result)
    free = _free(result, exps.size)
    mid = int(np.argmin(np.abs(exps - np.median(exps[free] if free.any() else exps))))
    fig = go.Figure()
    if not free.all():
        bad = exps[~free]
        step = float(np.min(np.diff(np.sort(exps)))) if exps.size > 1 else 1.0
        eps = result.get("eps")
        label = "ε takes over" + (f" (ε = {eps:.0e})" if eps is not None else "")
        fig.add_vrect(x0=bad.min() - step / 2, x1=bad.max() + step / 2, fillcolor=rgba(EPS_REGION, 0.14),
                      line_width=0, layer="below", annotation_text=label, annotation_position="top left",
                      annotation=dict(font=dict(color=EPS_REGION, size=12)))
    for name, r in methods.items():
        P = np.asarray(r["endpoints"], dtype=float)
        dist = np.linalg.norm(P - P[mid], axis=1)
        st = method_style(name)  # colour, dash (its place in its family), marker (its family's)
        fig.add_trace(go.Scatter(x=exps, y=dist, mode="lines+markers", name=method_label(name), legendgroup=name,
                                 line=dict(color=st["color"], width=2.5, dash=st["dash"]),
                                 marker=dict(size=8, symbol=st["symbol"]),
                                 hovertemplate=f"{method_label(name)}<br>k = %{{x:g}}<br>distance %{{y:.4f}}<extra></extra>"))
    fig.update_layout(**base_layout(height=height))
    style_axes(fig)
    fig.update_xaxes(title_text="secondary × 10ᵏ", tickvals=exps.tolist(),
                     ticktext=[power_label(k) for k in exps], tickfont=dict(size=12))
    fig.update_yaxes(title_text=f"distance from the point at {power_label(exps[mid])}", rangemode="tozero")
    return fig


def drift_table(result: dict):
    """One row per method: drift over the scale-free scales, over every scale, final-iterate drift."""
    import pandas as pd

    _, methods = _check(result)
    return pd.DataFrame([{"method": method_label(n), "drift (operating point)": float(r["drift"]),
                          "drift, every scale": float(r.get("drift_all", r["drift"])),
                          "drift (final iterate)": float(r.get("drift_final", np.nan))} for n, r in methods.items()])
