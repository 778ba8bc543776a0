"""Gradient-geometry figure (page 1): the gradients, PCD's feasible region and every method's
update vector in the method's colour (cf. PCD paper, Fig. 3).

Input is the plain data of :func:`pcd.experiments.geometry.method_directions`; output a ``go.Figure``.
"""
from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

import numpy as np
import plotly.graph_objects as go

from pcd.viz import theme
from pcd.viz.labels import label_px
from pcd.viz.theme import base_layout, method_color, objective_color, rgba, style_axes

REGION_COLOR = theme.PCD_RED


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


def coinciding(directions: Sequence[Any], tol: float) -> list[list[int]]:
    """Groups of indices whose vectors lie within ``tol`` of the group's first vector (in order)."""
    groups: list[list[int]] = []
    for i, d in enumerate(directions):
        d = np.asarray(d, dtype=np.float64)
        for g in groups:
            if np.linalg.norm(d - np.asarray(directions[g[0]], dtype=np.float64)) <= tol:
                g.append(i)
                break
        else:
            groups.append([i])
    return groups


def same_ray(directions: Sequence[Any], tol: float, max_angle_deg: float = 2.0) -> list[list[int]]:
    """Groups of indices whose vectors point along the same ray (within ``max_angle_deg``); vectors
    shorter than ``tol`` form their own group (they all sit at the origin)."""
    groups: list[list[int]] = []
    keys: list[float | None] = []
    for i, d in enumerate(directions):
        d = np.asarray(d, dtype=np.float64)
        ang = None if np.linalg.norm(d) <= tol else float(np.degrees(np.arctan2(d[1], d[0])))
        for g, key in zip(groups, keys):
            if (ang is None and key is None) or (ang is not None and key is not None
                                                 and abs((ang - key + 180.0) % 360.0 - 180.0) <= max_angle_deg):
                g.append(i)
                break
        else:
            groups.append([i])
            keys.append(ang)
    return groups


def _arrow(x: float, y: float, color: str, width: float, name: str, group: str, text: str = "",
           hover: str | None = None, showlegend: bool = True, dash: str | None = None,
           text_color: str | None = None, below: bool = False, text_px: float = 13.0) -> go.Scatter:
    """A vector from the origin as one trace (line + arrowhead marker + tip label), so a legend
    click hides or solos it like every other trace. ``below``: the label under the tip (where
    another vector's label already sits above it); ``text_px``: the tip label's font."""
    return go.Scatter(
        x=[0.0, x], y=[0.0, y], mode="lines+markers+text" if text else "lines+markers", name=name,
        legendgroup=group, showlegend=showlegend, line=dict(color=color, width=width, dash=dash),
        marker=dict(symbol=["circle", "arrow"], size=[0, 10 + 1.6 * width], angleref="previous", color=color,
                    line=dict(width=0)),
        text=["", text], textposition=("bottom " if below else "top ") + ("right" if x >= 0 else "left"),
        textfont=dict(color=text_color or color, size=text_px),
        cliponaxis=False, hovertemplate=hover if hover is not None else f"{name}<extra></extra>")


# the geometry plot's sizes (a square, px) from the lesson's narrow column to a wide page, fonts as presenter mode
GEOMETRY_PLOT_SIZES = ((360.0, 360.0), (460.0, 460.0), (560.0, 560.0))
NARROW_CHART_PX = 560.0  # the page's chart at an 800-px window: its legend takes the most rows there
PRESENT_CHART_PX = (1150.0, 530.0)  # presenter mode's chart: 1280 x 720 less the header, fitted to the window
LABEL_FONT = 12
G_FONT = 13  # the gradients' "g1", "g2" beside their tips


def short_label(text: str, lines: int) -> tuple[str, int]:
    """A stacked ray label (``"<b>A = B = C<br>= D<br>> E</b>"``) cut to its first ``lines`` lines and a
    last line saying how many methods it leaves out (``"… +7 more (hover)"``); ``(text, names left
    out)``. The label's hover text and the legend name every method."""
    body = text.replace("<b>", "").replace("</b>", "")
    rows = body.split("<br>")
    if lines >= len(rows):
        return text, 0
    suffix = ": d ≈ 0" if body.endswith(": d ≈ 0") else ""
    hidden = "<br>".join(rows[lines:]).removesuffix(suffix)
    n = sum(1 for part in re.split(r"<br>|\s[=>]\s|^[=>]\s", hidden) if part.strip(" =>"))
    keep = "<br>".join(rows[:lines]).removesuffix(suffix)
    return f"<b>{keep}<br>… +{n} more (hover){', the last d ≈ 0' if suffix else ''}</b>", n


