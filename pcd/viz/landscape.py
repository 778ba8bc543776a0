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

from pcd.viz import theme
from pcd.viz.labels import RINGS, label_px, place, plots_for, text_size
from pcd.viz.theme import (
    base_layout,
    colorize,
    figure_from_spec,
    method_color,
    method_label,
    method_style,
    outcome_label,
    png_data_uri,
    rgba,
)

ZERO_SET_RGB = np.array([46, 160, 67], dtype=np.float64)   # green tint for the secondaries' zero sets
LINE_RGB = np.array([36, 41, 47], dtype=np.float64)
START_SYMBOLS = ("circle", "square", "diamond", "triangle-up", "cross", "x", "pentagon", "star",
                 "hexagon", "triangle-down")
TRAIL = 8  # recorded frames in the fading tail behind each head
REVEAL_POINTS = 16  # landscape_figure(reveal=True): points of a path drawn so far, at most (+ the frame's own)
CONTOUR_PX = 0.9  # half-width of a contour line in image pixels
UNDEFINED_RGB = np.array([[175, 184, 193], [234, 238, 242]], dtype=np.float64)  # hatching: undefined region




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


def undefined_mask(Z: Any) -> np.ndarray:
    """Grid points ``[ny, nx]`` where some objective of ``Z [K, ny, nx]`` is not finite (a formula
    undefined there: log of a number <= 0, sqrt of a negative, 1/0, overflow)."""
    Z = np.asarray(Z, dtype=np.float64)
    if Z.ndim == 2:
        Z = Z[None]
    return ~np.isfinite(Z).all(axis=0)


def background_image(xs: Any, ys: Any, Z: Any, levels: int = 16, zero_sets: bool = True) -> np.ndarray:
    """RGB uint8 image ``[ny, nx, 3]`` (row 0 = top, i.e. largest y) of the landscape.

    Colour = the primary ``Z[0]`` on a log scale (``log(1 + (f - min)/s)``, s = its 5th percentile
    spread), ``levels`` contour lines of that log value (anti-aliased from the grid values: a
    pixel's darkening falls off with its distance to the level in pixels, ``|s - round s| / |grad s|``,
    so lines are smooth at any slope), (``zero_sets``) the zero sets of the secondaries ``Z[1:]``
    tinted green, and grey hatching where some objective is undefined (:func:`undefined_mask`).
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
    # contour lines: anti-aliased, from the grid's values (distance to the nearest level in pixels =
    # |s - round(s)| / |grad s|, s = u * levels), so they are smooth curves, never stair-steps
    ok = np.isfinite(u)
    s_lev = np.where(ok, u, 0.0) * levels
    gy_, gx_ = np.gradient(s_lev)
    slope = np.hypot(gx_, gy_)
    near = np.round(s_lev)
    with np.errstate(divide="ignore", invalid="ignore"):
        dist = np.where(slope > 1e-9, np.abs(s_lev - near) / slope, np.inf)
    alpha = np.clip(1.15 - dist / CONTOUR_PX, 0.0, 1.0) * ok * (near >= 1)
    rgb = rgb * (1 - 0.5 * alpha[..., None]) + 0.5 * alpha[..., None] * LINE_RGB
    if zero_sets and Z.shape[0] > 1:
        zmask = np.zeros(P.shape, dtype=bool)
        for j in range(1, Z.shape[0]):
            zmask |= zero_set_mask(Z[j])
        rgb[zmask] = 0.45 * rgb[zmask] + 0.55 * ZERO_SET_RGB
    bad = undefined_mask(Z)
    if bad.any():  # where a formula is undefined (log of x <= 0, ...): grey hatching, said in the legend
        ii, jj = np.indices(P.shape)
        stripe = ((ii + jj) // 4) % 2 == 0
        rgb[bad] = np.where(stripe[bad][:, None], UNDEFINED_RGB[0], UNDEFINED_RGB[1])
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


def end_clusters(ends: Any, view: Sequence[float], tol: float = 0.025) -> list[list[tuple[int, int]]]:
    """Groups of coinciding end points: ``ends [M, S, 2]`` (method, start) -> lists of
    ``(m, s)`` whose end points lie within ``tol`` of the map's diagonal of each other
    (single-linkage, in the map's own units ``view = (x0, x1, y0, y1)``); non-finite ends (diverged
    runs) are left out. Groups come in order of their first member."""
    E = np.asarray(ends, dtype=np.float64)
    if E.ndim != 3 or E.shape[-1] != 2:
        raise ValueError(f"ends must have shape [M, S, 2], got {E.shape}")
    x0, x1, y0, y1 = (float(v) for v in view)
    diag = float(np.hypot(x1 - x0, y1 - y0)) or 1.0
    keys = [(m, s) for m in range(E.shape[0]) for s in range(E.shape[1]) if np.isfinite(E[m, s]).all()]
    if not keys:
        return []
    P = np.array([E[m, s] for m, s in keys])
    close = np.hypot(*(P[:, None, :] - P[None, :, :]).transpose(2, 0, 1)) <= tol * diag
    label = -np.ones(len(keys), dtype=int)
    groups: list[list[tuple[int, int]]] = []
    for i in range(len(keys)):
        if label[i] >= 0:
            continue
        label[i] = len(groups)
        todo, members = [i], []
        while todo:
            j = todo.pop()
            members.append(j)
            for k in np.nonzero(close[j] & (label < 0))[0]:
                label[k] = label[i]
                todo.append(int(k))
        groups.append([keys[j] for j in sorted(members)])
    return groups


# the map's plot sizes (px, 1:1 units inside each) its end labels are placed for, smallest first: the toy
# page's map is ~485 px at 800 px (narrow), ~570 beside the inset, ~725 under it; a wide window. A smaller
# map (the τ dial's half column, one method) keeps the same places, with less room around them.
MAP_PLOT_SIZES = ((400.0, 560.0), (480.0, 560.0), (620.0, 560.0), (900.0, 560.0))
START_MARK_PX = 21.0   # the start ring's size; its "S1" sits above it (textposition "top center")


def start_label_above(starts: Any, view: Sequence[float]) -> np.ndarray:
    """Whether each start's "S1" goes above its marker (else below: a start in the map's top 12 %,
    whose label above would be cut off at the plot's edge)."""
    y0, y1 = float(view[2]), float(view[3])
    return np.asarray(starts, dtype=np.float64).reshape(-1, 2)[:, 1] <= y1 - 0.12 * (y1 - y0)


