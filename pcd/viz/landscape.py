"""Toy-landscape figures (page 2): the animated trajectory map, loss-vs-step curves.

Why a background *image*: Plotly drops contour/heatmap traces when an animation starts, so the
landscape is rendered once to a PNG (NumPy -> PIL) and placed with ``layout.images``; every
animated trace is a scatter (which survives ``Plotly.animate`` with ``redraw=False``). Contour
lines of the primary are drawn into the image (quantized log-levels), the secondaries' zero sets
are tinted green (where each secondary attains its minimum on the grid, 0 for a constraint-like secondary). The full paths are drawn faint and static; each frame moves only the heads and
a short solid trail. Frames are the engine's recorded steps (``record=200`` -> ~200 steps sampled
half geometrically, half linearly, so the fast early motion is not lost).
"""
from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import plotly.graph_objects as go

from pcd.viz.theme import base_layout, colorize, method_color, method_label, outcome_label, png_data_uri, rgba

ZERO_SET_RGB = np.array([46, 160, 67], dtype=np.float64)   # green tint for the secondaries' zero sets
LINE_RGB = np.array([36, 41, 47], dtype=np.float64)
START_SYMBOLS = ("circle", "square", "diamond", "triangle-up", "cross", "x", "pentagon", "star",
                 "hexagon", "triangle-down")
TRAIL = 8  # recorded frames in the fading tail behind each head




def _check_grid(xs: Any, ys: Any, Z: Any) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    xs = np.asarray(xs, dtype=np.float64)
    ys = np.asarray(ys, dtype=np.float64)
    Z = np.asarray(Z, dtype=np.float64)
    if xs.ndim != 1 or ys.ndim != 1 or xs.size < 2 or ys.size < 2:
        raise ValueError("xs and ys must be 1-D arrays with at least 2 values")
    if Z.ndim == 2:
        Z = Z[None]
    if Z.ndim != 3 or Z.shape[1:] != (ys.size, xs.size):
        raise ValueError(f"Z must have shape [K, {ys.size}, {xs.size}] (objective, y, x), got {Z.shape}")
    if not (np.all(np.diff(xs) > 0) and np.all(np.diff(ys) > 0)):
        raise ValueError("xs and ys must be strictly increasing")
    return xs, ys, Z


def zero_set_mask(Zj: Any, rel_cap: float = 0.02) -> np.ndarray:
    """Pixels on (or within ~2 pixels of) the zero set of a non-negative objective sampled on a grid.

    A pixel belongs when its value is exactly minimal (``<= 1e-12`` of the range) or not larger
    than the change to a neighbouring pixel (a zero crossing between samples), capped at
    ``rel_cap`` of the range so steep regions are not marked.
    """
    Z = np.asarray(Zj, dtype=np.float64)
    if Z.ndim != 2:
        raise ValueError(f"zero_set_mask needs a 2-D grid, got shape {Z.shape}")
    finite = np.isfinite(Z)
    if not finite.any():
        return np.zeros(Z.shape, dtype=bool)
    lo = np.nanmin(np.where(finite, Z, np.nan))
    hi = np.nanmax(np.where(finite, Z, np.nan))
    rng = hi - lo
    if rng <= 0:
        return finite.copy()
    V = np.where(finite, Z - lo, np.inf)
    diff = np.zeros_like(V)
    with np.errstate(invalid="ignore"):
        for axis in (0, 1):
            d = np.abs(np.diff(V, axis=axis))
            d = np.where(np.isfinite(d), d, 0.0)
            pad_lo = [(0, 0), (0, 0)]
            pad_hi = [(0, 0), (0, 0)]
            pad_lo[axis] = (1, 0)
            pad_hi[axis] = (0, 1)
            diff = np.maximum(diff, np.pad(d, pad_lo))
            diff = np.maximum(diff, np.pad(d, pad_hi))
    return finite & ((V <= 1e-12 * rng) | ((V <= diff) & (V <= rel_cap * rng)))


