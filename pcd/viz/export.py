"""Animations out: the toy map's animation as a GIF for slides, drawn with Pillow (no browser, no
new dependency), at slide sizes, with a caption strip that carries the settings.

The same picture as the page's map (:func:`pcd.viz.toy.toy_map_figure`): the background image of
:func:`pcd.viz.toy.toy_background`, the point where both objectives are optimal, the start rings,
each method's path as far as the frame shown (:func:`pcd.viz.landscape.path_so_far`, the map's
frames) and its current points. Plotly's own image export renders one frame in ~1 s; this draws
the 100 frames of a 1280 x 720 GIF in a few seconds (``benchmarks/bench_export.py``).
"""
from __future__ import annotations

import base64
import io
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from pcd.viz.landscape import frame_index, path_so_far
from pcd.viz.theme import method_color, method_label

SLIDE_SIZES = {"1280x720": (1280, 720), "1920x1080": (1920, 1080)}
STRIP_FRAC = 0.085   # the caption strip's share of the height
FRAME_MS = 45        # per frame, as the page's 1x


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


def caption_text(settings: dict[str, Any] | None) -> str:
    """The strip's settings line: ``problem · methods · τ · optimizer · lr · steps`` (as given)."""
    parts = []
    for k, v in (settings or {}).items():
        if isinstance(v, (list, tuple)):
            v = ", ".join(method_label(str(x)) if k == "methods" else str(x) for x in v)
        parts.append(f"{k} {v}")
    return "  ·  ".join(parts)


