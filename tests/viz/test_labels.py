"""Label placement (pcd.viz.labels) and the figures that use it: every label's box, computed from the
figure's own layout (axis ranges, annotation offsets, text and font) on each plot size the figure is
drawn at, keeps clear of the other labels and of the markers it names -- the collisions found in the
browser (issue 28: τ labels, the geometry figure's method labels, the toy map's end labels over the
starts, the loss panels' y ticks, the inset under the map) would fail here. The same figures are drawn
in Chromium by tests/viz/test_labels_browser.py."""
from __future__ import annotations

import numpy as np
import pytest

import pcd.methods as registry
import pcd.problems as problems
from pcd.experiments import geometry as xgeo
from pcd.experiments import synthetic
from pcd.viz import labels as L
from pcd.viz.geometry import GEOMETRY_PLOT_SIZES, PRESENT_CHART_PX, geometry_figure, plot_side_px
from pcd.viz.landscape import MAP_PLOT_SIZES, START_MARK_PX, end_annotations, start_label_above
from pcd.viz.tau import TAU_PLOT_SIZES, tradeoff_figure

FIFTEEN = ["pcd", "ws", "mgda", "pcgrad", "cagrad", "famo", "upgrad", "dualproj", "imtlg", "alignedmtl",
           "nashmtl", "graddrop", "rgw", "dbgd", "auxinash"]
BUDGETS = [100, 300, 1000]
SCALES = [1.0, L.PRESENT_TEXT_SCALE]  # the labels as drawn, and presenter mode's (14.4-px text)


def _overlaps(boxes, names, tol=0.5):
    return [(names[i], names[j], round(L.box_gap(boxes[i], boxes[j]), 1))
            for i in range(len(boxes)) for j in range(i) if L.box_gap(boxes[i], boxes[j]) < -tol]


def test_text_size_and_box_gap():
    w1, h1 = L.text_size("τ = 0.1", 11)
    w2, h2 = L.text_size("<b>PCGrad</b><br>> UPGrad", 12)
    assert 40 < w1 < 60 and 18 < h1 < 24
    assert h2 > 1.7 * h1 and w2 < L.text_size("PCGrad > UPGrad", 12)[0]  # tags ignored, lines stack
    assert L.box_gap((0, 0, 10, 10), (20, 0, 10, 10)) == pytest.approx(10)
    assert L.box_gap((0, 0, 10, 10), (5, 0, 10, 10)) == pytest.approx(-5)


def test_place_keeps_clear_of_an_obstacle_on_every_plot_size():
    plots = L.plots_for((0, 10), (0, 10), ((200, 200), (800, 800)))
    # a marker right above the point: the label goes elsewhere, on both sizes
    obstacle = [(5.0, 5.4, 0.0, -38.0, 60.0, 30.0)]
    [((ax, ay), room)] = L.place([[5.0, 5.0]], [(50.0, 20.0)], plots, obstacle)
    assert room >= 0 and (ax, ay) != (0, -38)
    # near the top edge a label above would leave the plot: it goes below
    [((ax, ay), room)] = L.place([[5.0, 9.9]], [(50.0, 20.0)], plots)
    assert ay > 0 and room >= 0
    with pytest.raises(ValueError):
        L.place([[0, 0]], [], plots)
    with pytest.raises(ValueError):
        L.plots_for((1, 0), (0, 1))


def _room_one_offset(plots, x, y, off, size, obstacles, data=False):
    """The clearance rule of pcd.viz.labels, one offset at a time in plain Python (the loop
    pcd.viz.labels._rooms replaced by one NumPy pass per plot): the oracle."""
    w, h = size
    rooms = []
    for p in plots:
        kx, ky = (p.w / plots[0].w, p.h / plots[0].h) if data else (1.0, 1.0)
        px, py = p.px(x, y)
        cx, cy = float(px) + off[0] * kx, float(py) + off[1] * ky
        out = max(w / 2 - cx, cx + w / 2 - p.w, h / 2 - cy, cy + h / 2 - p.h)
        if out > 0:
            rooms.append(-min(out, 999.0))
            continue
        room = L.CLEAR_PX
        for o in obstacles:
            k = (p.w / plots[0].w, p.h / plots[0].h) if o[6] > 0 else (1.0, 1.0)
            ox, oy = p.px(o[0], o[1])
            gap = L.box_gap((float(ox) + o[2] * k[0], float(oy) + o[3] * k[1], o[4], o[5]), (cx, cy, w, h))
            room = min(room, gap)
        rooms.append(room)
    bad = sum(r < 0 for r in rooms)
    return min(rooms) if not bad else -1000.0 * bad + max(min(rooms), -999.0)


