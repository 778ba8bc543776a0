"""τ-dial figure (page 5): PCD's trade-off curve (final primary vs final secondary) as τ moves,
with the problem's Pareto front; points coloured by τ and selectable.

Input: the records of :func:`pcd.experiments.synthetic.tau_sweep` (``tau``, ``losses`` = mean
final losses over the starts, ``start_losses`` ``[S, K]``, ``cms_fraction``).
"""
from __future__ import annotations

from typing import Any, Sequence

import numpy as np
import plotly.graph_objects as go

from pcd.viz.theme import base_layout, method_color, style_axes

TAU_SCALE = "Reds"


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


def tradeoff_figure(records: Sequence[dict], pareto_front: Any = None, selected: float | None = None,
                    log_axes: bool = False, height: int = 520) -> go.Figure:
    """Trade-off curve in loss space: x = final primary f₁, y = final secondary f₂ (mean over the
    starts), one marker per τ (colour = τ), the per-start end points faint, the Pareto front as a
    line; ``selected`` τ highlighted. Trace 0 is the curve (its points carry ``customdata = τ``
    so a click or selection identifies the τ)."""
    recs = _check(records)
    taus = np.array([r["tau"] for r in recs], dtype=float)
    L = np.array([r["losses"][:2] for r in recs], dtype=float)
    col = method_color("pcd")
    fig = go.Figure()
    fig.add_trace(go.Scatter(
        x=L[:, 0], y=L[:, 1], mode="lines+markers", name="PCD, mean over starts", customdata=taus,
        line=dict(color=col, width=2),
        marker=dict(size=12, color=taus, colorscale=TAU_SCALE, cmin=0, cmax=1, line=dict(color=col, width=1.5),
                    colorbar=dict(title=dict(text="τ"), thickness=14, len=0.7)),
        hovertemplate="τ = %{customdata:.3g}<br>f₁ = %{x:.4g}<br>f₂ = %{y:.4g}<extra></extra>"))
    per = [(r["tau"], np.asarray(r.get("start_losses", []), dtype=float)) for r in recs]
    px = [p[i, 0] for t, p in per if p.ndim == 2 and p.shape[1] >= 2 for i in range(len(p))]
    py = [p[i, 1] for t, p in per if p.ndim == 2 and p.shape[1] >= 2 for i in range(len(p))]
    pt = [t for t, p in per if p.ndim == 2 and p.shape[1] >= 2 for _ in range(len(p))]
    if px:
        fig.add_trace(go.Scatter(x=px, y=py, mode="markers", name="single starts", customdata=pt,
                                 marker=dict(size=6, color="rgba(214,39,40,0.25)"),
                                 hovertemplate="τ = %{customdata:.3g} (one start)<br>f₁ = %{x:.4g}<br>f₂ = %{y:.4g}<extra></extra>"))
    if pareto_front is not None:
        pf = np.asarray(pareto_front, dtype=float)
        if pf.ndim == 2 and pf.shape[1] >= 2 and len(pf) >= 1:
            fig.add_trace(go.Scatter(x=pf[:, 0], y=pf[:, 1], mode="lines+markers" if len(pf) == 1 else "lines",
                                     name="Pareto front", line=dict(color="#8250df", width=3, dash="dash"),
                                     marker=dict(size=12, symbol="star", color="#8250df"),
                                     hovertemplate="Pareto front<br>f₁ = %{x:.4g}<br>f₂ = %{y:.4g}<extra></extra>"))
    if selected is not None:
        i = int(np.argmin(np.abs(taus - float(selected))))
        if abs(taus[i] - float(selected)) > 1e-9:
            raise ValueError(f"selected τ = {selected} is not in the sweep")
        fig.add_trace(go.Scatter(x=[L[i, 0]], y=[L[i, 1]], mode="markers+text", name=f"τ = {taus[i]:g}",
                                 text=[f"τ = {taus[i]:g}"], textposition="top right",
                                 marker=dict(size=24, color="rgba(0,0,0,0)", line=dict(color="#24292f", width=3)),
                                 hoverinfo="skip"))
    fig.update_layout(**base_layout(height=height), clickmode="event+select")
    style_axes(fig)
    axis_type = "log" if log_axes else "linear"
    fig.update_xaxes(title_text="final primary f₁", type=axis_type)
    fig.update_yaxes(title_text="final secondary f₂", type=axis_type)
    return fig


def tau_table(records: Sequence[dict]):
    """One row per τ: mean final losses, share of starts that reached a CMS point, diagnoses."""
    import pandas as pd

    recs = _check(records)
    rows = []
    for r in recs:
        row: dict[str, Any] = {"τ": r["tau"]}
        for k, v in enumerate(r["losses"]):
            row[f"mean final f{k + 1}"] = float(v)
        row["reached CMS"] = f"{100 * float(r.get('cms_fraction', np.nan)):.0f} %"
        row["diagnoses"] = ", ".join(r.get("diagnosis", []))
        rows.append(row)
    return pd.DataFrame(rows)
