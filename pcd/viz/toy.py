"""The Toy landscapes page's map: the background (contours, Pareto set, optima, undefined region)
and the trajectories with the animated gradient inset, laid out per width class of the page.

One builder for the page, the CLI (``python -m pcd toy --html``) and the tests; the map itself is
:func:`pcd.viz.landscape.landscape_figure`, the inset :func:`pcd.viz.teaching.add_gradient_inset`.
"""
from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from pcd import _validate as V
from pcd.viz.landscape import background_image, fit_legend, landscape_figure, undefined_mask
from pcd.viz.teaching import add_gradient_inset, below_inset_height_px, side_inset_height_px
from pcd.viz.theme import figure_from_spec, png_data_uri

TOY_GRID = (300, 200)   # the map's background resolution (pixels of the image, stretched to the axes)
# the page column's width the map is laid out for, per width class (the page's frame controls report
# the class): "wide" (a laptop / 1440-px window) has the inset beside the map; "medium" (~1280-px
# projector) and "narrow" (~800-px window) put it under a full-width map, where its numbers have room
TOY_CHART_PX = {"wide": 1000.0, "medium": 800.0, "narrow": 560.0}
TOY_MAP_FRACTION = 0.62                           # of the width, beside the inset
TOY_FRAMES = 100   # animation frames of the page's map (of ~170 recorded steps): ~4.5 s at 1x, 40 % less to build
# click_grid (off on the page): invisible points that turn a click on the map into a start point under
# st.plotly_chart, which reports clicks on points only; the page's chart (pcd.ui.chart, click="anywhere")
# reports the clicked place itself, without 576 SVG nodes to draw and snapping to a grid


def toy_background(problem: Any, bounds: Any = None) -> dict[str, Any]:
    """What the toy map draws under the trajectories, over ``bounds`` (default: the problem's):
    ``grid`` ``(xs, ys, Z)``, the ``image`` (PNG data URI of :func:`pcd.viz.landscape.background_image`),
    ``pareto`` set, ``optima``, the objective ``names`` and ``undefined``: the share of the map where
    a formula is undefined (hatched on the map)."""
    grid = problem.grid(*TOY_GRID, bounds=bounds)
    return {"grid": grid, "image": png_data_uri(background_image(*grid)), "pareto": problem.pareto_set(),
            "optima": problem.optima(), "names": list(problem.objective_names),
            "undefined": float(undefined_mask(grid[2]).mean())}


def fit_bounds(res: Any, bounds: Sequence[Sequence[float]], pad: float = 0.06,
               max_factor: float = 4.0) -> tuple[tuple[float, float], tuple[float, float]]:
    """The map's box ``bounds`` grown to cover every finite recorded point of ``res`` (start points
    included), with ``pad`` of the span as a margin on the sides that grew; a run that ran away is
    covered up to ``max_factor`` times the box's span around its centre (the table has the rest)."""
    (x0, x1), (y0, y1) = V.box(bounds)
    pad = V.number(pad, "pad", low=0.0, high=1.0, strict=False)
    pos = np.asarray(res.positions, dtype=np.float64)[..., :2].reshape(-1, 2)
    pos = np.concatenate([pos, np.asarray(res.starts, dtype=np.float64)[:, :2]])
    pos = pos[np.isfinite(pos).all(axis=1)]
    out = []
    for lo, hi, col in ((x0, x1, 0), (y0, y1, 1)):
        span, mid = hi - lo, (lo + hi) / 2
        cap_lo, cap_hi = mid - max_factor * span / 2, mid + max_factor * span / 2
        if len(pos):
            plo, phi = float(np.clip(pos[:, col].min(), cap_lo, cap_hi)), float(np.clip(pos[:, col].max(), cap_lo, cap_hi))
            if plo < lo:
                lo = plo - pad * (max(hi, phi) - plo)
            if phi > hi:
                hi = phi + pad * (hi - lo)
        out.append((float(lo), float(hi)))
    return (out[0], out[1])


def toy_map_figure(problem: Any, res: Any, background: dict[str, Any] | None = None, *,
                   inset: dict[str, Any] | None = None, width: str = "wide", controls: bool = False,
                   animate: bool = True, click_grid: int = 0, max_frames: int | None = TOY_FRAMES,
                   spec_only: bool = False, text_scale: float = 1.0):
    """The toy page's map: trajectories of ``res`` over :func:`toy_background` with, when ``inset`` is
    given (one start's gradients at every recorded frame,
    :func:`pcd.experiments.toy.trajectory_gradients`), the animated gradient inset -- beside the map,
    or under it for ``width`` "medium" / "narrow" (:data:`TOY_CHART_PX`). ``controls``: Plotly's own play button and
    slider (a standalone HTML file); the page has its own controls. ``animate=False``: the last
    frame as a still (the PNG export). ``max_frames``: frames spread over the recorded steps
    (:func:`pcd.viz.landscape.frame_index`). ``spec_only``: the plain spec (for
    :class:`pcd.viz.theme.FrozenFigure`) instead of a figure. ``text_scale``: the end labels' (presenter mode)."""
    bg = background if background is not None else toy_background(problem)
    with_inset = inset is not None
    xs, ys = bg["grid"][0], bg["grid"][1]
    aspect = float((ys[-1] - ys[0]) / (xs[-1] - xs[0]))        # the map keeps 1:1 units
    if width not in TOY_CHART_PX:
        raise ValueError(f"width must be one of {', '.join(TOY_CHART_PX)}, got {width!r}")
    narrow = width != "wide"   # the inset under the map
    chart_w = TOY_CHART_PX[width]
    map_w = (chart_w - 75) * (TOY_MAP_FRACTION if with_inset and not narrow else 1.0)
    map_h = float(np.clip(map_w * aspect, 240, 560))
    inset_h = max(370.0, below_inset_height_px(len(res.methods)) + 20) if (with_inset and narrow) else 0
    spec = landscape_figure(res, bg["grid"], pareto_set=bg["pareto"], optima=bg["optima"], height=560,
                            image=bg["image"], click_grid=click_grid if animate else 0, validate=False,
                            animate=animate, controls=controls, spec_only=True, max_frames=max_frames,
                            reveal=True,  # frame 0 shows no ending: the paths grow as they play
                            text_scale=text_scale)
    if not controls:  # the legend under the map: the bottom margin is sized for it, then the height
        K = len(bg["names"])  # the inset adds one legend entry per gradient g_k
        fit_legend(spec, chart_w, extra_names=[f"g{k + 1} (primary)" if k == 0 else f"g{k + 1}" for k in range(K)]
                   if with_inset else ())
        lay = spec["layout"]
        side = max(340.0, side_inset_height_px(len(res.methods))) if with_inset and not narrow else 0.0
        lay["height"] = int(lay["margin"]["t"] + lay["margin"]["b"] + max(map_h + inset_h + (60 if inset_h else 0), side))
    if inset is not None:
        spec = add_gradient_inset(spec, inset, placement="below" if narrow else "side", width_px=chart_w,
                                  map_fraction=TOY_MAP_FRACTION, spec_only=True)
    return spec if spec_only else figure_from_spec(spec)
