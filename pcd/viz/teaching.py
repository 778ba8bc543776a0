"""Figures of the teaching views: the gradient inset animated with the toy map, the gradients at
one frame as a figure of their own, and a step cursor on the loss plot.

Input is the plain data of :func:`pcd.experiments.toy.trajectory_gradients`; output a ``go.Figure``.

The inset is a grid of small panels (one per method) on a second pair of axes beside the map, in
the SAME figure and the SAME frames as the animated trajectories, so playing or scrubbing the
map moves the arrows g1, g2 (and g3) and the method's step d in sync, in the browser, without a
round trip to the server. Every panel uses one fixed scale for the whole animation (the dashed
circle); a vector longer than the circle is drawn clipped to it and its true length is in the
numbers under the panel.
"""
from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import plotly.graph_objects as go

from pcd import _validate as V
from pcd.viz import theme
from pcd.viz.theme import base_layout, figure_from_spec, method_color, method_label, objective_color, rgba

ARROW = 0.9          # the scale circle's radius in panel units (a panel spans [-1, 1])
# text blocks around the panels (px): a title (13 px), three lines of numbers (11 px; "‖g₁‖ 6.39  ‖g₂‖ 1" is
# ~112 px wide in Chromium), the two-line caption (12 px)
TITLE_PX, NUMBERS_PX, CAPTION_PX, NUMBERS_W_PX = 18, 54, 36, 122
_TEXT_PX = (TITLE_PX, NUMBERS_PX, CAPTION_PX, NUMBERS_W_PX)
# The chart width the layout assumes: a 1400-px window with the sidebar open (a wider chart -- no
# sidebar, presenter mode -- only leaves more room; a narrower one would let the numbers touch).
PAGE_W_PX = 880
NARROW_W_PX = 560   # the chart at an 800-px window with the sidebar open: the inset goes under the map
SUBSCRIPT = "₀₁₂₃₄₅₆₇₈₉"


def _sub(k: int) -> str:
    return "".join(SUBSCRIPT[int(c)] for c in str(k))


def inset_scale(grads: dict[str, Any], quantile: float = 0.75) -> float:
    """One fixed scale for every panel and frame: the ``quantile`` of the per-(method, frame)
    longest vector (``||g_k||``, ``||d||``). A high quantile keeps the stalled frames (which last
    long) readable while the fast first steps, with their large gradients, are clipped."""
    if not 0.0 < float(quantile) <= 1.0:
        raise ValueError(f"quantile must be in (0, 1], got {quantile}")
    vals = []
    for g in grads["methods"].values():
        longest = np.fmax(np.nanmax(np.where(np.isfinite(g["norms"]), g["norms"], np.nan), axis=1, initial=0.0)
                          if g["norms"].size else np.zeros(0), np.nan_to_num(g["d_norm"], nan=0.0))
        vals.append(longest[np.isfinite(longest)])
    allv = np.concatenate(vals) if vals else np.zeros(0)
    allv = allv[allv > 0]
    return float(np.quantile(allv, quantile)) if allv.size else 1.0


def _clip(v: np.ndarray, scale: float) -> np.ndarray:
    """``v [.., 2]`` in panel units: ``v / scale * ARROW``, longer ones clipped to the circle."""
    u = np.asarray(v, dtype=np.float64)[..., :2] / scale * ARROW
    r = np.linalg.norm(u, axis=-1, keepdims=True)
    with np.errstate(invalid="ignore", divide="ignore"):
        f = np.where(r > ARROW, ARROW / np.where(r > 0, r, 1.0), 1.0)
    return u * f


def _fmt(v: float, digits: int = 3) -> str:
    return "—" if not np.isfinite(v) else f"{v:.{digits}g}" if abs(v) >= 1e-3 or v == 0 else f"{v:.1e}"


