"""AppTest: the guided lesson (every step renders a live figure and its paragraph; next / back /
the step pills / the URL move between steps) and presenter mode (one helper in pcd.ui, on every
page, kept in the URL and across pages)."""
from __future__ import annotations

import base64
import re
from pathlib import Path

import numpy as np
import pytest
from streamlit.testing.v1 import AppTest

from tests.pages._apptest import figure_specs

ROOT = Path(__file__).resolve().parents[2]
LESSON = str(ROOT / "pages" / "00_Guided_lesson.py")


def _ok(at: AppTest) -> None:
    assert not at.exception, at.exception
    assert not at.error, [e.value for e in at.error]


def _step_title(at: AppTest) -> str:
    heads = [m.value for m in at.markdown if m.value.startswith("<h3")]
    assert len(heads) == 1, heads
    return re.sub("<[^>]+>", "", heads[0])


def _paragraph(at: AppTest) -> str:
    texts = [m.value for m in at.markdown if not m.value.startswith("<") and not m.value.startswith("[")]
    return texts[-1]


def _qp(at: AppTest, key: str):
    v = at.query_params.get(key)
    return v[0] if isinstance(v, list) else v


@pytest.fixture(scope="module")
def lesson():
    at = AppTest.from_file(LESSON, default_timeout=240)
    return at.run()


def test_every_step_renders_and_next_advances(lesson):
    at = lesson
    _ok(at)
    seen = []
    n = len(at.segmented_control(key="lesson_jump").options)
    assert n == 7
    for i in range(n):
        title = _step_title(at)
        assert title.startswith(f"{i + 1} · "), title
        assert _qp(at, "step") == str(i + 1)
        charts = figure_specs(at)
        # one figure; the animated saddle: the map, the same runs in objective space, the gradient inset;
        # step 7: the trade-off curves and the same runs played in objective space
        assert len(charts) == {1: 3, 6: 2}.get(i, 1), f"step {i + 1}: {len(charts)} figures"
        spec = charts[0]
        assert spec["data"], f"step {i + 1}: the figure is empty"
        para = _paragraph(at)
        assert 80 < len(para) < 700, f"step {i + 1}: one short paragraph, got {len(para)} chars"
        seen.append((title, spec["data"][0].get("type"), para))
        if i < n - 1:
            at.button(key="lesson_next").click().run()
            _ok(at)
    assert len({t for t, _, _ in seen}) == n  # every step is a different view
    assert at.button(key="lesson_next").disabled  # the last step has no next
    joined = " ".join(p for _, _, p in seen)
    # the steps carry live numbers from the builders, not canned text
    assert "**d = 0**" in seen[0][2] and "d = -0.50" in seen[0][2]
    assert "PCD: CMS" in seen[2][2]                      # basin fractions in words
    assert "1.536" in joined


def test_back_pills_and_url(lesson):
    at = lesson
    if not _step_title(at).startswith("7 · "):  # (the test above leaves the last step; under xdist it may run elsewhere)
        at.segmented_control(key="lesson_jump").set_value(7).run()
        _ok(at)
    at.button(key="lesson_back").click().run()
    _ok(at)
    assert _step_title(at).startswith("6 · ")
    at.segmented_control(key="lesson_jump").set_value(2).run()
    _ok(at)
    assert _step_title(at).startswith("2 · ") and _qp(at, "step") == "2"
    # the animated saddle; its gradient inset a chart of its own, on the map's frames
    spec, _obj, inset = figure_specs(at)
    assert len(spec["frames"]) > 50
    assert any(t.get("name") == "inset numbers" for t in inset["data"])
    assert [f["name"] for f in inset["frames"]] == [f["name"] for f in spec["frames"]]
    fresh = AppTest.from_file(LESSON, default_timeout=240)
    fresh.query_params["step"] = "4"
    fresh.run()
    _ok(fresh)
    assert _step_title(fresh).startswith("4 · ")
    bad = AppTest.from_file(LESSON, default_timeout=240)
    bad.query_params["step"] = "99"
    bad.run()
    _ok(bad)
    assert _step_title(bad).startswith("1 · ")             # a bad link opens the first step


