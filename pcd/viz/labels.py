"""Label placement, the one home: how large a label's box is on screen, where a label goes so its box
keeps clear of the markers and the labels already placed, and the boxes a figure's annotations take
-- on every plot size the figure is drawn at.

A label is a Plotly annotation with an arrow: the point it names in data units and its box's centre as
a pixel offset ``(ax, ay)`` from that point (y down). Pixel offsets keep a label beside its point,
but the distance between two points in pixels grows with the plot, so a place is chosen by its worst
case over a few plot sizes (:data:`PLOT_SIZES`, from a half-width column at 800 px to a 1920 px
window). Presenter mode scales a figure's fonts but not its annotations' (``static/chart.js``,
``presentFonts``): a builder that places labels takes a ``text_scale`` (:data:`PRESENT_TEXT_SCALE` in
presenter mode, :func:`pcd.ui.presenter.text_scale`) and places them with their larger font
(:func:`label_px`), so they read from the back of a room and still keep clear of each other.

Obstacles are boxes too: ``(x, y, dx, dy, w, h)`` is a ``w x h`` px box whose centre sits ``(dx, dy)``
px from the data point ``(x, y)`` -- a marker is ``(x, y, 0, 0, size, size)``, a start's "S1" above
it ``(x, y, 0, -18, 22, 16)``; a 7th column 1 marks an offset that grows with the plot (a label placed
with ``data=True`` before).
"""
from __future__ import annotations

import math
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

CHAR_EM = 0.6        # a character's width in font sizes (Open Sans / Arial, mixed text; digits ~0.55)
LINE_EM = 1.35       # a line's height in font sizes
BOX_PAD = (10.0, 6.0)  # px added to a box (border + pad), as an annotation's borderpad=2 draws it
FONT_SCALE = 1.0     # annotations keep their font size in presenter mode (CHAR_EM is already generous)
PRESENT_TEXT_SCALE = 1.2  # presenter mode's labels on the data: 12 px -> 14.4 px (as its axis and legend fonts)
CLEAR_PX = 30.0      # clear by this much is clear enough: among clear places the nearest to the point wins
# the places tried around a point (px, y down; nearest first among the clear ones): the far rings are
# for a tall label or a crowded corner, where every near place would cover a marker or another label
OFFSETS: tuple[tuple[int, int], ...] = (
    (0, -38), (0, 38), (80, -40), (80, 40), (-80, -40), (-80, 40), (110, 0), (-110, 0),
    (0, -70), (0, 70), (60, -75), (60, 75), (-60, -75), (-60, 75),
    (0, -95), (0, 95), (150, -85), (150, 85), (-150, -85), (-150, 85), (190, 0), (-190, 0),
    (0, -125), (0, 125), (100, -120), (100, 120), (-100, -120), (-100, 120))
# more places, for a crowded figure (many labels around one origin): rings every 15 degrees out to 240 px
RINGS: tuple[tuple[int, int], ...] = OFFSETS + tuple(
    (int(round(r * math.cos(math.radians(a)))), int(round(r * math.sin(math.radians(a)))))
    for r in (30, 45, 60, 75, 90, 110, 130, 160, 200, 240) for a in range(0, 360, 15))
# plot-area sizes (w, h px) a figure's labels are checked on, when its builder knows no better
PLOT_SIZES: tuple[tuple[float, float], ...] = ((300.0, 300.0), (480.0, 380.0), (720.0, 420.0), (1100.0, 520.0))

_TAG = re.compile(r"<[^>]+>")


def label_px(font_px: float, text_scale: float = 1.0) -> float:
    """A data label's font size (px) at ``text_scale`` (presenter mode: :data:`PRESENT_TEXT_SCALE`) --
    the size a builder both places the label for (:func:`text_size`) and draws it with."""
    text_scale = float(text_scale)
    if not 0.5 <= text_scale <= 3.0:
        raise ValueError(f"text_scale must be in [0.5, 3], got {text_scale}")
    return round(float(font_px) * text_scale, 1)


def text_size(text: str, font_px: float, scale: float = FONT_SCALE) -> tuple[float, float]:
    """The box (w, h px) of a label ``text`` (Plotly's ``<br>`` line breaks, tags such as ``<b>``
    ignored) at ``font_px``, fonts drawn ``scale`` times larger (presenter mode)."""
    lines = [_TAG.sub("", ln) for ln in str(text).split("<br>")]
    f = float(font_px) * float(scale)
    return (CHAR_EM * f * max(len(ln) for ln in lines) + BOX_PAD[0], LINE_EM * f * len(lines) + BOX_PAD[1])


