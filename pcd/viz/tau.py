"""τ-dial figure (page 5): PCD's trade-off curve (primary vs secondary loss) as τ moves, one
curve per step budget, with the problem's Pareto front; points selectable.

Input: the records of :func:`pcd.experiments.synthetic.tau_sweep` (``tau``, ``losses`` = mean
final losses over the starts, ``start_losses`` ``[S, K]``, ``cms_fraction``, optional
``budgets[b]`` with the same fields plus ``moving_fraction``).

Honesty rules: a point where some start is still moving at that budget is *not* an end point,
so it is drawn open (hover says "still moving"); only points where every start has ended are
filled. On a log axis exact zeros (and values below ``ZERO_FLOOR``) cannot be drawn, so they sit
on a floor line labelled "0" instead of disappearing (a zero-safe axis).
"""
from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np
import plotly.graph_objects as go

from pcd.viz import theme
from pcd.viz.theme import base_layout, method_color, method_label, method_style, outcome_label, rgba, style_axes

ZERO_FLOOR = 1e-12   # values below this are drawn on the "0" line of a log axis
_BUDGET_ALPHA = (0.35, 0.55, 0.75, 1.0)
_SUP = str.maketrans("-0123456789", "⁻⁰¹²³⁴⁵⁶⁷⁸⁹")


def tau_text(t: float) -> str:
    """``0.02 -> "τ = 0.02"`` (always the Greek letter, never 'tau')."""
    return f"τ = {float(t):g}"


def _check(records: Sequence[dict]) -> list[dict]:
    recs = list(records or [])
    if not recs:
        raise ValueError("no τ records to plot (give at least one τ)")
    for r in recs:
        if "tau" not in r or "losses" not in r:
            raise ValueError("each record needs 'tau' and 'losses' (see pcd.experiments.synthetic.tau_sweep)")
        if len(r["losses"]) < 2:
            raise ValueError("the τ dial needs at least two objectives")
    return sorted(recs, key=lambda r: r["tau"])


def budgets_of(records: Sequence[dict]) -> list[int]:
    """The step budgets every record carries (empty when the sweep had none)."""
    recs = _check(records)
    common = None
    for r in recs:
        b = {int(k) for k in (r.get("budgets") or {})}
        common = b if common is None else common & b
    return sorted(common or [])


def _zero_safe(values: np.ndarray) -> tuple[np.ndarray, dict]:
    """Values for a log axis: those below ``ZERO_FLOOR`` moved onto the floor; the axis ticks
    (decades, superscript exponents, the floor labelled "0")."""
    v = np.asarray(values, dtype=float)
    finite = v[np.isfinite(v)]
    top = float(finite.max()) if finite.size and finite.max() > ZERO_FLOOR else 1.0
    pos = finite[finite >= ZERO_FLOOR]
    lo_dec = int(math.floor(math.log10(pos.min()))) if pos.size else int(math.log10(ZERO_FLOOR))
    hi_dec = int(math.ceil(math.log10(top)))
    floor_dec = min(lo_dec, hi_dec) - 1
    floor = 10.0 ** max(floor_dec, int(math.log10(ZERO_FLOOR)) - 1)
    shown = np.where(np.isfinite(v) & (v < ZERO_FLOOR), floor, v)
    decades = list(range(int(round(math.log10(floor))) + 1, hi_dec + 1))
    step = max(1, int(math.ceil(len(decades) / 8)))
    decades = decades[::-1][::step][::-1]
    tickvals = [floor] + [10.0 ** d for d in decades]
    ticktext = [f"0 (< 10{str(int(math.log10(ZERO_FLOOR))).translate(_SUP)})"] + \
        [f"10{str(d).translate(_SUP)}" for d in decades]
    axis = dict(type="log", tickvals=tickvals, ticktext=ticktext,
                range=[math.log10(floor) - 0.3, hi_dec + 0.2])
    return shown, axis