def _presenter_app(**query):
    def script():
        from pcd.ui import presenter_mode, setup_page

        setup_page("Presenter check", intro="A long paragraph " * 20)
        import streamlit as st

        st.write(f"presenter={presenter_mode()}")

    at = AppTest.from_function(script, default_timeout=30)
    for k, v in query.items():
        at.query_params[k] = v
    return at.run()


def _css_on(at: AppTest) -> bool:
    return any("text-overflow: ellipsis" in m.value for m in at.markdown)


def test_presenter_mode_from_url_toggle_and_back():
    at = _presenter_app(present="1")
    _ok(at)
    assert at.sidebar.toggle(key="pcd_present").value is True
    assert _css_on(at) and any(m.value == "presenter=True" for m in at.markdown)
    at.sidebar.toggle(key="pcd_present").set_value(False).run()
    _ok(at)
    assert not _css_on(at) and "present" not in at.query_params
    at.sidebar.toggle(key="pcd_present").set_value(True).run()
    assert _css_on(at) and _qp(at, "present") == "1"
    off = _presenter_app()
    assert not _css_on(off) and off.sidebar.toggle(key="pcd_present").value is False
    junk = _presenter_app(present="maybe")
    _ok(junk)
    assert not _css_on(junk)


def test_presenter_mode_survives_a_page_switch():
    at = _presenter_app(present="1")
    at.query_params.clear()                               # a page switch drops the query string
    at.run()
    assert _css_on(at) and _qp(at, "present") == "1"


def test_every_page_calls_the_one_setup_helper():
    scripts = [ROOT / "app.py"] + sorted((ROOT / "pages").glob("*.py"))
    assert len(scripts) >= 9
    for path in scripts:
        # app.py calls it inside its home() page function (st.navigation), the pages at top level
        assert re.search(r"^\s*setup_page\(", path.read_text(), re.M), f"{path.name} must call pcd.ui.setup_page"


def test_lesson_in_presenter_mode_shrinks_the_animation():
    at = AppTest.from_file(LESSON, default_timeout=240)
    at.query_params["step"] = "2"
    at.query_params["present"] = "1"
    at.run()
    _ok(at)
    assert _css_on(at)
    spec = figure_specs(at)[0]
    assert spec["layout"]["height"] <= 460                 # fits a 720-pixel-high projector with its controls


def _plain(v) -> np.ndarray:
    """A Plotly array from a figure spec (plain list or base64 typed array)."""
    if isinstance(v, dict) and "bdata" in v:
        return np.frombuffer(base64.b64decode(v["bdata"]), dtype=np.dtype(v["dtype"])).astype(np.float64)
    return np.asarray(v, dtype=np.float64)


@pytest.fixture(scope="module")
def step2():
    at = AppTest.from_file(LESSON, default_timeout=240)
    at.query_params["step"] = "2"
    at.run()
    _ok(at)
    return at


def test_saddle_step_objective_space_moves_with_the_map(step2):
    """Step 2 (issue 28 part 1): beside the map, the same runs in the (f1, f2) plane -- the Pareto
    front, the point where both objectives are optimal, each stalled end labelled -- on the map's
    frames, played by the map's controls (``follow``); its points are the engine's losses at every
    frame."""
    from pcd.studio import lesson as L

    at = step2
    mp, obj, _inset = figure_specs(at)
    names = [f["name"] for f in mp["frames"]]
    assert [f["name"] for f in obj["frames"]] == names == L.saddle_frames()
    traces = [t.get("name") for t in obj["data"]]
    assert "both objectives optimal" in traces and "now" in traces and any(str(n).startswith("Pareto front")
                                                                            for n in traces)
    ends = [a["text"] for a in obj["layout"]["annotations"] if a.get("name") == "end label"]
    assert any("Pareto-stationary" in t and "dominated by" in t for t in ends), ends
    player = next(e for e in at.get("bidi_component") if str(e.proto.component_name).endswith("pcd_frame_controls"))
    assert "lesson_obj_saddle" in player.proto.json and "lesson_inset_saddle" in player.proto.json
    # the heads at every frame: the engine's own losses of the recorded step (log axes: zeros at the floor)
    res = L.saddle()
    order = list(range(len(res.methods)))[::-1]  # PCD drawn last, on top
    head = next(i for i, t in enumerate(obj["data"]) if t.get("name") == "now")
    for f, name in zip(obj["frames"], names):
        t = [int(k) for k in res.record].index(int(name))
        d = f["data"][f["traces"].index(head)]
        got = np.c_[_plain(d["x"]), _plain(d["y"])]
        want = np.maximum(np.asarray(res.losses)[order, :, t].reshape(-1, 2), 1e-12)
        np.testing.assert_allclose(got, want, rtol=1e-6)


