"""Teaching figures: the gradient inset animated with the toy map, the gradients at one frame,
the loss-plot step cursor."""
from __future__ import annotations

import base64

import numpy as np
import plotly.graph_objects as go
import pytest

import pcd.problems as problems
from pcd.engine import run
from pcd.experiments import toy as xtoy
from pcd.studio import lesson
from pcd.viz.landscape import landscape_figure, loss_figure
from pcd.viz.teaching import (
    ARROW,
    CURSOR_NAME,
    add_gradient_inset,
    add_step_cursor,
    gradients_figure,
    inset_figure,
    inset_scale,
)
from pcd.viz.theme import plain_array


@pytest.fixture(scope="module")
def saddle():
    prob = problems.make("saddle2d")
    runs = [run(prob, [m], steps=600, lr=0.02, record=80, method_params={"pcd": {"tau": 0.02}} if m == "pcd" else None)
            for m in ("pcd", "ws", "mgda")]
    res = xtoy.merge_results(runs)
    grads = xtoy.trajectory_gradients(prob, res, 0)
    fig = landscape_figure(res, prob.grid(120, 80), validate=False)
    return prob, res, grads, fig


def _arr(v):
    """A trace array as NumPy (Plotly's JSON form ``{"dtype", "bdata"}`` decoded)."""
    if isinstance(v, dict) and "bdata" in v:
        return np.frombuffer(base64.b64decode(v["bdata"]), dtype=np.dtype(v["dtype"]))
    return np.asarray(v, dtype=float)


