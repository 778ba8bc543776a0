"""The toy page's live paths (pcd.studio.toy.live_*): what a drag or a slider move is answered with.

The paths are the engine's trajectories -- equal to pcd.engine.run's positions for that start at the
map's recorded steps (and to the page's own cached per-method runs) --, and every value from the
browser goes through the validation layer: a bad one is refused in one line, never raised.
"""
from __future__ import annotations

import math

import numpy as np
import pytest

from pcd.engine import run
from pcd.studio import toy as T

VIEW = ((-3.5, 3.5), (-2.0, 2.0))
METHODS = list(T.METHODS)


@pytest.fixture(scope="module")
def problem():
    return T.make_problem("saddle2d")


def _req(**kw):
    return {"kind": "start", "seq": 7, "s": 0, "x": -1.0, "y": 0.5, "tau": 0.02, "lr": 0.02, **kw}


def test_live_paths_are_the_engines_trajectories_at_the_maps_steps(problem):
    start = np.array([[-1.0, 0.5]])
    out = T.live_paths(problem, METHODS, {}, 0.3, "adam", 0.02, 1000, start)
    ref = run(problem, METHODS, starts=start, steps=1000, optimizer="adam", lr=0.02,
              method_params={"pcd": {"tau": 0.3}}, record=T.LIVE_RECORD)
    assert out["methods"] == ref.methods and out["record"] == [int(k) for k in ref.record]
    want = np.round(ref.positions, T.LIVE_DECIMALS)
    np.testing.assert_array_equal(np.array(out["x"], dtype=float), want[..., 0])  # exact (after the stated rounding)
    np.testing.assert_array_equal(np.array(out["y"], dtype=float), want[..., 1])
    # and the page's own runs (every method in one cached call) draw exactly these points
    page = T.toy_run_set.__wrapped__("saddle2d", None, None, None, tuple(METHODS), "{}", 0.3, "adam", 0.02, 1000,
                                     ((-1.0, 0.5),))
    for m in range(len(METHODS)):
        np.testing.assert_array_equal(page.positions[m], ref.positions[m])

@pytest.mark.parametrize("log", [True, False])
def test_live_losses_are_the_problems_and_the_page_panels_points(problem, log):
    """The losses a drag sends are the problem's at the moved paths' points, exactly the page's full run's
    for that start after the drop (the start committed to 3 decimals: the same point), and placed on the
    objective-space panel's axes exactly as that panel, drawn from the full run, places its own points."""
    from pcd.experiments.toy import objective_space
    from pcd.viz.objective import objective_space_figure
    from pcd.viz.theme import plain_array
    from pcd.viz.toy import TOY_FRAMES

    start = [-1.0, 0.5]
    names, rec, pos, losses = T.live_run(problem, METHODS, {}, 0.02, "adam", 0.02, 1000, [start])
    ok = np.isfinite(pos).all(axis=-1)
    assert ok.all()
    np.testing.assert_array_equal(losses[ok], problem.losses(pos[ok]))  # the problem's own loss function
    starts = np.asarray(problem.default_starts(), dtype=float)
    starts[0] = start  # the drop of start S1 there: the page's committed run
    page = T.toy_run_set.__wrapped__("saddle2d", None, None, None, tuple(METHODS), "{}", 0.02, "adam", 0.02, 1000,
                                     tuple(map(tuple, starts.tolist())))
    np.testing.assert_array_equal(page.losses[:, 0], losses[:, 0])
    fig = objective_space_figure(objective_space(problem, page), log=log, max_frames=TOY_FRAMES)
    meta = dict(fig.layout.meta)
    assert meta["log"] is log and len(meta["shifts"]) == 2
    ans = T.live_answer(_req(x=start[0], y=start[1]), problem, METHODS, {}, "adam", 1000, starts, VIEW, meta)
    assert ans["methods"] == METHODS and "error" not in ans
    ox, oy = np.array(ans["ox"], dtype=float)[:, 0], np.array(ans["oy"], dtype=float)[:, 0]  # [M, T]
    M, S, n = len(METHODS), len(starts), len(rec)
    last = fig.frames[-1]  # the last frame: every path whole, the heads at the end
    for m in range(M):  # path trace m: S chunks of T points, each ending in a gap; S1's first
        np.testing.assert_array_equal(plain_array(last.data[m].x)[:n], ox[m].astype(np.float32))
        np.testing.assert_array_equal(plain_array(last.data[m].y)[:n], oy[m].astype(np.float32))
        h = (M - 1 - m) * S  # the heads trace: methods in reverse order, S points each
        assert plain_array(last.data[-1].x)[h] == np.float32(ox[m, -1])
        assert plain_array(last.data[-1].y)[h] == np.float32(oy[m, -1])
    # without the panel (a problem with K != 2, or none drawn), no losses go to the browser; nor when the
    # browser does not ask for them (a panel out of view, between its once-a-second redraws)
    assert "ox" not in T.live_answer(_req(), problem, METHODS, {}, "adam", 1000, starts, VIEW)
    assert "ox" not in T.live_answer(_req(obj=False), problem, METHODS, {}, "adam", 1000, starts, VIEW, meta)
    assert T.live_answer(_req(obj=True), problem, METHODS, {}, "adam", 1000, starts, VIEW, meta)["ox"] == ans["ox"]


