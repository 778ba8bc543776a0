"""Figures for "constraints vs fixed penalties" (seed 003, arXiv 2505.20628) with PCD alongside.

Pure functions: plain data (numbers, arrays, lists of dicts) in, ``go.Figure`` out; no Streamlit.
Colours: one per method family from :data:`pcd.viz.theme.METHOD_COLORS` (``penalty``, ``gda``,
``auglag``, ``nupi``, ``pcd``); several fixed penalties share the penalty colour and differ by
dash. Sweeps over ``c`` and ``eta`` use log x axes (the narrow window vs the plateau).
"""
from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from pcd.experiments.constraints._common import FAMILY_LABELS
from pcd.viz import theme
from pcd.viz.theme import METHOD_COLORS as COLORS
from pcd.viz.theme import base_layout, rgba, style_axes

__all__ = [
    "FAMILIES", "family_color", "toy_landscape_figure", "toy_trajectory_figure", "epsilon_figure",
    "decision_boundary_figure", "rate_sweep_figure", "rate_history_figure", "bisection_figure",
    "cost_figure",
]

# Reference lines (targets, x*, λ*) are drawn ABOVE the data, in a neutral ink (not PCD's red), their
# labels on a white backing so a marker under them never hides the text.
REFERENCE = theme.INK
_REF_LABEL = dict(bgcolor="rgba(255,255,255,0.85)", font=dict(size=12, color=REFERENCE))
FAMILIES = ("penalty", "gda", "auglag", "nupi", "pcd")
LABELS = FAMILY_LABELS
_DASHES = ("dot", "dash", "dashdot", "longdash", "longdashdot", "solid")
HALF_PI = math.pi / 2


_LEGEND_RIGHT = dict(orientation="v", x=1.01, y=1.0, xanchor="left", yanchor="top", bgcolor="rgba(255,255,255,0.7)")
_LEGEND_BELOW = dict(orientation="h", x=0.0, y=-0.22, xanchor="left", yanchor="top", bgcolor="rgba(255,255,255,0.7)")


def family_color(family: str) -> str:
    """The colour of a method family (``ValueError`` for an unknown one)."""
    if family not in FAMILIES:
        raise ValueError(f"unknown method family {family!r}; allowed: {', '.join(FAMILIES)}")
    return COLORS[family]


def _arr(values: Any, name: str, ndim: int = 1) -> np.ndarray:
    try:
        a = np.asarray(values, dtype=np.float64)
    except (TypeError, ValueError):
        raise ValueError(f"{name} must be numbers") from None
    if a.ndim != ndim:
        raise ValueError(f"{name} must be a {ndim}-D array, got shape {a.shape}")
    return a


def _check_eps(eps: float) -> float:
    e = float(eps)
    if not 0 < e < 1:
        raise ValueError(f"epsilon must lie strictly between 0 and 1, got {eps!r}")
    return e


def _check_c(c: float) -> float:
    cc = float(c)
    if not (math.isfinite(cc) and cc >= 0):
        raise ValueError(f"penalty coefficient c must be finite and >= 0, got {c!r}")
    return cc


# ---- 1-D example -------------------------------------------------------------------------------