def _numbers(g: dict[str, Any], t: int) -> str:
    K = g["norms"].shape[1]
    gn = "  ".join(f"‖g{_sub(k + 1)}‖ {_fmt(g['norms'][t, k])}" for k in range(K))
    dn, gmax = g["d_norm"][t], np.nanmax(g["norms"][t], initial=0.0)
    stall = np.isfinite(dn) and gmax > 0 and dn <= 1e-3 * gmax
    line2 = f"cos {_fmt(g['cos'][t])}"
    mu = g["mu"][t] if g["mu"].size else np.zeros(0)
    if mu.size and np.isfinite(mu).any():
        line2 += "  " + " ".join(f"μ{_sub(j + 2) if mu.size > 1 else ''} {_fmt(v)}" for j, v in enumerate(mu))
    line3 = f"<b>‖d‖ ≈ 0</b> ({_fmt(dn, 2)})" if stall else f"‖d‖ {_fmt(dn)}"
    return f"{gn}<br>{line2}<br>{line3}"


#: the smallest panel half-width (px) the side inset is laid out for: below it the rows' titles and
#: numbers (fixed in pixels) run into each other
INSET_MIN_U_PX = 30.0
BELOW_U_PX = 46.0   # the panel half-width (px) of the inset under the map


def side_inset_cols(n_methods: int) -> int:
    """Columns of the inset beside the map (:func:`add_gradient_inset` ``placement="side"``)."""
    return 1 if n_methods <= 2 else 2 if n_methods <= 4 else 3