def tradeoff_figure(records: Sequence[dict], pareto_front: Any = None, selected: float | None = None,
                    log_axes: bool = False, height: int = 520, references: dict | None = None,
                    text_scale: float = 1.0) -> go.Figure:
    """Trade-off curve(s) in loss space: x = primary f₁, y = secondary f₂ (mean over the starts).

    With budgets: one curve per step budget (lighter = fewer steps), else one curve at the end.
    Every curve's points carry ``customdata = [τ, budget, outcome]`` so a click identifies τ;
    trace 0 is the largest budget's curve. Points still moving are open markers. ``selected``
    τ is ringed on the largest budget. ``log_axes`` gives zero-safe log axes. ``references``
    (:func:`pcd.experiments.synthetic.tau_references`): where other methods end after the largest
    budget, one marker each in the method's colour and family marker (a method with an ``error``
    has none: the page says why). ``text_scale``: the τ labels' font that much larger, placed for it
    (presenter mode, :func:`pcd.viz.labels.label_px`).
    """
    recs = _check(records)
    taus = np.array([r["tau"] for r in recs], dtype=float)
    budgets = budgets_of(recs)
    col = method_color("pcd")
    curves: list[tuple[int | None, np.ndarray, list[str], np.ndarray]] = []
    for b in (budgets[::-1] if budgets else [None]):
        src = [r["budgets"][b] if b is not None else r for r in recs]
        L = np.array([s["losses"][:2] for s in src], dtype=float)
        moving = np.array([float(s.get("moving_fraction", np.mean([d == "moving" for d in s.get("diagnosis", [])]
                                                                  or [0.0]))) for s in src])
        outcome = []
        for s in src:
            diags = list(s.get("diagnosis", []))
            words = sorted({outcome_label(d, "pcd", short=True) for d in diags})
            outcome.append(", ".join(words) if words else "")
        curves.append((b, L, outcome, moving))
    refs = {m: np.asarray(r["losses"][:2], dtype=float) for m, r in (references or {}).items()
            if not r.get("error") and r.get("losses") is not None}
    allv = np.concatenate([c[1].ravel() for c in curves] + [v for v in refs.values()])
    per = [(r["tau"], np.asarray(r.get("start_losses", []), dtype=float)) for r in recs]
    pf: np.ndarray | None
    if pareto_front is not None:
        pf = np.asarray(pareto_front, dtype=float)
        if not (pf.ndim == 2 and pf.shape[1] >= 2 and len(pf) >= 1):
            pf = None
    else:
        pf = None
    xaxis: dict = {"type": "linear"}
    yaxis: dict = {"type": "linear"}
    if log_axes:
        xs = np.concatenate([allv[0::2]] + ([pf[:, 0]] if pf is not None else []))
        ys = np.concatenate([allv[1::2]] + ([pf[:, 1]] if pf is not None else []))
        _, xaxis = _zero_safe(xs)
        _, yaxis = _zero_safe(ys)
        fx = lambda v: _zero_safe_with(v, xaxis)  # noqa: E731
        fy = lambda v: _zero_safe_with(v, yaxis)  # noqa: E731
    else:
        fx = fy = lambda v: np.asarray(v, dtype=float)
    fig = go.Figure()
    for j, (b, L, outcome, moving) in enumerate(curves):
        alpha = _BUDGET_ALPHA[::-1][j] if j < len(_BUDGET_ALPHA) else _BUDGET_ALPHA[0]
        ended = moving <= 0.0
        name = f"PCD after {b} steps" if b is not None else "PCD, mean over starts"
        fig.add_trace(go.Scatter(
            x=fx(L[:, 0]), y=fy(L[:, 1]), mode="lines+markers", name=name, legendgroup=f"b{b}",
            customdata=np.c_[taus, np.full(len(taus), -1 if b is None else b),
                             np.array([o if e else f"still moving ({100 * m:.0f} % of starts)"
                                       for o, e, m in zip(outcome, ended, moving)], dtype=object),
                             L[:, 0], L[:, 1]],
            line=dict(color=rgba(col, alpha), width=2.5 if j == 0 else 1.8, dash="solid" if j == 0 else "dot"),
            marker=dict(size=[12 if e else 11 for e in ended],
                        symbol=["circle" if e else "circle-open" for e in ended],
                        color=[rgba(col, alpha) if e else "white" for e in ended],
                        line=dict(color=rgba(col, alpha), width=2)),
            hovertemplate="τ = %{customdata[0]:.3g}, %{customdata[1]} steps<br>f₁ = %{customdata[3]:.4g}<br>"
                          "f₂ = %{customdata[4]:.4g}<br>%{customdata[2]}<extra></extra>"))
    b0, L0, _, _ = curves[0]
    px = [p[i, 0] for t, p in per if p.ndim == 2 and p.shape[1] >= 2 for i in range(len(p))]
    py = [p[i, 1] for t, p in per if p.ndim == 2 and p.shape[1] >= 2 for i in range(len(p))]
    pt = [t for t, p in per if p.ndim == 2 and p.shape[1] >= 2 for _ in range(len(p))]
    if px:
        fig.add_trace(go.Scatter(x=fx(px), y=fy(py), mode="markers", name="single starts (largest budget)",
                                 customdata=np.c_[pt, px, py],
                                 marker=dict(size=6, color=rgba(col, 0.25)),
                                 # context only: no hover, so a click on a curve point is never taken by a
                                 # start of another τ lying under it (Plotly picks the nearest hover point)
                                 hoverinfo="skip"))
    if pf is not None:
        fig.add_trace(go.Scatter(x=fx(pf[:, 0]), y=fy(pf[:, 1]), mode="lines+markers" if len(pf) == 1 else "lines",
                                 name="Pareto front", line=dict(color=theme.FRONT, width=3, dash="dash"),
                                 marker=dict(size=12, symbol="star", color=theme.FRONT), customdata=pf[:, :2],
                                 hovertemplate="Pareto front<br>f₁ = %{customdata[0]:.4g}<br>f₂ = %{customdata[1]:.4g}"
                                               "<extra></extra>"))
    for m, L in refs.items():
        sty = method_style(m)
        fig.add_trace(go.Scatter(x=fx(L[[0]]), y=fy(L[[1]]), mode="markers", name=method_label(m), legendgroup=m,
                                 customdata=[[L[0], L[1]]],
                                 marker=dict(size=13, symbol=sty["symbol"], color=sty["color"],
                                             line=dict(color="white", width=1)),
                                 hovertemplate=f"<b>{method_label(m)}</b> (its defaults), mean over starts<br>"
                                               "f₁ = %{customdata[0]:.4g}<br>f₂ = %{customdata[1]:.4g}<extra></extra>"))
    if selected is not None:
        i = int(np.argmin(np.abs(taus - float(selected))))
        if abs(taus[i] - float(selected)) > 1e-9:
            raise ValueError(f"selected τ = {selected} is not in the sweep")
        fig.add_trace(go.Scatter(x=fx(L0[[i], 0]), y=fy(L0[[i], 1]), mode="markers", name=f"selected {tau_text(taus[i])}",
                                 marker=dict(size=24, color="rgba(0,0,0,0)", line=dict(color=theme.INK, width=3)),
                                 hoverinfo="skip"))
    fig.update_layout(**base_layout(height=height), clickmode="event+select")
    style_axes(fig)
    if xaxis["type"] == "log":  # room on the right for the τ labels (drawn right of their points)
        xaxis["range"] = [xaxis["range"][0], xaxis["range"][1] + 0.25 * (xaxis["range"][1] - xaxis["range"][0])]
    else:
        xs_all = np.concatenate([allv[0::2]] + ([pf[:, 0]] if pf is not None else []) + ([np.asarray(px)] if px else []))
        xs_all = xs_all[np.isfinite(xs_all)]
        if xs_all.size:
            lo, hi = float(xs_all.min()), float(xs_all.max())
            w = max(hi - lo, 1e-12)
            xaxis["range"] = [lo - 0.04 * w, hi + 0.22 * w]
    yaxis.setdefault("range", _linear_range(np.concatenate([allv[1::2]] + ([pf[:, 1]] if pf is not None else [])
                                                           + ([np.asarray(py)] if py else []))))
    fig.update_layout(annotations=tau_labels(taus, fx(L0[:, 0]), fy(L0[:, 1]), xaxis, yaxis,
                                             markers=[(fx(L[:, 0]), fy(L[:, 1]), 12.0) for _, L, _, _ in curves]
                                             + [(fx([v[0]]), fy([v[1]]), 13.0) for v in refs.values()]
                                             + ([(fx(L0[[i], 0]), fy(L0[[i], 1]), 24.0)] if selected is not None else []),
                                             text_scale=text_scale))
    fig.update_xaxes(title_text="primary f₁ (mean over starts)", **xaxis)
    fig.update_yaxes(title_text="secondary f₂ (mean over starts)", **yaxis)
    fig.update_layout(margin=dict(l=70, r=30, t=70, b=50))
    return fig


