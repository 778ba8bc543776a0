"""AppTest: the teaching additions on the toy and geometry pages (gradient inset, frame
controls, the drag component) -- what the server renders; the browser test drives them."""
from __future__ import annotations

from streamlit.testing.v1 import AppTest

from tests.pages._apptest import component_names, figure_specs
from tests.pages.test_studio_pages import _app, _ok  # the studio pages' AppTest helpers


def _map(at: AppTest) -> dict:
    return figure_specs(at)[0]


def _components(at: AppTest) -> list[str]:
    return component_names(at)


INSET = ["g₁ (primary)", "g₂", "d (PCD)", "d (Weighted sum)", "inset numbers"]


def _names(spec: dict) -> list:
    return [t.get("name") for t in spec["data"]]


def test_toy_page_inset_on_by_default_follows_the_chosen_start_and_turns_off():
    """Beside its objective space (any window wider than ~800 px: the page's default width class), the
    map has no inset: the inset is a chart of its own under the controls, on the map's frames (the
    controls play it, ``follow``); it follows the chosen start and turns off."""
    at = _app("02_Toy_landscapes.py", steps=200, methods="pcd,ws")
    _ok(at)
    assert _components(at) == ["pcd_frame_controls", "pcd_live_map"]
    mp, obj, inset, loss = figure_specs(at)
    assert "inset numbers" not in _names(mp) and "now" in _names(obj)
    assert all(len(fr["data"]) == 3 for fr in mp["frames"])  # 2 growing paths + the comet per frame
    assert _names(inset)[-5:] == INSET and [f["name"] for f in inset["frames"]] == [f["name"] for f in mp["frames"]]
    assert all(len(fr["data"]) == 5 for fr in inset["frames"])
    assert any("start S1" in (a.get("text") or "") for a in inset["layout"]["annotations"])
    player = next(e for e in at.get("bidi_component") if str(e.proto.component_name).endswith("pcd_frame_controls"))
    assert "toy_inset_fig" in player.proto.json and "toy_obj" in player.proto.json
    at.selectbox(key="toy_inset_start").set_value(2).run()
    _ok(at)
    assert any("start S3" in (a.get("text") or "") for a in figure_specs(at)[2]["layout"]["annotations"])
    assert at.query_params["istart"] in ("2", ["2"])
    # the loss plot carries the step cursor the frame controls move
    assert [s["name"] for s in loss["layout"]["shapes"]] == ["step cursor", "step cursor"]
    at.toggle(key="toy_inset").set_value(False).run()
    _ok(at)
    assert len(figure_specs(at)) == 3 and all("inset numbers" not in _names(s) for s in figure_specs(at))
    assert at.query_params["inset"] in ("0", ["0"])


def test_toy_page_in_a_narrow_window_draws_the_inset_with_the_map():
    """An ~800-px window (the frame controls report the class "narrow"): no room beside the map, so
    the map carries the inset under it and the objective space follows under the map."""
    at = _app("02_Toy_landscapes.py", steps=200, methods="pcd,ws")
    at.session_state["toy_map-controls"] = {"width": "narrow"}
    at.run()
    _ok(at)
    mp, obj, loss = figure_specs(at)
    assert _names(mp)[-5:] == INSET
    assert all(len(fr["data"]) == 8 for fr in mp["frames"])  # 2 growing paths + comet + 5 inset traces per frame
    assert "now" in _names(obj) and any("objective space" in h.value for h in at.subheader)


def test_geometry_page_mounts_the_drag_component():
    at = _app("01_Gradient_geometry.py")
    _ok(at)
    assert _components(at) == ["pcd_vector_drag"]