def side_inset_height_px(n_methods: int) -> float:
    """The plot height (px) the side inset of ``n_methods`` panels needs so that no title, panel or
    line of numbers overlaps another: 302 px for the default six, 710 px for all fifteen methods
    (a figure builder makes its plot at least this tall)."""
    if n_methods < 1:
        raise ValueError(f"n_methods must be >= 1, got {n_methods}")
    rows = -(-int(n_methods) // side_inset_cols(n_methods))
    return rows * (TITLE_PX + NUMBERS_PX + 6 + 2.0 * INSET_MIN_U_PX) + CAPTION_PX


def below_inset_height_px(n_methods: int, cols: int = 3) -> float:
    """The height (px) the inset under the map (``placement="below"``, ``cols`` panels a row) needs so
    that no title, panel, line of numbers or the caption overlaps another (a figure builder gives it
    at least this much: 15 methods need five rows)."""
    if n_methods < 1:
        raise ValueError(f"n_methods must be >= 1, got {n_methods}")
    rows = -(-int(n_methods) // max(1, min(int(cols), int(n_methods))))
    return rows * (TITLE_PX + NUMBERS_PX + 12 + 2.0 * BELOW_U_PX) + CAPTION_PX


def _geometry(P: int, cols: int, plot_h: float, plot_w: float, k: float = 1.0) -> dict[str, Any]:
    """Panel pitch and text offsets (in panel units) so that the titles and numbers, whose size is
    fixed in pixels, fit around panels of ``P`` methods in ``cols`` columns drawn in a plot area of
    ``plot_h x plot_w`` pixels (the axes keep a 1:1 aspect, so the tighter side decides). ``k``: the
    text's size, times the default (a projector's larger type needs larger text blocks)."""
    rows = (P + cols - 1) // cols
    title_px, numbers_px, caption_px, numbers_w_px = (k * v for v in _TEXT_PX)
    extra = title_px + numbers_px + 6
    u = max(22.0, (plot_h - rows * extra - caption_px) / (2.0 * rows))
    for _ in range(3):  # the width may be the tighter side: shrink u until the columns fit
        dx = max(2.25, numbers_w_px / u + 0.1)
        u_w = plot_w / ((cols - 1) * dx + max(2.3, numbers_w_px / u))
        if u_w >= u:
            break
        u = max(22.0, u_w)
    dx = max(2.25, numbers_w_px / u + 0.1)
    dy = 2.0 + extra / u
    half_w = max(1.15, numbers_w_px / (2 * u))
    xr = [-half_w, (cols - 1) * dx + half_w]
    yr = [-(rows - 1) * dy - 1.0 - (numbers_px + 6 + caption_px) / u, 1.0 + (title_px + 2) / u]
    return {"dx": dx, "dy": dy, "title": 1.0 + 2.0 / u, "numbers": 1.0 + 3.0 / u, "xr": xr, "yr": yr}


def _panel_centers(P: int, cols: int, geom: dict[str, Any]) -> np.ndarray:
    return np.array([[(p % cols) * geom["dx"], -(p // cols) * geom["dy"]] for p in range(P)], dtype=np.float64)


def _vector_xy(vecs: np.ndarray, centers: np.ndarray, scale: float) -> tuple[np.ndarray, np.ndarray]:
    """Segments origin -> tip for every panel (``vecs [P, 2]``), separated by gaps."""
    xy = _segments(np.asarray(vecs)[None], centers, scale)[0].reshape(-1, 2)
    return xy[:, 0], xy[:, 1]


def _segments(vecs: np.ndarray, centers: np.ndarray, scale: float) -> np.ndarray:
    """:func:`_vector_xy` of ``vecs [T, P, 2]`` (every recorded step at once): float32
    ``[T, P, 3, 2]``, per panel its origin, its tip and a gap (NaN)."""
    u = _clip(vecs, scale)
    # a (nearly) zero vector draws nothing -- its arrowhead would point anywhere; the numbers say ~0
    short = ~np.isfinite(u).all(axis=-1) | (np.linalg.norm(np.nan_to_num(u), axis=-1) < 0.03)
    pts = np.full(u.shape[:2] + (3, 2), np.nan)
    pts[:, :, 0] = np.where(short[..., None], np.nan, centers[None])
    pts[:, :, 1] = np.where(short[..., None], np.nan, u + centers[None])
    return pts.astype(np.float32)


def _panels(grads: dict[str, Any], names: Sequence[str], cols: int, scale: float, t_of: Any,
            xref: str, yref: str, geom: dict[str, Any], k: float = 1.0) -> tuple[list[dict], Any, list[dict], list[dict]]:
    """Static shapes/annotations and the animated traces (and a function giving their data at a
    frame) for panels of ``names``; ``t_of(name, frame)`` maps a figure frame to the record row;
    ``k``: text size, times the default (as given to :func:`_geometry`)."""
    P = len(names)
    centers = _panel_centers(P, cols, geom)
    K = next(iter(grads["methods"].values()))["g"].shape[1]
    shapes, annotations = [], []
    for p, name in enumerate(names):
        cx, cy = centers[p]
        shapes.append(dict(type="rect", xref=xref, yref=yref, x0=cx - 1, x1=cx + 1, y0=cy - 1, y1=cy + 1,
                           line=dict(color=theme.BORDER, width=1), fillcolor="rgba(255,255,255,0.92)", layer="below"))
        shapes.append(dict(type="circle", xref=xref, yref=yref, x0=cx - ARROW, x1=cx + ARROW, y0=cy - ARROW,
                           y1=cy + ARROW, line=dict(color=theme.PALE, width=1, dash="dot"), layer="below"))
        g = grads["methods"][name]
        annotations.append(dict(x=cx, y=cy + geom["title"], xref=xref, yref=yref, showarrow=False, yanchor="bottom",
                                text=f"<b>{method_label(name)}</b>" + ("" if g["exact"] else " (d ≈ w·J)"),
                                font=dict(size=round(13 * k, 1), color=method_color(name))))

    def vec_trace(color: str, width: float, label: str, legend: bool) -> dict:
        size = np.tile([0.0, 11.0 + width, 0.0], P).tolist()
        return dict(type="scatter", mode="lines+markers", xaxis=xref, yaxis=yref, name=label,
                    showlegend=legend, legendgroup=f"inset-{label}", hoverinfo="skip", cliponaxis=False,
                    line=dict(color=color, width=width),
                    marker=dict(symbol="arrow", angleref="previous", size=size, color=color, line=dict(width=0)))

    traces = [vec_trace(objective_color(k), 2.5, f"g{_sub(k + 1)}" + (" (primary)" if k == 0 else ""), True)
              for k in range(K)]
    traces += [vec_trace(method_color(name), 3.5, f"d ({method_label(name)})", False) for name in names]
    traces.append(dict(type="scatter", mode="text", xaxis=xref, yaxis=yref, showlegend=False, hoverinfo="skip",
                       x=centers[:, 0].astype(np.float32), y=(centers[:, 1] - geom["numbers"]).astype(np.float32),
                       textposition="bottom center", textfont=dict(size=round(11 * k, 1), color=theme.INK),
                       text=[""] * P, cliponaxis=False, name="inset numbers"))

    # every recorded step's arrows at once (one NumPy pass, not one per frame and panel); a frame picks its rows
    g_xy = [[_segments(grads["methods"][nm]["g"][:, k, :2][:, None], centers[p:p + 1], scale)[:, 0]
             for p, nm in enumerate(names)] for k in range(K)]          # [k][p]: [T, 3, 2]
    d_xy = [_segments(grads["methods"][nm]["d"][:, None, :2], centers[p:p + 1], scale)[:, 0]
            for p, nm in enumerate(names)]                               # [p]: [T, 3, 2]

    def data_at(frame: int) -> list[dict]:
        rows = [t_of(name, frame) for name in names]
        out = []
        for k in range(K):
            xy = np.concatenate([g_xy[k][p][r] for p, r in enumerate(rows)])
            out.append({"type": "scatter", "x": xy[:, 0], "y": xy[:, 1]})
        for p, r in enumerate(rows):
            out.append({"type": "scatter", "x": d_xy[p][r][:, 0], "y": d_xy[p][r][:, 1]})
        out.append({"type": "scatter", "text": [_numbers(grads["methods"][nm], r) for nm, r in zip(names, rows)]})
        return out

    return traces, data_at, shapes, annotations


def add_gradient_inset(fig: go.Figure, grads: dict[str, Any], methods: Sequence[str] | None = None,
                       map_fraction: float = 0.58, cols: int | None = None, scale: float | None = None,
                       placement: str = "side", width_px: float | None = None, spec_only: bool = False,
                       text_scale: float = 1.0) -> Any:
    """The toy map ``fig`` (from :func:`pcd.viz.landscape.landscape_figure`) with the gradient inset
    beside it: per method a panel with g1, g2 (, g3) and the method's step d at the current frame
    of start ``grads["start"]``, to one fixed scale (``scale``, default :func:`inset_scale`), and
    the numbers ``||g_k||``, ``cos(g1, g2)``, ``||d||`` and ``mu`` (PCD, DBGD) under it.

    The frames of ``fig`` (named by the recorded step) get the inset's data too, so Play, the step
    slider and any ``Plotly.animate`` call move the arrows with the map. ``fig`` is not modified;
    it may also be the plain spec of ``landscape_figure(..., spec_only=True)`` (one Figure is then
    built, not two).

    ``placement="side"``: the panels right of the map (``map_fraction`` of the width is the map);
    ``"below"``: under the map, full width, three panels a row (a narrow window: the side panels'
    numbers would touch); ``"alone"``: the whole plot area (``fig`` holds no map: :func:`inset_figure`).
    ``width_px``: the chart width the panel geometry assumes (default :data:`PAGE_W_PX`, or
    :data:`NARROW_W_PX` below). ``text_scale``: the titles and numbers that many times their
    default size, the panels laid out for it (a projector, :func:`inset_figure`).
    """
    if placement not in ("side", "below", "alone"):
        raise ValueError(f"placement must be 'side', 'below' or 'alone', got {placement!r}")
    k = V.number(text_scale, "text_scale", low=0.5, high=3.0)
    if not isinstance(fig, (go.Figure, dict)):
        raise ValueError("add_gradient_inset needs the go.Figure (or spec) of landscape_figure")
    if not isinstance(grads, dict) or "methods" not in grads or "steps" not in grads:
        raise ValueError("add_gradient_inset needs the dict of pcd.experiments.toy.trajectory_gradients")
    names = list(grads["methods"]) if methods is None else [m for m in methods if m in grads["methods"]]
    if not names:
        raise ValueError("choose at least one method of the run for the gradient inset")
    if not 0.3 <= float(map_fraction) <= 0.9:
        raise ValueError(f"map_fraction must be in [0.3, 0.9], got {map_fraction}")
    if cols is None:  # 3 x 2 panels for the default six methods, fewer columns for fewer
        cols = side_inset_cols(len(names)) if placement == "side" else min(3, len(names))
    cols = max(1, min(int(cols), len(names)))
    scale = inset_scale(grads) if scale is None else float(scale)
    if not (np.isfinite(scale) and scale > 0):
        raise ValueError(f"scale must be a positive number, got {scale}")
    steps = np.asarray(grads["steps"])
    if isinstance(fig, dict):  # a plain spec (landscape_figure(..., spec_only=True)): copied where changed
        spec = dict(fig, layout=dict(fig.get("layout") or {}), frames=[dict(f) for f in fig.get("frames") or []])
    else:
        spec = fig.to_plotly_json()
    frames = spec.get("frames") or []
    frame_names = [str(f.get("name")) for f in frames]
    step_row = {str(int(k)): i for i, k in enumerate(steps)}
    if frames and not all(n in step_row for n in frame_names):
        raise ValueError("the figure's frames are not the recorded steps of this run")
    last = len(steps) - 1
    lay = spec["layout"]
    gap = 0.03
    margin = lay.get("margin") or {}
    plot_h = float(lay.get("height") or 560) - float(margin.get("t", 40)) - float(margin.get("b", 125))
    chart_w = float(width_px) if width_px is not None else (PAGE_W_PX if placement == "side" else NARROW_W_PX)
    if not 200 <= chart_w <= 5000:
        raise ValueError(f"width_px must be in [200, 5000], got {width_px}")
    plot_w = chart_w - float(margin.get("l", 55)) - float(margin.get("r", 20))
    if placement == "side":
        plot_w *= 1.0 - float(map_fraction) - gap
        below = 0.0
    elif placement == "alone":
        below = 0.0
    else:  # the map keeps its aspect on top; the inset gets what its rows need, from the bottom
        below = min(0.75, below_inset_height_px(len(names), cols) / plot_h)
        plot_h *= below
        map_gap = min(0.11, 60.0 / max(plot_h / below, 1.0))  # ~60 px between the map's x axis and the inset
    geom = _geometry(len(names), cols, plot_h, plot_w, k)
    traces, data_at, shapes, annotations = _panels(grads, names, cols, scale, lambda nm, t: t, "x2", "y2", geom, k)
    t0 = 0 if frames else last
    first = data_at(t0)
    for tr, d in zip(traces, first):
        tr.update({k: v for k, v in d.items() if k != "type"})
    n0 = len(spec["data"])
    spec["data"] = list(spec["data"]) + traces
    new_idx = list(range(n0, n0 + len(traces)))
    for fr in frames:
        t = step_row[str(fr.get("name"))]  # a frame per recorded step, or a subset of them (max_frames)
        fr["traces"] = list(fr.get("traces", [])) + new_idx
        fr["data"] = list(fr.get("data", [])) + data_at(t)
    xr, yr = geom["xr"], geom["yr"]
    hidden = dict(visible=False, showgrid=False, zeroline=False, fixedrange=True)
    if placement == "side":
        lay.setdefault("xaxis", {})["domain"] = [0.0, float(map_fraction)]
        lay["xaxis2"] = dict(hidden, domain=[float(map_fraction) + gap, 1.0], range=xr, anchor="y2")
        lay["yaxis2"] = dict(hidden, domain=[0.0, 1.0], range=yr, anchor="x2", scaleanchor="x2", scaleratio=1,
                             constrain="domain")
    elif placement == "alone":
        lay["xaxis"], lay["yaxis"] = dict(hidden), dict(hidden)
        lay["xaxis2"] = dict(hidden, domain=[0.0, 1.0], range=xr, anchor="y2")
        lay["yaxis2"] = dict(hidden, domain=[0.0, 1.0], range=yr, anchor="x2", scaleanchor="x2", scaleratio=1,
                             constrain="domain")
    else:
        lay.setdefault("xaxis", {})["domain"] = [0.0, 1.0]
        lay.setdefault("yaxis", {})["domain"] = [below + map_gap, 1.0]
        lay["xaxis2"] = dict(hidden, domain=[0.0, 1.0], range=xr, anchor="y2")
        lay["yaxis2"] = dict(hidden, domain=[0.0, below], range=yr, anchor="x2", scaleanchor="x2", scaleratio=1,
                             constrain="domain")
    lay["shapes"] = list(lay.get("shapes", [])) + shapes
    lay["annotations"] = list(lay.get("annotations", [])) + annotations + [dict(
        x=xr[0], y=yr[0], xref="x2", yref="y2", xanchor="left", yanchor="bottom", showarrow=False,
        font=dict(size=round(12 * k, 1), color=theme.MUTED),
        text=f"gradients at the current step, start S{grads['start'] + 1}<br>one fixed scale: circle = {scale:.3g}")]
    return spec if spec_only else figure_from_spec(spec)


def inset_figure(grads: dict[str, Any], frames: Sequence[Any] | None = None, methods: Sequence[str] | None = None,
                 width_px: float = 1200.0, height: int = 300, cols: int | None = None,
                 text_scale: float = 1.0, spec_only: bool = False) -> Any:
    """The gradient inset of :func:`add_gradient_inset` as a figure of its own, animated on the
    map's ``frames`` (their names: recorded steps of ``grads``) -- the chart a page shows under a
    map drawn without its inset (presenter mode: the map and the objective-space panel side by side
    on the first screen, the inset folded below them), played by the same frame controls
    (:func:`pcd.ui.controls.frame_controls`, ``follow``). One row of panels by default
    (``cols`` = every method), laid out for a chart ``width_px`` wide and ``height`` tall with text
    ``text_scale`` times its default size; the legend names g₁, g₂ (, g₃) under it. ``frames=None``:
    a still of the last recorded step. ``spec_only``: the plain spec instead of a figure."""
    height = int(V.number(height, "height", low=150, high=3000))
    names = list(grads.get("methods", {})) if isinstance(grads, dict) and methods is None else list(methods or [])
    spec: dict[str, Any] = {"data": [], "layout": base_layout(height=height),
                            "frames": [{"name": str(f), "data": [], "traces": []} for f in (frames or [])]}
    spec["layout"]["margin"] = dict(l=10, r=10, t=10, b=40)
    spec["layout"]["legend"] = dict(orientation="h", yanchor="bottom", y=0.0, yref="container", xanchor="right", x=1.0,
                                    bgcolor="rgba(255,255,255,0.7)")
    spec = add_gradient_inset(spec, grads, methods, cols=cols if cols is not None else max(1, len(names)),
                              placement="alone", width_px=width_px, spec_only=True, text_scale=text_scale)
    return spec if spec_only else figure_from_spec(spec)


def gradients_figure(grads: dict[str, Any], frame: int | dict[str, int] = -1, methods: Sequence[str] | None = None,
                     cols: int | None = None, height: int = 330, title: str | None = None,
                     scale: float | None = None, text_scale: float = 1.0) -> go.Figure:
    """The inset's panels alone, at one recorded frame (default: the last one; a dict gives each
    method its own frame, e.g. :func:`pcd.studio.lesson.stall_frames`) -- e.g. the gradients at the
    stall: g1 and g2 point against each other and a symmetric method's d ~ 0 while g1 != 0. Each
    panel's title names its step ``text_scale``: the titles and
    numbers that many times their default size (a projector)."""
    if not isinstance(grads, dict) or "methods" not in grads:
        raise ValueError("gradients_figure needs the dict of pcd.experiments.toy.trajectory_gradients")
    names = list(grads["methods"]) if methods is None else [m for m in methods if m in grads["methods"]]
    if not names:
        raise ValueError("choose at least one method of the run")
    T = len(grads["steps"])
    per = frame if isinstance(frame, dict) else {}
    rows = {}
    for nm in names:
        t = int(per.get(nm, -1) if isinstance(frame, dict) else frame)
        if not -T <= t < T:
            raise ValueError(f"frame must be in [{-T}, {T - 1}], got {t}")
        rows[nm] = t % T
    cols = len(names) if cols is None else max(1, min(int(cols), len(names)))
    scale = inset_scale(grads) if scale is None else float(scale)
    k = V.number(text_scale, "text_scale", low=0.5, high=3.0)  # the text's size (a projector: 1.2)
    geom = _geometry(len(names), cols, float(height) - (60 if title else 30) - 30, PAGE_W_PX - 20, k)
    traces, data_at, shapes, annotations = _panels(grads, names, cols, scale, lambda nm, f: rows[nm], "x", "y", geom, k)
    for a, nm in zip(annotations, names):
        a["text"] += f" · step {int(grads['steps'][rows[nm]])}"
    t = rows[names[0]]
    for tr, d in zip(traces, data_at(t)):
        tr.update({k: v for k, v in d.items() if k != "type"})
    xr, yr = geom["xr"], geom["yr"]
    layout = base_layout(title=title, height=height)
    hidden = dict(visible=False, showgrid=False, zeroline=False, fixedrange=True)
    layout.update(xaxis=dict(hidden, range=xr), yaxis=dict(hidden, range=yr, scaleanchor="x", scaleratio=1),
                  shapes=shapes, annotations=annotations + [dict(
                      x=0.0, y=0.0, xref="paper", yref="paper", xanchor="left", yanchor="top", showarrow=False,
                      font=dict(size=12, color=theme.MUTED),
                      text=f"start S{grads['start'] + 1} · one fixed scale: circle = {scale:.3g}")],
                  margin=dict(l=10, r=10, t=60 if title else 30, b=30))
    return go.Figure({"data": traces, "layout": layout}, _validate=False)


CURSOR_NAME = "step cursor"


def add_step_cursor(spec: dict, step: int = 0, color: str = theme.ALERT) -> dict:
    """The loss figure's spec (:func:`pcd.viz.landscape.loss_figure` with ``spec_only=True``) with a
    vertical cursor at ``step`` on every panel (shapes named ``"step cursor"``, x = step + 1 on the log
    step axis), which the page's frame controls move with the map's frame; an earlier cursor is
    replaced. The spec is changed in place and returned."""
    step = int(step)
    if step < 0:
        raise ValueError(f"step must be >= 0, got {step}")
    lay = spec.setdefault("layout", {})
    axes = sorted(k for k in lay if k.startswith("xaxis"))
    shapes = [s for s in lay.get("shapes", []) if s.get("name") != CURSOR_NAME]
    for ax in axes or ["xaxis"]:
        ref = "x" + ax[5:]
        yref = ("y" + ax[5:]) + " domain"
        shapes.append(dict(type="line", name=CURSOR_NAME, xref=ref, yref=yref, x0=step + 1, x1=step + 1, y0=0, y1=1,
                           line=dict(color=rgba(color, 0.85), width=2, dash="dot"), layer="above"))
    lay["shapes"] = shapes
    return spec
