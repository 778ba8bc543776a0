"""The toy runs in objective space: every method's trajectory in the (f1, f2) plane, animated on the
same frames as the toy map (:func:`pcd.viz.toy.toy_map_figure`), so one set of frame controls
plays both (:func:`pcd.ui.controls.frame_controls`, ``follow``).

A conflict equilibrium is a statement about the losses: the symmetric methods stop on a
Pareto-stationary point that another point dominates, while PCD reaches the point where both
objectives are optimal. The data is :func:`pcd.experiments.toy.objective_space` (the engine's own losses).
"""
from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from pcd.viz import theme
from pcd.viz.landscape import fit_legend, frame_index, log_shift, path_so_far
from pcd.viz.theme import base_layout, figure_from_spec, method_style, rgba

FLOOR = 1e-12  # a log axis draws an exact zero here (as the loss chart does)


def objective_space_figure(space: dict[str, Any], *, log: bool = True, plot_height: int = 360,
                           width_px: float = 900.0, max_frames: int | None = None, animate: bool = True,
                           floor: float = FLOOR, legend: bool = True, spec_only: bool = False,
                           text_scale: float = 1.0) -> Any:
    """The (f1, f2) plane of :func:`pcd.experiments.toy.objective_space`: the Pareto front (dashed; said
    when it is numerical), the point where both objectives are optimal (star), each method's path
    -- drawn as far as the frame shown, as on the map (:func:`pcd.viz.landscape.path_so_far`) --
    and its current points (one animated trace of heads), and at the last frame each group of end
    points with its verdict (Pareto-stationary, dominated by ...). Frames are named by the recorded
    step and spread as the map's (:func:`pcd.viz.landscape.frame_index` with ``max_frames``).
    ``space["labels"]`` / ``space["colors"]`` (optional, ``{name: text}``): the runs' own names and
    colours (e.g. one PCD per τ), else each method's. ``log``: both axes logarithmic, values shown
    as ``f - min(0, min f)`` with exact zeros at ``floor`` (the x axis' title says so); else linear, the raw losses. ``plot_height``: of the plot
    area; the legend under it gets the rows it needs at a chart ``width_px`` wide
    (:func:`pcd.viz.landscape.fit_legend`); ``legend=False``: none (beside a map whose legend names
    the same methods in the same colours). ``animate=False``: the last
    frame as a still. The end markers (``meta="end"``) and verdicts (annotations named ``"end
    label"``) start hidden when animated: the page's frame controls show them at the last frame.
    ``spec_only``: the plain spec (for :class:`pcd.viz.theme.FrozenFigure`) instead of a figure.
    ``text_scale``: the verdicts' font (12 px) that much larger, placed for it (presenter mode,
    :func:`pcd.viz.labels.label_px`)."""
    L = np.asarray(space["losses"], dtype=np.float64)
    if L.ndim != 4 or L.shape[-1] != 2:
        raise ValueError(f"objective_space_figure needs losses [M, S, T, 2], got shape {L.shape}")
    floor = float(floor)
    if not floor > 0:
        raise ValueError(f"floor must be > 0, got {floor}")
    M, S, T, _ = L.shape
    methods, record = list(space["methods"]), np.asarray(space["record"])
    front = np.asarray(space["front"], dtype=np.float64).reshape(-1, 2)
    optimum = None if space.get("optimum") is None else np.asarray(space["optimum"], dtype=np.float64)
    names = list(space.get("names") or ("f1", "f2"))[:2]
    labels, colors = dict(space.get("labels") or {}), dict(space.get("colors") or {})

    def method_label(m: str) -> str:  # a run's own names and colours (e.g. one PCD per τ), else the method's
        return str(labels.get(m, theme.method_label(m)))

    def method_color(m: str) -> str:
        return str(colors.get(m, theme.method_color(m)))

    animate = bool(animate and T >= 2)
    shifts = objective_shifts(L, front, optimum, log)

    def shown(v: Any) -> np.ndarray:  # the plotted coordinates of losses [..., 2]
        return shown_losses(v, shifts, log, floor)

    P = shown(L)                                                     # [M, S, T, 2]
    fidx = frame_index(T, max_frames) if animate else np.arange(T)
    traces: list[dict] = []
    if len(front):  # a line, or one point (the front of a problem whose objectives share an optimum)
        fr = shown(front)
        traces.append(dict(type="scatter", x=fr[:, 0], y=fr[:, 1], mode="lines" if len(front) >= 2 else "markers",
                           hoverinfo="name", marker=dict(symbol="square-open", size=16, color=theme.FRONT,
                                                         line=dict(width=2.5)),
                           name="Pareto front" + (" (numerical: the map's grid)" if space.get("numerical") else ""),
                           line=dict(color=theme.FRONT, width=3, dash="dash")))
    if optimum is not None:
        o = shown(optimum)
        traces.append(dict(type="scatter", x=[o[0]], y=[o[1]], mode="markers", name="both objectives optimal",
                           marker=dict(symbol="star", size=18, color=theme.STAR_GOLD, line=dict(color=theme.INK, width=1.2)),
                           hovertemplate=f"both optimal: {names[0]} = {optimum[0]:.3g}, {names[1]} = {optimum[1]:.3g}"
                                         "<extra></extra>"))
    path_idx = []
    for m, name in enumerate(methods):
        xy = path_so_far(P[m], fidx, 0 if animate else None)
        path_idx.append(len(traces))
        traces.append(dict(type="scatter", x=xy[:, 0], y=xy[:, 1], mode="lines", name=method_label(name),
                           legendgroup=name, line=dict(color=rgba(method_color(name), 0.55), width=2.5,
                                                       dash=method_style(name)["dash"]),
                           hovertemplate=f"{method_label(name)}<br>{names[0]} %{{x:.3e}}, {names[1]} %{{y:.3e}}"
                                         "<extra></extra>"))
    verdicts = space.get("verdicts") or [[""] * S for _ in range(M)]
    for m, name in enumerate(methods):
        end = P[m, :, -1]
        traces.append(dict(type="scatter", x=end[:, 0], y=end[:, 1], mode="markers", showlegend=False,
                           name=f"{method_label(name)} (end)", legendgroup=name,
                           marker=dict(symbol="diamond", size=10, color=method_color(name), line=dict(color="white", width=1)),
                           text=[f"S{s + 1}: {verdicts[m][s]}" for s in range(S)],
                           hovertemplate=f"{method_label(name)} %{{text}}<extra></extra>",
                           **({"visible": False, "meta": "end"} if animate else {})))
    order = list(range(M))[::-1]  # the first method (PCD) drawn last, on top

    def heads(t: int) -> np.ndarray:
        return P[order, :, t].reshape(-1, 2).astype(np.float32)

    h0 = heads(0 if animate else T - 1)
    traces.append(dict(type="scatter", x=h0[:, 0], y=h0[:, 1], mode="markers", showlegend=False, name="now",
                       marker=dict(size=12, color=[method_color(methods[m]) for m in order for _ in range(S)],
                                   line=dict(color="white", width=1.5)),
                       customdata=[[method_label(methods[m]), s + 1] for m in order for s in range(S)],
                       hovertemplate="<b>%{customdata[0]}</b> S%{customdata[1]}<br>"
                                     f"{names[0]} %{{x:.3e}}, {names[1]} %{{y:.3e}}<extra></extra>"))
    head_idx = len(traces) - 1

    layout = base_layout(height=plot_height)
    axis = dict(showgrid=True, gridcolor=theme.GRID, zeroline=not log, linecolor=theme.MUTED, ticks="outside",
                tickcolor=theme.MUTED, type="log" if log else "linear", exponentformat="power")

    def title(k: int) -> str:
        if not log:
            return names[k]
        shifted = names[k] + (f" − ({shifts[k]:.3g})" if shifts[k] < 0 else "")
        return shifted + ((f"{sep}(log axes: 0 drawn at {floor:g})") if k == 0 else "  (log)")

    sep = "<br>" if width_px < 700 else "  "  # a narrow panel (beside the map): the x title on two lines

    def span(k: int) -> list[float]:  # fixed ranges: every frame fits, and the labels never stretch the axes
        v = np.r_[P[..., k].ravel(), shown(front)[:, k] if len(front) else [], [] if optimum is None else
                  [shown(optimum)[k]]]
        v = v[np.isfinite(v)]
        if not v.size:
            return [-1.0, 1.0] if log else [0.0, 1.0]
        lo, hi = (np.log10(v.min()), np.log10(v.max())) if log else (float(v.min()), float(v.max()))
        pad = 0.06 * (hi - lo) if hi > lo else (0.5 if log else 0.5 * max(abs(lo), 1.0))
        return [float(lo - pad), float(hi + pad)]

    xr, yr = span(0), span(1)
    layout["xaxis"] = dict(axis, title=dict(text=title(0)), range=xr)
    layout["yaxis"] = dict(axis, title=dict(text=title(1)), range=yr)
    layout["margin"] = dict(l=70, r=20, t=30, b=60 + (20 if log and sep == "<br>" else 0))
    layout["legend"] = dict(layout["legend"], orientation="h", yanchor="bottom", y=0.0, yref="container",
                            xanchor="left", x=0.0)
    # the plot beside the map in presenter mode is ~0.9 of the width laid out for (its cell), fitted to the window
    layout["annotations"] = _verdict_labels(P[:, :, -1], methods, verdicts, log, animate, xr, yr, method_label,
                                            method_color, (0.9 * float(width_px) - 90.0, 0.75 * float(plot_height)),
                                            text_scale)
    # the page's caption says which front it is; the live redraws (pcd.studio.toy.live_answer) place new
    # losses on these axes by the same rule (shown_losses with these shifts)
    layout["meta"] = {"numerical": bool(space.get("numerical")), "log": bool(log),
                      "shifts": [float(v) for v in shifts], "floor": floor}
    spec: dict[str, Any] = {"data": traces, "layout": layout}
    if legend:
        fit_legend(spec, width_px, axis_px=70.0)  # the bottom margin holds the x axis and the legend's rows
    else:
        layout["showlegend"] = False
    layout["height"] = int(plot_height + layout["margin"]["t"] + layout["margin"]["b"])
    if animate:
        spec["frames"] = []
        for f, t in enumerate(fidx):
            grown = [path_so_far(P[m], fidx, f) for m in range(M)]
            h = heads(int(t))
            spec["frames"].append({"name": str(int(record[t])), "traces": path_idx + [head_idx],
                                   "data": [{"type": "scatter", "x": g[:, 0], "y": g[:, 1]} for g in grown]
                                   + [{"type": "scatter", "x": h[:, 0], "y": h[:, 1]}]})
    return spec if spec_only else figure_from_spec(spec)


