"""Teaching data (pcd.experiments.toy, pcd.studio.lesson, pcd.studio.geometry): the gradients along a recorded run, the stall frames, the 1-D
case and the click -> (angle, norm) conversion of the geometry page."""
from __future__ import annotations

import math

import numpy as np
import pytest

import pcd.problems as problems
from pcd.engine import run
from pcd.experiments import toy as xtoy
from pcd.studio import geometry as geo_page
from pcd.studio import lesson


@pytest.fixture(scope="module")
def saddle():
    prob = problems.make("saddle2d")
    runs = [run(prob, [m], steps=1000, lr=0.02, record=120, method_params={"pcd": {"tau": 0.02}} if m == "pcd" else None)
            for m in ("pcd", "ws", "mgda", "graddrop")]
    return prob, xtoy.merge_results(runs)


def test_merge_results_keeps_each_methods_multipliers(saddle):
    _, res = saddle
    assert res.multipliers.shape[:2] == (4, res.S)
    assert np.isfinite(res.multipliers[0]).any()          # PCD reports mu
    assert np.isnan(res.multipliers[1]).all()             # WS does not


def test_gradients_are_the_problems_at_the_recorded_points(saddle):
    prob, res = saddle
    g = xtoy.trajectory_gradients(prob, res, 1)
    assert g["start"] == 1 and np.array_equal(g["steps"], res.record)
    for m, name in enumerate(res.methods):
        data = g["methods"][name]
        _, J = prob.losses_and_jacobian(res.positions[m, 1])
        np.testing.assert_allclose(data["g"], J, rtol=0, atol=0)
        np.testing.assert_allclose(data["norms"], res.grad_norms[m, 1], rtol=1e-12, atol=1e-14)
        if data["exact"]:  # d = w @ J reproduces the engine's recorded update norm
            np.testing.assert_allclose(np.linalg.norm(data["d"], axis=1), res.update_norms[m, 1], rtol=1e-9, atol=1e-12)
        with np.errstate(invalid="ignore", divide="ignore"):  # zero gradients at CMS: cos undefined
            cos = np.einsum("tn,tn->t", J[:, 0], J[:, 1]) / np.linalg.norm(J[:, 0], axis=1) \
                / np.linalg.norm(J[:, 1], axis=1)
        ok = np.isfinite(data["cos"])
        np.testing.assert_allclose(data["cos"][ok], np.clip(cos[ok], -1, 1), atol=1e-12)
    np.testing.assert_array_equal(g["methods"]["pcd"]["mu"], res.multipliers[0, 1])
    assert all(g["methods"][m]["exact"] for m in res.methods)  # the engine records every direction
    np.testing.assert_array_equal(g["methods"]["graddrop"]["d"], res.directions[3, 1])


class _Bowls3D(problems.Problem):
    """Two quadratic bowls in 3-D (n = 3 > K = 2): GradDrop's per-coordinate update leaves the
    span of the two gradients, so w @ J (its least-squares weights) is not its direction."""

    name = "bowls3d"
    K, dim = 2, 3
    bounds = ((-2.0, 2.0),) * 3

    def losses_and_jacobian(self, x):
        x = np.asarray(x, dtype=np.float64)
        a, b = np.array([1.0, 0.0, 0.5]), np.array([-1.0, 0.5, 0.0])
        J = np.stack([2 * (x - a), 2 * (x - b) * np.array([1.0, 3.0, 0.2])], axis=1)
        L = np.stack([((x - a) ** 2).sum(1), ((x - b) ** 2 * np.array([1.0, 3.0, 0.2])).sum(1)], axis=1)
        return L, J


def test_the_recorded_direction_is_what_the_optimizer_was_fed_also_for_graddrop():
    # plain SGD: x_{t+1} = x_t - lr d_t, so the recorded d_t can be checked against the path itself
    prob, lr = _Bowls3D(), 0.05
    res = run(prob, ["graddrop", "pcd"], starts=[[0.3, -0.4, 1.0], [-1.0, 1.5, 0.2]], steps=40, lr=lr,
              optimizer="sgd")
    for m in range(res.M):
        x, d = res.positions[m], res.directions[m]
        np.testing.assert_allclose(x[:, 1:] - x[:, :-1], -lr * d[:, :-1], rtol=0, atol=1e-12)
        np.testing.assert_allclose(np.linalg.norm(d, axis=-1), res.update_norms[m], rtol=1e-12, atol=1e-15)
    _, J = prob.losses_and_jacobian(res.positions[0].reshape(-1, 3))
    wj = np.einsum("bk,bkn->bn", res.weights[0].reshape(-1, 2), J)
    assert np.abs(wj - res.directions[0].reshape(-1, 3)).max() > 1e-2  # w @ J would misdraw GradDrop's d
    g = xtoy.trajectory_gradients(prob, res, 0, methods=["graddrop"])["methods"]["graddrop"]
    assert g["exact"] and np.array_equal(g["d"], res.directions[0, 0])