def toy_landscape_figure(c: float, eps: float, finals: Sequence[Mapping[str, Any]] = (), n: int = 300) -> go.Figure:
    """``cos x`` (the objective) and ``P_c(x) = cos x + c sin x`` on [0, pi/2], the feasible region
    ``sin x <= eps`` shaded, ``x* = arcsin eps`` marked, and where each method ended.

    ``finals``: ``[{"label", "family", "x"}]`` -- a marker per method at ``(x, cos x)``.
    """
    cc, e = _check_c(c), _check_eps(eps)
    xs = np.linspace(0.0, HALF_PI, int(n))
    x_star = math.asin(e)
    fig = go.Figure()
    fig.add_vrect(x0=0.0, x1=x_star, fillcolor=rgba(theme.SERIES_GREEN, 0.10), line_width=0, layer="below",
                  annotation_text="feasible: sin x ≤ ε", annotation_position="top left")
    fig.add_trace(go.Scatter(x=xs, y=np.cos(xs), mode="lines", name="objective cos x",
                             line=dict(color=theme.INK, width=2)))
    fig.add_trace(go.Scatter(x=xs, y=np.cos(xs) + cc * np.sin(xs), mode="lines",
                             name=f"penalty objective cos x + {cc:g}·sin x",
                             line=dict(color=COLORS["penalty"], width=2, dash="dash")))
    fig.add_vline(x=x_star, line=dict(color=REFERENCE, width=1.5, dash="dot"), layer="above", annotation=_REF_LABEL,
                  annotation_text=f"x* = arcsin ε = {x_star:.3f}", annotation_position="bottom right")
    for i, f in enumerate(finals):
        fam = f.get("family", "")
        x = float(f["x"])
        if not math.isfinite(x):
            continue
        fig.add_trace(go.Scatter(
            x=[x], y=[math.cos(x)], mode="markers", name=f"{f.get('label', fam)} ends at x = {x:.3f}",
            marker=dict(color=family_color(fam), size=13 - (i % 3) * 2, line=dict(color="white", width=1),
                        symbol=("circle", "diamond", "square", "triangle-up", "x", "star")[i % 6])))
    fig.update_layout(**base_layout("Where each method ends on the 1-D example", height=440),
                      xaxis_title="x", yaxis_title="value")
    fig.update_layout(legend=_LEGEND_RIGHT)
    fig.update_xaxes(range=[-0.02, HALF_PI + 0.02])
    return style_axes(fig)


def toy_trajectory_figure(traces: Sequence[Mapping[str, Any]], x_star: float, lam_star: float,
                          lam_max: float | None = None) -> go.Figure:
    """x_t (top) and the multiplier lambda_t (bottom) over steps, one line per method.

    ``traces``: ``[{"label", "family", "x": [T+1], "lam": [T+1]}]`` (``lam`` may be all NaN, e.g.
    for PCD). The lambda panel is clipped at ``lam_max`` (default ``3 lambda* + 0.5``) so that a
    diverging multiplier does not flatten the others; those are listed in an annotation.
    """
    if not traces:
        raise ValueError("need at least one trajectory")
    fig = make_subplots(rows=2, cols=1, shared_xaxes=True, vertical_spacing=0.08,
                        subplot_titles=("x over steps", "multiplier λ over steps"))
    lam_max = 3.0 * float(lam_star) + 0.5 if lam_max is None else float(lam_max)
    off = []
    for i, t in enumerate(traces):
        fam = t["family"]
        x = _arr(t["x"], "x")
        lam = _arr(t["lam"], "lam")
        if lam.shape != x.shape:
            raise ValueError(f"x and lam must have the same length, got {x.shape} and {lam.shape}")
        color = family_color(fam)
        dash = _DASHES[i % len(_DASHES)] if fam == "penalty" else "solid"
        steps = np.arange(x.size)
        fig.add_trace(go.Scatter(x=steps, y=x, mode="lines", name=t.get("label", fam), legendgroup=t.get("label", fam),
                                 line=dict(color=color, width=2, dash=dash)), row=1, col=1)
        if np.isfinite(lam).any():
            fig.add_trace(go.Scatter(x=steps, y=lam, mode="lines", name=t.get("label", fam),
                                     legendgroup=t.get("label", fam), showlegend=False,
                                     line=dict(color=color, width=2, dash=dash)), row=2, col=1)
            last = lam[np.isfinite(lam)][-1]
            if abs(last) > lam_max:
                off.append(f"{t.get('label', fam)}: λ_T = {last:.3g}")
    fig.add_hline(y=float(x_star), line=dict(color=REFERENCE, dash="dot", width=1.5), layer="above",
                  annotation=_REF_LABEL, row=1, col=1,
                  annotation_text="x* = arcsin ε", annotation_position="top left")
    fig.add_hline(y=float(lam_star), line=dict(color=REFERENCE, dash="dot", width=1.5), layer="above",
                  annotation=_REF_LABEL, row=2, col=1,
                  annotation_text="λ* = ε/√(1−ε²)", annotation_position="top left")
    fig.update_yaxes(range=[-0.05, HALF_PI + 0.05], title_text="x", row=1, col=1)
    fig.update_yaxes(range=[-0.05 * lam_max, lam_max], title_text="λ", row=2, col=1)
    fig.update_xaxes(title_text="step", row=2, col=1)
    fig.update_layout(**base_layout("Trajectories", height=620))
    fig.update_layout(legend=_LEGEND_RIGHT)
    if off:
        fig.add_annotation(text="off scale: " + "; ".join(off), xref="paper", yref="paper", x=1.0, y=0.0,
                           xanchor="right", yanchor="bottom", showarrow=False, font=dict(size=12, color=theme.MUTED))
    return style_axes(fig)


