"""Toy-landscape figures and data prep: frames, traces, background image, tables."""
from __future__ import annotations

import numpy as np
import pytest

import pcd.problems as problems
from pcd.engine import run, sample_steps
from pcd.experiments import toy as xtoy
from pcd.studio import toy as toy_page
from pcd.viz import toy as toy_map
from pcd.viz.landscape import TRAIL, background_image, landscape_figure, loss_figure, zero_set_mask
from pcd.viz.theme import method_color, method_style


@pytest.fixture(scope="module")
def saddle_run():
    prob = problems.make("saddle2d")
    runs = [run(prob, [m], steps=400, lr=0.02, record=200, method_params={"pcd": {"tau": 0.02}} if m == "pcd" else None)
            for m in ("pcd", "ws", "mgda")]
    return prob, xtoy.merge_results(runs)


def test_background_image_orientation_zero_set_and_contours():
    prob = problems.make("saddle2d")
    xs, ys, Z = prob.grid(140, 80)
    img = background_image(xs, ys, Z)
    assert img.shape == (80, 140, 3) and img.dtype == np.uint8
    # the secondary's zero set (box around (2, 0)) is tinted green: G channel dominates there
    i = np.argmin(abs(xs - 2.0))
    j_top = 80 - 1 - np.argmin(abs(ys - 0.0))  # row 0 = top = largest y
    r, g, b = img[j_top, i].astype(int)
    assert g > r and g > b - 10
    # far from the box, no green tint (blue-ish map)
    r2, g2, b2 = img[5, 5].astype(int)
    assert b2 >= g2
    # orientation: row 0 is the largest y -- a primary increasing in y is darkest at the top
    gx, gy = np.linspace(0, 1, 30), np.linspace(0, 1, 20)
    ramp = np.broadcast_to(gy[:, None], (20, 30))[None]
    ramp_img = background_image(gx, gy, ramp).astype(int).sum(axis=2)
    assert ramp_img[0].mean() < ramp_img[-1].mean()
    with pytest.raises(ValueError):
        background_image(xs, ys, Z[:, :, :-1])


def test_zero_set_mask_line_and_region():
    xs = np.linspace(-1, 1, 101)
    X, Y = np.meshgrid(xs, xs)
    line = 0.5 * (X - 0.3) ** 2             # zero set: the line x = 0.3
    mask = zero_set_mask(line)
    cols = np.unique(np.nonzero(mask)[1])
    assert abs(xs[cols].mean() - 0.3) < 0.02 and len(cols) <= 5
    box = np.maximum(np.abs(X) - 0.5, 0)     # zero on a region
    assert zero_set_mask(box)[50, 50] and not zero_set_mask(box)[0, 0]


def test_landscape_figure_frames_traces_and_static_layers(saddle_run):
    prob, res = saddle_run
    fig = landscape_figure(res, prob.grid(120, 70), pareto_set=prob.pareto_set(), optima=prob.optima())
    T = len(res.record)
    assert len(fig.frames) == T == len(sample_steps(400, 200))
    # frames are named by the step and update only the last (animated) trace
    assert [f.name for f in fig.frames] == [str(int(k)) for k in res.record]
    last = len(fig.data) - 1
    assert all(tuple(f.traces) == (last,) for f in fig.frames)
    M, S = len(res.methods), res.S
    n_pts = M * S * (TRAIL + 1)
    assert len(fig.frames[0].data[0].x) == n_pts
    # heads (the last M*S points) follow the recorded positions
    t = 57
    heads = np.c_[fig.frames[t].data[0].x, fig.frames[t].data[0].y][-M * S:]
    # heads are drawn in reverse method order (the first method, PCD, on top)
    np.testing.assert_allclose(heads, res.positions[::-1, :, t].reshape(-1, 2), atol=1e-5)
    # early motion is not lost: the first frames are consecutive steps
    assert [int(f.name) for f in fig.frames[:5]] == [0, 1, 2, 3, 4]
    # faint full paths, one per method in the method's colour; background as an image (survives animation)
    for name in res.methods:
        tr = next(t for t in fig.data if t.legendgroup == name and t.mode.startswith("lines"))
        r, g, b = (int(method_color(name)[i:i + 2], 16) for i in (1, 3, 5))
        assert tr.line.color.startswith(f"rgba({r},{g},{b},")
        assert tr.line.dash == method_style(name)["dash"]  # its dash in its family (theme.method_style)
        assert len(tr.x) == S * (T + 1)
    assert not any(t.type in ("contour", "heatmap") for t in fig.data)
    assert len(fig.layout.images) == 1 and fig.layout.images[0].source.startswith("data:image/png;base64,")
    assert fig.layout.images[0].layer == "below"
    # play / pause and a slider with one step per frame
    labels = [b.label for b in fig.layout.updatemenus[0].buttons]
    assert any("Play" in lab for lab in labels) and any("Pause" in lab for lab in labels)
    assert len(fig.layout.sliders[0].steps) == T
    assert fig.layout.yaxis.scaleanchor == "x"
    # head colours: one per method
    cols = list(fig.data[last].marker.color)[-M * S:]
    assert cols == [method_color(m) for m in res.methods[::-1] for _ in range(S)]