def test_every_offsets_room_at_once_equals_the_rule_one_offset_at_a_time():
    rng = np.random.default_rng(7)
    for trial in range(60):
        plots = L.plots_for((-3.5, 3.5), (-3.0, 3.0), L.PLOT_SIZES, equal=bool(trial % 2))
        n = int(rng.integers(0, 8))
        obs = np.column_stack([rng.uniform(-3, 3, (n, 2)), rng.uniform(-40, 40, (n, 2)), rng.uniform(5, 60, (n, 2)),
                               rng.integers(0, 2, n)])
        x, y = rng.uniform(-3.4, 3.4, 2)
        size = (float(rng.uniform(20, 140)), float(rng.uniform(12, 40)))
        data = bool(trial % 3 == 0)
        offs = np.asarray(L.OFFSETS, dtype=float)
        fast = L._rooms(plots, x, y, offs, size, obs, data)
        slow = [_room_one_offset(plots, x, y, o, size, obs, data) for o in L.OFFSETS]
        np.testing.assert_allclose(fast, slow, rtol=1e-12, atol=1e-9)


def test_an_obstacle_at_nan_is_no_obstacle_and_hides_none_of_the_others():
    """A diverged run's end point (NaN) among the obstacles used to make every obstacle count as absent
    (the minimum over them was NaN): the label then went on top of a marker."""
    plots = L.plots_for((0, 10), (0, 10), ((200, 200), (800, 800)))
    marker = (5.0, 5.4, 0.0, -38.0, 60.0, 30.0)
    for obstacles in ([marker], [marker, (np.nan, np.nan, 0.0, 0.0, 20.0, 20.0)],
                      [(np.nan, np.nan, 0.0, 0.0, 20.0, 20.0), marker]):
        [((ax, ay), room)] = L.place([[5.0, 5.0]], [(50.0, 20.0)], plots, obstacles)
        assert room >= 0 and (ax, ay) != (0, -38), obstacles


@pytest.fixture(scope="module")
def tau_figures():
    out = {}
    for prob in ("quadratic", "saddle2d", "scale", "two_task"):
        recs = synthetic.tau_sweep(prob, taus=[0.0, 0.005, 0.01, 0.02, 0.05, 0.1, 0.2, 0.3, 0.5, 0.7, 1.0],
                                   lr=0.02, budgets=BUDGETS)
        for ts in SCALES:
            out[prob, ts] = (recs, tradeoff_figure(recs, pareto_front=problems.named(prob).pareto_front(200),
                                                   selected=0.1, log_axes=prob == "saddle2d", text_scale=ts))
    return out


def test_label_px_and_its_bounds():
    assert L.label_px(12, L.PRESENT_TEXT_SCALE) >= 14  # readable from the back of a room
    assert L.label_px(12) == 12
    with pytest.raises(ValueError):
        L.label_px(12, 0.0)


