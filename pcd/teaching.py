"""Data for the teaching views (no Streamlit, no new math): the gradients at every recorded frame of
a toy run, the lesson's steps, and the small conversions the interactive figures need.

Everything here only *calls* the problem's ``losses_and_jacobian`` at positions the engine
recorded and rearranges the engine's own records (``directions``, ``multipliers``), so the inset on
the toy page, the lesson and the tests consume the same plain data.
"""
from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

import pcd.methods as registry

__all__ = ["trajectory_gradients", "vector_to_polar", "stall_frames", "one_d_case", "SYMMETRIC"]


def trajectory_gradients(problem: Any, res: Any, start: int = 0, methods: Sequence[str] | None = None) -> dict[str, Any]:
    """The gradients ``g_k`` and each method's step ``d`` at every recorded frame of start ``start``.

    ``res``: a :class:`pcd.engine.RunResult` of ``problem`` (2-D or not); ``methods``: a subset of
    ``res.methods`` (default: all). Returns ``{"start", "steps" [T], "methods": {name: {...}}}``
    with, per method, arrays over the recorded frames ``T``:

    * ``g [T, K, n]``: the raw gradients ``grad f_k(x_t)`` at the recorded position ``x_t``
      (re-evaluated from the problem: the engine evaluates the very same point);
    * ``d [T, n]``: the method's direction ``d_t``, the vector fed to the optimizer, as the engine
      recorded it (``res.directions``: for a method that builds its direction per coordinate, e.g.
      GradDrop's random mask, its own update -- not ``w_t @ J_t``). A result without recorded
      directions (an older one) falls back to ``w_t @ J_t``; ``exact`` is then False for such
      methods;
    * ``norms [T, K]`` (``||g_k||``), ``d_norm [T]`` (``||d||``, the engine's ``update_norms`` when
      exact), ``cos [T]`` (``cos(g_1, g_2)``; NaN where a gradient is zero), ``mu [T, K-1]`` (the
      secondaries' multipliers where the method reports them: PCD, DBGD; NaN otherwise),
      ``diagnosis`` (the engine's, for the whole trajectory).

    Frames after a divergence are NaN (the engine records NaN positions there).
    """
    pos = np.asarray(getattr(res, "positions", None), dtype=np.float64)
    if pos.ndim != 4:
        raise ValueError("trajectory_gradients needs a run result with positions [M, S, T, n]")
    M, S, T, n = pos.shape
    try:
        s = int(start)
    except (TypeError, ValueError):
        raise ValueError(f"start must be an integer in [0, {S - 1}], got {start!r}") from None
    if not 0 <= s < S:
        raise ValueError(f"start must be in [0, {S - 1}] (this run has {S} starts), got {start!r}")
    names = list(res.methods) if methods is None else [str(m) for m in methods]
    for name in names:
        if name not in res.methods:
            raise ValueError(f"method {name!r} is not in this run; ran: {', '.join(res.methods)}")
    weights = np.asarray(res.weights, dtype=np.float64)
    mults = getattr(res, "multipliers", None)
    dirs = getattr(res, "directions", None)
    if dirs is not None and np.shape(dirs) != pos.shape:
        dirs = None
    out: dict[str, Any] = {"start": s, "steps": np.asarray(res.record), "methods": {}}
    for name in names:
        m = res.methods.index(name)
        x = pos[m, s]
        ok = np.isfinite(x).all(axis=1)
        K = weights.shape[-1]
        J = np.full((T, K, n), np.nan)
        if ok.any():
            _, Jok = problem.losses_and_jacobian(x[ok])
            J[ok] = np.asarray(Jok, dtype=np.float64)
        norms = np.linalg.norm(J, axis=2)
        if dirs is not None:  # what the optimizer was fed (Step.direction)
            d = np.asarray(dirs[m, s], dtype=np.float64)
            exact = True
        else:
            d = np.einsum("tk,tkn->tn", weights[m, s], J)
            try:
                exact = not bool(getattr(registry.get(name), "needs_jacobian", False))
            except ValueError:
                exact = True
        d_norm = np.asarray(res.update_norms[m, s], dtype=np.float64) if exact else np.linalg.norm(d, axis=1)
        with np.errstate(invalid="ignore", divide="ignore"):
            cos = np.einsum("tn,tn->t", J[:, 0], J[:, 1]) / (norms[:, 0] * norms[:, 1]) if K >= 2 else np.full(T, np.nan)
        cos = np.where((norms[:, 0] > 0) & (norms[:, 1] > 0) if K >= 2 else False, cos, np.nan)
        mu = np.full((T, max(K - 1, 0)), np.nan) if mults is None or np.ndim(mults) != 4 \
            else np.asarray(mults[m, s], dtype=np.float64)
        out["methods"][name] = {"g": J, "d": d, "norms": norms, "d_norm": d_norm, "cos": np.clip(cos, -1.0, 1.0),
                                "mu": mu, "exact": exact, "diagnosis": str(np.asarray(res.diagnosis)[m, s])}
    return out


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


SYMMETRIC = ("ws", "mgda", "pcgrad", "cagrad", "famo", "upgrad")


def stall_frames(res: Any, start: int = 0, reference: str = "mgda") -> dict[str, int]:
    """Which recorded frame shows each method "at the stall" of start ``start``: the last frame
    for every method except PCD / DBGD, and for those the frame where their trajectory passes
    closest to ``reference``'s end point (where the symmetric method stopped) -- so PCD's panel
    shows its step at (almost) the same place. Returns ``{method: frame index}``."""
    pos = np.asarray(res.positions, dtype=np.float64)
    T = pos.shape[2]
    out = {name: T - 1 for name in res.methods}
    if reference not in res.methods:
        return out
    end = np.asarray(res.end, dtype=np.float64)[res.methods.index(reference), int(start)]
    for name in ("pcd", "dbgd"):
        if name in res.methods and name != reference:
            dist = np.linalg.norm(pos[res.methods.index(name), int(start)] - end, axis=1)
            if np.isfinite(dist).any():
                out[name] = int(np.nanargmin(dist))
    return out


def one_d_case(g1: float = 0.5, g2: float = -0.5, methods: Sequence[str] = ("pcd",) + SYMMETRIC,
               tau: float = 0.3) -> dict[str, Any]:
    """The 1-D conflict: ``g1 = 0.5``, ``g2 = -0.5`` (drawn on the x axis of the geometry figure).
    Every symmetric method's update is exactly 0 there although ``g1 != 0``; PCD's is not. The
    plain data of :func:`pcd.studio.method_directions`."""
    from pcd import studio

    J = np.array([[float(g1), 0.0], [float(g2), 0.0]])
    return studio.method_directions(J, list(methods), tau=tau)