def test_landscape_static_mode_and_validation(saddle_run):
    prob, res = saddle_run
    fig = landscape_figure(res, prob.grid(60, 40), animate=False)
    assert len(fig.frames) == 0
    last = fig.data[-1]
    heads = np.c_[last.x, last.y][-len(res.methods) * res.S:]
    np.testing.assert_allclose(heads, res.positions[::-1, :, -1].reshape(-1, 2), atol=1e-5)
    with pytest.raises(ValueError):
        landscape_figure(res, prob.grid(60, 40), frame_ms=0)
    with pytest.raises(ValueError):
        landscape_figure(res, prob.grid(60, 40), image="not a uri")
    with pytest.raises(ValueError):
        landscape_figure(res, prob.grid(60, 40), click_grid=-1)


def test_unvalidated_fast_path_gives_the_same_figure(saddle_run):
    prob, res = saddle_run
    grid = prob.grid(60, 40)
    a = landscape_figure(res, grid, prob.pareto_set(), prob.optima(), click_grid=10)
    b = landscape_figure(res, grid, prob.pareto_set(), prob.optima(), click_grid=10, validate=False)
    import json
    assert json.loads(a.to_json()) == json.loads(b.to_json())


def test_click_grid_trace_covers_bounds_and_keeps_animation_last(saddle_run):
    prob, res = saddle_run
    fig = landscape_figure(res, prob.grid(60, 40), click_grid=30)
    grid = next(t for t in fig.data if t.name == "click to add a start")
    assert len(grid.x) == 900 and grid.hoverinfo == "none"
    assert min(grid.x) == prob.bounds[0][0] and max(grid.y) == prob.bounds[1][1]
    last = len(fig.data) - 1
    assert fig.data[last - 1] is grid or fig.data[last - 1].name == "click to add a start"
    assert all(tuple(f.traces) == (last,) for f in fig.frames)


def test_loss_figure_log_axes_and_colours(saddle_run):
    prob, res = saddle_run
    fig = loss_figure(res, prob.objective_names)
    K = res.losses.shape[-1]
    assert len(fig.data) == len(res.methods) * res.S * K
    assert fig.layout.xaxis.type == "log" and fig.layout.yaxis.type == "log" and fig.layout.yaxis2.type == "log"
    for tr in fig.data:
        assert tr.line.color == method_color(tr.legendgroup)
        assert np.all(np.asarray(tr.y) >= 1e-12)  # zeros clipped to the floor, log-safe
    with pytest.raises(ValueError):
        loss_figure(res, ["only one name"])


def test_loss_figure_shifts_negative_objectives():
    prob = problems.make("two_task")
    res = run(prob, ["ws"], steps=50, lr=0.05, record=20)
    fig = loss_figure(res)
    assert all(np.all(np.asarray(t.y) > 0) for t in fig.data)


def test_endpoint_table_diagnosis_matches_paper_claim(saddle_run):
    prob, res = saddle_run
    df = toy_page.endpoint_table(res, prob.objective_names)
    assert len(df) == len(res.methods) * res.S
    ws = df[df["method"] == "Weighted sum"]
    assert all(d == "stalled: gradients cancel" for d in ws["diagnosis"])
    assert (ws[f"final {prob.objective_names[1]}"] > 1.0).all()  # secondary > 0 at the stall