@pytest.mark.parametrize("ts", SCALES)
@pytest.mark.parametrize("prob", ["quadratic", "saddle2d", "scale", "two_task"])
def test_tau_labels_clear_of_each_other_and_of_every_marker(tau_figures, prob, ts):
    """τ dial (and the lesson's step 7): the "τ = 0" label sat under its own marker and τ = 0.1, 0.5, 1
    were drawn over each other where the curve bunches up. Each label is an annotation with a line to its
    point; on every plot size its box keeps off the other labels, every curve's markers and the ring --
    also at presenter mode's larger text (``ts``)."""
    recs, fig = tau_figures[prob, ts]
    lay = fig.layout
    anns = [a for a in lay.annotations if a.text.startswith("τ = ")]
    texts = [a.text for a in anns]
    assert texts[:2] == ["τ = 0", "τ = 1"] and len(anns) >= 2  # the first and the last τ always
    assert all(a.font.size == L.label_px(12, ts) for a in anns)
    log_x, log_y = lay.xaxis.type == "log", lay.yaxis.type == "log"
    markers = []
    for tr in fig.data:
        if (tr.name or "").startswith(("PCD after", "selected")):
            size = 24.0 if tr.name.startswith("selected") else 12.0
            markers += [(x, y, size) for x, y in zip(tr.x, tr.y)]
    for plot in L.plots_for(lay.xaxis.range, lay.yaxis.range, TAU_PLOT_SIZES, log_x=log_x, log_y=log_y):
        boxes = L.label_boxes(anns, plot)
        assert not _overlaps(boxes, texts), (plot.w, _overlaps(boxes, texts))
        for (cx, cy, w, h), t in zip(boxes, texts):
            assert w / 2 <= cx <= plot.w - w / 2 and h / 2 <= cy <= plot.h - h / 2, (t, plot.w)  # on the plot
            mx, my = plot.px([m[0] for m in markers], [m[1] for m in markers])
            for x, y, (_, _, size) in zip(mx, my, markers):
                assert L.box_gap((cx, cy, w, h), (x, y, size, size)) >= 0, (t, plot.w, x, y)
    # the annotation points at its τ's point of the largest budget's curve
    curve = next(tr for tr in fig.data if tr.name == f"PCD after {BUDGETS[-1]} steps")
    a0 = anns[0]
    x0 = np.log10(curve.x[0]) if log_x else curve.x[0]
    assert a0.showarrow and a0.x == pytest.approx(x0)


def _geometry(angle, methods, g3=False, ts=1.0):
    J = xgeo.gradient_vectors(angle, 1.0)
    if g3:
        J = np.vstack([J, [[0.8 * np.cos(np.radians(-110)), 0.8 * np.sin(np.radians(-110))]]])
    return geometry_figure(xgeo.method_directions(J, methods, tau=0.3), text_scale=ts), J


@pytest.mark.parametrize("ts", SCALES)
@pytest.mark.parametrize("angle", [90, 120, 150, 170])
def test_geometry_method_labels_never_overprint(angle, ts):
    """Gradient geometry with fifteen methods: "AuxiNash" was drawn over "Nash-MTL" (tip labels of
    neighbouring rays). Every ray has one placed label; on each plot size no label box overlaps another,
    a gradient's label or an arrowhead -- also at presenter mode's larger text (``ts``)."""
    fig, J = _geometry(angle, FIFTEEN, ts=ts)
    named = " ".join(a.hovertext or a.text for a in fig.layout.annotations)
    for m in ("Nash-MTL", "AuxiNash", "PCD", "MGDA"):
        assert m in named, (m, named)
    _geometry_labels_clear(fig, J, ts)
    assert all(a.font.size == L.label_px(12, ts) for a in fig.layout.annotations)


@pytest.mark.parametrize("ts", SCALES)
@pytest.mark.parametrize("angle", [0, 30, 60, 90, 110, 120, 150, 180])
def test_geometry_every_registered_method_has_a_clear_place(angle, ts):
    """All 28 methods, plots down to 360 px (a 560-px page and the lesson's column): the stack of methods on
    one ray ran to ten and more lines and found no clear place. Cut to the lines that have one, its last
    line says how many it leaves out; its hover and the legend name every one of them. The plot sizes
    include the square a 560-px chart keeps beside the legend's many rows (~260 px; presenter mode: its
    1150 x 530 chart), where the presenter's larger labels, should none have a clear place, keep 12 px."""
    methods = registry.available()
    fig, J = _geometry(angle, methods, ts=ts)
    _geometry_labels_clear(fig, J, ts)
    anns = fig.layout.annotations
    named = " ".join(a.hovertext or a.text for a in anns)
    labels = [r for r in xgeo.method_directions(J, methods, tau=0.3)["rows"] if not r.get("error")]
    for r in labels:  # every method named (the one ray's label names its members, coinciding or not)
        assert r["label"] in named, r["label"]
    cut = [a for a in anns if a.hovertext]
    for a in cut:  # a cut label says so and keeps the whole on hover
        assert "more (hover)" in a.text and a.hovertext.count("<br>") > a.text.count("<br>")