def _linear_range(values: Any) -> list[float]:
    """A linear axis' range for ``values`` with Plotly's ~6 % padding (fixed, so the τ labels are placed
    on the axis the browser draws)."""
    v = np.asarray(values, dtype=float)
    v = v[np.isfinite(v)]
    lo, hi = (float(v.min()), float(v.max())) if v.size else (0.0, 1.0)
    pad = 0.06 * max(hi - lo, 1e-12)
    return [lo - pad, hi + pad]


# the τ chart's plot area (w x h px) from a half-width column at 800 px to the lesson at 1920 px, and
# presenter mode's short, wide plot (1280 x 720)
TAU_PLOT_SIZES = ((300.0, 240.0), (420.0, 300.0), (560.0, 330.0), (760.0, 300.0), (1120.0, 200.0), (1150.0, 330.0))
TAU_LABEL_FONT = 12


def tau_labels(taus: Any, x: Any, y: Any, xaxis: dict, yaxis: dict, markers: Sequence[tuple[Any, Any, float]] = (),
               sizes: Sequence[tuple[float, float]] = TAU_PLOT_SIZES, text_scale: float = 1.0) -> list[dict]:
    """Labels "τ = …" for the first and last τ and for τ = 0.1 and 0.5 of the curve ``(x, y)`` (the
    values as drawn: on log axes the zero-safe ones), placed by :func:`pcd.viz.labels.place` clear of
    every marker (``markers``: ``(xs, ys, size px)``) and of each other on every plot size in ``sizes``,
    with a thin line to their point. A middle label with no clear place is left out (hover has it).
    ``text_scale``: the labels' font that much larger (:func:`pcd.viz.labels.label_px`)."""
    from pcd.viz.labels import label_px, place, plots_for, text_size

    font_px = label_px(TAU_LABEL_FONT, text_scale)

    taus = np.asarray(taus, dtype=float)
    x, y = np.asarray(x, dtype=float), np.asarray(y, dtype=float)
    log_x, log_y = xaxis.get("type") == "log", yaxis.get("type") == "log"
    plots = plots_for(xaxis["range"], yaxis["range"], sizes, log_x=log_x, log_y=log_y)
    first, last = 0, len(taus) - 1
    order = list(dict.fromkeys([first, last, int(np.argmin(np.abs(taus - 0.1))), int(np.argmin(np.abs(taus - 0.5)))]))
    order = [i for i in order if np.isfinite(x[i]) and np.isfinite(y[i])]
    obstacles = [(mx, my, 0.0, 0.0, size + 4.0, size + 4.0) for xs, ys, size in markers
                 for mx, my in zip(np.asarray(xs, dtype=float), np.asarray(ys, dtype=float))
                 if np.isfinite(mx) and np.isfinite(my)]
    out = []
    for i in order:  # one at a time: a middle label that finds no clear place is left out
        text = tau_text(taus[i])
        size = text_size(text, font_px)
        [((ax, ay), room)] = place([[x[i], y[i]]], [size], plots, obstacles)
        if room < 0 and i not in (first, last):
            continue
        obstacles.append((x[i], y[i], float(ax), float(ay), size[0], size[1]))
        out.append(dict(x=float(np.log10(x[i])) if log_x else float(x[i]),
                        y=float(np.log10(y[i])) if log_y else float(y[i]), xref="x", yref="y", text=text,
                        showarrow=True, arrowhead=0, arrowwidth=1, arrowcolor=theme.FAINT, ax=ax, ay=ay,
                        standoff=7, font=dict(size=font_px, color=theme.MUTED),
                        bgcolor="rgba(255,255,255,0.85)", borderpad=2, name="τ label"))
    return out


