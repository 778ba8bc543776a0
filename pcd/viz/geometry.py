"""Gradient-geometry figure (page 1): the gradients, PCD's feasible region and every method's
update vector in the method's colour (cf. PCD paper, Fig. 3).

Input is the plain data of :func:`pcd.studio.method_directions`; output a ``go.Figure``.
"""
from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import plotly.graph_objects as go

from pcd.viz.theme import base_layout, objective_color, rgba, style_axes

REGION_COLOR = "#d62728"


def clip_polygon(box: tuple[float, float, float, float], halfplanes: Sequence[tuple[Any, float]]) -> np.ndarray:
    """The polygon ``{p in box : n . p >= c for every (n, c)}`` (Sutherland-Hodgman clipping).

    ``box = (xmin, xmax, ymin, ymax)``. Returns the vertices ``[P, 2]`` (P = 0 when empty).
    """
    xmin, xmax, ymin, ymax = (float(v) for v in box)
    if not (xmin < xmax and ymin < ymax):
        raise ValueError(f"box must satisfy xmin < xmax and ymin < ymax, got {box}")
    poly = np.array([[xmin, ymin], [xmax, ymin], [xmax, ymax], [xmin, ymax]], dtype=np.float64)
    for n, c in halfplanes:
        n = np.asarray(n, dtype=np.float64).reshape(-1)
        if n.shape != (2,) or not np.isfinite(n).all() or not np.isfinite(c):
            raise ValueError(f"each half-plane needs a finite 2-D normal and offset, got {(n, c)}")
        if len(poly) == 0:
            break
        out = []
        vals = poly @ n - c
        for i in range(len(poly)):
            p, q = poly[i], poly[(i + 1) % len(poly)]
            vp, vq = vals[i], vals[(i + 1) % len(poly)]
            if vp >= 0:
                out.append(p)
            if (vp >= 0) != (vq >= 0):
                t = vp / (vp - vq)
                out.append(p + t * (q - p))
        poly = np.array(out, dtype=np.float64).reshape(-1, 2)
    return poly


def geometry_figure(result: dict[str, Any], show_region: bool = True, height: int = 560) -> go.Figure:
    """Gradients ``g_i`` (black / blue / amber), PCD's feasible region (shaded) and each method's
    update ``d`` as an arrow in its colour; PCD also shows its QP point ``d~`` (before the rescale
    to ``||g_1||``) and the pinned decomposition ``g_1 + mu g_2``.
    """
    if not isinstance(result, dict) or "J" not in result or "rows" not in result:
        raise ValueError("geometry_figure needs the dict returned by pcd.studio.method_directions")
    J = np.asarray(result["J"], dtype=np.float64)
    if J.ndim != 2 or J.shape[1] != 2:
        raise ValueError(f"geometry_figure draws 2-D gradients, got J of shape {J.shape}")
    rows = [r for r in result["rows"] if not r.get("error")]
    pts = [J, np.zeros((1, 2))]
    for r in rows:
        d = np.asarray(r["direction"], dtype=np.float64)
        if np.isfinite(d).all():
            pts.append(d[None])
        if "qp_point" in r and np.isfinite(r["qp_point"]).all():
            pts.append(np.asarray(r["qp_point"])[None])
    allp = np.vstack(pts)
    lim = max(1e-9, float(np.abs(allp).max())) * 1.18
    fig = go.Figure()
    annotations = []

    def arrow(vec, color, width, dash=None, text=None):
        annotations.append(dict(x=float(vec[0]), y=float(vec[1]), ax=0, ay=0, xref="x", yref="y",
                                axref="x", ayref="y", showarrow=True, arrowhead=3, arrowsize=1.1,
                                arrowwidth=width, arrowcolor=color, text="", standoff=0))
        if text:
            annotations.append(dict(x=float(vec[0]), y=float(vec[1]), text=text, showarrow=False,
                                    xref="x", yref="y", font=dict(color=color, size=15),
                                    xshift=12 if vec[0] >= 0 else -12, yshift=10 if vec[1] >= 0 else -10))

    pcd_row = next((r for r in rows if r["method"] == "pcd"), None)
    if show_region and pcd_row is not None and pcd_row.get("halfplanes"):
        poly = clip_polygon((-lim, lim, -lim, lim), pcd_row["halfplanes"])
        if len(poly):
            closed = np.vstack([poly, poly[:1]])
            fig.add_trace(go.Scatter(x=closed[:, 0], y=closed[:, 1], mode="lines", fill="toself",
                                     fillcolor=rgba(REGION_COLOR, 0.09), line=dict(color=rgba(REGION_COLOR, 0.35), width=1),
                                     name="PCD feasible region", hoverinfo="name", legendgroup="region"))
    for k in range(J.shape[0]):
        g = J[k]
        col = objective_color(k)
        fig.add_trace(go.Scatter(x=[0, g[0]], y=[0, g[1]], mode="lines", line=dict(color=col, width=3),
                                 name=f"g{k + 1}" + (" (primary)" if k == 0 else ""), legendgroup=f"g{k}",
                                 hovertemplate=f"g{k + 1} = (%{{x:.3f}}, %{{y:.3f}})<extra></extra>"))
        arrow(g, col, 3, text=f"<b>g{k + 1}</b>")
    for r in rows:
        d = np.asarray(r["direction"], dtype=np.float64)
        if not np.isfinite(d).all():
            continue
        prog = ", ".join(f"g{k + 1}·d = {p:+.3f}" for k, p in enumerate(r["progress"]))
        fig.add_trace(go.Scatter(x=[0, d[0]], y=[0, d[1]], mode="lines+markers",
                                 marker=dict(size=[0, 9], color=r["color"]),
                                 line=dict(color=r["color"], width=2.5 if r["method"] != "pcd" else 4),
                                 name=r["label"], legendgroup=r["method"],
                                 hovertemplate=f"<b>{r['label']}</b><br>d = (%{{x:.3f}}, %{{y:.3f}})<br>"
                                               f"‖d‖ = {r['norm']:.3f}<br>{prog}<extra></extra>"))
        arrow(d, r["color"], 2.5 if r["method"] != "pcd" else 3.5)
    if pcd_row is not None and np.isfinite(pcd_row.get("qp_point", np.nan)).all():
        q = np.asarray(pcd_row["qp_point"])
        g1 = J[0]
        fig.add_trace(go.Scatter(x=[g1[0], q[0]], y=[g1[1], q[1]], mode="lines+markers",
                                 line=dict(color=REGION_COLOR, width=1.5, dash="dot"),
                                 marker=dict(size=[0, 10], symbol="circle-open", color=REGION_COLOR),
                                 name="PCD: d~ = g1 + Σ μ ĝj (before rescale)", legendgroup="pcd",
                                 hovertemplate="d~ = (%{x:.3f}, %{y:.3f})<extra></extra>"))
    fig.update_layout(**base_layout(height=height, annotations=annotations, showlegend=True))
    style_axes(fig)
    fig.update_xaxes(range=[-lim, lim], zeroline=True, zerolinecolor="#c9ced4", constrain="domain")
    fig.update_yaxes(range=[-lim, lim], scaleanchor="x", scaleratio=1, zeroline=True, zerolinecolor="#c9ced4",
                     constrain="domain")
    fig.update_layout(legend=dict(orientation="v", x=1.02, y=1.0, xanchor="left", yanchor="top"),
                      margin=dict(l=40, r=20, t=30, b=40))
    return fig