def test_live_answer_for_a_start_for_tau_and_for_lr(problem):
    starts = problem.default_starts()
    a = T.live_answer(_req(), problem, METHODS, {}, "adam", 1000, starts, VIEW)
    assert a["seq"] == 7 and a["kind"] == "start" and a["s"] == 0 and a["methods"] == METHODS
    assert all(len(per) == 1 for per in a["x"])  # the moved start only
    assert a["x"][0][0][0] == -1.0 and a["y"][0][0][0] == 0.5
    t = T.live_answer(_req(kind="tau", tau=0.5), problem, METHODS, {}, "adam", 1000, starts, VIEW)
    assert t["methods"] == ["pcd"] and len(t["x"][0]) == len(starts)  # τ moves PCD only, every start
    lr = T.live_answer(_req(kind="lr", lr=0.05), problem, ["pcd", "ws"], {}, "adam", 1000, starts, VIEW)
    assert lr["methods"] == ["pcd", "ws"] and len(lr["x"][1]) == len(starts)
    ref = run(problem, ["ws"], starts=starts, steps=1000, lr=0.05, record=T.LIVE_RECORD)
    np.testing.assert_array_equal(np.array(lr["x"][1], dtype=float), np.round(ref.positions[0, ..., 0], T.LIVE_DECIMALS))


@pytest.mark.parametrize("bad, word", [
    ({"x": math.nan}, "finite"), ({"x": math.inf}, "finite"), ({"x": 9.0}, "start x"), ({"y": -2.5}, "start y"),
    ({"s": 3}, "start index"), ({"s": -1}, "start index"), ({"s": True}, "start index"), ({"s": "0"}, "start index"),
    ({"tau": 1.5}, "τ"), ({"tau": -0.1}, "τ"), ({"tau": None}, "τ"), ({"lr": 0.03}, "learning rate"),
    ({"lr": 0.0}, "learning rate"), ({"kind": "steps"}, "kind"), ({"seq": -1}, "seq"), ({"seq": "x"}, "seq"),
    ({"obj": "yes"}, "obj"), ({"obj": 1}, "obj"), ({"obj": None}, "obj"),
])
def test_bad_requests_are_refused_in_one_line(problem, bad, word):
    a = T.live_answer(_req(**bad), problem, METHODS, {}, "adam", 1000, problem.default_starts(), VIEW)
    assert set(a) == {"seq", "error"} and word in a["error"] and "\n" not in a["error"], a
    seq = bad.get("seq", 7)
    assert a["seq"] == (seq if isinstance(seq, int) else None)  # the browser's back-pressure is released


@pytest.mark.parametrize("raw", [None, [], "req", 5, {"kind": "start"}])
def test_malformed_requests_never_raise(problem, raw):
    a = T.live_answer(raw, problem, METHODS, {}, "adam", 1000, problem.default_starts(), VIEW)
    assert "error" in a and a["seq"] is None


def test_live_methods_tau_moves_only_its_methods():
    assert T.live_methods("tau", ["ws", "pcd", "mgda"]) == ["pcd"]
    assert T.live_methods("start", ["ws", "pcd"]) == ["ws", "pcd"] == T.live_methods("lr", ["ws", "pcd"])


def test_moved_start_replaces_one_line_validated():
    text = "-2.500, 0.400\n-1.000, 1.500\n0.000, 0.000"
    assert T.moved_start(text, 1, 0.12345, -0.5, VIEW) == "-2.500, 0.400\n0.123, -0.500\n0.000, 0.000"
    for s, x, y in ((3, 0.0, 0.0), (0, math.nan, 0.0), (0, 0.0, 5.0), ("1", 0.0, 0.0)):
        with pytest.raises(ValueError):
            T.moved_start(text, s, x, y, VIEW)


def test_a_point_on_the_maps_edge_is_kept_on_it(problem):
    # the browser clamps a drag to the axis range, which may differ from the view box in the 7th decimal
    a = T.live_answer(_req(x=-3.5 - 1e-7, y=2.0 + 1e-7), problem, METHODS, {}, "adam", 100, problem.default_starts(), VIEW)
    assert "error" not in a and a["x"][0][0][0] == -3.5 and a["y"][0][0][0] == 2.0
    assert T.moved_start("0, 0", 0, 3.5 + 1e-7, 0.0, VIEW) == "3.500, 0.000"