def start_obstacles(starts: Any, view: Sequence[float]) -> list[tuple[float, ...]]:
    """The start markers and their "S1" labels as :mod:`pcd.viz.labels` obstacles."""
    out: list[tuple[float, ...]] = []
    P = np.asarray(starts, dtype=np.float64).reshape(-1, 2)
    for (x, y), above in zip(P, start_label_above(P, view)):
        out.append((x, y, 0.0, 0.0, START_MARK_PX + 4, START_MARK_PX + 4, 0.0))
        out.append((x, y, 0.0, (-1 if above else 1) * (START_MARK_PX / 2 + 10), 28.0, 18.0, 0.0))
    return out


def end_annotations(ends: Any, methods: Sequence[str], diagnosis: Any, view: Sequence[float],
                    tol: float = 0.025, avoid: Any = (), sizes: Sequence[tuple[float, float]] = MAP_PLOT_SIZES,
                    text_scale: float = 1.0) -> list[dict]:
    """One label per group of coinciding end points (:func:`end_clusters`): the methods that end
    there (``"WS · MGDA · PCGrad (S1, S2)"``; the starts only when not all of them end there), an
    arrow to the group's centre, and the full list with each outcome on hover. Each label goes
    where its box keeps the most room (:func:`pcd.viz.labels.place`, on every plot size of ``sizes``) from
    the start markers ``avoid [P, 2]`` and their "S1" labels, every end marker and the labels placed
    before it. ``text_scale``: the labels' font (12 px) that much larger, placed for it (presenter mode,
    :func:`pcd.viz.labels.label_px`)."""
    font_px = label_px(12, text_scale)
    E = np.asarray(ends, dtype=np.float64)
    M, S = E.shape[:2]
    diag = np.asarray(diagnosis, dtype=object)
    x0, x1, y0, y1 = (float(v) for v in view)
    out: list[dict] = []
    groups = end_clusters(E, view, tol)
    plots = plots_for((x0, x1), (y0, y1), sizes, equal=True)
    # obstacles: the start rings and their "S1" labels, every end diamond, then each label placed
    obstacles = start_obstacles(avoid, view) + [(float(e[0]), float(e[1]), 0.0, 0.0, 13.0, 13.0, 0.0)
                                          for e in E.reshape(-1, 2) if np.isfinite(e).all()]
    centres = np.array([np.mean([E[m, s] for m, s in mem], axis=0) for mem in groups]).reshape(-1, 2)
    for g, members in enumerate(groups):
        c = centres[g]
        if not (x0 <= c[0] <= x1 and y0 <= c[1] <= y1):
            continue  # outside the map: nothing to point at (the table has it)
        names = list(dict.fromkeys(methods[m] for m, _ in members))
        starts = sorted({s for _, s in members})
        text = " · ".join(method_label(n) for n in names)
        if len(names) > 3:  # wrap long lists, three names a line
            parts = [method_label(n) for n in names]
            text = "<br>".join(" · ".join(parts[i:i + 3]) for i in range(0, len(parts), 3))
        if len(starts) < S:
            text += " (" + ", ".join(f"S{s + 1}" for s in starts) + ")"
        hover = "<br>".join(f"{method_label(methods[m])} from S{s + 1}: "
                            f"{outcome_label(str(diag[m, s]), methods[m], short=True) if diag.shape == (M, S) else ''}"
                            f"  ({E[m, s, 0]:.3f}, {E[m, s, 1]:.3f})" for m, s in members)
        size = text_size(text, font_px)
        # anchored in data units: the label keeps its place on the map at every size (clear on the smallest)
        [((dx, dy), _room)] = place([c], [size], plots, obstacles, offsets=RINGS, data=True)
        p0 = plots[0]
        obstacles.append((float(c[0]), float(c[1]), dx * p0.w / (x1 - x0), -dy * p0.h / (y1 - y0), size[0], size[1], 1.0))
        color = method_color(names[0]) if len(names) == 1 else theme.INK
        out.append(dict(x=float(c[0]), y=float(c[1]), xref="x", yref="y", text=text, hovertext=hover,
                        showarrow=True, arrowhead=0, arrowwidth=1, arrowcolor=theme.MUTED,
                        ax=float(c[0] + dx), ay=float(c[1] + dy), axref="x", ayref="y",
                        standoff=6, font=dict(size=font_px, color=color), bgcolor="rgba(255,255,255,0.85)",
                        bordercolor=theme.BORDER, borderwidth=1, borderpad=2, name="end label"))
    return out