def _zero_safe_with(values: Any, axis: dict) -> np.ndarray:
    v = np.asarray(values, dtype=float)
    floor = axis["tickvals"][0]
    return np.where(np.isfinite(v) & (v < ZERO_FLOOR), floor, v)


def tau_table(records: Sequence[dict]):
    """One row per τ: mean losses at the largest budget (or the end), share of starts that reached
    a CMS point, outcomes in words, and per budget the share of starts still moving."""
    import pandas as pd

    recs = _check(records)
    budgets = budgets_of(recs)
    rows = []
    for r in recs:
        row: dict[str, Any] = {"τ": r["tau"]}
        for k, v in enumerate(r["losses"]):
            row[f"mean f{k + 1}"] = float(v)
        row["reached CMS"] = f"{100 * float(r.get('cms_fraction', np.nan)):.0f} %"
        counts: dict[str, int] = {}
        for d in r.get("diagnosis", []):
            w = outcome_label(d, r.get("method", "pcd"), short=True)
            counts[w] = counts.get(w, 0) + 1
        row["outcome"] = ", ".join(f"{w} ×{c}" if c > 1 else w for w, c in counts.items())
        if budgets:
            row[f"still moving after {' / '.join(map(str, budgets))} steps"] = " / ".join(
                f"{100 * r['budgets'][b]['moving_fraction']:.0f} %" for b in budgets)
        rows.append(row)
    return pd.DataFrame(rows)