def test_inset_rides_on_every_frame_and_draws_the_gradients_to_one_scale(saddle):
    _, res, grads, fig = saddle
    out = add_gradient_inset(fig, grads)
    assert len(out.frames) == len(fig.frames) == res.record.size
    names = [t.name for t in out.data]
    first = names.index("g₁ (primary)")
    assert names[first:] == ["g₁ (primary)", "g₂", "d (PCD)", "d (Weighted sum)", "d (MGDA)", "inset numbers"]
    assert first == len(fig.data)                           # appended after the map's own traces
    assert out.layout.xaxis2.domain[0] > out.layout.xaxis.domain[1]
    scale = inset_scale(grads)
    for t in (0, len(out.frames) // 2, len(out.frames) - 1):
        fr = out.frames[t]
        assert list(fr.traces[-6:]) == list(range(first, first + 6))
        for k, kind in ((0, "g"), (2, "d")):
            tr = fr.data[-6 + k] if kind == "g" else None
            for p, name in enumerate(res.methods):
                if kind == "g":
                    x, y = plain_array(tr.x).astype(float), plain_array(tr.y).astype(float)
                    seg = np.array([x[3 * p + 1] - x[3 * p], y[3 * p + 1] - y[3 * p]])
                    v = grads["methods"][name]["g"][t, 0, :2]
                else:
                    dtr = fr.data[-6 + 2 + p]
                    x, y = plain_array(dtr.x).astype(float), plain_array(dtr.y).astype(float)
                    seg = np.array([x[1] - x[0], y[1] - y[0]])
                    v = grads["methods"][name]["d"][t, :2]
                u = v / scale * ARROW
                r = np.linalg.norm(u)
                if r < 0.03:                                  # too short to draw: no segment at all
                    assert np.isnan(seg).all()
                    continue
                np.testing.assert_allclose(seg, u * min(1.0, ARROW / r), atol=1e-5)  # clipped to the circle
        texts = fr.data[-1].text
        assert len(texts) == 3 and all("‖g₁‖" in s for s in texts)
    # the stalled methods' last frame says so; PCD's numbers carry its multiplier
    last = out.frames[-1].data[-1].text
    assert "‖d‖ ≈ 0" in last[1] and "‖d‖ ≈ 0" in last[2]
    assert "μ" in out.frames[5].data[-1].text[0]
    # the map's own animated trace is unchanged in every frame
    np.testing.assert_array_equal(_arr(out.frames[3].data[0].x), _arr(fig.frames[3].data[0].x))


def test_inset_validation(saddle):
    _, _, grads, fig = saddle
    with pytest.raises(ValueError, match="trajectory_gradients"):
        add_gradient_inset(fig, {"x": 1})
    with pytest.raises(ValueError, match="at least one method"):
        add_gradient_inset(fig, grads, methods=["cagrad"])
    with pytest.raises(ValueError, match="map_fraction"):
        add_gradient_inset(fig, grads, map_fraction=0.1)
    with pytest.raises(ValueError, match="scale"):
        add_gradient_inset(fig, grads, scale=-1.0)
    other = dict(grads, steps=grads["steps"][:-1] + 1)
    with pytest.raises(ValueError, match="recorded steps"):
        add_gradient_inset(fig, other)


def test_gradients_figure_per_method_frames(saddle):
    _, res, grads, _ = saddle
    frames = lesson.stall_frames(res, 0)
    fig = gradients_figure(grads, frame=frames)
    assert isinstance(fig, go.Figure)
    titles = [a.text for a in fig.layout.annotations]
    assert any(f"step {int(res.record[frames['pcd']])}" in t for t in titles)
    assert any(f"step {int(res.record[-1])}" in t for t in titles)
    with pytest.raises(ValueError, match="frame must be in"):
        gradients_figure(grads, frame=10_000)


def test_step_cursor_one_line_per_panel(saddle):
    _, res, _, _ = saddle
    out = add_step_cursor(loss_figure(res, spec_only=True), 40)
    go.Figure(out)                                        # a valid figure (Plotly's validation)
    cursors = [s for s in out["layout"]["shapes"] if s["name"] == CURSOR_NAME]
    assert len(cursors) == res.losses.shape[-1]
    assert all(s["x0"] == s["x1"] == 41 for s in cursors)
    assert {s["xref"] for s in cursors} == {"x", "x2"}
    again = add_step_cursor(out, 5)                       # moving it replaces, never duplicates
    assert [s["x0"] for s in again["layout"]["shapes"] if s["name"] == CURSOR_NAME] == [6, 6]
    with pytest.raises(ValueError):
        add_step_cursor(loss_figure(res, spec_only=True), -1)


def test_inset_below_the_map_for_a_narrow_window(saddle):
    """At an 800-px window the side panels' numbers would touch: the inset goes under the map, full
    width, three panels a row; the map keeps the top part and the frames still carry the inset."""
    prob, res, grads, fig = saddle
    out = add_gradient_inset(fig, grads, placement="below")
    lay = out.layout
    assert tuple(lay.xaxis.domain) == (0.0, 1.0) and tuple(lay.xaxis2.domain) == (0.0, 1.0)
    assert lay.yaxis2.domain[1] < lay.yaxis.domain[0]  # the inset is under the map
    titles = [a for a in lay.annotations if a.xref == "x2" and a.text and a.text.startswith("<b>")]
    assert len({round(a.y, 6) for a in titles}) == 1  # 3 methods: one row of three panels
    assert len(out.frames) == len(fig.frames) and len(out.frames[0].data) == len(fig.frames[0].data) + 2 + 3 + 1
    with pytest.raises(ValueError):
        add_gradient_inset(fig, grads, placement="left")
    # a plain spec works too (one Figure built) and gives the same figure
    spec = landscape_figure(res, prob.grid(120, 80), validate=False, spec_only=True)
    same = add_gradient_inset(spec, grads, placement="below")
    assert same.to_plotly_json()["layout"]["yaxis2"] == out.to_plotly_json()["layout"]["yaxis2"]


def test_side_inset_height_gives_every_panel_its_room():
    """The toy map with all fifteen methods drew the inset's rows over each other (a 360 px plot for 5
    rows): a figure builder makes the plot at least side_inset_height_px tall, where the panels keep the
    minimum size their fixed-pixel titles and numbers need (the default six fit the former 340 px)."""
    from pcd.viz import teaching as T

    assert T.side_inset_height_px(6) <= 340
    for n in range(1, 21):
        h = T.side_inset_height_px(n)
        geom = T._geometry(n, T.side_inset_cols(n), h, 2000.0)  # a wide plot: the height decides
        u = 2.0 / (geom["title"] - 1.0)  # the panel half-width (px) the geometry chose
        assert u >= T.INSET_MIN_U_PX - 1e-6, (n, u)
    assert T.side_inset_height_px(15) > 2 * T.side_inset_height_px(6)


def test_inset_alone_on_the_maps_frames_in_larger_type(saddle):
    """The inset as a chart of its own (presenter mode: under the map and its objective space):
    the map's frames (so one set of controls plays both), the same numbers at every frame as the
    inset on the map, one row of panels over the whole chart, titles and numbers 1.2 times larger."""
    _, res, grads, fig = saddle
    names = [f.name for f in fig.frames]
    alone = inset_figure(grads, names, width_px=1200, height=280, text_scale=1.2)
    on_map = add_gradient_inset(fig, grads)
    assert [f.name for f in alone.frames] == names
    nums = next(i for i, t in enumerate(alone.data) if t.name == "inset numbers")
    nums_map = next(i for i, t in enumerate(on_map.data) if t.name == "inset numbers")
    for fa, fm in zip(alone.frames, on_map.frames):
        ta = fa.data[list(fa.traces).index(nums)].text
        tm = fm.data[list(fm.traces).index(nums_map)].text
        assert list(ta) == list(tm)
    assert tuple(alone.layout.xaxis2.domain) == (0.0, 1.0) and tuple(alone.layout.yaxis2.domain) == (0.0, 1.0)
    assert alone.data[nums].textfont.size == pytest.approx(11 * 1.2)
    centers_y = {round(float(y), 6) for y in _arr(alone.data[nums].y)}
    assert len(centers_y) == 1  # one row
    plain = inset_figure(grads, names, width_px=1200, height=280)
    assert plain.data[nums].textfont.size == 11
    with pytest.raises(ValueError, match="text_scale"):
        inset_figure(grads, names, text_scale=0)
    with pytest.raises(ValueError, match="placement"):
        add_gradient_inset(fig, grads, placement="over")
