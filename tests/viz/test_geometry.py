"""Gradient-geometry data (pcd.studio) and figure (pcd.viz.geometry): properties, not just "it ran"."""
from __future__ import annotations

import math

import numpy as np
import pytest

import pcd.methods as registry
from pcd.experiments import geometry as xgeo
from pcd.studio import geometry as geo_page
from pcd.viz.geometry import clip_polygon, geometry_figure
from pcd.viz.theme import method_color, png_data_uri, rgba


def _row(result, name):
    return next(r for r in result["rows"] if r["method"] == name)


def test_gradient_vectors_angle_and_norms():
    J = xgeo.gradient_vectors(120, 2.0, third=(-90, 0.5))
    assert J.shape == (3, 2)
    np.testing.assert_allclose(np.linalg.norm(J, axis=1), [1.0, 2.0, 0.5])
    cos = J[0] @ J[1] / (np.linalg.norm(J[0]) * np.linalg.norm(J[1]))
    assert math.isclose(math.degrees(math.acos(cos)), 120.0, abs_tol=1e-9)
    with pytest.raises(ValueError, match="angle"):
        xgeo.gradient_vectors(200, 1.0)
    with pytest.raises(ValueError, match="g2"):
        xgeo.gradient_vectors(90, -1.0)


def test_equal_norms_ws_mgda_cagrad_coincide_in_direction():
    # ||g2|| = ||g1||: all three point along the bisector g1 + g2 (page 1's explanation)
    J = xgeo.gradient_vectors(130, 1.0)
    res = xgeo.method_directions(J, ["ws", "mgda", "cagrad"], tau=0.3)
    bis = (J[0] + J[1]) / np.linalg.norm(J[0] + J[1])
    for r in res["rows"]:
        d = r["direction"] / np.linalg.norm(r["direction"])
        np.testing.assert_allclose(d, bis, atol=1e-6, err_msg=r["method"])
    # and they separate when the norms differ (MGDA leans to the smaller gradient)
    J2 = xgeo.gradient_vectors(130, 3.0)
    res2 = xgeo.method_directions(J2, ["ws", "mgda"], tau=0.3)
    dw, dm = (r["direction"] / np.linalg.norm(r["direction"]) for r in res2["rows"])
    assert np.linalg.norm(dw - dm) > 0.1


def test_pcd_primary_coefficient_pinned_and_constraint_met():
    J = xgeo.gradient_vectors(150, 1.5)
    tau = 0.3
    res = xgeo.method_directions(J, ["pcd", "ws"], tau=tau)
    p = _row(res, "pcd")
    mu = float(p["mu"][0])
    assert mu > 0  # the constraint binds at 150 degrees
    g1, g2 = J
    # d~ (drawn in units ||g~1|| = ||g1||) = g1 + mu ||g1|| g2/||g2||: primary coefficient exactly 1
    np.testing.assert_allclose(p["qp_point"], g1 + mu * np.linalg.norm(g1) * g2 / np.linalg.norm(g2), atol=1e-12)
    # the QP point satisfies (with equality, active) the half-plane drawn as the feasible region
    (n, c), = p["halfplanes"]
    assert math.isclose(float(n @ p["qp_point"]), c, rel_tol=1e-9)
    # deployed update: same direction as d~, rescaled to ||g1||; secondary gets >= tau share
    d = p["direction"]
    assert math.isclose(np.linalg.norm(d), np.linalg.norm(g1), rel_tol=1e-9)
    assert abs(d @ p["qp_point"] / (np.linalg.norm(d) * np.linalg.norm(p["qp_point"])) - 1) < 1e-9
    assert p["progress"][1] > 0
    assert _row(res, "ws")["conflicts"] != p["conflicts"] or p["progress"][1] > _row(res, "ws")["progress"][1]


def test_antiparallel_symmetric_methods_vanish_pcd_does_not():
    # the 1-D conflict equilibrium of the PCD paper: g1 = 0.5, g2 = -0.5
    J = np.array([[0.5, 0.0], [-0.5, 0.0]])
    res = xgeo.method_directions(J, ["ws", "mgda", "pcd"], tau=0.3)
    assert _row(res, "ws")["norm"] < 1e-12
    assert _row(res, "mgda")["norm"] < 1e-12
    assert not _row(res, "mgda")["conflicts"]
    assert _row(res, "pcd")["norm"] > 0.4


def test_every_registered_method_gives_a_row_and_errors_are_reported():
    J = xgeo.gradient_vectors(100, 0.7, third=(-120, 1.2))
    res = xgeo.method_directions(J, registry.available(), tau=0.2)
    assert [r["method"] for r in res["rows"]] == registry.available()
    for r in res["rows"]:
        if r["error"] is None:
            assert r["direction"].shape == (2,)
            np.testing.assert_allclose(r["progress"], J @ r["direction"])
    with pytest.raises(ValueError, match="unknown method"):
        xgeo.method_directions(J, ["nope"])
    with pytest.raises(ValueError, match="tau"):
        xgeo.method_directions(J, ["pcd"], tau=1.5)
    bad = xgeo.method_directions(J, ["pcd"], method_params={"pcd": {"beta": 5.0}})
    assert bad["rows"][0]["error"] and "beta" in bad["rows"][0]["error"]