def objective_shifts(losses: Any, front: Any = None, optimum: Any = None, log: bool = True) -> np.ndarray:
    """What each axis of the panel shows the losses above: on log axes, per objective,
    :func:`pcd.viz.landscape.log_shift` of every loss drawn (the runs' ``losses [..., 2]``, the Pareto
    ``front [P, 2]``, the ``optimum (2,)``); zeros on linear axes. ``[2]``."""
    if not log:
        return np.zeros(2)
    L = np.asarray(losses, dtype=np.float64).reshape(-1, 2)
    fr = np.zeros((0, 2)) if front is None else np.asarray(front, dtype=np.float64).reshape(-1, 2)
    return np.array([log_shift(np.r_[L[:, k], fr[:, k], [] if optimum is None else [float(optimum[k])]])
                     for k in range(2)])


def shown_losses(losses: Any, shifts: Any, log: bool, floor: float = FLOOR) -> np.ndarray:
    """The panel's plotted coordinates of ``losses [..., 2]``: on log axes ``max(f - shift, floor)``
    (exact zeros at the floor; ``shifts``: :func:`objective_shifts`), else the raw losses. NaN stays NaN."""
    v = np.asarray(losses, dtype=np.float64)
    return np.maximum(v - np.asarray(shifts, dtype=np.float64), float(floor)) if log else v


