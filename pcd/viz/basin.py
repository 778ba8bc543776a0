"""Basin-map figures: one small map per method, each start point coloured by its outcome.

Pure function (data in, ``go.Figure`` out)::

    from pcd.experiments.basin import basin
    from pcd.viz.basin import basin_figure
    fig = basin_figure(basin("saddle2d", ["pcd", "ws"], grid=100))

Each map is a heatmap of the outcome codes over the start grid (colour = outcome, the same five
colours everywhere, legend on top), titled with the method and the fraction of starts per
outcome. Over it lies an invisible marker per start (trace name ``"starts: <method>"``, with
``customdata = [end x, end y]`` rounded to 1e-3) that carries the hover text (start, end point,
outcome) and the click a page turns into "open this start on the toy page".
"""
from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from pcd.engine import OUTCOME_WORDS, OUTCOMES
from pcd.viz.theme import INK, OUTCOME_COLORS, STAR_GOLD, base_layout, method_label, outcome_label

__all__ = ["basin_figure", "legend_html", "OUTCOME_COLORS", "OUTCOME_SHORT", "fractions_text"]

# the words are the engine's (pcd.engine.OUTCOME_WORDS), the colours the theme's
OUTCOME_NAMES = {k: OUTCOME_WORDS[k][1] for k in OUTCOMES}
OUTCOME_SHORT = {k: OUTCOME_WORDS[k][0] for k in OUTCOMES}


def fractions_text(fractions: dict[str, float], sep: str = " · ") -> str:
    """``"CMS 78 % · moving 18 % · ..."`` (outcomes with a zero fraction left out)."""
    parts = [f"{OUTCOME_SHORT[k]} {100 * fractions.get(k, 0.0):.0f} %" for k in OUTCOMES if fractions.get(k, 0.0) > 0]
    return sep.join(parts) or "no starts"


def legend_html() -> str:
    """The outcome colours as one line of HTML (for pages that draw the maps as separate figures)."""
    return " &nbsp; ".join(f"<span style='color:{OUTCOME_COLORS[k]};font-size:1.2em'>&#9632;</span> {OUTCOME_NAMES[k]}"
                           for k in OUTCOMES)


def _hover_label(outcome: str, diagnosis: str, method: str) -> str:
    """The outcome class, with the engine's finer wording where it says more (e.g. PCD's update
    halting where grad f1 = 0, or PCD held back by a constraint)."""
    text = OUTCOME_NAMES[outcome]
    if diagnosis == "primary_stationary" or (diagnosis == "conflict_equilibrium" and outcome == diagnosis):
        detail = outcome_label(diagnosis, method, short=True)
        if detail.lower() != text.lower() and not detail.startswith("stalled"):
            text = f"{text} ({detail})"
    return text


def _colorscale() -> list[list[Any]]:
    n = len(OUTCOMES)
    scale: list[list[Any]] = []
    for i, k in enumerate(OUTCOMES):
        scale.append([i / n, OUTCOME_COLORS[k]])
        scale.append([(i + 1) / n, OUTCOME_COLORS[k]])
    return scale