def test_trajectories_table_and_merge(saddle_run):
    prob, res = saddle_run
    tab = toy_page.trajectories_table(res)
    T = len(res.record)
    assert len(tab) == len(res.methods) * res.S * T
    row = tab[(tab["method"] == "ws") & (tab["start"] == 2)].iloc[10]
    np.testing.assert_allclose([row["x1"], row["x2"]], res.positions[1, 1, 10])
    with pytest.raises(ValueError, match="different methods"):
        xtoy.merge_results([res, res])


def test_starts_helpers():
    pts = toy_page.parse_starts("-2.5, 0.4\n(1, 2); 3 4")
    np.testing.assert_allclose(pts, [[-2.5, 0.4], [1, 2], [3, 4]])
    with pytest.raises(ValueError, match="point 2"):
        toy_page.parse_starts("1, 2; 3")
    with pytest.raises(ValueError, match="numbers"):
        toy_page.parse_starts("1, a")
    g = toy_page.grid_starts(((-1, 1), (0, 2)), 3)
    assert g.shape == (9, 2) and g[:, 0].min() > -1 and g[:, 1].max() < 2
    with pytest.raises(ValueError):
        toy_page.grid_starts(((-1, 1), (0, 2)), 9)


def test_toy_problem_custom_formula_error_names_the_token():
    with pytest.raises(ValueError, match="foo"):
        toy_page.make_problem("custom", "x**2 + foo(y)", "y**2")
    p = toy_page.make_problem("double_well")
    assert p.K == 2 and p.dim == 2
    with pytest.raises(ValueError, match="unknown toy problem"):
        toy_page.make_problem("nope")


def test_outcome_names_tell_a_pareto_stationary_end_from_pcds_halt():
    """FAMO at the primary's minimum and PCD halted at g1 = 0 have the same engine code
    (primary_stationary) but different names; PCD stopped by a binding constraint is not called a
    conflict equilibrium."""
    from pcd.viz.theme import outcome_label

    famo = outcome_label("primary_stationary", "famo", short=True)
    pcd = outcome_label("primary_stationary", "pcd", short=True)
    assert famo == "Pareto-stationary at ∇f₁ = 0" and pcd == "PCD halted: ∇f₁ = 0" and famo != pcd
    assert outcome_label("conflict_equilibrium", "pcd", short=True) == "PCD held by a constraint"
    assert outcome_label("conflict_equilibrium", "mgda", short=True) == "stalled: gradients cancel"
    assert "_" not in outcome_label("moving", "ws")


# ---- map legibility (issue 13): end labels, smooth contours, undefined region, one play control ----

def test_end_clusters_and_one_label_per_group():
    from pcd.viz.landscape import end_annotations, end_clusters

    view = (-3.0, 3.0, -2.0, 2.0)
    ends = np.array([[[2.0, 0.0], [2.0, 0.0]],            # pcd: both starts end at the optimum
                     [[-1.9, 0.0], [-1.85, 0.01]],        # ws   \
                     [[-1.88, 0.0], [np.nan, np.nan]],    # mgda  > one group near (-1.9, 0); a diverged run left out
                     [[0.5, 1.5], [-1.9, 0.02]]])         # pcgrad: one end on its own, one in the group
    groups = end_clusters(ends, view)
    assert sorted(map(sorted, groups)) == [[(0, 0), (0, 1)], [(1, 0), (1, 1), (2, 0), (3, 1)], [(3, 0)]]
    diag = np.full((4, 2), "stalled", dtype=object)
    labels = end_annotations(ends, ["pcd", "ws", "mgda", "pcgrad"], diag, view, avoid=[[-2.5, 0.4]])
    assert len(labels) == 3
    texts = sorted(a["text"] for a in labels)
    assert texts == ["PCD", "PCGrad (S1)", "Weighted sum · MGDA · PCGrad"]
    group = next(a for a in labels if a["text"].startswith("Weighted"))
    assert group["hovertext"].count("<br>") == 3  # every member listed on hover
    assert all(-2.0 <= a["y"] <= 2.0 for a in labels)
    with pytest.raises(ValueError):
        end_clusters(np.zeros((2, 2)), view)


# the tall end label with all fifteen methods: tests/viz/test_labels.py::test_toy_end_labels_keep_off_the_starts_and_their_names