def _geometry_labels_clear(fig, J, ts):
    lay = fig.layout
    anns = list(lay.annotations)
    texts = [a.text for a in anns]
    assert len({a.font.size for a in anns}) == 1 and anns[0].font.size in (L.label_px(12, ts), 12)
    lim = lay.xaxis.range[1]
    legend = [t.name for t in fig.data if t.showlegend is not False and t.name]  # (the figure's, with PCD's d̃)
    side = (plot_side_px(legend, lay.height) if ts == 1 else
            plot_side_px(legend, min(lay.height, PRESENT_CHART_PX[1]), PRESENT_CHART_PX[0], ts))
    tips = [tr for tr in fig.data if tr.marker is not None and tr.marker.symbol is not None
            and list(tr.marker.symbol) == ["circle", "arrow"]]
    for plot in L.plots_for((-lim, lim), (-lim, lim), ((side, side),) + GEOMETRY_PLOT_SIZES, equal=True):
        boxes = L.label_boxes(anns, plot)
        assert not _overlaps(boxes, texts), (plot.w, _overlaps(boxes, texts))
        for (cx, cy, w, h), t in zip(boxes, texts):  # on the plot
            assert w / 2 - 1 <= cx <= plot.w - w / 2 + 1 and h / 2 - 1 <= cy <= plot.h - h / 2 + 1, (t, plot.w)
        for k, g in enumerate(J):  # "g1" above right / left of its tip
            gx, gy = plot.px(g[0], g[1])
            w, h = L.text_size(f"g{k + 1}", L.label_px(13, ts))
            gbox = (float(gx) + (w / 2 + 4) * (1 if g[0] >= 0 else -1), float(gy) - h / 2 - 2, w, h)
            for b, t in zip(boxes, texts):
                assert L.box_gap(b, gbox) >= 0, (t, f"g{k + 1}", plot.w)
        for tr in tips:
            tx, ty = plot.px(tr.x[1], tr.y[1])
            for b, t in zip(boxes, texts):
                assert L.box_gap(b, (float(tx), float(ty), 10.0, 10.0)) >= 0, (t, tr.name, plot.w)


def test_geometry_one_d_labels_pcd_apart_from_g2():
    """1-D (the lesson's first step): PCD's update is g2's arrow; PCD's label keeps off g2's."""
    J = np.array([[0.5, 0.0], [-0.5, 0.0]])
    fig = geometry_figure(xgeo.method_directions(J, ["pcd", "ws", "mgda"], tau=0.3))
    pcd = next(a for a in fig.layout.annotations if "PCD" in a.text)
    lim = fig.layout.xaxis.range[1]
    for plot in L.plots_for((-lim, lim), (-lim, lim), GEOMETRY_PLOT_SIZES, equal=True):
        [b] = L.label_boxes([pcd], plot)
        gx, gy = plot.px(-0.5, 0.0)
        w, h = L.text_size("g2", 13)
        assert L.box_gap(b, (float(gx) - w / 2 - 4, float(gy) - h / 2 - 2, w, h)) >= 0


@pytest.mark.parametrize("ts", SCALES)
def test_toy_end_labels_keep_off_the_starts_and_their_names(ts):
    """All fifteen methods on the saddle: thirteen end together near (-1.9, 0), beside the three start
    markers -- the five-line label went over S1 (and the next label over it). On every map size each
    label's box keeps off the start rings, their "S1" labels, the end markers and the other labels --
    also at presenter mode's larger text (``ts``)."""
    view = (-3.5, 3.5, -2.0, 2.0)
    starts = np.array([[-2.55, 0.4], [-2.9, 0.1], [-1.65, -0.55]])
    ends = np.tile(np.array([-1.9, 0.0]), (15, 3, 1))
    ends[[0, 13]] = [2.0, 0.0]
    ends[10, 2] = [-1.25, 0.0]  # Nash-MTL from S3 ends apart: a second label next to the big one
    diag = np.full((15, 3), "stalled", dtype=object)
    anns = end_annotations(ends, FIFTEEN, diag, view, avoid=starts, text_scale=ts)
    texts = [a["text"] for a in anns]
    assert all(a["font"]["size"] == L.label_px(12, ts) for a in anns)
    assert any(t.count("<br>") >= 4 for t in texts) and "Nash-MTL (S3)" in texts
    above = start_label_above(starts, view)
    for plot in L.plots_for(view[:2], view[2:], MAP_PLOT_SIZES, equal=True):
        boxes = L.label_boxes(anns, plot)
        assert not _overlaps(boxes, texts), (plot.w, _overlaps(boxes, texts))
        sx, sy = plot.px(starts[:, 0], starts[:, 1])
        for s, (x, y) in enumerate(zip(sx, sy)):
            ring = (x, y, START_MARK_PX, START_MARK_PX)
            name = (x, y + (-1 if above[s] else 1) * (START_MARK_PX / 2 + 9), 20.0, 16.0)
            for b, t in zip(boxes, texts):
                assert L.box_gap(b, ring) >= 0 and L.box_gap(b, name) >= 0, (t, f"S{s + 1}", plot.w)