def background_image(xs: Any, ys: Any, Z: Any, levels: int = 16, zero_sets: bool = True) -> np.ndarray:
    """RGB uint8 image ``[ny, nx, 3]`` (row 0 = top, i.e. largest y) of the landscape.

    Colour = the primary ``Z[0]`` on a log scale (``log(1 + (f - min)/s)``, s = its 5th percentile
    spread), ``levels`` contour lines drawn where the quantized level changes, and (``zero_sets``)
    the zero sets of the secondaries ``Z[1:]`` tinted green.
    """
    xs, ys, Z = _check_grid(xs, ys, Z)
    levels = int(levels)
    if not 2 <= levels <= 64:
        raise ValueError(f"levels must be in [2, 64], got {levels}")
    P = Z[0]
    finite = np.isfinite(P)
    if finite.any():
        p = np.where(finite, P, np.nan)
        lo = np.nanmin(p)
        spread = np.nanpercentile(p - lo, 5) + 1e-3 * (np.nanmax(p) - lo) + 1e-12
        u = np.log1p((p - lo) / spread)
        u = u / max(np.nanmax(u), 1e-12)
    else:
        u = np.full(P.shape, np.nan)
    rgb = colorize(0.02 + 0.6 * u).astype(np.float64)
    q = np.floor(np.where(np.isfinite(u), u, -1) * levels)
    edge = np.zeros(P.shape, dtype=bool)
    edge[:, 1:] |= q[:, 1:] != q[:, :-1]
    edge[1:, :] |= q[1:, :] != q[:-1, :]
    edge &= np.isfinite(u)
    rgb[edge] = 0.55 * rgb[edge] + 0.45 * LINE_RGB
    if zero_sets and Z.shape[0] > 1:
        zmask = np.zeros(P.shape, dtype=bool)
        for j in range(1, Z.shape[0]):
            zmask |= zero_set_mask(Z[j])
        rgb[zmask] = 0.45 * rgb[zmask] + 0.55 * ZERO_SET_RGB
    return np.round(np.flipud(rgb)).astype(np.uint8)


def _traj(res: Any) -> tuple[np.ndarray, list[str], np.ndarray, np.ndarray]:
    pos = np.asarray(getattr(res, "positions", None), dtype=np.float64)
    if pos.ndim != 4 or pos.shape[-1] != 2:
        raise ValueError("the trajectory map needs a 2-D run: positions of shape [M, S, T, 2]")
    methods = list(res.methods)
    record = np.asarray(res.record)
    if len(methods) != pos.shape[0] or record.size != pos.shape[2]:
        raise ValueError("run result is inconsistent: methods / record do not match positions")
    return pos, methods, record, np.asarray(res.starts, dtype=np.float64)