def test_contours_are_anti_aliased_not_stair_steps():
    """A tilted straight contour: a thresholded image draws it as whole pixels (its centre jumps
    in pixel steps from row to row: a stair); the smooth lines darken pixels by their distance
    to the level, so the line's darkness-weighted centre follows the straight line within a
    fraction of a pixel in every row."""
    xs, ys = np.linspace(0, 1, 240), np.linspace(0, 1, 160)
    X, Y = np.meshgrid(xs, ys)
    ramp = (X + 0.13 * Y)[None]  # contours: straight lines x + 0.13 y = c, tilted against the pixel grid
    img = background_image(xs, ys, ramp, levels=8, zero_sets=False).astype(float)
    lum = img.sum(axis=2)
    k = np.ones(9) / 9
    trend = np.array([np.convolve(r, k, mode="same") for r in lum])
    dark = np.clip(trend - lum, 0, None)[:, 10:-10]
    c = float(np.argmax(dark[0]))  # one line, followed from row to row (row 0 = top)
    centre = []
    for r in dark:
        lo, hi = int(round(c)) - 4, int(round(c)) + 5
        cols = np.arange(lo, hi)
        c = float((r[lo:hi] * cols).sum() / r[lo:hi].sum())
        centre.append(c)
    centre = np.array(centre)
    fit = np.polyval(np.polyfit(np.arange(len(centre)), centre, 1), np.arange(len(centre)))
    assert np.sqrt(np.mean((centre - fit) ** 2)) < 0.12, "contour centre follows the line smoothly"
    assert abs(fit[-1] - fit[0]) > 2.0  # the line does cross pixel columns over the image


def test_undefined_region_is_hatched_and_in_the_legend():
    from pcd.viz.landscape import undefined_mask

    prob = toy_page.make_problem("custom", "x - log(x) + y**2", "abs(y)", bounds=((-1, 3), (-1, 1)))
    xs, ys, Z = prob.grid(80, 40)
    bad = undefined_mask(Z)
    assert bad[:, xs <= 0].all() and not bad[:, xs > 0.05].any()
    img = background_image(xs, ys, Z)
    left = img[:, xs <= -0.2].reshape(-1, 3)
    assert len(np.unique(left, axis=0)) == 2  # two hatching greys, no landscape colour
    res = run(prob, ["ws"], starts=[[2.0, 0.5]], steps=30, lr=0.05, record=10)
    fig = landscape_figure(res, (xs, ys, Z), validate=False)
    assert any(t.name == "formula undefined (hatched)" for t in fig.data)


def test_page_variant_has_no_plotly_controls_and_a_fitted_legend(saddle_run):
    from pcd.viz.landscape import fit_legend

    prob, res = saddle_run
    spec = landscape_figure(res, prob.grid(60, 40), controls=False, spec_only=True)
    assert isinstance(spec, dict) and spec["frames"]
    assert "updatemenus" not in spec["layout"] and "sliders" not in spec["layout"]
    assert spec["layout"]["legend"]["yref"] == "container"
    # the start ring is wider than the heads that sit on it at step 0 (the legend symbol is visible)
    ring = next(t for t in spec["data"] if t["name"] == "starts")
    assert ring["marker"]["symbol"] == "circle-open" and ring["marker"]["size"] > 13
    narrow = fit_legend(dict(spec, layout=dict(spec["layout"])), 420)["layout"]["margin"]["b"]
    wide = fit_legend(dict(spec, layout=dict(spec["layout"])), 1400)["layout"]["margin"]["b"]
    assert narrow > wide  # more legend rows at a narrow width
    # the standalone variant keeps Plotly's play button and slider (a downloaded HTML has no page controls)
    full = landscape_figure(res, prob.grid(60, 40), validate=False)
    assert full.layout.updatemenus and full.layout.sliders


def test_typed_array_figure_roundtrip(saddle_run):
    from pcd.viz.theme import figure_from_spec, plain_array, typed_arrays

    a = np.array([1.5, -2.0], dtype=np.float32)
    enc = typed_arrays({"x": a, "n": np.arange(3), "b": np.array([True, False]), "s": np.array(["a", "b"])})
    assert enc["x"]["dtype"] == "f4" and enc["n"]["dtype"] == "i4" and enc["b"]["dtype"] == "u1"
    assert enc["s"] == ["a", "b"]
    np.testing.assert_array_equal(plain_array(enc["x"]), a)
    fig = figure_from_spec({"data": [{"type": "scatter", "x": a, "y": a}], "layout": {"template": "plotly_white"}})
    assert isinstance(fig.layout.template.to_plotly_json(), dict)
    np.testing.assert_array_equal(plain_array(fig.to_dict()["data"][0]["x"]), a)


