"""Page 01, Gradient geometry: its defaults, cached computation and figure, the table under it,
and the click-to-vector conversion of its figure."""
from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import streamlit as st

from pcd.experiments.geometry import gradient_vectors, method_directions
from pcd.studio import available

METHODS = ("pcd", "ws", "mgda", "pcgrad", "cagrad", "upgrad")
ANGLE, NORM2, TAU = 150, 1.0, 0.3


@st.cache_data(show_spinner=False, max_entries=256)
def geometry(angle: float, norm2: float, third: tuple[float, float] | None, tau: float,
             methods: tuple[str, ...]) -> dict[str, Any]:
    """Every method's update for the page's gradients (:func:`pcd.experiments.geometry.method_directions`)."""
    J = gradient_vectors(angle, norm2, third)
    return method_directions(J, list(methods), tau=tau)


@st.cache_resource(show_spinner=False, max_entries=64)
def geometry_fig(angle: float, norm2: float, third: tuple[float, float] | None, tau: float,
                 methods: tuple[str, ...], text_scale: float = 1.0) -> Any:
    """The figure for those settings (built once, ~0.15 s; a shared figure, never mutated); ``text_scale``:
    its labels' (presenter mode: :func:`pcd.ui.presenter.text_scale`)."""
    from pcd.viz.geometry import geometry_figure

    return geometry_figure(geometry(angle, norm2, third, tau, methods), text_scale=text_scale)


def warm() -> None:
    """The page's default view."""
    geometry_fig(ANGLE, NORM2, None, TAU, tuple(available(METHODS)), 1.0)  # as the page calls it (the cache key)


def directions_table(result: dict[str, Any]):
    """The per-method table of :func:`method_directions` as a DataFrame (one row per method):
    progress ``g_i . d``, conflicts, ``||d||``, the raw weights ``w`` (``d = sum w_i g_i``) and,
    for PCD, the normalized weights ``w~`` (``w~_1 = 1``: the pinned primary) with the deployed
    scale ``||g_1|| / ||d~||`` that turns them into ``w_i = w~_i s_i * scale``; ``note`` only when
    some method reported a problem."""
    import pandas as pd

    def vec(v: Any) -> str:
        return "(" + ", ".join(f"{float(x):.4g}" for x in v) + ")"

    J = result["J"]
    K = J.shape[0]
    recs = []
    for r in result["rows"]:
        rec: dict[str, Any] = {"method": r["label"]}
        for k in range(K):
            rec[f"g{k + 1}·d"] = float(r["progress"][k])
        rec["conflicts"] = "—" if r["error"] else ("yes" if r["conflicts"] else "no")
        rec["‖d‖"] = r["norm"]
        rec["w"] = "—" if r["error"] else vec(r["weights"])
        if "normalized_weights" in r:
            rec["w̃ × scale"] = f"{vec(r['normalized_weights'])} × {r['deployed_scale']:.4g}"
        else:
            rec["w̃ × scale"] = ""
        rec["note"] = r["error"] or ""
        recs.append(rec)
    df = pd.DataFrame.from_records(recs)
    if not df["note"].any():
        df = df.drop(columns=["note"])
    if not df["w̃ × scale"].any():
        df = df.drop(columns=["w̃ × scale"])
    return df


def vector_to_polar(x: float, y: float, reference: Sequence[float] = (1.0, 0.0),
                    angle_range: tuple[float, float] = (0.0, 180.0),
                    norm_range: tuple[float, float] = (0.1, 3.0)) -> tuple[float, float]:
    """A point set by clicking/dragging in the geometry figure -> ``(angle_deg, norm)`` of that
    vector, the angle measured counter-clockwise from ``reference`` (g1), both clipped into the
    page's slider ranges (rounded to 1 degree and 0.05 in norm, the sliders' steps).
    """
    try:
        x, y = float(x), float(y)
        rx, ry = (float(v) for v in reference)
    except (TypeError, ValueError):
        raise ValueError(f"a vector needs two numbers, got {(x, y)!r}") from None
    if not all(math.isfinite(v) for v in (x, y, rx, ry)):
        raise ValueError("the vector must be finite")
    ang = math.degrees(math.atan2(y, x) - math.atan2(ry, rx))
    ang = (ang + 180.0) % 360.0 - 180.0
    lo, hi = angle_range
    if lo >= 0:  # the g2 slider is 0..180: the angle between the vectors, its mirror image
        ang = abs(ang)
    ang = float(min(max(round(ang), lo), hi))
    norm = math.hypot(x, y)
    norm = float(min(max(round(norm / 0.05) * 0.05, norm_range[0]), norm_range[1]))
    return ang, round(norm, 2)
