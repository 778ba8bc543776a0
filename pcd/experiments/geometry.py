"""One step of every method at given gradients: the Gradient geometry page's computation (and
``python -m pcd geometry``'s), as plain data for :func:`pcd.viz.geometry.geometry_figure`."""
from __future__ import annotations

import math
from typing import Any

import numpy as np

import pcd.methods as registry
from pcd import _validate as V
from pcd.direction import pcd_weights


def _num(value: Any, name: str, low: float | None = None, high: float | None = None) -> float:
    return V.number(value, name, low=low, high=high, strict=False)


def gradient_vectors(angle_deg: float = 150.0, norm2: float = 1.0, third: tuple[float, float] | None = None,
                     norm1: float = 1.0) -> np.ndarray:
    """The 2-D gradients of the geometry page as rows ``J [K, 2]``.

    ``g1`` points along the x axis with length ``norm1``; ``g2`` makes ``angle_deg`` (0..180) with
    it and has length ``norm2``; ``third = (angle_deg, norm)`` adds ``g3`` (angle measured from
    ``g1`` counter-clockwise, -180..180).
    """
    a2 = _num(angle_deg, "angle between g1 and g2 (degrees)", 0.0, 180.0)
    n1 = _num(norm1, "||g1||", 0.0, 1e6)
    n2 = _num(norm2, "||g2||", 0.0, 1e6)
    rows = [[n1, 0.0], [n2 * math.cos(math.radians(a2)), n2 * math.sin(math.radians(a2))]]
    if third is not None:
        try:
            a3, n3 = third
        except (TypeError, ValueError):
            raise ValueError(f"third gradient must be (angle_deg, norm), got {third!r}") from None
        a3 = _num(a3, "angle of g3 (degrees)", -180.0, 180.0)
        n3 = _num(n3, "||g3||", 0.0, 1e6)
        rows.append([n3 * math.cos(math.radians(a3)), n3 * math.sin(math.radians(a3))])
    return np.array(rows, dtype=np.float64)


def method_directions(J: Any, methods: Any, tau: float = 0.3,
                      method_params: dict[str, dict] | None = None, seed: int = 0) -> dict[str, Any]:
    """One step of every method at gradients ``J [K, n]`` (first step, fresh state).

    Returns ``{"J", "rows"}`` where each row is a dict: ``method``, ``label``,
    ``weights [K]``, ``direction [n]`` (:meth:`Step.direction`: ``weights @ J``, or a direction
    method's own),
    ``progress [K]`` (``g_i . d``: first-order decrease of objective i per unit step),
    ``conflicts`` (some ``g_i . d < 0``), ``norm`` (``||d||``) and ``error`` (a message when the
    method rejected the input; nothing raised). A method with a ``primary_knob`` (PCD's ``tau``)
    gets ``tau`` from the argument unless ``method_params`` sets it; PCD's row carries ``mu``, ``feasible`` and ``qp_point``:
    the QP solution ``d~`` drawn in units where ``||g~_1|| = ||g_1||`` (``g_1 + sum_j mu_j ||g_1|| g_j/||g_j||``,
    first step of the EMA normalizer so ``s_i = 1/||g_i||``), plus ``halfplanes``: the feasible
    region ``{d : (g_j/||g_j||) . d >= tau ||g_1||}`` as ``(unit normal, offset)`` pairs.
    """
    J = np.asarray(J, dtype=np.float64)
    if J.ndim != 2 or J.shape[0] < 2 or J.shape[1] < 1 or not np.isfinite(J).all():
        raise ValueError(f"J must be a finite [K, n] array with K >= 2 objectives, got shape {np.shape(J)}")
    tau = _num(tau, "tau", 0.0, 1.0)
    names = registry.parse_names(methods, duplicates="drop")
    method_params = {k.lower(): dict(v or {}) for k, v in (method_params or {}).items()}
    K = J.shape[0]
    G = (J @ J.T)[None]
    losses = np.ones((1, K))
    norms = np.linalg.norm(J, axis=1)
    rows = []
    for i, name in enumerate(names):
        hp = dict(method_params.get(name, {}))
        knob = registry.get(name).primary_knob
        if knob is not None:
            hp.setdefault(knob, tau)
        row: dict[str, Any] = {"method": name, "label": registry.get(name).display_name or name, "error": None}
        try:
            inst = registry.make(name, **hp)
            out = inst(G, losses=losses, jacobian=J[None], state=inst.init(1, K),
                       rng=np.random.default_rng([seed, i]))
            w = np.asarray(out.weights, dtype=np.float64)[0]
            d = out.direction(J[None])[0]
        except ValueError as exc:
            row.update(weights=np.full(K, np.nan), direction=np.full(J.shape[1], np.nan),
                       progress=np.full(K, np.nan), conflicts=False, norm=float("nan"), error=str(exc))
            rows.append(row)
            continue
        progress = J @ d
        tol = 1e-9 * float(norms.max()) ** 2  # rounding level of g_i . d for |d| ~ |g|
        row.update(weights=w, direction=d, progress=progress,
                   conflicts=bool(np.any(progress < -tol)), norm=float(np.linalg.norm(d)))
        if name == "pcd":  # PCD's own QP picture (DBGD, also hierarchical, has no normalized QP to draw)
            row.update(_pcd_geometry(J, inst.hparams["tau"]))
        rows.append(row)
    return {"J": J, "tau": tau, "rows": rows}


def _pcd_geometry(J: np.ndarray, tau: Any) -> dict[str, Any]:
    norms = np.linalg.norm(J, axis=1)
    K = J.shape[0]
    taus = np.broadcast_to(np.asarray(tau, dtype=np.float64), (K - 1,)) if np.ndim(tau) else np.full(K - 1, float(tau))
    if norms[0] == 0:
        return {"mu": np.full(K - 1, np.nan), "feasible": True, "qp_point": np.zeros(J.shape[1]), "halfplanes": [],
                "normalized_weights": np.full(K, np.nan), "deployed_scale": 0.0}
    with np.errstate(divide="ignore"):
        scales = np.where(norms > 0, 1.0 / np.where(norms > 0, norms, 1.0), 0.0)
    res = pcd_weights((J @ J.T)[None], scales[None], float(taus[0]) if np.all(taus == taus[0]) else taus).qp
    wt = np.asarray(res.weights, dtype=np.float64)[0]      # normalized-space weights (w~_1 = 1)
    qp_point = norms[0] * (wt * scales) @ J                 # d~ in units where ||g~_1|| = ||g_1||
    dn = float(np.linalg.norm((wt * scales) @ J))           # ||d~|| in normalized units
    deployed_scale = norms[0] / dn if dn > 0 else 0.0        # d = d~ * ||g_1|| / ||d~||
    halfplanes = [(J[j] / norms[j], float(taus[j - 1]) * norms[0]) for j in range(1, K) if norms[j] > 0]
    return {"mu": np.asarray(res.mu, dtype=np.float64).reshape(-1)[: K - 1],
            "feasible": bool(np.asarray(res.feasible).reshape(-1)[0]),
            "qp_point": qp_point, "halfplanes": halfplanes,
            "normalized_weights": wt, "deployed_scale": deployed_scale}