def plot_side_px(legend_names: Sequence[str], height: float, chart_px: float = NARROW_CHART_PX,
                 text_scale: float = 1.0) -> float:
    """The square plot's side (px) in a chart ``chart_px`` wide and ``height`` tall whose legend under it
    (14-px text, ``text_scale`` larger in presenter mode) lists ``legend_names``: the legend's rows push the
    bottom margin (Plotly's automargin; ``y=-0.08`` of the plot below it), so with every registered method the
    plot of a 600-px chart at 560 px is ~260 px, not the 360 px of :data:`GEOMETRY_PLOT_SIZES`."""
    from pcd.viz.landscape import LEGEND_ROW_PX, legend_rows

    k = float(text_scale)
    width = float(chart_px) - 60.0                                  # the margins, l=40 and r=20
    rows = legend_rows(legend_names, width / k)                     # larger text: as many rows as a narrower chart
    return float(max(120.0, min(width, (float(height) - 40.0 - 30.0 - rows * LEGEND_ROW_PX * k) / 1.08)))


def ray_labels_placed(J: np.ndarray, directions: Sequence[Any], labels: Sequence[tuple[Any, str, str]],
                      lim: float, text_scale: float = 1.0, smallest: float | None = None,
                      label_scale: float | None = None) -> tuple[list[dict], float]:
    """One annotation per ray label ``(tip, text, colour)``, placed by :func:`pcd.viz.labels.place` clear of
    every arrow (its tip and shaft), of the gradients' labels (drawn above right / left of their tips)
    and of each other, on every plot size of :data:`GEOMETRY_PLOT_SIZES`; a thin line to its tip. A
    stacked label with no clear place (every registered method on one ray: ten lines and more) is cut to
    the lines that have one, its last line saying how many methods it leaves out
    (:func:`short_label`), the whole list on hover. ``text_scale``: the labels' fonts that much larger,
    placed for them (presenter mode, :func:`pcd.viz.labels.label_px`). ``smallest``: the plot's side at the
    narrowest chart (:func:`plot_side_px`) when it is smaller than those sizes' first. ``label_scale``: the
    method labels' own scale, when not ``text_scale`` (the gradients' labels keep it). Returns the
    annotations and the least room (px) any label kept (below 0: some label covers something)."""
    from pcd.viz.labels import RINGS, label_px, place, plots_for, text_size

    font_px = label_px(LABEL_FONT, text_scale if label_scale is None else label_scale)
    g_px = label_px(G_FONT, text_scale)
    sizes: tuple[tuple[float, float], ...] = GEOMETRY_PLOT_SIZES
    if smallest is not None and smallest < sizes[0][0]:
        sizes = ((float(smallest), float(smallest)), *sizes)
    plots = plots_for((-lim, lim), (-lim, lim), sizes, equal=True)
    obstacles: list[tuple[float, ...]] = [(0.0, 0.0, 0.0, 0.0, 10.0, 10.0, 0.0)]
    for v in list(J) + [np.asarray(d, dtype=np.float64) for d in directions]:
        for f in np.linspace(0.2, 1.0, 5):  # the shaft and the head
            obstacles.append((float(f * v[0]), float(f * v[1]), 0.0, 0.0, 12.0 if f == 1.0 else 6.0,
                              12.0 if f == 1.0 else 6.0, 0.0))
    for k, g in enumerate(J):  # "g1" beside its tip (_arrow's textposition: top right / left)
        w, h = text_size(f"g{k + 1}", g_px)
        obstacles.append((float(g[0]), float(g[1]), (w / 2 + 4) * (1 if g[0] >= 0 else -1), -h / 2 - 2, w, h, 0.0))
    # the tallest first: it needs the most room
    order = sorted(range(len(labels)), key=lambda i: -labels[i][1].count("<br>"))
    p0 = plots[0]

    def place_all(cap: int) -> tuple[list[dict], float]:
        """Every label, a stacked one cut to at most ``cap`` lines (and fewer where those have no clear place)."""
        obs = list(obstacles)
        out: list[dict] = [{} for _ in labels]
        least = float("inf")
        for i in order:
            tip, full, color = labels[i]
            for lines in range(min(cap, full.count("<br>") + 1), 0, -1):  # the most lines that have a clear place
                text, _left_out = short_label(full, lines)
                size = text_size(text, font_px)
                # anchored in data units: the label keeps its place among the arrows on every plot size
                [((dx, dy), room)] = place([tip], [size], plots, obs, offsets=RINGS, data=True)
                if room >= 0:
                    break
            least = min(least, room)
            obs.append((float(tip[0]), float(tip[1]), dx * p0.w / (2 * lim), -dy * p0.h / (2 * lim),
                        size[0], size[1], 1.0))
            out[i] = dict(x=float(tip[0]), y=float(tip[1]), xref="x", yref="y", text=text, showarrow=True,
                          arrowhead=0, arrowwidth=1, arrowcolor=theme.FAINT, ax=float(tip[0] + dx),
                          ay=float(tip[1] + dy), axref="x", ayref="y", standoff=5, align="left", name="method label",
                          **({"hovertext": full} if text != full else {}),
                          font=dict(size=font_px, color=color), bgcolor="rgba(255,255,255,0.85)", borderpad=2)
        return out, least

    # a stacked label that takes the room another label needs is cut shorter until every one has a clear place
    tallest = max((t.count("<br>") + 1 for _, t, _ in labels), default=1)
    for cap in range(tallest, 0, -1):
        out, least = place_all(cap)
        if least >= 0:
            break
    return out, least