@dataclass(frozen=True)
class PlotPx:
    """A plot area ``w x h`` px showing ``x0..x1`` by ``y0..y1`` (axis units; ``log_x`` / ``log_y``:
    the ranges are log10 of the data, as Plotly's log axes take them). :meth:`px` maps data to px
    (origin top left, y down)."""

    x0: float
    x1: float
    y0: float
    y1: float
    w: float
    h: float
    log_x: bool = False
    log_y: bool = False

    def px(self, x: Any, y: Any) -> tuple[np.ndarray, np.ndarray]:
        x = np.log10(np.maximum(np.asarray(x, dtype=np.float64), 1e-300)) if self.log_x else np.asarray(x, dtype=np.float64)
        y = np.log10(np.maximum(np.asarray(y, dtype=np.float64), 1e-300)) if self.log_y else np.asarray(y, dtype=np.float64)
        return (x - self.x0) / (self.x1 - self.x0) * self.w, (self.y1 - y) / (self.y1 - self.y0) * self.h


def plots_for(x_range: Sequence[float], y_range: Sequence[float], sizes: Sequence[tuple[float, float]] = PLOT_SIZES,
              equal: bool = False, log_x: bool = False, log_y: bool = False) -> list[PlotPx]:
    """:class:`PlotPx` for each plot size in ``sizes``; ``equal``: 1:1 axes (the plot shrinks to the
    ranges' aspect inside each size, as ``scaleanchor`` with ``constrain="domain"`` draws it)."""
    x0, x1 = (float(v) for v in x_range)
    y0, y1 = (float(v) for v in y_range)
    if not (x1 > x0 and y1 > y0):
        raise ValueError(f"ranges must be increasing, got {x_range}, {y_range}")
    out = []
    for w, h in sizes:
        if equal:
            s = min(w / (x1 - x0), h / (y1 - y0))
            w, h = s * (x1 - x0), s * (y1 - y0)
        out.append(PlotPx(x0, x1, y0, y1, float(w), float(h), log_x, log_y))
    return out


def box_gap(a: Sequence[float], b: Sequence[float]) -> float:
    """Distance (px) between boxes ``(cx, cy, w, h)``; negative by the overlap's depth when they overlap."""
    dx = abs(a[0] - b[0]) - (a[2] + b[2]) / 2
    dy = abs(a[1] - b[1]) - (a[3] + b[3]) / 2
    if dx > 0 or dy > 0:
        return math.hypot(max(dx, 0.0), max(dy, 0.0))
    return max(dx, dy)


def _room(plots: Sequence[PlotPx], x: float, y: float, off: tuple[float, float], size: tuple[float, float],
          obstacles: np.ndarray, data: bool = False) -> float:
    """The clearance (px, at most :data:`CLEAR_PX`) of a box ``size`` at ``off`` from ``(x, y)``: its
    worst case over ``plots`` when it is clear on every one; else -1000 for each plot where it covers
    something or leaves the plot area (a place clear on more sizes wins), plus its worst case there.
    ``data``: ``off`` is in px on ``plots[0]`` and grows with the plot (a label anchored in data units),
    as do the offsets of the obstacles whose 7th column is 1."""
    return float(_rooms(plots, x, y, np.asarray([off], dtype=np.float64), size, obstacles, data)[0])


def _rooms(plots: Sequence[PlotPx], x: float, y: float, offs: np.ndarray, size: tuple[float, float],
           obstacles: np.ndarray, data: bool = False) -> np.ndarray:
    """:func:`_room` of every offset in ``offs [O, 2]`` at once (the same numbers, one NumPy pass per
    plot instead of one Python loop per offset: the toy map's labels were ~60 % of building it). A box
    at NaN (the point of a diverged run) is clear; an obstacle at NaN is no obstacle."""
    w, h = size
    rooms = np.empty((len(plots), len(offs)))
    for i, p in enumerate(plots):
        kx, ky = (p.w / plots[0].w, p.h / plots[0].h) if data else (1.0, 1.0)
        px, py = p.px(x, y)
        cx, cy = float(px) + offs[:, 0] * kx, float(py) + offs[:, 1] * ky
        out = np.maximum(np.maximum(w / 2 - cx, cx + w / 2 - p.w), np.maximum(h / 2 - cy, cy + h / 2 - p.h))
        room = np.full(len(offs), CLEAR_PX, dtype=np.float64)
        if len(obstacles):
            grow = obstacles[:, 6] > 0
            ox, oy = p.px(obstacles[:, 0], obstacles[:, 1])
            ox = ox + obstacles[:, 2] * np.where(grow, p.w / plots[0].w, 1.0)
            oy = oy + obstacles[:, 3] * np.where(grow, p.h / plots[0].h, 1.0)
            dx = np.abs(ox[None, :] - cx[:, None]) - (obstacles[None, :, 4] + w) / 2
            dy = np.abs(oy[None, :] - cy[:, None]) - (obstacles[None, :, 5] + h) / 2
            sep = np.hypot(np.maximum(dx, 0.0), np.maximum(dy, 0.0))
            gap = np.where((dx > 0) | (dy > 0), sep, np.maximum(dx, dy))
            room = np.fmin(room, np.fmin.reduce(gap, axis=1))  # an obstacle at NaN (a run gone) is none
        rooms[i] = np.where(out > 0, -np.minimum(out, 999.0), room)
    bad = (rooms < 0).sum(axis=0)
    worst = rooms.min(axis=0)
    return np.where(bad == 0, worst, -1000.0 * bad + np.maximum(worst, -999.0))


