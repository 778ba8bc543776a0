"""The toy runs in objective space (pcd.experiments.toy.objective_space + pcd.viz.objective): the points
drawn at every frame are the engine's losses, the frames are the map's, the front and the verdicts."""
from __future__ import annotations

import numpy as np
import pytest

import pcd.problems as problems
from pcd.engine import run
from pcd.experiments import toy as xtoy
from pcd.experiments.toy import objective_space
from pcd.viz import toy as toy_map
from pcd.viz.landscape import frame_index
from pcd.viz.objective import objective_space_figure
from pcd.viz.theme import plain_array


@pytest.fixture(scope="module")
def saddle():
    prob = problems.make("saddle2d")
    runs = [run(prob, [m], steps=1000, lr=0.02, method_params={"pcd": {"tau": 0.02}} if m == "pcd" else None)
            for m in ("pcd", "ws", "mgda")]
    return prob, xtoy.merge_results(runs)


def _xy(trace) -> np.ndarray:
    return np.c_[plain_array(trace.x), plain_array(trace.y)]


def test_the_points_at_every_frame_are_the_engines_losses(saddle):
    prob, res = saddle
    M, S, T = len(res.methods), res.S, len(res.record)
    # the engine's losses are the objectives at the map's positions
    np.testing.assert_allclose(res.losses, prob.losses(res.positions.reshape(-1, 2)).reshape(M, S, T, 2),
                               rtol=1e-9, atol=1e-12)
    space = objective_space(prob, res)
    np.testing.assert_array_equal(space["losses"], res.losses)
    fig = objective_space_figure(space, log=False, max_frames=40)
    map_fig = toy_map.toy_map_figure(prob, res, toy_map.toy_background(prob), max_frames=40)
    assert [f.name for f in fig.frames] == [f.name for f in map_fig.frames]  # one set of controls plays both
    idx = frame_index(T, 40)
    order = list(range(M))[::-1]
    for f, t in enumerate(idx):
        heads = _xy(fig.frames[f].data[-1])
        np.testing.assert_allclose(heads, res.losses[order, :, t].reshape(-1, 2), rtol=1e-6, atol=1e-30)
    # log axes: the same points, exact zeros at the floor
    logf = objective_space_figure(space, log=True, max_frames=40)
    heads = _xy(logf.frames[-1].data[-1])
    np.testing.assert_allclose(heads, np.maximum(res.losses[order, :, -1].reshape(-1, 2), 1e-12), rtol=1e-6)
    assert logf.layout.xaxis.type == "log" and "0 drawn at 1e-12" in logf.layout.xaxis.title.text


def test_the_ending_waits_for_the_last_frame_and_says_who_dominates(saddle):
    prob, res = saddle
    space = objective_space(prob, res)
    np.testing.assert_allclose(space["optimum"], [0.0, 0.0], atol=1e-12)  # both optimal at (2, 0)
    v = dict(zip(res.methods, space["verdicts"]))
    assert all(x == "reached CMS" for x in v["pcd"])
    for m in ("ws", "mgda"):  # stalled on a Pareto-stationary point that the optimum and PCD dominate
        assert all(x.startswith("Pareto-stationary") and "dominated by ★ both optimal, PCD" in x for x in v[m])
    fig = objective_space_figure(space)
    assert all(t.visible is False for t in fig.data if t.meta == "end")
    labels = [a for a in fig.layout.annotations if a.name == "end label"]
    assert labels and all(a.visible is False for a in labels)
    assert any("Weighted sum · MGDA" in a.text and "dominated by" in a.text for a in labels)
    # fixed ranges hold every frame's points (the axes never move while playing)
    lo, hi = fig.layout.xaxis.range
    for fr in fig.frames:
        x = np.log10(_xy(fr.data[-1])[:, 0])
        assert lo <= x.min() and x.max() <= hi


def test_pareto_filter_and_the_numerical_front():
    pts = np.array([[1, 5], [2, 3], [2, 4], [3, 3], [4, 1], [np.nan, 0], [5, 0.5]])
    np.testing.assert_array_equal(xtoy.pareto_filter(pts), [[1, 5], [2, 3], [4, 1], [5, 0.5]])
    # a problem without a known Pareto set: the non-dominated points of the map's grid, said so;
    # for the convex quadratic pair they lie on its known front
    quad = problems.make("quadratic")
    res = xtoy.merge_results([run(quad, ["pcd"], steps=50, lr=0.05)])
    grid = quad.grid(160, 120)
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(type(quad), "pareto_set", lambda self, n=200: None)
        space = objective_space(quad, res, grid)
    assert space["numerical"] and len(space["front"]) > 20
    known = quad.pareto_front(2000)
    gap = np.min(np.linalg.norm(space["front"][:, None, :] - known[None, :, :], axis=2), axis=1)
    scale = np.ptp(known, axis=0).max()
    assert np.quantile(gap, 0.9) < 0.02 * scale
    fig = objective_space_figure(space, log=False)
    assert fig.layout.meta["numerical"] and any("numerical" in (t.name or "") for t in fig.data)
    with pytest.raises(ValueError, match="2 objectives"):
        objective_space(quad, type("R", (), {"losses": np.zeros((1, 1, 3, 3))})())
