"""Animations out: the studio's animated views as GIF and MP4 for slides, drawn with Pillow (no
browser), at slide sizes, with a caption strip that carries the settings.

Views:

- the toy map (:func:`toy_frames`): the same picture as the page's map
  (:func:`pcd.viz.toy.toy_map_figure`) -- the background image of
  :func:`pcd.viz.toy.toy_background`, the point where both objectives are optimal, the start rings,
  each method's path as far as the frame shown (:func:`pcd.viz.landscape.path_so_far`, the map's
  frames) and its current points -- and, beside it, the same runs in objective space (the
  ``(f1, f2)`` plane of :func:`pcd.experiments.toy.objective_space`: the Pareto front, the optimum, each
  method's loss path and current point, log axes with exact zeros at 1e-12 as on the page);
- the τ dial's budget curves (:func:`tau_frames`): where PCD is in loss space after ``t`` steps,
  one point per τ joined into a curve, played from step 0 to the largest budget; each budget's
  curve stays behind when the play passes it (:func:`pcd.viz.tau.tradeoff_figure` draws those).

Encoders: GIF with Pillow (:func:`save_gif`), MP4 (H.264, yuv420p, what PowerPoint and Keynote
play) with PyAV (``av`` on the package index, BSD-3; its wheels bundle FFmpeg with libx264, GPL):
:func:`save_mp4`. PyAV is optional at run time: without it :func:`mp4_missing` says so in one line
and :func:`save_mp4` raises :class:`EncoderMissing` (a ``ValueError``) with that line.

Plotly's own image export renders one frame in ~1 s; this draws and encodes 100 frames of a
1280 x 720 animation in a few seconds (``benchmarks/bench_export.py``).
"""
from __future__ import annotations

import base64
import io
import itertools
import tempfile
from collections.abc import Callable, Iterable, Iterator
from fractions import Fraction
from pathlib import Path
from typing import Any

import numpy as np

from pcd import _validate as V
from pcd.viz.landscape import frame_index, log_shift, path_so_far
from pcd.viz.theme import method_color, method_label

SLIDE_SIZES = {"1280x720": (1280, 720), "1920x1080": (1920, 1080)}
FORMATS = {"gif": "image/gif", "mp4": "video/mp4"}
STRIP_FRAC = 0.085   # the caption strip's share of the height (one line of settings; two when long)
FRAME_MS = 45        # per frame, as the page's 1x
FLOOR = 1e-12        # a log axis draws an exact zero here (as the page's loss and objective charts)
OBJ_FRAC = 0.38      # the objective-space panel's share of the width, beside the map
INSET_FRAC = 0.22    # the gradient inset's row under the map: its share of the height
INSET_MAX = 8        # inset panels drawn (the first methods of the run)
MP4_CRF = 23         # x264's constant quality (lower = better and larger); 100 slide frames stay ~1 MB
INK, MUTED, PAPER, STAR = (36, 41, 47), (87, 96, 106), (246, 248, 250), (255, 211, 61)

Progress = Callable[[float], None]


class EncoderMissing(ValueError):
    """The MP4 encoder (PyAV) is not installed: the message is one line that says how to get it."""


def mp4_missing() -> str | None:
    """None when MP4 export works here, else the one line that says why not (PyAV missing)."""
    try:
        import av  # noqa: F401
    except ImportError:
        return "MP4 export needs PyAV: pip install av (FFmpeg with H.264 inside its wheel); GIF works without it"
    return None


def check_export(size: Any = (1280, 720), frames: Any = 100) -> tuple[tuple[int, int], int]:
    """An export's frame size and frame count through the validation layer: ``size`` ``"WxH"`` or
    ``(w, h)``, both even, within :data:`pcd._validate.FRAME_SIZE`; ``frames`` in
    ``[2, LIMITS["frames"]]``. Raises ``ValueError`` with one line."""
    wh = V.frame_size(size, "size")
    n = V.limit("frames", frames, "frames", low=2)
    assert n is not None
    return wh, n


def _font(px: int) -> Any:
    from PIL import ImageFont

    for name in ("DejaVuSans.ttf", "/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf"):
        try:
            return ImageFont.truetype(name, px)
        except OSError:
            continue
    return ImageFont.load_default()


def _rgb(hex_color: str) -> tuple[int, int, int]:
    h = hex_color.lstrip("#")
    return int(h[0:2], 16), int(h[2:4], 16), int(h[4:6], 16)


def _faint(c: tuple[int, int, int]) -> tuple[int, int, int]:
    """A method's path colour: its colour at 45 % over white (the map draws paths at 50 % opacity)."""
    return tuple(int(0.45 * v + 0.55 * 255) for v in c)  # type: ignore[return-value]


def caption_text(settings: dict[str, Any] | None) -> str:
    """The strip's settings line: ``problem · methods · τ · optimizer · lr · steps`` (as given)."""
    parts = []
    for k, v in (settings or {}).items():
        if isinstance(v, (list, tuple)):
            v = ", ".join(method_label(str(x)) if k == "methods" else (f"{x:g}" if isinstance(x, float) else str(x))
                          for x in v)
        parts.append(f"{k} {v}")
    return "  ·  ".join(parts)