def landscape_figure(res: Any, grid: tuple[Any, Any, Any], pareto_set: Any = None, optima: Any = None,
                     title: str | None = None, height: int = 600, frame_ms: int = 45,
                     animate: bool = True, image: str | None = None, click_grid: int = 0,
                     validate: bool = True) -> go.Figure:
    """The animated trajectory map.

    ``res``: a :class:`pcd.engine.RunResult` (or anything with ``positions [M, S, T, 2]``,
    ``methods``, ``record``, ``starts``, ``diagnosis``); ``grid = (xs, ys, Z [K, ny, nx])`` from
    ``problem.grid()``; ``pareto_set [P, 2]`` and ``optima [Q, 2]`` are drawn when given;
    ``image``: a ready PNG data URI of :func:`background_image` (to reuse a cached one);
    ``click_grid = n > 0`` adds an invisible ``n x n`` grid of clickable points (trace named
    ``"click to add a start"``, just before the animated trace) so a page can turn a click on the
    map into a start point (a click on the background image itself emits no event).
    ``validate=False`` skips Plotly's property validation of the assembled spec (~2x faster; the
    spec is the same one the tests build with validation on).

    Traces, in order: legend keys for the background (contours, secondary zero set); the
    Pareto set and optima (if any); per method its faint full paths (one trace per method, starts
    separated by gaps); the start markers; and LAST one animated marker trace holding, for every
    (method, start), a fading tail of ``TRAIL`` recorded points followed by the heads. Frames
    (one per recorded step, ``len(res.record)``, named by the step) update only that trace's x/y,
    with play/pause buttons and a step slider.
    """
    xs, ys, Z = _check_grid(*grid)
    pos, methods, record, starts = _traj(res)
    M, S, T, _ = pos.shape
    frame_ms = int(frame_ms)
    if frame_ms < 1:
        raise ValueError(f"frame_ms must be >= 1, got {frame_ms}")
    x0, x1, y0, y1 = float(xs[0]), float(xs[-1]), float(ys[0]), float(ys[-1])
    if image is None:
        image = png_data_uri(background_image(xs, ys, Z))
    elif not (isinstance(image, str) and image.startswith("data:image/png;base64,")):
        raise ValueError("image must be a PNG data URI (see pcd.viz.theme.png_data_uri)")
    traces: list[dict] = []
    # legend keys for what is drawn in the image
    traces.append(dict(type="scatter", x=[None], y=[None], mode="lines", line=dict(color="#57606a", width=1),
                       name="primary contours (log)", hoverinfo="skip"))
    if Z.shape[0] > 1:
        traces.append(dict(type="scatter", x=[None], y=[None], mode="markers",
                           marker=dict(symbol="square", size=12, color=rgba("#2ea043", 0.8)),
                           name="secondary at its minimum", hoverinfo="skip"))
    if optima is not None:
        op = np.asarray(optima, dtype=np.float64).reshape(-1, 2)
        traces.append(dict(type="scatter", x=op[:, 0], y=op[:, 1], mode="markers", name="all objectives optimal",
                           marker=dict(symbol="star", size=17, color="#ffd33d", line=dict(color="#24292f", width=1.2)),
                           hovertemplate="optimum (%{x:.3f}, %{y:.3f})<extra></extra>"))
    diag = np.asarray(getattr(res, "diagnosis", np.full((M, S), "")), dtype=object)
    for m, name in enumerate(methods):
        full = np.concatenate([pos[m], np.full((S, 1, 2), np.nan)], axis=1).reshape(-1, 2)
        full = full.astype(np.float32)
        txt = [f"start {s + 1} · step {int(k)}" for s in range(S) for k in list(record) + [-1]]
        traces.append(dict(type="scatter", x=full[:, 0], y=full[:, 1], mode="lines", name=method_label(name),
                           legendgroup=name, line=dict(color=rgba(method_color(name), 0.5), width=2.5),
                           text=txt, hovertemplate=f"{method_label(name)} · %{{text}}<br>"
                                                   f"(%{{x:.3f}}, %{{y:.3f}})<extra></extra>"))
    # the Pareto set above the faint paths
    if pareto_set is not None:
        ps = np.asarray(pareto_set, dtype=np.float64)
        if ps.ndim == 2 and ps.shape[1] == 2 and len(ps) > 1:
            traces.append(dict(type="scatter", x=ps[:, 0], y=ps[:, 1], mode="lines", name="Pareto set",
                               line=dict(color="#8250df", width=3, dash="dash"), hoverinfo="name"))
    traces.append(dict(type="scatter", x=starts[:, 0], y=starts[:, 1], mode="markers+text", name="starts",
                       text=[f"S{s + 1}" for s in range(S)], textposition="top center",
                       textfont=dict(size=12, color="#24292f"),
                       marker=dict(symbol="circle-open", size=13, color="#24292f", line=dict(width=2)),
                       hovertemplate="start (%{x:.3f}, %{y:.3f})<extra></extra>"))

    click_grid = int(click_grid)
    if click_grid < 0 or click_grid > 200:
        raise ValueError(f"click_grid must be in [0, 200], got {click_grid}")
    if click_grid:
        gx, gy = np.meshgrid(np.linspace(x0, x1, click_grid), np.linspace(y0, y1, click_grid))
        traces.append(dict(type="scatter", x=gx.ravel(), y=gy.ravel(), mode="markers", name="click to add a start",
                           showlegend=False, hoverinfo="none",
                           marker=dict(size=10, color="rgba(0,0,0,0)", opacity=0)))

    # ONE animated trace: for every (method, start) a fading comet tail of TRAIL recorded points
    # followed by the heads (drawn last, on top). Colours/sizes/hover are static; frames only
    # move x/y -- so ~200 frames stay small (one scatter each) and build/serialize fast.
    tail_idx = np.arange(-TRAIL, 1)
    colors, sizes, opac, custom, line_w = [], [], [], [], []
    for name in methods:
        for s in range(S):
            for o in tail_idx[:-1]:
                colors.append(method_color(name))
                sizes.append(3.0 + 4.0 * (o + TRAIL) / TRAIL)
                opac.append(0.25 + 0.6 * (o + TRAIL) / TRAIL)
                custom.append([method_label(name), s + 1, ""])
                line_w.append(0.0)
    head_order = list(range(M))[::-1]  # the first method (e.g. PCD) is drawn last, on top
    for m in head_order:
        name = methods[m]
        for s in range(S):
            colors.append(method_color(name))
            sizes.append(13.0)
            opac.append(1.0)
            custom.append([method_label(name), s + 1, outcome_label(str(diag[m, s]), name, short=True)])
            line_w.append(1.5)

    def comet(t: int) -> tuple[np.ndarray, np.ndarray]:
        idx = np.clip(t + tail_idx, 0, T - 1)
        pts = pos[:, :, idx, :]                                        # [M, S, TRAIL + 1, 2]
        xy = np.concatenate([pts[:, :, :-1].reshape(-1, 2), pts[head_order, :, -1].reshape(-1, 2)])
        xy = xy.astype(np.float32)  # half the payload of ~200 frames; ample for a screen
        return xy[:, 0], xy[:, 1]

    t_show = T - 1 if not animate else 0
    cx, cy = comet(t_show)
    traces.append(dict(type="scatter", x=cx, y=cy, mode="markers", showlegend=False, name="positions",
                       marker=dict(color=colors, size=sizes, opacity=opac, line=dict(color="white", width=line_w)),
                       customdata=custom,
                       hovertemplate="<b>%{customdata[0]}</b> start %{customdata[1]}<br>"
                                     "(%{x:.3f}, %{y:.3f})<br>%{customdata[2]}<extra></extra>"))
    anim_idx = [len(traces) - 1]

    layout = base_layout(title=title, height=height)
    layout["margin"] = dict(l=55, r=20, t=70 if title else 40, b=160 if animate else 50)
    axis = dict(showgrid=False, zeroline=False, linecolor="#57606a", ticks="outside", tickcolor="#57606a",
                constrain="domain")
    layout["xaxis"] = dict(axis, range=[x0, x1], title=dict(text="x₁"))
    layout["yaxis"] = dict(axis, range=[y0, y1], title=dict(text="x₂"), scaleanchor="x", scaleratio=1)
    layout["images"] = [dict(source=image, xref="x", yref="y", x=x0, y=y1, sizex=x1 - x0, sizey=y1 - y0,
                             sizing="stretch", layer="below", opacity=1.0)]
    spec: dict[str, Any] = {"data": traces, "layout": layout}
    if animate and T >= 2:
        spec["frames"] = []
        for t in range(T):
            fx, fy = comet(t)
            spec["frames"].append({"name": str(int(record[t])), "traces": anim_idx,
                                   "data": [{"type": "scatter", "x": fx, "y": fy}]})
        play = dict(label="▶ Play", method="animate",
                    args=[None, dict(frame=dict(duration=frame_ms, redraw=False), fromcurrent=True,
                                     transition=dict(duration=0), mode="immediate")])
        pause = dict(label="❚❚ Pause", method="animate",
                     args=[[None], dict(frame=dict(duration=0, redraw=False), mode="immediate",
                                        transition=dict(duration=0))])
        steps = [dict(method="animate", label=str(int(k)),
                      args=[[str(int(k))], dict(mode="immediate", frame=dict(duration=0, redraw=False),
                                                transition=dict(duration=0))]) for k in record]
        # the step slider spans the width; Play/Pause sit on their own row below it, so they never
        # cover the slider however narrow the figure is
        layout["updatemenus"] = [dict(type="buttons", direction="left", showactive=False, x=0.0, y=0.0,
                                      xanchor="left", yanchor="top", pad=dict(r=8, t=118), buttons=[play, pause],
                                      font=dict(size=13))]
        layout["sliders"] = [dict(active=0, x=0.0, y=0.0, len=1.0, xanchor="left", yanchor="top",
                                  currentvalue=dict(prefix="step ", visible=True, xanchor="right", font=dict(size=13)),
                                  pad=dict(t=42, b=0), transition=dict(duration=0), steps=steps)]
    # Built as one plain spec and constructed once (incremental add_trace/update_layout of ~200
    # frames costs ~10x more in Plotly's per-call validation).
    if validate:
        return go.Figure(spec)
    # Plotly.js does not know template *names*: resolve the name as validation would
    import plotly.io as pio

    tpl = layout.get("template")
    if isinstance(tpl, str):
        layout["template"] = pio.templates[tpl].to_plotly_json()
    return go.Figure(spec, _validate=False)