def test_a_start_near_the_top_is_named_below_its_marker():
    """τ dial's map: "S3" (a start at the top edge) was cut off above the plot; it goes under the marker."""
    assert list(start_label_above([[0.0, 2.2], [0.0, 0.0]], (-2.5, 2.5, -2.5, 2.5))) == [False, True]


def test_loss_panels_leave_room_for_the_next_panels_y_ticks():
    """Toy page "Loss vs step" at 800 px (a 560-px chart, a 480-px plot): the second panel's y tick labels
    ("10⁻¹²", ~45 px with the tick) reached into the first panel. The gap between panels holds them."""
    from pcd.viz.landscape import loss_figure

    res = synthetic.toy_run("double_well", ["pcd", "ws"], steps=50, lr=0.02, tau=0.02, record=20)
    fig = loss_figure(res)
    lay = fig.layout
    K = res.losses.shape[-1]
    plot_w = 560 - lay.margin.l - lay.margin.r
    for k in range(1, K):
        left = lay[f"xaxis{k if k > 1 else ''}"].domain[1]
        right = lay[f"xaxis{k + 1}"].domain[0]
        assert (right - left) * plot_w >= 52, (k, (right - left) * plot_w)


@pytest.fixture(scope="module")
def fifteen_space():
    from pcd.studio.toy import objective_space
    from pcd.viz import toy as toy_map

    prob = problems.make("saddle2d")
    res = synthetic.toy_run("saddle2d", FIFTEEN, steps=1000, lr=0.02, tau=0.02, record=200)
    return objective_space(prob, res, toy_map.toy_background(prob, toy_map.fit_bounds(res, prob.bounds))["grid"])


@pytest.mark.parametrize("ts", SCALES)
@pytest.mark.parametrize("log", [True, False])
def test_objective_verdicts_clear_of_each_other_and_of_the_end_points(fifteen_space, log, ts):
    """The objective panel with fifteen methods: its verdict labels (three to six lines each) keep off each
    other and off every end point on each plot size they are placed for -- also at presenter mode's larger
    text (``ts``), where a label with no clear place is shortened, never stacked over another."""
    from pcd.viz.objective import OBJECTIVE_PLOT_SIZES, objective_space_figure

    fig = objective_space_figure(fifteen_space, log=log, width_px=560, animate=False, text_scale=ts)
    lay = fig.layout
    anns = [a for a in lay.annotations if a.name == "end label"]
    texts = [a.text for a in anns]
    assert anns and all(a.font.size == L.label_px(12, ts) for a in anns)
    ends = np.asarray(fifteen_space["losses"])[:, :, -1].reshape(-1, 2)
    ends = np.maximum(ends - np.array([min(0.0, float(np.nanmin(ends[:, k]))) for k in range(2)]), 1e-12) if log else ends
    for plot in L.plots_for(lay.xaxis.range, lay.yaxis.range, OBJECTIVE_PLOT_SIZES, log_x=log, log_y=log):
        boxes = L.label_boxes(anns, plot)
        assert not _overlaps(boxes, texts), (plot.w, _overlaps(boxes, texts))
        ex, ey = plot.px(ends[:, 0], ends[:, 1])
        for b, t in zip(boxes, texts):
            for x, y in zip(ex, ey):
                if np.isfinite(x) and np.isfinite(y):
                    assert L.box_gap(b, (float(x), float(y), 10.0, 10.0)) >= 0, (t, plot.w, x, y)