# the objective panel's plot sizes (w x h px; the first is the smallest both ways): its chart is 560 (800-px
# window) to 1000 px wide and 360 px tall, ~250 px in presenter mode at 1280 x 720 (fitted to the window)
OBJECTIVE_PLOT_SIZES = ((470.0, 240.0), (700.0, 300.0), (910.0, 360.0), (1150.0, 250.0))


def _short_verdict(verdicts: Sequence[str]) -> str:
    """A method's verdicts (one per start) in at most two lines: the distinct outcomes, then what
    dominates them -- the first name and how many more ("dominated by ★ both optimal +2"); hover and
    the table below the chart give every name."""
    heads, by = [], []
    for v in verdicts:
        head, _, dom = str(v).partition(" · dominated by ")
        heads.append(head)
        by += [n.strip() for n in dom.split(",") if n.strip()]
    heads, by = list(dict.fromkeys(h for h in heads if h)), list(dict.fromkeys(by))
    text = " / ".join(heads)
    if by:
        text += "<br>dominated by " + by[0] + (f" +{len(by) - 1}" if len(by) > 1 else "")
    return text


def _verdict_labels(ends: np.ndarray, methods: list[str], verdicts: list[list[str]], log: bool,
                    hidden: bool, xr: list[float], yr: list[float], method_label: Any = theme.method_label,
                    method_color: Any = theme.method_color, plot_px: tuple[float, float] | None = None,
                    text_scale: float = 1.0) -> list[dict]:
    """One label per verdict (the methods whose every end point has it) with a line to their mean end
    point, placed by :func:`pcd.viz.labels.place` in data units clear of every end point and of the
    other labels on each plot size of :data:`OBJECTIVE_PLOT_SIZES` (the full verdict on hover);
    ``method_label`` / ``method_color``: the runs' names and colours (the lesson's τ runs are not methods);
    ``plot_px``: the plot's own size (w, h) besides those, e.g. the narrow panel beside the map in presenter
    mode, with the smallest width and height of them all as the first, most cramped, case; ``text_scale``:
    the labels' font that much larger (:func:`pcd.viz.labels.label_px`)."""
    from pcd.viz.labels import RINGS, label_px, place, plots_for, text_size

    font_px = label_px(12, text_scale)

    groups: dict[str, list[int]] = {}  # methods with the same short verdict share one label
    for m in range(len(methods)):
        groups.setdefault(_short_verdict(verdicts[m]), []).append(m)
    sizes: tuple[tuple[float, float], ...] = OBJECTIVE_PLOT_SIZES
    if plot_px is not None:
        sizes = ((min(plot_px[0], sizes[0][0]), min(plot_px[1], sizes[0][1])), *sizes, plot_px)
    plots = plots_for(xr, yr, sizes, log_x=log, log_y=log)
    allp = ends.reshape(-1, 2)
    allp = allp[np.isfinite(allp).all(axis=1) & ((allp > 0).all(axis=1) if log else True)]
    ends_obs: list[tuple[float, ...]] = [(float(x), float(y), 0.0, 0.0, 14.0, 14.0, 0.0) for x, y in allp]
    p0 = plots[0]

    def place_all(first: list[int]) -> tuple[list[dict], list[float], list[float]]:
        """Every label, the ``g``-th from its ``first[g]``-th shortening on (see below); with each one's
        room and box area."""
        obstacles = list(ends_obs)
        out, rooms, areas = [], [], []
        for g, (verdict, ms) in enumerate(groups.items()):
            pts = ends[ms].reshape(-1, 2)
            pts = pts[np.isfinite(pts).all(axis=1)]
            if not len(pts) or not verdict:
                rooms.append(0.0)
                areas.append(0.0)
                continue
            c = np.exp(np.log(pts).mean(axis=0)) if log else pts.mean(axis=0)
            x, y = (np.log10(c) if log else c).tolist()
            names = [method_label(methods[m]) for m in ms]
            who = "<br>".join(" · ".join(names[i:i + 3]) for i in range(0, len(names), 3))
            # the full label where it has a clear place; else without what dominates it; else with the
            # verdict's first words ("Pareto-stationary": presenter mode's larger font in a narrow panel);
            # else the names alone (hover and the table give the rest)
            head = verdict.split("<br>")[0]
            tries = list(dict.fromkeys((f"<b>{who}</b><br>" + verdict, f"<b>{who}</b><br>" + head,
                                        f"<b>{who}</b><br>" + head.split(":")[0].split(" at ")[0], f"<b>{who}</b>")))
            for text in tries[min(first[g], len(tries) - 1):]:
                size = text_size(text, font_px)
                [((dx, dy), room)] = place([c], [size], plots, obstacles, offsets=RINGS, data=True)
                if room >= 0:
                    break
            rooms.append(room)
            areas.append(size[0] * size[1] if first[g] < len(tries) - 1 else 0.0)  # 0: as short as it gets
            obstacles.append((float(c[0]), float(c[1]), dx * p0.w / (xr[1] - xr[0]), -dy * p0.h / (yr[1] - yr[0]),
                              size[0], size[1], 1.0))
            color = method_color(methods[ms[0]]) if len(ms) == 1 else theme.INK
            out.append(dict(x=x, y=y, xref="x", yref="y", text=text, showarrow=True, arrowhead=0, arrowwidth=1,
                            arrowcolor=theme.MUTED, standoff=6, ax=x + dx, ay=y + dy, axref="x", ayref="y",
                            hovertext="<br>".join(f"{method_label(methods[m])}: "
                                                  f"{' / '.join(dict.fromkeys(verdicts[m]))}" for m in ms),
                            font=dict(size=font_px, color=color), bgcolor="rgba(255,255,255,0.9)",
                            bordercolor=theme.BORDER, borderwidth=1, borderpad=3, align="left", name="end label",
                            **({"visible": False} if hidden else {})))
        return out, rooms, areas

    # a label with no clear place even as names alone: the largest label placed before it one shortening
    # further (it took the room), until every label has a clear place or none before it can give more
    first = [0] * len(groups)
    for _ in range(4 * len(groups)):
        out, rooms, areas = place_all(first)
        bad = next((k for k, r in enumerate(rooms) if r < 0), None)
        if bad is None or not any(areas[:bad]):
            break
        first[max(range(bad), key=lambda j: areas[j])] += 1
    return out