# legend text at 14 px (measured in Chromium: an entry is ~40 px + ~6.8 px a character, a row ~31 px;
# Plotly keeps ~66 px between the legend and the plot for the x axis)
LEGEND_CHAR_PX, LEGEND_ITEM_PX, LEGEND_ROW_PX = 7.4, 48.0, 31.0


def legend_rows(names: Sequence[str], usable_px: float) -> int:
    """How many rows a horizontal legend of ``names`` takes in ``usable_px`` (14-px legend text)."""
    rows, x = 1, 0.0
    for n in names:
        w = LEGEND_ITEM_PX + LEGEND_CHAR_PX * len(str(n))
        if x > 0 and x + w > usable_px:
            rows, x = rows + 1, 0.0
        x += w
    return rows


def fit_legend(spec: dict, width_px: float = 900.0, axis_px: float = 66.0,
               extra_names: Sequence[str] = ()) -> dict:
    """Size the bottom margin of ``spec`` (in place; returned) for a horizontal legend under the
    plot (``yref="container"``), for a chart ``width_px`` wide: the legend's rows are estimated from
    its entries' text, so the plot area -- and an inset laid out for it -- keeps the height it was
    planned with (Plotly would otherwise push the margin and shrink the plot). ``extra_names``:
    entries a later builder adds (the gradient inset's g1, g2)."""
    names, groups = [], set()
    for t in spec.get("data", []):
        if t.get("showlegend", True) is False or not t.get("name"):
            continue
        group = t.get("legendgroup")
        if group:  # one entry per legend group
            if group in groups:
                continue
            groups.add(group)
        names.append(str(t["name"]))
    names += [str(n) for n in extra_names]
    lay = spec.setdefault("layout", {})
    m0 = lay.get("margin") or {}
    usable = max(200.0, float(width_px) - float(m0.get("l", 55)) - float(m0.get("r", 20)))  # the plot's width
    rows = legend_rows(names, usable)
    margin = dict(m0)
    margin["b"] = int(axis_px + rows * LEGEND_ROW_PX + 4)
    lay["margin"] = margin
    return spec


def frame_index(T: int, max_frames: int | None = None) -> np.ndarray:
    """Which of ``T`` recorded steps become animation frames: all of them, or ``max_frames`` spread
    evenly over the record (the first and the last always; the engine's record is already dense
    where the motion is fast, so even spacing in record index keeps the early motion)."""
    T = int(T)
    if max_frames is None or int(max_frames) >= T:
        return np.arange(T)
    n = int(max_frames)
    if n < 2:
        raise ValueError(f"max_frames must be >= 2, got {max_frames}")
    return np.unique(np.round(np.linspace(0, T - 1, n)).astype(int))