def basin_figure(res: Any, methods: Sequence[str] | None = None, columns: int = 3, height: int | None = None,
                 optima: Any = None, title: str | None = None, hover: bool = True, legend: bool = True) -> go.Figure:
    """Side-by-side basin maps of a :class:`pcd.experiments.basin.BasinResult`.

    ``methods``: which maps (default: all, in the result's order); ``columns``: maps per row;
    ``optima [Q, 2]``: points drawn as gold stars (e.g. ``problem.optima()``); ``hover=False``
    leaves out the per-start hover/click markers (a lighter figure, e.g. for a static export);
    ``legend=False`` leaves out the outcome legend (a page drawing one small map per method shows
    :func:`legend_html` once instead).
    """
    names = list(res.methods if methods is None else methods)
    if not names:
        raise ValueError("basin_figure: no methods to draw")
    for name in names:
        res.index(name)  # ValueError naming the methods that ran
    columns = int(columns)
    if not 1 <= columns <= 8:
        raise ValueError(f"basin_figure: columns must be in [1, 8], got {columns}")
    cols = min(columns, len(names))
    rows = -(-len(names) // cols)
    titles = [f"<b>{method_label(m)}</b><br><span style='font-size:0.8em'>{fractions_text(res.fractions(m))}</span>"
              for m in names]
    fig = make_subplots(rows=rows, cols=cols, subplot_titles=titles, horizontal_spacing=0.04,
                        vertical_spacing=0.16 / max(rows, 1) + 0.06, shared_yaxes=False)
    xs, ys = np.asarray(res.xs, dtype=float), np.asarray(res.ys, dtype=float)
    (x0, x1), (y0, y1) = res.bounds
    n = int(res.n)
    lut = {k: i for i, k in enumerate(OUTCOMES)}
    gx, gy = np.meshgrid(xs, ys)
    gx, gy = np.round(gx.ravel(), 3), np.round(gy.ravel(), 3)
    stars = None if optima is None else np.asarray(optima, dtype=float).reshape(-1, 2)
    for idx, name in enumerate(names):
        r, c = idx // cols + 1, idx % cols + 1
        m = res.index(name)
        out = np.asarray(res.outcome[m])
        codes = np.array([lut[str(v)] for v in out], dtype=float).reshape(n, n)
        fig.add_trace(go.Heatmap(x=xs, y=ys, z=codes, zmin=-0.5, zmax=len(OUTCOMES) - 0.5, colorscale=_colorscale(),
                                 showscale=False, hoverinfo="skip", name=f"map: {name}"), row=r, col=c)
        if hover:
            ends = np.asarray(res.ends[m], dtype=float)
            custom = np.round(ends, 3)  # [S, 2] end points (a start's index is res.start_index(x, y))
            labels = [_hover_label(str(v), str(d), name) for v, d in zip(out, res.diagnosis[m])]
            fig.add_trace(go.Scattergl(
                x=gx, y=gy, mode="markers", name=f"starts: {name}", showlegend=False, text=labels,
                customdata=custom, marker=dict(size=6, color="rgba(0,0,0,0)", opacity=0),
                hovertemplate=(f"<b>{method_label(name)}</b><br>start (%{{x:.3f}}, %{{y:.3f}})<br>"
                               "end (%{customdata[0]:.3f}, %{customdata[1]:.3f})<br>%{text}<extra></extra>")),
                row=r, col=c)
        if stars is not None and stars.size:
            fig.add_trace(go.Scatter(x=stars[:, 0], y=stars[:, 1], mode="markers", name="CMS point",
                                     showlegend=idx == 0, hoverinfo="skip",
                                     marker=dict(symbol="star", size=13, color=STAR_GOLD,
                                                 line=dict(color=INK, width=1))), row=r, col=c)
        fig.update_xaxes(range=[x0, x1], constrain="domain", showgrid=False, zeroline=False, row=r, col=c,
                         ticks="outside", tickfont=dict(size=11))
        fig.update_yaxes(range=[y0, y1], showgrid=False, zeroline=False, row=r, col=c, ticks="outside",
                         tickfont=dict(size=11))
    for k in OUTCOMES if legend else ():  # legend keys
        fig.add_trace(go.Scatter(x=[None], y=[None], mode="markers", name=OUTCOME_NAMES[k], hoverinfo="skip",
                                 marker=dict(symbol="square", size=12, color=OUTCOME_COLORS[k])))
    per_row = 300 if cols >= 3 else 360
    top, bottom = (150 if title else 120) if legend else (75 if title else 55), 40
    h = int(height or (top + bottom + per_row * rows))
    fig.update_layout(**base_layout(title, height=h), hovermode="closest", dragmode=False, clickmode="event+select")
    # legend above the subplot titles (they take ~45 px over the first row of maps)
    fig.update_layout(legend=dict(y=1.0 + 48.0 / max(h - top - bottom, 1), yanchor="bottom", font=dict(size=12)),
                      margin=dict(l=50, r=20, t=top, b=bottom), showlegend=legend)
    for a in fig.layout.annotations:  # subplot titles: a little smaller than the page title
        a.font = dict(size=14)
    return fig