def test_saddle_step_shows_no_ending_before_the_last_frame(step2):
    """Step 2 (issue 28, "frame 0 already draws every full path and end label"): as on the toy page, the
    map and its objective space draw no ending at frame 0 -- each path is its start point only, the end
    diamonds (``meta="end"``) and end labels (annotations named "end label") start hidden, for the page's
    frame controls to show at the last frame only -- and the paths grow with the frames, whole at the last."""
    from pcd.studio import lesson as L

    res = L.saddle()
    M, S = len(res.methods), res.S
    mp, obj, _inset = figure_specs(step2)
    for spec in (mp, obj):
        ends = [t for t in spec["data"] if t.get("meta") == "end"]
        assert len(ends) == M and all(t.get("visible") is False for t in ends)
        labels = [a for a in spec["layout"].get("annotations", []) if a.get("name") == "end label"]
        assert labels and all(a.get("visible") is False for a in labels)
        assert all(t.get("visible") is not False for t in spec["data"] if t.get("meta") != "end")
    paths = [i for i, t in enumerate(mp["data"]) if t.get("mode") == "lines" and t.get("legendgroup") in res.methods]
    assert len(paths) == M

    def drawn(d) -> np.ndarray:  # a method's drawn path, per start (a NaN row closes each start's)
        return np.c_[_plain(d["x"]), _plain(d["y"])].reshape(S, -1, 2)[:, :-1]

    pos = np.asarray(res.positions)
    for m, i in enumerate(paths):  # frame 0: the start point only (the path so far and frame 0's own point)
        np.testing.assert_allclose(drawn(mp["data"][i]), np.repeat(pos[m, :, :1], 2, axis=1), atol=1e-6)
    last = mp["frames"][-1]
    assert [last["traces"][k] for k in range(M)] == paths
    for m in range(M):  # the last frame: every recorded point
        np.testing.assert_allclose(drawn(last["data"][m]), pos[m], atol=1e-6)
    mid = mp["frames"][len(mp["frames"]) // 2]
    assert all(drawn(mid["data"][m]).shape[1] < pos.shape[2] for m in range(M))  # half way: a part of it


def test_tau_step_plays_the_runs_in_objective_space():
    """Step 7, animated (issue 28 part 1): beside the trade-off curves, PCD for every τ of the τ dial
    played in the (f1, f2) plane over the Pareto front, driven by the step's frame controls; the
    points at every frame are the engine's losses (mean over the starts) of an independent run."""
    from pcd.experiments.animation import tau_budget_run
    from pcd.studio import tau as tau_page

    at = AppTest.from_file(LESSON, default_timeout=240)
    at.query_params["step"] = "7"
    at.run()
    _ok(at)
    curves, obj = figure_specs(at)
    assert not curves.get("frames") and len(obj["frames"]) > 50
    assert any(str(t.get("name")).startswith("Pareto front") for t in obj["data"])
    player = next(e for e in at.get("bidi_component") if str(e.proto.component_name).endswith("pcd_frame_controls"))
    assert "lesson_obj_tau" in player.proto.json
    res = tau_budget_run(tau_page.PROBLEM, tau_page.TAUS, tau_page.BUDGETS, tau_page.LR)
    mean = np.asarray(res.losses).mean(axis=1)  # [M, T, 2]
    order = list(range(len(res.methods)))[::-1]
    head = next(i for i, t in enumerate(obj["data"]) if t.get("name") == "now")
    record = [int(k) for k in res.record]
    for f in obj["frames"]:
        d = f["data"][f["traces"].index(head)]
        got = np.c_[_plain(d["x"]), _plain(d["y"])]
        np.testing.assert_allclose(got, mean[order, record.index(int(f["name"]))], rtol=1e-6, atol=1e-12)