def place(points: Any, sizes: Sequence[tuple[float, float]], plots: Sequence[PlotPx], obstacles: Any = (),
          offsets: Sequence[tuple[int, int]] = OFFSETS, data: bool = False) -> list[tuple[tuple[float, float], float]]:
    """Each label's place, in order: for label ``i`` (its point ``points[i]``, its box ``sizes[i]``) the
    offset among ``offsets`` whose box keeps the most room -- worst case over ``plots`` -- from
    ``obstacles`` ``[P, 6]`` (or ``[P, 7]``, see :func:`_room`) and the boxes placed before it; clear by
    :data:`CLEAR_PX` is clear enough and then the nearest place wins. Returns ``[(offset, room px)]``:
    a room below 0 means no place was clear (the caller may leave that label out).

    ``data=False``: the offset is in px (an annotation's ``ax``, ``ay``): the same on every plot size.
    ``data=True``: the offset is returned in data units (``axref="x"``: the box keeps its place on the
    axes and the space around it grows with the plot, so a place clear on ``plots[0]``, the smallest,
    stays clear on the larger ones)."""
    P = np.asarray(points, dtype=np.float64).reshape(-1, 2)
    if len(sizes) != len(P):
        raise ValueError(f"one size per point: {len(P)} points, {len(sizes)} sizes")
    if not plots:
        raise ValueError("place needs at least one plot size")
    obs = np.asarray(obstacles, dtype=np.float64)
    obs = obs.reshape(-1, obs.shape[-1] if obs.size else 6)
    if obs.shape[1] == 6:
        obs = np.hstack([obs, np.zeros((len(obs), 1))])
    p0 = plots[0]
    sx, sy = p0.w / (p0.x1 - p0.x0), p0.h / (p0.y1 - p0.y0)
    out: list[tuple[tuple[float, float], float]] = []
    offs = np.asarray(offsets, dtype=np.float64).reshape(-1, 2)
    near = np.array([1e-3 * math.hypot(*o) for o in offsets])  # the nearest of the clear places wins
    for (x, y), size in zip(P, sizes):
        scored = _rooms(plots, x, y, offs, size, obs, data) - near
        i = int(np.argmax(scored))  # the first best, as max() over the offsets in order
        room, best = float(scored[i]), offsets[i]
        obs = np.vstack([obs, [[x, y, best[0], best[1], size[0], size[1], 1.0 if data else 0.0]]])
        off = (best[0] / sx, -best[1] / sy) if data else (float(best[0]), float(best[1]))
        out.append((off, room + 1e-3 * math.hypot(*best)))
    return out


def label_boxes(annotations: Sequence[Any], plot: PlotPx, scale: float = FONT_SCALE) -> list[tuple[float, float, float, float]]:
    """The boxes ``(cx, cy, w, h)`` px on ``plot`` of a figure's arrow annotations in data units (those
    with ``xref`` "x"; a box centred on its arrow's tail, or beside it for ``xanchor`` left / right),
    sized by :func:`text_size` from each annotation's text and font -- what a test checks for overlaps."""
    out = []
    for a in annotations:
        a = a if isinstance(a, dict) else a.to_plotly_json()
        if a.get("xref", "x") != "x":
            continue
        font = (a.get("font") or {}).get("size") or 12
        w, h = text_size(a.get("text", ""), font, scale)
        # an annotation on a log axis is placed in log10 units (Plotly's rule)
        px, py = plot.px(10.0 ** float(a["x"]) if plot.log_x else a["x"], 10.0 ** float(a["y"]) if plot.log_y else a["y"])
        ax, ay = (float(a.get("ax", 0)), float(a.get("ay", 0))) if a.get("showarrow", True) else (0.0, 0.0)
        if a.get("axref") == "x":  # the tail in data units (pcd.viz.labels.place(..., data=True))
            tx, ty = plot.px(10.0 ** float(a["ax"]) if plot.log_x else a["ax"], 10.0 ** float(a["ay"]) if plot.log_y else a["ay"])
            ax, ay = float(tx) - float(px), float(ty) - float(py)
        cx, cy = float(px) + ax, float(py) + ay
        xa = a.get("xanchor", "auto")
        if xa == "left":
            cx += w / 2
        elif xa == "right":
            cx -= w / 2
        out.append((cx, cy, w, h))
    return out