def test_fit_bounds_covers_every_trajectory_and_presets_parse():
    prob = toy_page.make_problem("custom", toy_page.FORMULAS["himmelblau"]["f1"],
                              toy_page.FORMULAS["himmelblau"]["f2"], bounds=((-1.0, 1.0), (-1.0, 1.0)))
    res = run(prob, ["ws"], starts=[[0.5, 0.5]], steps=300, lr=0.1, record=50)
    (x0, x1), (y0, y1) = toy_map.fit_bounds(res, prob.bounds)
    pos = res.positions.reshape(-1, 2)
    assert x0 <= pos[:, 0].min() and x1 >= pos[:, 0].max() and y0 <= pos[:, 1].min() and y1 >= pos[:, 1].max()
    assert pos[:, 0].max() > 1.5  # the run does leave the box it started in: the fit is needed
    assert (x0, y0) <= (-1.0, -1.0)  # never smaller than the problem's box
    for key, preset in toy_page.FORMULAS.items():
        p = toy_page.make_problem("custom", preset["f1"], preset["f2"], bounds=preset["bounds"], starts=preset.get("starts"))
        L = p.losses(p.default_starts())
        assert np.isfinite(L).all(), key  # every preset's starts are where its formulas are defined


def test_formula_caret_points_at_the_parsers_position():
    with pytest.raises(ValueError) as info:
        toy_page.make_problem("custom", "x**2 + foo(y)", "y**2")
    assert toy_page.formula_caret(info.value) == "x**2 + foo(y)\n       ^"
    assert toy_page.formula_caret(ValueError("no position")) is None


def test_max_frames_spreads_frames_over_the_record_and_the_inset_follows(saddle_run):
    from pcd.viz.landscape import frame_index
    from pcd.viz.teaching import add_gradient_inset

    prob, res = saddle_run
    T = len(res.record)
    idx = frame_index(T, 40)
    assert idx[0] == 0 and idx[-1] == T - 1 and len(idx) == 40 and np.all(np.diff(idx) > 0)
    assert list(frame_index(T)) == list(range(T)) and list(frame_index(T, 10 * T)) == list(range(T))
    with pytest.raises(ValueError):
        frame_index(T, 1)
    spec = landscape_figure(res, prob.grid(60, 40), controls=False, spec_only=True, max_frames=40)
    assert [f["name"] for f in spec["frames"]] == [str(int(res.record[i])) for i in idx]
    # a frame still moves the heads to that recorded step (comet tails use every recorded point)
    from pcd.viz.theme import plain_array
    fig = add_gradient_inset(spec, xtoy.trajectory_gradients(prob, res, 0))
    fr = fig.frames[7]
    M, S = len(res.methods), res.S
    heads = np.c_[plain_array(fr.data[0].x), plain_array(fr.data[0].y)][-M * S:]
    np.testing.assert_allclose(heads, res.positions[::-1, :, idx[7]].reshape(-1, 2), atol=1e-5)
    assert len(fig.frames) == 40 and len(fr.data) > 1  # the inset rides on the same 40 frames


def test_toy_map_figure_layout_per_width_class(saddle_run):
    prob, res = saddle_run
    bg = toy_map.toy_background(prob)
    wide = toy_page.map_figure(prob, res, bg, width="wide").layout
    assert wide.xaxis.domain[1] < wide.xaxis2.domain[0]          # inset beside the map
    for w in ("medium", "narrow"):
        lay = toy_page.map_figure(prob, res, bg, width=w).layout
        assert lay.yaxis2.domain[1] < lay.yaxis.domain[0]        # inset under a full-width map
        assert lay.height > wide.height
    still = toy_page.map_figure(prob, res, bg, animate=False)
    assert len(still.frames) == 0 and not still.layout.updatemenus
    html = toy_page.map_figure(prob, res, bg, controls=True)
    assert html.layout.updatemenus and html.layout.sliders       # a standalone file keeps Plotly's controls
    with pytest.raises(ValueError, match="width"):
        toy_page.map_figure(prob, res, bg, width="huge")