def epsilon_figure(rows: Sequence[Mapping[str, Any]]) -> go.Figure:
    """Final x against eps per method, with the true solution ``arcsin eps``.

    ``rows``: the :func:`pcd.experiments.constraints.epsilon_table` rows (``eps, method, family, x``).
    """
    if not rows:
        raise ValueError("need at least one row")
    fig = go.Figure()
    eps_all = sorted({float(r["eps"]) for r in rows})
    ee = np.linspace(min(eps_all), max(eps_all), 100)
    fig.add_trace(go.Scatter(x=ee, y=np.arcsin(ee), mode="lines", name="x* = arcsin ε",
                             line=dict(color=theme.INK, width=3)))
    methods: dict[str, list] = {}
    for r in rows:
        methods.setdefault(r.get("label", r["method"]), []).append(r)
    for i, (m, rs) in enumerate(methods.items()):
        rs = sorted(rs, key=lambda r: r["eps"])
        fam = rs[0]["family"]
        fig.add_trace(go.Scatter(
            x=[r["eps"] for r in rs], y=[r["x"] for r in rs], mode="lines+markers", name=m,
            line=dict(color=family_color(fam), width=1.5, dash=_DASHES[i % len(_DASHES)] if fam == "penalty" else "solid"),
            marker=dict(size=8, color=family_color(fam))))
    fig.update_layout(**base_layout("Final x against ε: only AL / nuPI sit on arcsin ε", height=440),
                      xaxis_title="ε", yaxis_title="x after the last step")
    fig.update_layout(legend=_LEGEND_RIGHT)
    fig.update_yaxes(range=[-0.05, HALF_PI + 0.05])
    return style_axes(fig)


# ---- rate-constrained classifier ---------------------------------------------------------------

def decision_boundary_figure(X: Any, y: Any, boundaries: Sequence[Mapping[str, Any]]) -> go.Figure:
    """The two blobs and each method's decision boundary ``w.x + b = 0`` (class 1 where positive).

    ``boundaries``: ``[{"label", "family", "w": [2], "b"}]``.
    """
    X = _arr(X, "X", 2)
    y = _arr(y, "y")
    if X.shape[1] != 2 or X.shape[0] != y.shape[0]:
        raise ValueError(f"X must be [n, 2] and y [n], got {X.shape} and {y.shape}")
    fig = go.Figure()
    for k, sym, col in ((0, "circle", theme.SERIES_BLUE), (1, "x", theme.SERIES_ORANGE)):
        m = y == k
        fig.add_trace(go.Scatter(x=X[m, 0], y=X[m, 1], mode="markers", name=f"class {k}",
                                 marker=dict(symbol=sym, size=6, color=rgba(col, 0.55))))
    lo, hi = X.min(axis=0) - 0.5, X.max(axis=0) + 0.5
    for i, bd in enumerate(boundaries):
        w = _arr(bd["w"], "w")
        b = float(bd["b"])
        if w.shape != (2,):
            raise ValueError(f"w must have 2 entries, got {w.shape}")
        fam = bd["family"]
        color = family_color(fam)
        dash = _DASHES[i % len(_DASHES)] if fam == "penalty" else "solid"
        if not (np.isfinite(w).all() and math.isfinite(b)) or not np.any(w):
            continue
        if abs(w[1]) >= abs(w[0]):
            xs = np.array([lo[0], hi[0]])
            ys = -(w[0] * xs + b) / w[1]
        else:
            ys = np.array([lo[1], hi[1]])
            xs = -(w[1] * ys + b) / w[0]
        fig.add_trace(go.Scatter(x=xs, y=ys, mode="lines", name=bd.get("label", fam),
                                 line=dict(color=color, width=3, dash=dash)))
    fig.update_layout(**base_layout("Decision boundaries (class 0 on the lower-left side)", height=480),
                      xaxis_title="x₁", yaxis_title="x₂")
    fig.update_layout(legend=_LEGEND_BELOW)
    fig.update_xaxes(range=[lo[0], hi[0]])
    fig.update_yaxes(range=[lo[1], hi[1]], scaleanchor="x", scaleratio=1)
    return style_axes(fig)