def toy_animation_frames(res: Any, background: dict[str, Any], *, size: tuple[int, int] = (1280, 720),
                         settings: dict[str, Any] | None = None, max_frames: int | None = 100,
                         progress: Callable[[float], None] | None = None) -> list[Any]:
    """The toy map's frames as RGB Pillow images of ``size`` (w, h): ``res`` a run result
    (``positions [M, S, T, 2]``, ``methods``, ``record``, ``starts``), ``background`` of
    :func:`pcd.viz.toy.toy_background` (its grid sets the view box). One image per animation frame
    of :func:`pcd.viz.landscape.frame_index` (``max_frames``); the bottom strip says the settings
    and the step. ``progress(f)``: called with the share done."""
    from PIL import Image, ImageDraw

    w, h = (int(v) for v in size)
    if not (320 <= w <= 3840 and 240 <= h <= 2160):
        raise ValueError(f"size must be between 320x240 and 3840x2160, got {w}x{h}")
    pos = np.asarray(res.positions, dtype=np.float64)[..., :2]
    M, S, T, _ = pos.shape
    if T < 2:
        raise ValueError("an animation needs at least 2 recorded steps")
    xs, ys = np.asarray(background["grid"][0]), np.asarray(background["grid"][1])
    x0, x1, y0, y1 = float(xs[0]), float(xs[-1]), float(ys[0]), float(ys[-1])
    strip = max(28, int(round(h * STRIP_FRAC)))
    pad = max(10, w // 64)
    room_w, room_h = w - 2 * pad, h - strip - 2 * pad
    scale = min(room_w / (x1 - x0), room_h / (y1 - y0))     # 1:1 units, as on the page
    mw, mh = int((x1 - x0) * scale), int((y1 - y0) * scale)
    ox, oy = (w - mw) // 2, pad + (room_h - mh) // 2

    def px(xy: np.ndarray) -> np.ndarray:
        return np.c_[ox + (xy[:, 0] - x0) * scale, oy + (y1 - xy[:, 1]) * scale]

    uri = str(background["image"])
    bg_img = Image.open(io.BytesIO(base64.b64decode(uri.split(",", 1)[1]))).convert("RGB").resize((mw, mh), Image.Resampling.BILINEAR)
    base = Image.new("RGB", (w, h), "white")
    base.paste(bg_img, (ox, oy))
    d = ImageDraw.Draw(base)
    r = max(6, h // 60)
    for o in np.asarray(background.get("optima") if background.get("optima") is not None else np.zeros((0, 2))).reshape(-1, 2):
        cx, cy = px(o[None])[0]
        star = [(cx + (2.2 if k % 2 == 0 else 0.9) * r * np.sin(k * np.pi / 5),
                 cy - (2.2 if k % 2 == 0 else 0.9) * r * np.cos(k * np.pi / 5)) for k in range(10)]
        d.polygon(star, fill=(255, 211, 61), outline=(36, 41, 47))
    starts = px(np.asarray(res.starts, dtype=np.float64)[:, :2])
    for sx, sy in starts:
        d.ellipse([sx - 1.6 * r, sy - 1.6 * r, sx + 1.6 * r, sy + 1.6 * r], outline=(36, 41, 47), width=max(2, r // 3))
    d.rectangle([0, h - strip, w, h], fill=(246, 248, 250))
    font = _font(max(11, int(strip * 0.36)))
    text = caption_text(settings)
    room = w - 3 * pad - font.getlength(f"step {int(np.asarray(res.record)[-1])} / {int(np.asarray(res.record)[-1])}")
    small = font
    for px_size in range(max(11, int(strip * 0.36)), 7, -1):  # the settings fit beside the step label
        small = _font(px_size)
        if small.getlength(text) <= room:
            break
    fidx = frame_index(T, max_frames)
    record = np.asarray(res.record)
    colors = [_rgb(method_color(m)) for m in res.methods]
    faint = [_faint(c) for c in colors]
    line_w = max(2, h // 240)
    out = []
    for f, t in enumerate(fidx):
        img = base.copy()
        dr = ImageDraw.Draw(img)
        for m in range(M):
            seg = path_so_far(pos[m], fidx, f).astype(np.float64)
            for part in np.split(seg, np.where(~np.isfinite(seg[:, 0]))[0]):
                part = part[np.isfinite(part[:, 0])]
                if len(part) >= 2:
                    dr.line([tuple(p) for p in px(part)], fill=faint[m], width=line_w, joint="curve")
        for m in range(M)[::-1]:  # the first method (PCD) on top
            for cx, cy in px(pos[m, :, int(t)]):
                dr.ellipse([cx - r, cy - r, cx + r, cy + r], fill=colors[m], outline="white", width=max(1, r // 4))
        label = f"step {int(record[int(t)])} / {int(record[-1])}"
        dr.text((pad, h - strip / 2), label, fill=(36, 41, 47), font=font, anchor="lm")
        dr.text((w - pad, h - strip / 2), text, fill=(87, 96, 106), font=small, anchor="rm")
        out.append(img)
        if progress is not None:
            progress((f + 1) / len(fidx))
    return out


def save_gif(frames: list[Any], target: Any = None, frame_ms: int = FRAME_MS,
             keep: list[tuple[int, int, int]] | None = None) -> bytes:
    """Encode ``frames`` (RGB Pillow images) as a looping GIF with one shared palette (the
    background does not change), ``frame_ms`` per frame, the last frame held 2 s.
    ``keep``: RGB colours the palette holds exactly (:func:`toy_palette`: the methods' colours).
    Written to ``target`` (a path) when given; returns the bytes."""
    from PIL import Image

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
    idx = [np.asarray(fr.quantize(palette=pal, dither=Image.Dither.NONE)) for fr in frames]
    q = []
    for i, a in enumerate(idx):  # a later frame keeps only what changed: the rest is transparent (LZW-cheap)
        b = a.copy()
        if i:
            b[a == idx[i - 1]] = 255
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


def toy_palette(methods: list[str]) -> list[tuple[int, int, int]]:
    """The colours a toy GIF must keep exactly: each method's (heads) and its faint path colour,
    white, the text and the star."""
    cols = [_rgb(method_color(m)) for m in methods]
    return cols + [_faint(c) for c in cols] + [(255, 255, 255), (36, 41, 47), (87, 96, 106), (255, 211, 61),
                                               (246, 248, 250)]


def _faint(c: tuple[int, int, int]) -> tuple[int, int, int]:
    """A method's path colour: its colour at 45 % over white (the map draws paths at 50 % opacity)."""
    return tuple(int(0.45 * v + 0.55 * 255) for v in c)  # type: ignore[return-value]


def toy_gif(res: Any, background: dict[str, Any], *, size: tuple[int, int] = (1280, 720),
            settings: dict[str, Any] | None = None, max_frames: int | None = 100, target: Any = None,
            progress: Callable[[float], None] | None = None) -> bytes:
    """:func:`toy_animation_frames` encoded by :func:`save_gif` with the methods' colours kept."""
    frames = toy_animation_frames(res, background, size=size, settings=settings, max_frames=max_frames,
                                  progress=progress)
    return save_gif(frames, target, keep=toy_palette(list(res.methods)))