def test_reveal_draws_no_ending_before_the_last_frame(saddle_run):
    """The toy page's map (reveal): frame 0 shows only the starts -- each path grows with the frames
    (through points of the path itself, every recorded point at the last frame), the end diamonds
    and end labels are hidden (the page's controls show them at the last frame)."""
    from pcd.viz.landscape import frame_index
    from pcd.viz.theme import plain_array

    prob, res = saddle_run
    M, S, T = len(res.methods), res.S, len(res.record)
    fig = toy_map.toy_map_figure(prob, res, toy_map.toy_background(prob), max_frames=40)
    idx = frame_index(T, 40)
    paths = [i for i, t in enumerate(fig.data) if t.mode == "lines" and t.legendgroup in res.methods]
    ends = [t for t in fig.data if t.meta == "end"]
    assert len(paths) == M and len(ends) == M and all(t.visible is False for t in ends)
    labels = [a for a in fig.layout.annotations if a.name == "end label"]
    assert labels and all(a.visible is False for a in labels)

    def drawn(m: int, data) -> np.ndarray:  # method m's path points, per start (gaps split them)
        xy = np.c_[plain_array(data.x), plain_array(data.y)].reshape(S, -1, 2)
        return xy[:, :-1]                                  # the gap closing each start's path

    for m, i in enumerate(paths):  # step 0: every path is its start point only
        np.testing.assert_allclose(drawn(m, fig.data[i])[:, :, :], np.repeat(res.positions[m, :, :1], 2, axis=1),
                                   atol=1e-6)
    for f in (1, 17, 39):
        fr = fig.frames[f]
        assert list(fr.traces[:M]) == paths
        for m in range(M):
            pts = drawn(m, fr.data[m])
            # ends at the frame's own step, every point on the recorded path up to it
            np.testing.assert_allclose(pts[:, -1], res.positions[m, :, idx[f]], atol=1e-6)
            rec = res.positions[m, :, :idx[f] + 1]
            for s in range(S):
                d = np.abs(pts[s][:, None, :] - rec[s][None, :, :]).max(axis=2).min(axis=1)
                assert d.max() < 1e-6
    last = fig.frames[-1]
    for m in range(M):  # the whole path at the end
        np.testing.assert_allclose(drawn(m, last.data[m]), res.positions[m], atol=1e-6)
    # the standalone file (Plotly's own controls) keeps the ending visible: no page controls there
    html = toy_map.toy_map_figure(prob, res, toy_map.toy_background(prob), controls=True)
    assert all(t.visible is not False for t in html.data) and all(a.visible is not False for a in html.layout.annotations)


def test_frozen_figure_sends_what_plotly_would_send(saddle_run):
    """FrozenFigure (the pages' figures, serialized once without a go.Figure) writes the JSON that
    go.Figure(spec).to_json() writes -- Plotly leaves out None-valued properties, which Plotly.js reads
    as unset -- and a non-finite number outside an array as null (JSON has no NaN)."""
    import copy
    import json

    from pcd.experiments.toy import trajectory_gradients
    from pcd.viz.teaching import add_gradient_inset
    from pcd.viz.theme import FrozenFigure, figure_from_spec

    prob, res = saddle_run
    spec = landscape_figure(res, prob.grid(60, 40), validate=False, spec_only=True, controls=False, reveal=True,
                            max_frames=20)
    spec = add_gradient_inset(spec, trajectory_gradients(prob, res, 0), spec_only=True)
    spec["layout"]["meta"] = {"numerical": True}
    spec["layout"]["xaxis"]["range"] = [float("-inf"), 1.0]  # not finite: null, never "-Infinity"

    def no_none(o):
        if isinstance(o, dict):
            return {k: no_none(v) for k, v in o.items() if v is not None}
        return [no_none(v) for v in o] if isinstance(o, list) else o

    frozen = FrozenFigure(copy.deepcopy(spec))
    ours = json.loads(frozen.spec)
    assert ours["layout"]["xaxis"]["range"] == [None, 1.0]
    plotly = json.loads(figure_from_spec(copy.deepcopy(spec)).to_json())
    assert no_none(ours) == no_none(plotly)
    assert frozen.frame_names == [str(f["name"]) for f in spec["frames"]] and len(frozen.frame_names) == 20
    assert frozen.height == spec["layout"]["height"] and frozen.meta == {"numerical": True}
    assert frozen.trace_types == {"scatter"}
    assert [f.name for f in frozen.figure().frames] == frozen.frame_names