def _positive(params: np.ndarray, *series: np.ndarray) -> tuple:
    keep = params > 0
    return (params[keep],) + tuple(s[keep] for s in series)


def rate_sweep_figure(penalty: Mapping[str, Any], lagrangian: Mapping[str, Any], target_pct: float = 70.0,
                      curve: Mapping[str, Any] | None = None, paper_penalty: Mapping[str, Any] | None = None,
                      paper_lagrangian: Mapping[str, Any] | None = None) -> go.Figure:
    """Class-0 rate and accuracy against the fixed penalty c (left) and the dual step eta (right),
    both on log x axes (zero values cannot sit on a log axis and are left out; the tables list them).

    ``penalty``: ``{"param", "rate", "accuracy"}`` arrays; ``lagrangian`` likewise; ``curve``: the
    dense penalty curve (same keys); ``paper_*``: the published points (``{"param", "rate"}``).
    """
    fig = make_subplots(rows=1, cols=2, horizontal_spacing=0.09,
                        subplot_titles=("fixed penalty: the usable window is narrow",
                                        "Lagrangian: ~70 % across orders of magnitude of η"))
    for col, data, fam, paper, xlabel in ((1, penalty, "penalty", paper_penalty, "penalty coefficient c"),
                                          (2, lagrangian, "gda", paper_lagrangian, "dual step size η")):
        p = _arr(data["param"], "param")
        r = _arr(data["rate"], "rate")
        a = _arr(data["accuracy"], "accuracy")
        if not (p.shape == r.shape == a.shape):
            raise ValueError("param, rate and accuracy must have the same length")
        color = family_color(fam)
        if col == 1 and curve is not None:
            cp, cr, ca = _positive(_arr(curve["param"], "curve param"), _arr(curve["rate"], "curve rate"),
                                   _arr(curve["accuracy"], "curve accuracy"))
            fig.add_trace(go.Scatter(x=cp, y=cr, mode="lines", name="penalty: class-0 rate (dense sweep)",
                                     line=dict(color=rgba(color, 0.6), width=2)), row=1, col=1)
        pp, rr, aa = _positive(p, r, a)
        fig.add_trace(go.Scatter(x=pp, y=rr, mode="markers+lines" if col == 2 else "markers",
                                 name=f"{LABELS[fam]}: class-0 rate",
                                 marker=dict(color=color, size=10), line=dict(color=color)), row=1, col=col)
        fig.add_trace(go.Scatter(x=pp, y=aa, mode="markers", name=f"{LABELS[fam]}: accuracy",
                                 marker=dict(color=color, size=8, symbol="diamond-open")), row=1, col=col)
        if paper is not None:
            qp, qr = _positive(_arr(paper["param"], "paper param"), _arr(paper["rate"], "paper rate"))
            fig.add_trace(go.Scatter(x=qp, y=qr, mode="markers", name=f"paper: {LABELS[fam]} rate",
                                     marker=dict(color=theme.INK, size=11, symbol="circle-open", line=dict(width=2))),
                          row=1, col=col)
        fig.add_hline(y=float(target_pct), line=dict(color=REFERENCE, dash="dot", width=1.5), layer="above",
                      annotation=_REF_LABEL, row=1, col=col,
                      annotation_text=f"target ≥ {target_pct:g} %", annotation_position="bottom right")
        fig.update_xaxes(type="log", title_text=xlabel, row=1, col=col)
        fig.update_yaxes(range=[40, 103], title_text="% of points", row=1, col=col)
    fig.update_layout(**base_layout(None, height=520))
    fig.update_layout(legend=_LEGEND_BELOW, margin=dict(l=60, r=20, t=40, b=150))
    return style_axes(fig)