def test_directions_table_columns():
    J = xgeo.gradient_vectors(150, 1.0, third=(-100, 0.8))
    df = geo_page.directions_table(xgeo.method_directions(J, ["pcd", "mgda"], tau=0.3))
    assert list(df["method"]) == ["PCD", "MGDA"]
    for c in ("g1·d", "g2·d", "g3·d", "conflicts", "‖d‖", "w", "w̃ × scale"):
        assert c in df.columns
    # PCD: normalized weights pin the primary to 1; deployed scale = ||g1|| / ||d~||
    pcd_cell = df.loc[0, "w̃ × scale"]
    assert pcd_cell.startswith("(1, ")
    r = xgeo.method_directions(J, ["pcd"], tau=0.3)["rows"][0]
    np.testing.assert_allclose(r["weights"], r["normalized_weights"] / np.linalg.norm(J, axis=1) * r["deployed_scale"])


def test_clip_polygon_halfplane_and_empty():
    poly = clip_polygon((-1, 1, -1, 1), [(np.array([1.0, 0.0]), 0.5)])
    assert poly[:, 0].min() >= 0.5 - 1e-12
    area = 0.5 * abs(np.dot(poly[:, 0], np.roll(poly[:, 1], 1)) - np.dot(poly[:, 1], np.roll(poly[:, 0], 1)))
    assert math.isclose(area, 0.5 * 2, rel_tol=1e-9)  # [0.5, 1] x [-1, 1]
    empty = clip_polygon((-1, 1, -1, 1), [(np.array([1.0, 0.0]), 0.5), (np.array([-1.0, 0.0]), 0.5)])
    assert len(empty) == 0
    with pytest.raises(ValueError):
        clip_polygon((1, -1, -1, 1), [])


def test_geometry_figure_traces_colours_and_region():
    J = xgeo.gradient_vectors(150, 1.0)
    res = xgeo.method_directions(J, ["pcd", "ws", "mgda"], tau=0.3)
    fig = geometry_figure(res)
    names = [t.name for t in fig.data]
    assert names[0] == "PCD feasible region" and fig.data[0].fill == "toself"
    for m in ("pcd", "ws", "mgda"):
        label = registry.get(m).display_name
        tr = next(t for t in fig.data if t.name == label)
        assert tr.line.color in (method_color(m), rgba(method_color(m), 0.5))
        np.testing.assert_allclose([tr.x[1], tr.y[1]], _row(res, m)["direction"])
    # every vector is a trace with an arrowhead marker (so a legend click hides / solos it)
    for tr in fig.data:
        if tr.name in ("g1 (primary)", "g2", "PCD", "Weighted sum", "MGDA"):
            assert list(tr.marker.symbol) == ["circle", "arrow"]
    # WS and MGDA coincide at equal norms: nested (the one underneath wider) and one shared label
    ws = next(t for t in fig.data if t.name == "Weighted sum")
    mg = next(t for t in fig.data if t.name == "MGDA")
    assert ws.line.width > mg.line.width
    labels = [a.text for a in fig.layout.annotations]
    assert "<b>Weighted sum = MGDA</b>" in labels
    # collinear updates of different length: one stacked label, longest first
    six = geometry_figure(xgeo.method_directions(J, ["pcd", "ws", "mgda", "pcgrad", "cagrad", "upgrad"], tau=0.3))
    six_labels = [a.text for a in six.layout.annotations]
    assert "<b>PCGrad<br>> UPGrad<br>> CAGrad<br>> Weighted sum = MGDA</b>" in six_labels
    assert "<b>PCD</b>" in six_labels  # a ray of one method: its own label, placed like the others
    assert fig.layout.yaxis.scaleanchor == "x"
    no_region = geometry_figure(res, show_region=False)
    assert "PCD feasible region" not in [t.name for t in no_region.data]
    with pytest.raises(ValueError):
        geometry_figure({"rows": []})


def test_theme_helpers():
    assert rgba("#ff0000", 0.5) == "rgba(255,0,0,0.5)"
    with pytest.raises(ValueError):
        rgba("red", 0.5)
    uri = png_data_uri(np.zeros((4, 5, 3), dtype=np.uint8))
    assert uri.startswith("data:image/png;base64,")
    with pytest.raises(ValueError):
        png_data_uri(np.zeros((4, 5), dtype=np.uint8))


def test_a_method_tip_on_a_gradient_tip_labels_apart():
    """1-D (the lesson's first step): PCD's update is g2's arrow; g2's name stays above its tip and PCD's
    label is a placed annotation pointing at the same tip (its box clear of g2's: tests/viz/test_labels.py)."""
    J = np.array([[0.5, 0.0], [-0.5, 0.0]])
    res = xgeo.method_directions(J, ["pcd", "ws"], tau=0.3)
    pcd_row = next(r for r in res["rows"] if r["method"] == "pcd")
    assert np.allclose(pcd_row["direction"], J[1])  # the premise: the tips coincide
    fig = geometry_figure(res)
    by_name = {t.name: t for t in fig.data}
    assert by_name["g2"].textposition.startswith("top")
    assert by_name["g1 (primary)"].textposition.startswith("top")
    pcd = next(a for a in fig.layout.annotations if a.text == "<b>PCD</b>")
    assert (pcd.x, pcd.y) == pytest.approx(tuple(J[1])) and pcd.showarrow