def loss_figure(res: Any, objective_names: Sequence[str] | None = None, floor: float = 1e-12,
                height: int = 330) -> go.Figure:
    """Loss vs step, one log-scale panel per objective, one line per (method, start) in the method's
    colour (dash pattern per start). Values are shown as ``f - min(0, min f)`` clipped at ``floor``
    so that zeros and negative-valued objectives fit on a log axis; panel titles say when shifted.
    """
    L = np.asarray(getattr(res, "losses", None), dtype=np.float64)
    if L.ndim != 4:
        raise ValueError("loss_figure needs losses of shape [M, S, T, K]")
    floor = float(floor)
    if not floor > 0:
        raise ValueError(f"floor must be > 0, got {floor}")
    M, S, T, K = L.shape
    record = np.asarray(res.record)
    names = list(objective_names) if objective_names is not None else [f"f{k + 1}" for k in range(K)]
    if len(names) != K:
        raise ValueError(f"objective_names must have {K} entries, got {len(names)}")
    shifts = []
    titles = []
    for k in range(K):
        finite = L[..., k][np.isfinite(L[..., k])]
        low = float(finite.min()) if finite.size else 0.0
        shift = min(0.0, low)
        shifts.append(shift)
        titles.append(names[k] + (f"  (shown: f − {shift:.3g})" if shift < 0 else ""))
    # one log-log panel per objective, built as a single spec (Plotly's incremental subplot API
    # validates every call and costs ~10x more for the ~M*S*K traces)
    gap = 0.08
    width = (1.0 - gap * (K - 1)) / K
    dashes = ("solid", "dash", "dot", "dashdot", "longdash", "longdashdot")
    x = (np.maximum(record, 0) + 1).astype(float)  # log x axis: step + 1
    traces = []
    for m, name in enumerate(res.methods):
        for s in range(S):
            for k in range(K):
                y = np.maximum(L[m, s, :, k] - shifts[k], floor)
                traces.append(dict(type="scatter", x=x, y=y, mode="lines", legendgroup=name,
                                   name=method_label(name), showlegend=(s == 0 and k == 0),
                                   xaxis="x" if k == 0 else f"x{k + 1}", yaxis="y" if k == 0 else f"y{k + 1}",
                                   line=dict(color=method_color(name), width=2, dash=dashes[s % len(dashes)]),
                                   customdata=record,
                                   hovertemplate=f"{method_label(name)} · start {s + 1}<br>step %{{customdata}}"
                                                 f"<br>%{{y:.3e}}<extra></extra>"))
    layout = base_layout(height=height)
    axis = dict(showgrid=True, gridcolor="#e6e8eb", zeroline=False, linecolor="#57606a", ticks="outside",
                tickcolor="#57606a", type="log")
    annotations = []
    for k in range(K):
        x0 = k * (width + gap)
        sx = "" if k == 0 else str(k + 1)
        layout[f"xaxis{sx}"] = dict(axis, domain=[x0, x0 + width], anchor=f"y{sx}", title=dict(text="step + 1"))
        layout[f"yaxis{sx}"] = dict(axis, anchor=f"x{sx}", exponentformat="power")
        annotations.append(dict(text=titles[k], x=x0 + width / 2, y=1.0, xref="paper", yref="paper",
                                xanchor="center", yanchor="bottom", showarrow=False, font=dict(size=14)))
    layout["annotations"] = annotations
    layout["margin"] = dict(l=60, r=20, t=70, b=50)
    layout["legend"] = dict(layout["legend"], y=1.12)
    fig = go.Figure({"data": traces, "layout": layout})
    return fig