def test_at_a_conflict_equilibrium_d_vanishes_while_g1_does_not(saddle):
    prob, res = saddle
    g = xtoy.trajectory_gradients(prob, res, 0, methods=["ws", "mgda"])
    for name in ("ws", "mgda"):
        assert str(res.diagnosis[res.index(name), 0]) == "conflict_equilibrium"
        last = g["methods"][name]
        assert last["norms"][-1, 0] > 0.5                  # the primary gradient is far from zero
        assert last["d_norm"][-1] < 1e-6 * last["norms"][-1, 0]
        assert last["cos"][-1] < -0.999                    # the gradients point against each other


def test_stall_frames_put_pcd_where_mgda_stopped(saddle):
    _, res = saddle
    frames = lesson.stall_frames(res, 0, reference="mgda")
    T = res.record.size
    assert frames["ws"] == T - 1 and frames["mgda"] == T - 1
    p = res.positions[res.index("pcd"), 0, frames["pcd"]]
    end = res.end[res.index("mgda"), 0]
    dists = np.linalg.norm(res.positions[res.index("pcd"), 0] - end, axis=1)
    assert np.linalg.norm(p - end) == pytest.approx(np.nanmin(dists))
    assert 0 < frames["pcd"] < T - 1


def test_gradients_bad_input(saddle):
    prob, res = saddle
    with pytest.raises(ValueError, match="start must be in"):
        xtoy.trajectory_gradients(prob, res, res.S)
    with pytest.raises(ValueError, match="not in this run"):
        xtoy.trajectory_gradients(prob, res, 0, methods=["cagrad"])
    with pytest.raises(ValueError, match="positions"):
        xtoy.trajectory_gradients(prob, object(), 0)


def test_one_d_case_symmetric_methods_stop_pcd_moves():
    r = lesson.one_d_case(0.5, -0.5, tau=0.3)
    rows = {row["method"]: row for row in r["rows"]}
    for name in lesson.SYMMETRIC:
        assert rows[name]["norm"] == 0.0, name
    # exact opposition: d~ = g~1 + mu g~2 with mu = tau + ||g~1||/||g~2||, i.e. d~ = -tau * unit(g1) ...
    pcd = rows["pcd"]
    assert pcd["mu"][0] == pytest.approx(1.3)
    # ... rescaled to ||g1|| = 0.5: d = -0.5 along the axis; the secondary gets its share, the primary pays
    np.testing.assert_allclose(pcd["direction"], [-0.5, 0.0], atol=1e-12)
    assert pcd["progress"][1] > 0 > pcd["progress"][0]


@pytest.mark.parametrize("xy,expected", [((0.0, 1.2), (90.0, 1.2)), ((0.5, 0.5), (45.0, 0.7)),
                                          ((-1.0, -1e-9), (180.0, 1.0)), ((0.0, -2.0), (90.0, 2.0)),
                                          ((10.0, 0.0), (0.0, 3.0)), ((0.0, 0.0), (0.0, 0.1))])
def test_vector_to_polar_for_the_g2_sliders(xy, expected):
    assert geo_page.vector_to_polar(*xy) == pytest.approx(expected)


def test_vector_to_polar_signed_for_g3_and_rejects_bad_points():
    assert geo_page.vector_to_polar(0.0, -1.0, angle_range=(-180.0, 180.0)) == (-90.0, 1.0)
    assert geo_page.vector_to_polar(-1.0, 1.0, angle_range=(-180.0, 180.0))[0] == 135.0
    for bad in [(math.nan, 1.0), (1.0, math.inf), ("a", 1.0)]:
        with pytest.raises(ValueError):
            geo_page.vector_to_polar(*bad)