def geometry_figure(result: dict[str, Any], show_region: bool = True, height: int = 600,
                    text_scale: float = 1.0) -> go.Figure:
    """Gradients ``g_i`` (objective colours), PCD's feasible region (shaded) and each method's
    update ``d`` as an arrow in its colour; PCD also shows its QP point ``d~`` (before the rescale
    to ``||g_1||``) and the bend from ``g_1`` to it.

    Methods whose updates point along the same ray are drawn longest first (underneath) so every
    arrowhead stays visible, and share one label at the outermost tip listing them by length
    (``"UPGrad > CAGrad > Weighted sum = MGDA"``); updates that coincide (within 2 % of the plot's
    half-width) are nested lines, the widest and faintest underneath. Every vector is a trace:
    click a legend entry to hide it, double-click to show it alone. ``text_scale``: the labels on the
    plot that much larger, placed for it (presenter mode, :func:`ray_labels_placed`).
    """
    if not isinstance(result, dict) or "J" not in result or "rows" not in result:
        raise ValueError("geometry_figure needs the dict returned by pcd.experiments.geometry.method_directions")
    J = np.asarray(result["J"], dtype=np.float64)
    if J.ndim != 2 or J.shape[1] != 2:
        raise ValueError(f"geometry_figure draws 2-D gradients, got J of shape {J.shape}")
    rows = [r for r in result["rows"] if not r.get("error") and np.isfinite(np.asarray(r["direction"])).all()]
    pts = [J, np.zeros((1, 2))]
    for r in rows:
        pts.append(np.asarray(r["direction"], dtype=np.float64)[None])
        if "qp_point" in r and np.isfinite(r["qp_point"]).all():
            pts.append(np.asarray(r["qp_point"])[None])
    allp = np.vstack(pts)
    lim = max(1e-9, float(np.abs(allp).max())) * 1.22
    fig = go.Figure()

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
        fig.add_trace(_arrow(g[0], g[1], col, 3.5, f"g{k + 1}" + (" (primary)" if k == 0 else ""), f"g{k}",
                             text=f"<b>g{k + 1}</b>", text_px=label_px(G_FONT, text_scale),
                             hover=f"g{k + 1} = ({g[0]:.3f}, {g[1]:.3f})<extra></extra>"))
    tol = 0.02 * lim
    ray_labels: list[tuple[np.ndarray, str, str]] = []
    for ray in same_ray([r["direction"] for r in rows], tol):
        # longest first (underneath); tips that coincide are nested, the widest underneath
        ray = sorted(ray, key=lambda i: -float(np.linalg.norm(rows[i]["direction"])))
        tips = coinciding([rows[i]["direction"] for i in ray], tol)
        # a long list of coinciding methods breaks after every third name (it fits an 800 px screen)
        tips_named = ["<br>= ".join(" = ".join(rows[ray[i]]["label"] for i in t[j:j + 3]) for j in range(0, len(t), 3))
                      for t in tips]
        label = " > ".join(tips_named)
        if float(np.linalg.norm(rows[ray[0]]["direction"])) <= tol:
            label += ": d ≈ 0"
        for t in tips:
            for pos, i in enumerate(t):
                r = rows[ray[i]]
                d = np.asarray(r["direction"], dtype=np.float64)
                prog = ", ".join(f"g{k + 1}·d = {p:+.3f}" for k, p in enumerate(r["progress"]))
                width = 3.0 + 3.0 * (len(t) - 1 - pos)
                others = [rows[ray[j]]["label"] for j in t if j != i]
                same = f"<br>same update as {', '.join(others)}" if others else ""
                first = ray[t[-1]] == ray[tips[0][-1]] and pos == len(t) - 1
                if first:  # the ray's one label, placed below with every other ray's
                    text = ("<b>" + "<br>".join(("" if k == 0 else "> ") + n for k, n in enumerate(tips_named))
                            + (": d ≈ 0" if label.endswith(": d ≈ 0") else "") + "</b>" if len(ray) > 1 else f"<b>{label}</b>")
                    ray_labels.append((d, text, theme.INK if len(ray) > 1 else method_color(r["method"])))
                col = method_color(r["method"])
                fig.add_trace(_arrow(
                    d[0], d[1], col if pos == len(t) - 1 else rgba(col, 0.5), width, r["label"], r["method"],
                    hover=(f"<b>{r['label']}</b><br>d = ({d[0]:.3f}, {d[1]:.3f})<br>‖d‖ = {r['norm']:.3f}<br>{prog}"
                           f"{same}<extra></extra>")))
    # (with every registered method one ray's stacked label runs to ten lines and more: cut to the lines
    # that have a clear place on the smallest plot, the rest on hover and in the legend)
    legend = [t.name for t in fig.data if t.showlegend is not False and t.name] + ["PCD: d̃ = g̃₁ + Σ μⱼ g̃ⱼ (before rescale)"]
    smallest = (plot_side_px(legend, height, text_scale=text_scale) if text_scale <= 1 else
                plot_side_px(legend, min(height, PRESENT_CHART_PX[1]), PRESENT_CHART_PX[0], text_scale))
    directions = [r["direction"] for r in rows]
    annotations, room = ray_labels_placed(J, directions, ray_labels, lim, text_scale, smallest)
    if room < 0 and text_scale > 1:  # (presenter mode, every method: no clear place for the larger labels)
        annotations, room = ray_labels_placed(J, directions, ray_labels, lim, text_scale, smallest, label_scale=1.0)
    if pcd_row is not None and np.isfinite(pcd_row.get("qp_point", np.nan)).all():
        q = np.asarray(pcd_row["qp_point"])
        g1 = J[0]
        fig.add_trace(go.Scatter(x=[g1[0], q[0]], y=[g1[1], q[1]], mode="lines+markers",
                                 line=dict(color=REGION_COLOR, width=1.5, dash="dot"),
                                 marker=dict(size=[0, 10], symbol="circle-open", color=REGION_COLOR),
                                 name="PCD: d̃ = g̃₁ + Σ μⱼ g̃ⱼ (before rescale)", legendgroup="pcd",
                                 hovertemplate="d̃ = (%{x:.3f}, %{y:.3f})<extra></extra>"))
    fig.update_layout(**base_layout(height=height, showlegend=True, annotations=annotations))
    style_axes(fig)
    fig.update_xaxes(range=[-lim, lim], zeroline=True, zerolinecolor=theme.ZERO_LINE, constrain="domain")
    fig.update_yaxes(range=[-lim, lim], scaleanchor="x", scaleratio=1, zeroline=True, zerolinecolor=theme.ZERO_LINE,
                     constrain="domain")
    # legend below the plot: the square plot keeps the full width of its box at any screen size
    fig.update_layout(legend=dict(orientation="h", x=0.0, y=-0.08, xanchor="left", yanchor="top"),
                      margin=dict(l=40, r=20, t=20, b=20))
    return fig
