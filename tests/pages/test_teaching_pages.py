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


def test_toy_page_inset_on_by_default_follows_the_chosen_start_and_turns_off():
    at = _app("02_Toy_landscapes.py", steps=200, methods="pcd,ws")
    _ok(at)
    assert _components(at) == ["pcd_frame_controls", "pcd_live_map"]
    spec = _map(at)
    names = [t.get("name") for t in spec["data"]]
    assert names[-5:] == ["g₁ (primary)", "g₂", "d (PCD)", "d (Weighted sum)", "inset numbers"]
    assert all(len(fr["data"]) == 8 for fr in spec["frames"])  # 2 growing paths + comet + 5 inset traces per frame
    assert any("start S1" in (a.get("text") or "") for a in spec["layout"]["annotations"])
    at.selectbox(key="toy_inset_start").set_value(2).run()
    _ok(at)
    assert any("start S3" in (a.get("text") or "") for a in _map(at)["layout"]["annotations"])
    assert at.query_params["istart"] in ("2", ["2"])
    # the loss plot carries the step cursor the frame controls move
    loss = figure_specs(at)[2]  # after the map and the objective-space panel
    assert [s["name"] for s in loss["layout"]["shapes"]] == ["step cursor", "step cursor"]
    at.toggle(key="toy_inset").set_value(False).run()
    _ok(at)
    assert "inset numbers" not in [t.get("name") for t in _map(at)["data"]]
    assert at.query_params["inset"] in ("0", ["0"])


def test_geometry_page_mounts_the_drag_component():
    at = _app("01_Gradient_geometry.py")
    _ok(at)
    assert _components(at) == ["pcd_vector_drag"]
