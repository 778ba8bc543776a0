"""K-objective benchmark figure (page 3): final primary-gradient residual against K (log-log)
with the conflict-equilibrium law ``1.536 sqrt(K - 1)`` as a line (PCD paper, K-objective double well).

Input: the records of :func:`pcd.experiments.synthetic.kdw` (one dict per (K, method) with ``K``,
``method``, ``primary_grad_norm``, ``law``). Residuals below ``floor`` (exact zeros, machine
precision) are drawn at ``floor`` with open markers and labelled so.
"""
from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import plotly.graph_objects as go

from pcd.viz import theme
from pcd.viz.theme import base_layout, method_label, method_style, outcome_label, style_axes

LAW_COEF = 1.536


def law(K: Any) -> np.ndarray:
    """``1.536 sqrt(K - 1)``: the primary-gradient norm at the start ``x_j = -0.6`` (a
    Pareto-stationary point: 4 * 0.6 * 0.64 = 1.536 per coordinate)."""
    K = np.asarray(K, dtype=np.float64)
    if np.any(K < 2):
        raise ValueError("K must be >= 2")
    return LAW_COEF * np.sqrt(K - 1)


def _check_records(records: Sequence[dict]) -> list[dict]:
    recs = list(records or [])
    if not recs:
        raise ValueError("no benchmark records to plot (choose at least one K and one method)")
    for r in recs:
        for key in ("K", "method", "primary_grad_norm"):
            if key not in r:
                raise ValueError(f"each record needs {key!r} (see pcd.experiments.synthetic.kdw)")
    return recs


SYMBOLS = ("circle", "square", "diamond", "triangle-up", "triangle-down", "pentagon", "hexagon", "star", "cross", "x")
FLOOR_STEP = 0.22  # decades between methods drawn at the floor (so coinciding zeros stay visible)


def residual_figure(records: Sequence[dict], floor: float = 1e-16, height: int = 520) -> go.Figure:
    """Residual ``||grad f_1||`` at the end vs K, one line per method in its colour and its own
    marker symbol, plus the law. Residuals below ``floor`` (exact zeros) are drawn as open markers
    on a band under the floor line, each method on its own row ``floor * 10^(-0.22 j)`` so that
    methods that all reach zero (e.g. PCD and the weighted sum with Adam) are all visible; the
    hover gives the true value. Click a legend entry to hide a method, double-click to solo it."""
    recs = _check_records(records)
    floor = float(floor)
    if not floor > 0:
        raise ValueError(f"floor must be > 0, got {floor}")
    Ks = sorted({int(r["K"]) for r in recs})
    methods = list(dict.fromkeys(r["method"] for r in recs))
    fig = go.Figure()
    kk = np.geomspace(max(2, Ks[0]), max(Ks[-1], Ks[0] + 1), 100)
    fig.add_trace(go.Scatter(x=[kk[0], kk[-1]], y=[floor, floor], mode="lines",
                             name=f"< {floor:g}: exactly 0 or machine precision (one row per method below)",
                             line=dict(color=theme.FAINT, width=1, dash="dot"), hoverinfo="name"))
    for j, m in enumerate(methods):
        rows = sorted((r for r in recs if r["method"] == m), key=lambda r: r["K"])
        x = np.array([r["K"] for r in rows], dtype=float)
        raw = np.array([r["primary_grad_norm"] for r in rows], dtype=float)
        below = np.isfinite(raw) & (raw < floor)
        y = np.where(np.isfinite(raw), np.where(below, floor * 10.0 ** (-FLOOR_STEP * (j + 1)), raw), np.nan)
        diag = [outcome_label(str(r.get("diagnosis", "")), m) for r in rows]
        st = method_style(m)  # colour, dash (its place in its family), marker (its family's)
        sym = st["symbol"] if st["family"] else SYMBOLS[j % len(SYMBOLS)]
        fig.add_trace(go.Scatter(
            x=x, y=y, mode="lines+markers", name=method_label(m), legendgroup=m,
            line=dict(color=st["color"], width=2.5, dash=st["dash"]),
            marker=dict(color=st["color"], size=11, symbol=[f"{sym}-open" if b else sym for b in below],
                        line=dict(width=2, color=st["color"])),
            customdata=np.c_[raw, np.array(diag, dtype=object)],
            hovertemplate=f"<b>{method_label(m)}</b><br>K = %{{x:.0f}}<br>‖∇f₁‖ = %{{customdata[0]:.3e}}"
                          "<br>%{customdata[1]}<extra></extra>"))
    # the law on top (dashed), so it stays visible where a method sits exactly on it
    fig.add_trace(go.Scatter(x=kk, y=law(kk), mode="lines", name="law 1.536·√(K−1)",
                             line=dict(color=theme.INK, width=2, dash="dash"),
                             hovertemplate="K = %{x:.0f}<br>1.536·√(K−1) = %{y:.4f}<extra></extra>"))
    fig.update_layout(**base_layout(height=height))
    style_axes(fig)
    fig.update_xaxes(type="log", title_text="number of objectives K", tickvals=Ks, ticktext=[str(k) for k in Ks])
    fig.update_yaxes(type="log", title_text="final ‖∇f₁‖ (primary-gradient residual)", exponentformat="power")
    return fig


def law_summary(records: Sequence[dict]):
    """One row per method: residual / law over K (min … max) and the verdict of
    :func:`pcd.experiments.kdw_law.verdicts` (follows the law, crosses, stalls below the law, or
    which K end where). Records without ``ratio`` / ``end_mean`` get them from ``K`` (``end_mean``
    unknown: read as not crossed)."""
    from pcd.experiments.kdw_law import verdicts

    recs = [{**r, "ratio": r.get("ratio", r["primary_grad_norm"] / float(law(r["K"]))),
             "end_mean": r.get("end_mean", -0.6)} for r in _check_records(records)]
    return verdict_table(verdicts(recs))


def verdict_table(rows: Sequence[dict]):
    """The rows of :func:`pcd.experiments.kdw_law.verdicts` as a table: method, residual / law
    (min … max over K), outcome (the verdict)."""
    import pandas as pd

    return pd.DataFrame([{"method": method_label(v["method"]),
                          "residual / law": f"{v['ratio_min']:.3g} … {v['ratio_max']:.3g}",
                          "outcome": v["verdict"]} for v in rows])


def residual_table(records: Sequence[dict]):
    """Wide table: one row per K, one residual column per method, the law and each method's ratio."""
    import pandas as pd

    recs = _check_records(records)
    Ks = sorted({int(r["K"]) for r in recs})
    methods = list(dict.fromkeys(r["method"] for r in recs))
    rows = []
    for K in Ks:
        row: dict[str, Any] = {"K": K, "law 1.536·√(K−1)": float(law(K))}
        for m in methods:
            r = next((r for r in recs if r["K"] == K and r["method"] == m), None)
            row[method_label(m)] = np.nan if r is None else float(r["primary_grad_norm"])
        rows.append(row)
    return pd.DataFrame(rows)