def path_so_far(paths: Any, fidx: Any, f: int | None) -> np.ndarray:
    """``paths [S, T, d]`` (one per start, recorded steps) as far as animation frame ``f`` of the
    frames ``fidx`` (:func:`frame_index`): through every ``ceil(frames / REVEAL_POINTS)``-th
    frame's point and frame f's own; the whole record at the last frame or for ``f=None``. The
    starts are separated by a NaN row: float32 ``[S * (n + 1), d]`` for one line trace."""
    P = np.asarray(paths, dtype=np.float64)
    S, T, d = P.shape
    fidx = np.asarray(fidx, dtype=int)
    stride = max(1, -(-len(fidx) // REVEAL_POINTS))
    idx = np.arange(T) if f is None or f >= len(fidx) - 1 else np.concatenate((fidx[:f + 1:stride], fidx[f:f + 1]))
    return np.concatenate([P[:, idx], np.full((S, 1, d), np.nan)], axis=1).reshape(-1, d).astype(np.float32)


def log_shift(values: Any) -> float:
    """What a log axis shows ``values`` above: ``min(0, min of the finite values)`` (a loss that can
    be negative is drawn as ``f - shift``; exact zeros then sit at the axis' floor)."""
    v = np.asarray(values, dtype=np.float64)
    v = v[np.isfinite(v)]
    return min(0.0, float(v.min())) if v.size else 0.0


def landscape_figure(res: Any, grid: tuple[Any, Any, Any], pareto_set: Any = None, optima: Any = None,
                     title: str | None = None, height: int = 600, frame_ms: int = 45,
                     animate: bool = True, image: str | None = None, click_grid: int = 0,
                     validate: bool = True, controls: bool = True, end_labels: bool = True,
                     spec_only: bool = False, max_frames: int | None = None, reveal: bool = False,
                     text_scale: float = 1.0) -> Any:
    """The animated trajectory map.

    ``res``: a :class:`pcd.engine.RunResult` (or anything with ``positions [M, S, T, 2]``,
    ``methods``, ``record``, ``starts``, ``diagnosis``); ``grid = (xs, ys, Z [K, ny, nx])`` from
    ``problem.grid()``; ``pareto_set [P, 2]`` and ``optima [Q, 2]`` are drawn when given;
    ``image``: a ready PNG data URI of :func:`background_image` (to reuse a cached one);
    ``click_grid = n > 0`` adds an invisible ``n x n`` grid of clickable points (trace named
    ``"click to add a start"``, just before the animated trace) so a page can turn a click on the
    map into a start point (a click on the background image itself emits no event).
    ``validate=False`` skips Plotly's property validation of the assembled spec (~10x faster, see
    :func:`pcd.viz.theme.figure_from_spec`; the spec is the one the tests build with validation on).
    ``controls=False`` leaves out Plotly's own play/pause buttons and step slider (the page drives
    the frames with its lecturer controls, :func:`pcd.ui.controls.frame_controls`; a standalone
    HTML export keeps them). ``end_labels``: every end point is marked (a small diamond on the
    method's path) and coinciding end points -- closer than 2.5 % of the map -- get ONE label
    listing who ends there (:func:`end_clusters`), with the full list on hover.
    ``spec_only``: return the plain ``{"data", "layout", "frames"}`` dict instead of a figure.
    ``max_frames``: at most that many frames, spread evenly over the recorded steps
    (:func:`frame_index`; the paths and comet tails still use every recorded point).
    ``reveal`` (animated): nothing of the ending is drawn before it is reached -- each method's path
    is drawn as far as the frame shown (through every ``ceil(frames / REVEAL_POINTS)``-th frame's
    point, all recorded points at the last frame); without Plotly's own controls the end diamonds
    (traces with ``meta="end"``) and the end labels (annotations named ``"end label"``) start
    hidden, and the page's frame controls show them at the last frame only
    (:func:`pcd.ui.controls.frame_controls`).
    ``text_scale``: the end labels' font that much larger, placed for it (presenter mode, :func:`end_annotations`).

    Traces, in order: legend keys for the background (contours, secondary zero set); the
    Pareto set and optima (if any); per method its faint full paths (one trace per method, starts
    separated by gaps) and, with ``end_labels``, its end points (one trace, same legend group); the
    start markers; and LAST one animated marker trace holding, for every
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
    traces.append(dict(type="scatter", x=[None], y=[None], mode="lines", line=dict(color=theme.MUTED, width=1),
                       name="primary contours (log)", hoverinfo="skip"))
    if undefined_mask(Z).any():
        traces.append(dict(type="scatter", x=[None], y=[None], mode="markers", hoverinfo="skip",
                           marker=dict(symbol="square", size=12, color=theme.PALE),
                           name="formula undefined (hatched)"))
    if Z.shape[0] > 1:
        traces.append(dict(type="scatter", x=[None], y=[None], mode="markers",
                           marker=dict(symbol="square", size=12, color=rgba(theme.GREEN, 0.8)),
                           name="secondary at its minimum", hoverinfo="skip"))
    if optima is not None:
        op = np.asarray(optima, dtype=np.float64).reshape(-1, 2)
        traces.append(dict(type="scatter", x=op[:, 0], y=op[:, 1], mode="markers", name="all objectives optimal",
                           marker=dict(symbol="star", size=17, color=theme.STAR_GOLD, line=dict(color=theme.INK, width=1.2)),
                           hovertemplate="optimum (%{x:.3f}, %{y:.3f})<extra></extra>"))
    diag = np.asarray(getattr(res, "diagnosis", np.full((M, S), "")), dtype=object)
    reveal = bool(reveal and animate and T >= 2)
    with_controls = bool(animate and controls and T >= 2)
    fidx = frame_index(T, max_frames) if animate and T >= 2 else np.arange(T)

    def so_far(m: int, f: int | None) -> np.ndarray:
        return path_so_far(pos[m], fidx, f)

    path_idx: list[int] = []
    for m, name in enumerate(methods):
        full = so_far(m, 0 if reveal else None)
        # the hover names each point's start and step (revealed paths change length: the method only)
        txt = None if reveal else [f"start {s + 1} · step {int(k)}" for s in range(S) for k in list(record) + [-1]]
        path_idx.append(len(traces))
        traces.append(dict(type="scatter", x=full[:, 0], y=full[:, 1], mode="lines",
                           name=method_label(name), legendgroup=name,
                           line=dict(color=rgba(method_color(name), 0.5), width=2.5, dash=method_style(name)["dash"]),
                           text=txt, hovertemplate=f"{method_label(name)}{' · %{text}' if txt else ''}<br>"
                                                   f"(%{{x:.3f}}, %{{y:.3f}})<extra></extra>"))
        if end_labels:  # a small diamond where each path ends: its own trace of S points, in the
            # method's legend group (markers of size 0 on every path point cost the browser ~1 ms
            # per 10 points to draw)
            end = pos[m, :, -1, :].astype(np.float32)
            traces.append(dict(type="scatter", x=end[:, 0], y=end[:, 1], mode="markers", showlegend=False,
                               **({"visible": False, "meta": "end"} if reveal and not with_controls else {}),
                               name=f"{method_label(name)} (end)", legendgroup=name,
                               marker=dict(symbol="diamond", size=9, color=method_color(name),
                                           line=dict(color="white", width=1)),
                               text=[f"start {s + 1} · step {int(record[-1])} (end)" for s in range(S)],
                               hovertemplate=f"{method_label(name)} · %{{text}}<br>"
                                             f"(%{{x:.3f}}, %{{y:.3f}})<extra></extra>"))
    # the Pareto set above the faint paths
    if pareto_set is not None:
        ps = np.asarray(pareto_set, dtype=np.float64)
        if ps.ndim == 2 and ps.shape[1] == 2 and len(ps) > 1:
            traces.append(dict(type="scatter", x=ps[:, 0], y=ps[:, 1], mode="lines", name="Pareto set",
                               line=dict(color=theme.FRONT, width=3, dash="dash"), hoverinfo="name"))
    traces.append(dict(type="scatter", x=starts[:, 0], y=starts[:, 1], mode="markers+text", name="starts",
                       text=[f"S{s + 1}" for s in range(S)],
                       textposition=["top center" if up else "bottom center"
                                     for up in start_label_above(starts[:, :2], (x0, x1, y0, y1))],
                       # 12 px in presenter mode too: the presets' starts sit ~25 px apart on a projector's
                       # map, and "S2" at 14.4 px touched S1's ring (tests/pages/test_browser_labels.py)
                       textfont=dict(size=12, color=theme.INK),
                       # a ring wider than the heads (13 px) that sit on it at step 0: the drawn
                       # symbol is the legend's symbol
                       marker=dict(symbol="circle-open", size=21, color=theme.INK, line=dict(width=2.5)),
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
    # the legend sits under the map, so Plotly's toolbar (top right) never covers it
    layout["margin"] = dict(l=55, r=20, t=60 if title else 28, b=(160 if with_controls else 50))
    if with_controls:  # a standalone figure (HTML export): the legend in the right margin
        layout["legend"] = dict(layout["legend"], orientation="v", yanchor="top", y=1.0, xanchor="left", x=1.02)
    else:  # under the map, in a bottom margin sized for it (fit_legend)
        layout["legend"] = dict(layout["legend"], orientation="h", yanchor="bottom", y=0.0, yref="container",
                                xanchor="left", x=0.0)
    if end_labels:
        layout["annotations"] = end_annotations(pos[:, :, -1, :], methods, diag, (x0, x1, y0, y1), avoid=starts[:, :2],
                                                text_scale=text_scale)
        if reveal and not with_controls:  # shown by the page's frame controls at the last frame
            for a in layout["annotations"]:
                a["visible"] = False
    axis = dict(showgrid=False, zeroline=False, linecolor=theme.MUTED, ticks="outside", tickcolor=theme.MUTED,
                constrain="domain")
    layout["xaxis"] = dict(axis, range=[x0, x1], title=dict(text="x₁"))
    layout["yaxis"] = dict(axis, range=[y0, y1], title=dict(text="x₂"), scaleanchor="x", scaleratio=1)
    layout["images"] = [dict(source=image, xref="x", yref="y", x=x0, y=y1, sizex=x1 - x0, sizey=y1 - y0,
                             sizing="stretch", layer="below", opacity=1.0)]
    spec: dict[str, Any] = {"data": traces, "layout": layout}
    if animate and T >= 2:
        spec["frames"] = []
        for f, t in enumerate(fidx):
            fx, fy = comet(int(t))
            grown = [so_far(m, f) for m in range(M)] if reveal else []  # the paths so far
            spec["frames"].append({"name": str(int(record[t])), "traces": (path_idx if reveal else []) + anim_idx,
                                   "data": [{"type": "scatter", "x": p[:, 0], "y": p[:, 1]} for p in grown]
                                   + [{"type": "scatter", "x": fx, "y": fy}]})
    if with_controls:
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
    if spec_only:  # the plain spec, for a builder that adds to it (pcd.viz.teaching.add_gradient_inset)
        return spec
    if not with_controls:
        fit_legend(spec)
    if validate:
        return go.Figure(spec)
    return figure_from_spec(spec)


LOSS_GAP = 0.13  # of the plot width between loss panels: 62 px of a 480-px plot


def loss_figure(res: Any, objective_names: Sequence[str] | None = None, floor: float = 1e-12,
                height: int = 330, spec_only: bool = False) -> Any:
    """Loss vs step, one log-scale panel per objective, one line per (method, start) in the method's
    colour (dash pattern per start). Values are shown as ``f - min(0, min f)`` clipped at ``floor``
    so that zeros and negative-valued objectives fit on a log axis; panel titles say when shifted.
    ``spec_only``: the plain spec instead of a figure.
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
        shift = log_shift(L[..., k])
        shifts.append(shift)
        titles.append(names[k] + (f"  (shown: f − {shift:.3g})" if shift < 0 else ""))
    # one log-log panel per objective, built as a single spec (Plotly's incremental subplot API
    # validates every call and costs ~10x more for the ~M*S*K traces)
    # between panels: room for the next panel's y tick labels ("10⁻¹²", ~45 px with the tick) at the
    # narrowest chart (560 px at an 800-px window: a 480-px plot), so they never reach the panel before
    gap = LOSS_GAP
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
    # the legend (on top) takes more rows with many methods: the figure grows by them, as they fall at the
    # narrowest chart (560 px), so the panels keep their height
    extra = LEGEND_ROW_PX * (legend_rows([method_label(n) for n in res.methods], 560.0 - 80.0) - 1)
    layout = base_layout(height=int(height + extra))
    axis = dict(showgrid=True, gridcolor=theme.GRID, zeroline=False, linecolor=theme.MUTED, ticks="outside",
                tickcolor=theme.MUTED, type="log")
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
    if spec_only:  # the plain spec (pcd.viz.theme.FrozenFigure); the tests build the figure validated
        return {"data": traces, "layout": layout}
    return go.Figure({"data": traces, "layout": layout})