class _Strip:
    """The caption strip at the bottom of every frame: the step on the left, the settings on the
    right -- one line at the largest size that fits, else two lines (split between settings)."""

    def __init__(self, w: int, h: int, settings: dict[str, Any] | None, widest_label: str) -> None:
        self.w, self.h = w, h
        self.strip = max(28, int(round(h * STRIP_FRAC)))
        self.pad = max(10, w // 64)
        self.font = _font(max(11, int(self.strip * 0.36)))
        room = w - 3 * self.pad - self.font.getlength(widest_label)
        text = caption_text(settings)
        big = max(11, int(self.strip * 0.36))
        readable = max(10, int(self.strip * 0.27))
        self.lines = [text]
        self.small = self.font
        for px_size in range(big, readable - 1, -1):
            self.small = _font(px_size)
            if self.small.getlength(text) <= room:
                return
        parts = text.split("  ·  ")  # two lines, split where the halves are most even
        best = min(range(1, max(2, len(parts))), key=lambda i: max(
            self.small.getlength("  ·  ".join(parts[:i])), self.small.getlength("  ·  ".join(parts[i:]))))
        self.lines = ["  ·  ".join(parts[:best]), "  ·  ".join(parts[best:])]
        for px_size in range(min(big, int(self.strip * 0.3)), 7, -1):
            self.small = _font(px_size)
            if max(self.small.getlength(t) for t in self.lines) <= room:
                break

    @property
    def top(self) -> int:
        return self.h - self.strip

    def paint(self, draw: Any) -> None:
        """The strip's background and settings (the same on every frame)."""
        draw.rectangle([0, self.top, self.w, self.h], fill=PAPER)
        n = len(self.lines)
        for i, t in enumerate(self.lines):
            y = self.top + self.strip * (i + 1) / (n + 1)
            draw.text((self.w - self.pad, y), t, fill=MUTED, font=self.small, anchor="rm")

    def label(self, draw: Any, text: str) -> None:
        draw.text((self.pad, self.top + self.strip / 2), text, fill=INK, font=self.font, anchor="lm")


class _Axes:
    """A plot box in pixels with linear or log axes (log: values ``v - shift`` floored at
    :data:`FLOOR`, exact zeros on the floor) and tick labels; :meth:`px` maps data to pixels."""

    def __init__(self, box: tuple[int, int, int, int], values: np.ndarray, log: bool, names: tuple[str, str]) -> None:
        self.x0, self.y0, self.x1, self.y1 = box
        v = np.asarray(values, dtype=np.float64).reshape(-1, 2)
        self.log = bool(log)
        self.shift = np.array([log_shift(v[:, k]) for k in range(2)]) if log else np.zeros(2)
        t = self._t(v)
        t = t[np.all(np.isfinite(t), axis=1)]
        lo, hi = (t.min(axis=0), t.max(axis=0)) if len(t) else (np.zeros(2), np.ones(2))
        span = np.where(hi - lo > 0, hi - lo, 1.0)
        self.lo, self.hi = lo - 0.06 * span, hi + 0.06 * span
        self.names = names

    def _t(self, v: Any) -> np.ndarray:
        v = np.asarray(v, dtype=np.float64)
        return np.log10(np.maximum(v - self.shift, FLOOR)) if self.log else v

    def px(self, v: Any) -> np.ndarray:
        t = self._t(np.asarray(v, dtype=np.float64).reshape(-1, 2))
        fx = (t[:, 0] - self.lo[0]) / (self.hi[0] - self.lo[0])
        fy = (t[:, 1] - self.lo[1]) / (self.hi[1] - self.lo[1])
        return np.c_[self.x0 + fx * (self.x1 - self.x0), self.y1 - fy * (self.y1 - self.y0)]

    def paint(self, draw: Any, font: Any) -> None:
        draw.rectangle([self.x0, self.y0, self.x1, self.y1], fill="white", outline=(208, 215, 222))
        for k in range(2):
            lo, hi = self.lo[k], self.hi[k]
            if self.log:
                ticks = [float(e) for e in range(int(np.ceil(lo)), int(np.floor(hi)) + 1)]
                step = max(1, len(ticks) // 5)
                ticks = ticks[::step]
                text = ["0" if e <= np.log10(FLOOR) else f"1e{int(e)}" for e in ticks]
            else:
                ticks = _nice_ticks(lo, hi)
                text = [f"{x:g}" for x in ticks]
            for tv, tx in zip(ticks, text):
                if k == 0:
                    x = self.x0 + (tv - lo) / (hi - lo) * (self.x1 - self.x0)
                    draw.line([(x, self.y0), (x, self.y1)], fill=(234, 238, 242))
                    draw.text((x, self.y1 + 4), tx, fill=MUTED, font=font, anchor="mt")
                else:
                    y = self.y1 - (tv - lo) / (hi - lo) * (self.y1 - self.y0)
                    draw.line([(self.x0, y), (self.x1, y)], fill=(234, 238, 242))
                    draw.text((self.x0 - 4, y), tx, fill=MUTED, font=font, anchor="rm")
        suffix = " (log; 0 at the floor)" if self.log else ""
        draw.text(((self.x0 + self.x1) / 2, self.y1 + 6 + font.size * 1.3), self.names[0] + suffix, fill=INK,
                  font=font, anchor="mt")
        draw.text((self.x0, self.y0 - 6), self.names[1], fill=INK, font=font, anchor="ls")


def _nice_ticks(lo: float, hi: float, n: int = 5) -> list[float]:
    """Round tick values (1, 2, 2.5, 5 x 10^k steps) inside ``[lo, hi]``, about ``n`` of them."""
    raw = (hi - lo) / max(1, n)
    if not raw > 0 or not np.isfinite(raw):
        return []
    mag = 10.0 ** np.floor(np.log10(raw))
    step = next(m * mag for m in (1, 2, 2.5, 5, 10) if m * mag >= raw)
    first = np.ceil(lo / step) * step
    return [float(round(v, 12)) + 0.0 for v in np.arange(first, hi + 1e-12 * step, step)]


def _polyline(draw: Any, pts: np.ndarray, fill: Any, width: int) -> None:
    """A line through ``pts`` [n, 2] (pixels), broken at non-finite rows."""
    for part in np.split(pts, np.where(~np.all(np.isfinite(pts), axis=1))[0]):
        part = part[np.all(np.isfinite(part), axis=1)]
        if len(part) >= 2:
            draw.line([tuple(p) for p in part], fill=fill, width=width, joint="curve")


def _legend(draw: Any, items: list[tuple[str, tuple[int, int, int]]], x: float, y: float, right: float,
            font: Any, r: float) -> float:
    """Rows of coloured dots and names from ``(x, y)``, wrapped at ``right``; returns the height
    used. ``draw=None``: measure only."""
    cx, cy = x, y + font.size
    for name, col in items:
        width = 2.6 * r + font.getlength(name) + 1.5 * font.size
        if cx + width > right and cx > x:
            cx, cy = x, cy + 1.8 * font.size
        if draw is not None:
            draw.ellipse([cx, cy - r, cx + 2 * r, cy + r], fill=col, outline="white")
            draw.text((cx + 2.6 * r, cy), name, fill=INK, font=font, anchor="lm")
        cx += width
    return cy - y + font.size if items else 0.0


def _legend_items(methods: Iterable[str], inset: bool, start: int = 0) -> list[tuple[str, tuple[int, int, int]]]:
    """The toy legend: each method in its colour, then (with the inset) the gradients' colours."""
    from pcd.viz.theme import objective_color

    items = [(method_label(str(m)), _rgb(method_color(str(m)))) for m in methods]
    if inset:
        items += [(f"inset at S{start + 1}: g₁ (primary)", _rgb(objective_color(0))), ("g₂", _rgb(objective_color(1))),
                  ("d: the method's step, its colour", (175, 184, 193))]
    return items


def toy_map_box(res: Any, grid: Any, size: Any, *, objective: bool = False,
                inset: bool = False) -> tuple[float, int, int]:
    """Where :func:`toy_frames` draws the map: ``(scale, ox, oy)`` -- a point ``(x, y)`` of the
    map's view box ``grid = (xs, ys, ...)`` is at pixel ``(ox + (x - xs[0]) scale, oy + (ys[-1] - y)
    scale)``, 1:1 units, centred in the room left of the objective panel, under the legend and
    above the gradient inset's row (``inset``: :data:`INSET_FRAC` of the height) and the caption
    strip."""
    w, h = V.frame_size(tuple(int(v) for v in size), "size")
    strip = max(28, int(round(h * STRIP_FRAC)))
    pad = max(10, w // 64)
    obj_w = int(w * OBJ_FRAC) if objective else 0
    font, r = _font(max(10, h // 52)), max(6, h // 60)
    items = [(label, (0, 0, 0)) for label, _ in _legend_items(res.methods, inset)]
    top = pad + int(np.ceil(_legend(None, items, pad, pad, w - obj_w - pad, font, r)))
    xs, ys = np.asarray(grid[0]), np.asarray(grid[1])
    x0, x1, y0, y1 = float(xs[0]), float(xs[-1]), float(ys[0]), float(ys[-1])
    room_w, room_h = w - obj_w - 2 * pad, h - strip - top - pad - (int(h * INSET_FRAC) if inset else 0)
    scale = min(room_w / (x1 - x0), room_h / (y1 - y0))
    mw, mh = int((x1 - x0) * scale), int((y1 - y0) * scale)
    return scale, (w - obj_w - mw) // 2, top + (room_h - mh) // 2


def _star(draw: Any, cx: float, cy: float, r: float) -> None:
    pts = [(cx + (2.2 if k % 2 == 0 else 0.9) * r * np.sin(k * np.pi / 5),
            cy - (2.2 if k % 2 == 0 else 0.9) * r * np.cos(k * np.pi / 5)) for k in range(10)]
    draw.polygon(pts, fill=STAR, outline=INK)


def toy_frames(res: Any, background: dict[str, Any], *, size: Any = (1280, 720),
               settings: dict[str, Any] | None = None, max_frames: int | None = 100,
               progress: Progress | None = None, space: dict[str, Any] | None = None,
               log: bool = True, grads: dict[str, Any] | None = None) -> Iterator[Any]:
    """The toy map's frames as RGB Pillow images of ``size`` (w, h), one at a time: ``res`` a run
    result (``positions [M, S, T, 2]``, ``methods``, ``record``, ``starts``), ``background`` of
    :func:`pcd.viz.toy.toy_background` (its grid sets the view box). One image per animation frame
    of :func:`pcd.viz.landscape.frame_index` (``max_frames``); the bottom strip says the settings
    and the step. ``space``: :func:`pcd.experiments.toy.objective_space` of the run -- the objective-space
    panel is drawn beside the map (``log`` axes or linear). ``grads``: the gradient inset under the
    map, :func:`pcd.experiments.toy.trajectory_gradients` of one start -- per method (the first
    :data:`INSET_MAX`) g₁, g₂ and its step d at the frame, to one fixed scale
    (:func:`pcd.viz.teaching.inset_scale`; longer arrows clipped to the dotted circle), ``‖d‖``
    under it. ``progress(f)``: called with the share done after each frame."""
    from PIL import Image, ImageDraw

    w, h = V.frame_size(tuple(int(v) for v in size), "size")
    pos = np.asarray(res.positions, dtype=np.float64)[..., :2]
    M, S, T, _ = pos.shape
    if T < 2:
        raise ValueError("an animation needs at least 2 recorded steps")
    if max_frames is not None:
        max_frames = V.limit("frames", max_frames, "frames", low=2)
    record = np.asarray(res.record)
    strip = _Strip(w, h, settings, f"step {int(record[-1])} / {int(record[-1])}")
    pad = strip.pad
    obj_w = int(w * OBJ_FRAC) if space is not None else 0
    xs, ys = np.asarray(background["grid"][0]), np.asarray(background["grid"][1])
    x0, x1, y0, y1 = float(xs[0]), float(xs[-1]), float(ys[0]), float(ys[-1])
    scale, ox, oy = toy_map_box(res, background["grid"], (w, h), objective=space is not None,
                                inset=grads is not None)  # 1:1 units
    mw, mh = int((x1 - x0) * scale), int((y1 - y0) * scale)

    def px(xy: np.ndarray) -> np.ndarray:
        return np.c_[ox + (xy[:, 0] - x0) * scale, oy + (y1 - xy[:, 1]) * scale]

    uri = str(background["image"])
    bg_img = Image.open(io.BytesIO(base64.b64decode(uri.split(",", 1)[1]))).convert("RGB").resize(
        (mw, mh), Image.Resampling.BILINEAR)
    base = Image.new("RGB", (w, h), "white")
    base.paste(bg_img, (ox, oy))
    d = ImageDraw.Draw(base)
    r = max(6, h // 60)
    optima = background.get("optima")
    for o in np.asarray(optima if optima is not None else np.zeros((0, 2))).reshape(-1, 2):
        cx, cy = px(o[None])[0]
        _star(d, cx, cy, r)
    for sx, sy in px(np.asarray(res.starts, dtype=np.float64)[:, :2]):
        d.ellipse([sx - 1.6 * r, sy - 1.6 * r, sx + 1.6 * r, sy + 1.6 * r], outline=INK, width=max(2, r // 3))
    ax = None
    tick_font = _font(max(10, h // 52))
    if space is not None:
        L = np.asarray(space["losses"], dtype=np.float64)[..., :2]
        front = np.asarray(space.get("front", np.zeros((0, 2))), dtype=np.float64).reshape(-1, 2)
        optimum = space.get("optimum")
        allv = np.r_[L.reshape(-1, 2), front] if optimum is None else np.r_[L.reshape(-1, 2), front,
                                                                          np.asarray(optimum).reshape(1, 2)]
        names = tuple(space.get("names") or ("f1", "f2"))[:2]
        fs = tick_font.size
        box = (w - obj_w + int(3.6 * fs), pad + int(1.6 * fs), w - pad, strip.top - pad - int(3.0 * fs))
        ax = _Axes(box, allv, log, (str(names[0]), str(names[1])))
        ax.paint(d, tick_font)
        if len(front):
            fp = ax.px(front)
            for a, b in zip(fp[:-1:2], fp[1::2]):  # dashed: every other segment
                d.line([tuple(a), tuple(b)], fill=(110, 119, 129), width=max(2, h // 360))
            if len(front) == 1:
                d.ellipse([fp[0, 0] - r / 2, fp[0, 1] - r / 2, fp[0, 0] + r / 2, fp[0, 1] + r / 2], fill=(110, 119, 129))
        if optimum is not None:
            cx, cy = ax.px(np.asarray(optimum).reshape(1, 2))[0]
            _star(d, cx, cy, 0.8 * r)
        lp = ax.px(L.reshape(-1, 2)).reshape(M, S, T, 2)
    colors = [_rgb(method_color(m)) for m in res.methods]
    _legend(d, _legend_items(res.methods, grads is not None, int((grads or {}).get("start", 0))), pad, pad,
            w - obj_w - pad, tick_font, r)
    inset = None
    if grads is not None:
        inset = _Inset(grads, [m for m in res.methods if m in grads["methods"]][:INSET_MAX],
                       (pad, strip.top - int(h * INSET_FRAC), w - obj_w - pad, strip.top - pad // 2), tick_font)
        inset.paint(d)
    strip.paint(d)
    fidx = frame_index(T, max_frames)
    faint = [_faint(c) for c in colors]
    line_w = max(2, h // 240)
    for f, t in enumerate(fidx):
        img = base.copy()
        dr = ImageDraw.Draw(img)
        for m in range(M):
            _polyline(dr, px(path_so_far(pos[m], fidx, f).astype(np.float64)), faint[m], line_w)
            if ax is not None:
                _polyline(dr, path_so_far(lp[m], fidx, f).astype(np.float64), faint[m], line_w)
        for m in range(M)[::-1]:  # the first method (PCD) on top
            heads = [px(pos[m, :, int(t)])] + ([lp[m, :, int(t)]] if ax is not None else [])
            for cx, cy in np.concatenate(heads):
                dr.ellipse([cx - r, cy - r, cx + r, cy + r], fill=colors[m], outline="white", width=max(1, r // 4))
        if inset is not None:
            inset.draw(dr, int(t))
        strip.label(dr, f"step {int(record[int(t)])} / {int(record[-1])}")
        yield img
        if progress is not None:
            progress((f + 1) / len(fidx))


class _Inset:
    """The gradient inset as a row of panels (as the page's, :func:`pcd.viz.teaching.add_gradient_inset`):
    per method a square with the dotted scale circle, the gradients g_k (objective colours) and the
    method's step d (its colour) at one frame of one start, one fixed scale, ``‖d‖`` under it."""

    def __init__(self, grads: dict[str, Any], names: list[str], box: tuple[int, int, int, int], font: Any) -> None:
        from pcd.viz.teaching import inset_scale
        from pcd.viz.theme import objective_color

        self.g, self.names = grads, names
        self.scale = inset_scale(grads)
        x0, y0, x1, y1 = box
        n = max(1, len(names))
        pitch = (x1 - x0) / n
        for px_size in range(font.size, 7, -1):  # titles and numbers fit their panel's pitch
            font = _font(px_size)
            if max([font.getlength(method_label(m)) for m in names] + [font.getlength("‖d‖ ≈ 0.000")]) <= 0.94 * pitch:
                break
        self.font = font
        fs = font.size
        self.side = max(20.0, min(y1 - y0 - 2.6 * fs, pitch - 0.6 * fs))
        cy = y0 + 1.3 * fs + self.side / 2
        self.centres = [(x0 + pitch * (i + 0.5), cy) for i in range(len(names))]
        K = next(iter(grads["methods"].values()))["g"].shape[1] if grads["methods"] else 2
        self.obj = [_rgb(objective_color(k)) for k in range(K)]
        self.start = int(grads.get("start", 0))

    def paint(self, draw: Any) -> None:
        half = self.side / 2
        for name, (cx, cy) in zip(self.names, self.centres):
            draw.rectangle([cx - half, cy - half, cx + half, cy + half], fill="white", outline=(208, 215, 222))
            rr = 0.9 * half
            for a in range(0, 360, 12):  # dotted circle
                draw.arc([cx - rr, cy - rr, cx + rr, cy + rr], a, a + 5, fill=(175, 184, 193))
            draw.text((cx, cy - half - 2), method_label(name), fill=_rgb(method_color(name)), font=self.font,
                      anchor="mb")

    def _arrow(self, draw: Any, c: tuple[float, float], v: np.ndarray, color: Any, width: int) -> None:
        rr = 0.9 * self.side / 2
        u = np.asarray(v, dtype=np.float64)[:2] / self.scale * rr
        n = float(np.linalg.norm(u)) if np.all(np.isfinite(u)) else 0.0
        if n < 0.03 * rr:  # a (nearly) zero vector draws nothing: the number says ~0
            return
        if n > rr:
            u = u * (rr / n)
            n = rr
        tip = (c[0] + u[0], c[1] - u[1])
        draw.line([c, tip], fill=color, width=width)
        e = u / n
        head = min(0.35 * n, max(6.0, 0.14 * rr))
        back = (tip[0] - e[0] * head, tip[1] + e[1] * head)
        nx, ny = -e[1] * head * 0.45, -e[0] * head * 0.45
        draw.polygon([tip, (back[0] + nx, back[1] + ny), (back[0] - nx, back[1] - ny)], fill=color)

    def draw(self, draw: Any, t: int) -> None:
        half = self.side / 2
        width = max(2, int(self.side / 45))
        for name, c in zip(self.names, self.centres):
            g = self.g["methods"][name]
            for k, col in enumerate(self.obj):
                self._arrow(draw, c, g["g"][t, k], col, width)
            self._arrow(draw, c, g["d"][t], _rgb(method_color(name)), width + 1)
            dn, gmax = float(g["d_norm"][t]), float(np.nanmax(g["norms"][t], initial=0.0))
            stall = np.isfinite(dn) and gmax > 0 and dn <= 1e-3 * gmax
            text = "‖d‖ ≈ 0" if stall else f"‖d‖ {dn:.3g}"
            draw.text((c[0], c[1] + half + 2), text, fill=INK, font=self.font, anchor="mt")


def toy_animation_frames(res: Any, background: dict[str, Any], *, size: tuple[int, int] = (1280, 720),
                         settings: dict[str, Any] | None = None, max_frames: int | None = 100,
                         progress: Progress | None = None, space: dict[str, Any] | None = None,
                         log: bool = True, grads: dict[str, Any] | None = None) -> list[Any]:
    """:func:`toy_frames` as a list."""
    return list(toy_frames(res, background, size=size, settings=settings, max_frames=max_frames,
                           progress=progress, space=space, log=log, grads=grads))


TAU_LOW, TAU_HIGH = (68, 1, 84), (253, 231, 37)   # τ = 0 … 1 on a viridis-like ramp


def tau_color(tau: float) -> tuple[int, int, int]:
    """A colour on the budget-curve animation's ramp: dark violet at 0, through teal, to yellow at 1."""
    stops = [(0.0, TAU_LOW), (0.33, (59, 82, 139)), (0.66, (33, 145, 140)), (0.85, (94, 201, 98)), (1.0, TAU_HIGH)]
    t = float(min(max(tau, 0.0), 1.0))
    for (a, ca), (b, cb) in zip(stops[:-1], stops[1:]):
        if t <= b:
            u = (t - a) / (b - a)
            return tuple(int(round(x + u * (y - x))) for x, y in zip(ca, cb))  # type: ignore[return-value]
    return TAU_HIGH


def tau_colors(taus: Iterable[float]) -> list[tuple[int, int, int]]:
    """Each τ's colour, by its rank among ``taus`` (the sweep crowds small τ: 0, 0.005, 0.01, ...)."""
    t = [float(v) for v in taus]
    rank = np.argsort(np.argsort(t))
    return [tau_color(float(k) / max(1, len(t) - 1)) for k in rank]


def tau_palette(taus: Iterable[float]) -> list[tuple[int, int, int]]:
    """The colours a τ animation's GIF keeps exactly."""
    cols = tau_colors(taus)
    return cols + [_faint(c) for c in cols] + [(255, 255, 255), INK, MUTED, STAR, PAPER, (110, 119, 129)]


def tau_frames(res: Any, taus: Iterable[float], budgets: Iterable[int], *, front: Any = None,
               log: bool = False, size: Any = (1280, 720), settings: dict[str, Any] | None = None,
               max_frames: int | None = 100, progress: Progress | None = None,
               names: tuple[str, str] = ("f₁", "f₂")) -> Iterator[Any]:
    """The τ dial's budget curves, played: frame ``f`` shows, for every τ (one instance per τ in
    ``res``, in the order of ``taus``), the mean over the starts of PCD's losses after the frame's
    step -- one point per τ in its colour, joined into the curve for that step. Each budget of
    ``budgets`` the play has passed leaves its curve behind (faint, labelled), as the page's
    :func:`pcd.viz.tau.tradeoff_figure` draws them; ``front`` [P, 2]: the Pareto front (dashed).
    ``res.record`` holds the budgets (:func:`pcd.experiments.animation.tau_budget_run`)."""
    from PIL import Image, ImageDraw

    w, h = V.frame_size(tuple(int(v) for v in size), "size")
    taus = [float(t) for t in taus]
    L = np.asarray(res.losses, dtype=np.float64)[..., :2]
    M, S, T, _ = L.shape
    if M != len(taus):
        raise ValueError(f"the run has {M} instances, taus lists {len(taus)}")
    if T < 2:
        raise ValueError("an animation needs at least 2 recorded steps")
    if max_frames is not None:
        max_frames = V.limit("frames", max_frames, "frames", low=2)
    record = np.asarray(res.record)
    with np.errstate(all="ignore"):
        mean = np.nanmean(L, axis=1)                         # [M, T, 2]
    order = np.argsort(taus)
    cols = tau_colors(taus)
    bl = [int(b) for b in budgets if int(b) in set(int(x) for x in record)]
    fr = np.zeros((0, 2)) if front is None else np.asarray(front, dtype=np.float64).reshape(-1, 2)
    strip = _Strip(w, h, settings, f"step {int(record[-1])} / {int(record[-1])}")
    pad = strip.pad
    font = _font(max(11, h // 48))
    fs = font.size
    legend_w = int(6.5 * fs)
    box = (pad + int(4.2 * fs), pad + int(1.8 * fs), w - pad - legend_w, strip.top - pad - int(3.2 * fs))
    ax = _Axes(box, np.r_[mean.reshape(-1, 2), fr], log, (names[0], names[1]))
    base = Image.new("RGB", (w, h), "white")
    d = ImageDraw.Draw(base)
    ax.paint(d, font)
    if len(fr) >= 2:
        fp = ax.px(fr)
        for a, b in zip(fp[:-1:2], fp[1::2]):
            d.line([tuple(a), tuple(b)], fill=(110, 119, 129), width=max(2, h // 360))
    lx = w - pad - legend_w + fs  # the τ legend: one swatch per τ
    d.text((lx, box[1]), "τ", fill=INK, font=font, anchor="ls")
    step_y = min(1.35 * fs, (box[3] - box[1] - fs) / max(1, len(taus)))
    for i, m in enumerate(order):
        y = box[1] + fs + i * step_y
        d.ellipse([lx, y - fs / 2.6, lx + fs / 1.3, y + fs / 2.6], fill=cols[m])
        d.text((lx + 1.2 * fs, y), f"{taus[m]:g}", fill=INK, font=font, anchor="lm")
    strip.paint(d)
    fidx = frame_index(T, max_frames)
    r = max(5, h // 90)
    line_w = max(2, h // 300)
    done: list[int] = []
    for f, t in enumerate(fidx):
        step = int(record[int(t)])
        for b in bl:  # a budget's curve stays once the play has passed it
            if b <= step and b not in done:
                done.append(b)
                ti = int(np.nonzero(record == b)[0][0])
                cp = ax.px(mean[order, ti])
                _polyline(d, cp, (175, 184, 193), line_w)
                for m, (cx, cy) in zip(order, cp):
                    d.ellipse([cx - r / 2, cy - r / 2, cx + r / 2, cy + r / 2], fill=_faint(cols[m]))
                end = cp[np.all(np.isfinite(cp), axis=1)]
                if len(end):
                    d.text((end[-1, 0] + r, end[-1, 1] - r), f"{b} steps", fill=MUTED, font=font, anchor="ld")
        img = base.copy()
        dr = ImageDraw.Draw(img)
        cp = ax.px(mean[order, int(t)])
        _polyline(dr, cp, INK, line_w)
        for m, (cx, cy) in zip(order, cp):
            if np.isfinite(cx) and np.isfinite(cy):
                dr.ellipse([cx - r, cy - r, cx + r, cy + r], fill=cols[m], outline="white",
                           width=max(1, r // 4))
        strip.label(dr, f"step {step} / {int(record[-1])}")
        yield img
        if progress is not None:
            progress((f + 1) / len(fidx))


def save_gif(frames: Iterable[Any], target: Any = None, frame_ms: int = FRAME_MS,
             keep: list[tuple[int, int, int]] | None = None) -> bytes:
    """Encode ``frames`` (RGB Pillow images) as a looping GIF with one shared palette (the
    background does not change), ``frame_ms`` per frame, the last frame held 2 s.
    ``keep``: RGB colours the palette holds exactly (:func:`toy_palette`: the methods' colours).
    Written to ``target`` (a path) when given; returns the bytes."""
    from PIL import Image

    frames = list(frames)
    if not frames:
        raise ValueError("no frames to encode")
    frame_ms = int(frame_ms)
    if frame_ms < 20:
        raise ValueError(f"frame_ms must be >= 20 (browsers slow faster GIFs down), got {frame_ms}")
    # one palette from the first and the last frame side by side: the background, and every
    # method's colour (the heads and paths of the last frame)
    w, h = frames[0].size
    both = Image.new("RGB", (2 * w, h))
    both.paste(frames[0], (0, 0))
    both.paste(frames[-1], (w, 0))
    colors = list(dict.fromkeys(tuple(c) for c in (keep or [])))[:56]
    n_bg = 255 - len(colors)  # the last index is left free: "unchanged" (transparent) in the later frames
    pal = both.quantize(colors=n_bg, method=Image.Quantize.MEDIANCUT)
    entries = (pal.getpalette() or [])[:3 * n_bg]
    entries += [0, 0, 0] * (n_bg - len(entries) // 3)
    # the methods' own colours, exactly (a few pixels each: the median cut would merge them)
    pal.putpalette(entries + [v for c in colors for v in c] + [255, 0, 255])
    q = []
    prev = None
    for fr in frames:  # a later frame keeps only what changed: the rest is transparent (LZW-cheap)
        a = np.asarray(fr.quantize(palette=pal, dither=Image.Dither.NONE))
        b = a.copy()
        if prev is not None:
            b[a == prev] = 255
        prev = a
        img = Image.fromarray(b, mode="P")
        img.putpalette(pal.getpalette() or [])
        q.append(img)
    buf = io.BytesIO()
    durations = [frame_ms] * (len(q) - 1) + [2000]
    q[0].save(buf, format="GIF", save_all=True, append_images=q[1:], duration=durations, loop=0, optimize=False,
              transparency=255, disposal=1)
    data = buf.getvalue()
    if target is not None:
        Path(target).write_bytes(data)
    return data


# x264 settings for slides: High profile at level 4.1 (1080p up to 30 fps; PowerPoint and Keynote accept
# High up to 4.2), no B-frames (every frame decodes in order: pts == dts, no edit-list shift, which some
# slide players stumble on), a keyframe every 2 s; constant frame rate (every frame one tick of 1/fps)
MP4_OPTIONS = {"preset": "veryfast", "tune": "animation", "profile": "high", "level": "4.1", "bf": "0",
               "x264-params": "bframes=0:force-cfr=1"}


def save_mp4(frames: Iterable[Any], target: Any = None, frame_ms: int = FRAME_MS, crf: int = MP4_CRF) -> bytes:
    """Encode ``frames`` (RGB Pillow images of one even size) as an MP4 for slides: H.264 (x264,
    ``crf``), yuv420p, ``round(1000 / frame_ms)`` frames per second, the index at the front
    (``+faststart``). Frames are encoded as they come (a generator keeps one in memory). Written
    to ``target`` when given; returns the bytes. Raises :class:`EncoderMissing` without PyAV."""
    missing = mp4_missing()
    if missing:
        raise EncoderMissing(missing)
    import av

    frame_ms = int(frame_ms)
    if not 10 <= frame_ms <= 1000:
        raise ValueError(f"frame_ms must be in [10, 1000], got {frame_ms}")
    crf = V.integer(crf, "crf", low=0, high=51)
    fps = Fraction(max(1, round(1000 / frame_ms)))
    tmp = tempfile.NamedTemporaryFile(suffix=".mp4", delete=False)  # +faststart rewrites the file
    tmp.close()
    try:
        _encode_mp4(av, frames, tmp.name, fps, crf)
        data = Path(tmp.name).read_bytes()
    finally:
        Path(tmp.name).unlink(missing_ok=True)
    if target is not None:
        Path(target).write_bytes(data)
    return data


def _encode_mp4(av: Any, frames: Iterable[Any], path: str, fps: Fraction, crf: int) -> None:
    it = iter(frames)
    first = next(it, None)
    if first is None:
        raise ValueError("no frames to encode")
    frames = itertools.chain([first], it)
    with av.open(path, mode="w", format="mp4", options={"movflags": "+faststart"}) as out:
        stream: Any = None
        for fr in frames:
            arr = np.asarray(fr.convert("RGB"))
            if stream is None:
                hh, ww = arr.shape[:2]
                V.frame_size((ww, hh), "frame size")  # even sides: yuv420p halves the chroma planes
                stream = out.add_stream("libx264", rate=fps)
                stream.width, stream.height, stream.pix_fmt = ww, hh, "yuv420p"
                # what PowerPoint / Keynote play (pcd.viz.export.MP4_OPTIONS; checked by tests/viz/test_export_mp4.py)
                stream.options = {"crf": str(crf), **MP4_OPTIONS}
            elif arr.shape[:2] != (stream.height, stream.width):
                raise ValueError(f"every frame must be {stream.width}x{stream.height}, got {arr.shape[1]}x{arr.shape[0]}")
            vf = av.VideoFrame.from_ndarray(arr, format="rgb24").reformat(format="yuv420p")
            for packet in stream.encode(vf):
                out.mux(packet)
        for packet in stream.encode():
            out.mux(packet)


def encode(frames: Iterable[Any], fmt: str, target: Any = None,
           keep: list[tuple[int, int, int]] | None = None) -> bytes:
    """``frames`` as ``fmt`` (``"gif"``: :func:`save_gif` with ``keep``; ``"mp4"``: :func:`save_mp4`)."""
    fmt = V.choice(str(fmt).lower(), "format", list(FORMATS))
    if fmt == "mp4":
        return save_mp4(frames, target)
    return save_gif(frames, target, keep=keep)


def toy_palette(methods: list[str]) -> list[tuple[int, int, int]]:
    """The colours a toy GIF must keep exactly: each method's (heads) and its faint path colour,
    white, the text and the star."""
    cols = [_rgb(method_color(m)) for m in methods]
    return cols + [_faint(c) for c in cols] + [(255, 255, 255), INK, MUTED, STAR, PAPER]


def toy_animation(res: Any, background: dict[str, Any], fmt: str = "gif", *, size: Any = (1280, 720),
                  settings: dict[str, Any] | None = None, max_frames: int = 100, target: Any = None,
                  progress: Progress | None = None, space: dict[str, Any] | None = None,
                  log: bool = True, grads: dict[str, Any] | None = None) -> bytes:
    """The toy map (with the objective-space panel when ``space`` is given, the gradient inset
    when ``grads`` is) as ``fmt`` (gif/mp4):
    :func:`toy_frames` encoded by :func:`encode`. Size and frame count checked first
    (:func:`check_export`)."""
    wh, n = check_export(size, max_frames)
    if fmt == "mp4" and mp4_missing():
        raise EncoderMissing(mp4_missing())
    frames = toy_frames(res, background, size=wh, settings=settings, max_frames=n, progress=progress,
                        space=space, log=log, grads=grads)
    keep = toy_palette(list(res.methods))
    if grads is not None:
        from pcd.viz.theme import objective_color

        keep += [_rgb(objective_color(k)) for k in range(2)] + [(175, 184, 193), (208, 215, 222)]
    return encode(frames, fmt, target, keep=keep)


def tau_animation(res: Any, taus: Iterable[float], budgets: Iterable[int], fmt: str = "gif", *,
                  front: Any = None, log: bool = False, size: Any = (1280, 720),
                  settings: dict[str, Any] | None = None, max_frames: int = 100, target: Any = None,
                  progress: Progress | None = None) -> bytes:
    """The τ dial's budget curves (:func:`tau_frames`) as ``fmt`` (gif/mp4)."""
    wh, n = check_export(size, max_frames)
    if fmt == "mp4" and mp4_missing():
        raise EncoderMissing(mp4_missing())
    taus = [float(t) for t in taus]
    frames = tau_frames(res, taus, budgets, front=front, log=log, size=wh, settings=settings, max_frames=n,
                        progress=progress)
    return encode(frames, fmt, target, keep=tau_palette(taus))


def toy_gif(res: Any, background: dict[str, Any], *, size: tuple[int, int] = (1280, 720),
            settings: dict[str, Any] | None = None, max_frames: int | None = 100, target: Any = None,
            progress: Progress | None = None, space: dict[str, Any] | None = None) -> bytes:
    """:func:`toy_frames` encoded by :func:`save_gif` with the methods' colours kept."""
    frames = toy_frames(res, background, size=size, settings=settings, max_frames=max_frames,
                        progress=progress, space=space)
    return save_gif(frames, target, keep=toy_palette(list(res.methods)))