def rate_history_figure(traces: Sequence[Mapping[str, Any]], target_pct: float = 70.0) -> go.Figure:
    """Class-0 rate during training, one line per run: ``[{"label", "family", "rate_hist", "every"}]``."""
    if not traces:
        raise ValueError("need at least one run")
    fig = go.Figure()
    for i, t in enumerate(traces):
        h = _arr(t["rate_hist"], "rate_hist")
        every = int(t["every"])
        if every < 1:
            raise ValueError(f"every must be >= 1, got {every}")
        fam = t["family"]
        fig.add_trace(go.Scatter(x=every * np.arange(1, h.size + 1), y=h, mode="lines", name=t.get("label", fam),
                                 line=dict(color=family_color(fam), width=2,
                                           dash=_DASHES[i % len(_DASHES)] if fam == "penalty" else "solid")))
    fig.add_hline(y=float(target_pct), line=dict(color=REFERENCE, dash="dot", width=1.5), layer="above",
                      annotation=_REF_LABEL,
                  annotation_text=f"target {target_pct:g} %", annotation_position="bottom right")
    fig.update_layout(**base_layout("Class-0 rate during training", height=400),
                      xaxis_title="step", yaxis_title="class-0 rate (%)")
    fig.update_layout(legend=_LEGEND_BELOW)
    fig.update_yaxes(range=[40, 103])
    return style_axes(fig)


def bisection_figure(runs: Sequence[Mapping[str, Any]], target_pct: float, tol: float,
                     constrained_rate: float | None = None) -> go.Figure:
    """The penalty search, one full training per bar (rate reached at each probed c), against the
    target band; optionally the single constrained run's rate as a reference line."""
    if not runs:
        raise ValueError("need at least one bisection run")
    n = [int(r["run"]) for r in runs]
    rates = [float(r["rate"]) for r in runs]
    text = [f"c = {float(r['c']):.3g}" for r in runs]
    fig = go.Figure()
    fig.add_hrect(y0=target_pct - tol, y1=target_pct + tol, fillcolor=rgba(theme.SERIES_GREEN, 0.15), line_width=0,
                  annotation_text="target band", annotation_position="top left")
    fig.add_trace(go.Bar(x=n, y=rates, text=text, textposition="outside", name="penalty: one full training each",
                         marker_color=COLORS["penalty"]))
    if constrained_rate is not None and math.isfinite(constrained_rate):
        fig.add_hline(y=float(constrained_rate), line=dict(color=COLORS["gda"], width=2),
                      annotation_text=f"one constrained run: {constrained_rate:.2f} %",
                      annotation_position="bottom right")
    fig.update_layout(**base_layout("Bisection on c: trainings needed to hit the target", height=420),
                      xaxis_title="training run #", yaxis_title="class-0 rate (%)")
    fig.update_yaxes(range=[0, 112])
    fig.update_xaxes(dtick=1)
    return style_axes(fig)


def cost_figure(cost: Mapping[str, Any]) -> go.Figure:
    """Seconds per training run, penalty loop vs Cooper's constrained loop (one box each)."""
    pen = _arr(cost["penalty_s"], "penalty_s")
    con = _arr(cost["constrained_s"], "constrained_s")
    if pen.size == 0 or con.size == 0:
        raise ValueError("need at least one timing per loop")
    fig = go.Figure()
    fig.add_trace(go.Box(y=pen, name="penalty loop", marker_color=COLORS["penalty"], boxpoints="all"))
    fig.add_trace(go.Box(y=con, name="constrained loop (Cooper)", marker_color=COLORS["gda"], boxpoints="all"))
    ov = 100.0 * (np.median(con) - np.median(pen)) / np.median(pen)
    fig.update_layout(**base_layout(f"Wall time per run: overhead {ov:+.1f} % (median)", height=380),
                      yaxis_title="seconds per run", showlegend=False)
    return style_axes(fig)
