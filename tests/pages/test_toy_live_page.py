"""AppTest: the toy page's live component (pcd.ui.live) -- a request from the browser (its ``req``
state) is answered, in the component's data, with the engine's paths for the moved start; a bad one
with a one-line refusal; the page never fails. The browser test (test_browser_drag) drives it."""
from __future__ import annotations

import json

from streamlit.testing.v1 import AppTest

from tests.pages.test_studio_pages import _app, _ok


def _live(at: AppTest) -> dict:
    [el] = [e for e in at.get("bidi_component") if str(e.proto.component_name).endswith("pcd_live_map")]
    return json.loads(el.proto.json)


def test_the_fragment_answers_a_drag_with_paths_and_refuses_bad_values():
    at = _app("02_Toy_landscapes.py", steps=200, methods="pcd,ws")
    _ok(at)
    data = _live(at)
    assert data["target"] == "toy_map" and data["methods"] == ["pcd", "ws"] and data["answer"] is None
    assert data["sliders"] == {"tau": "toy_tau", "lr": "toy_lr"}
    at.session_state["toy_live"] = {"req": {"kind": "start", "seq": 11, "s": 1, "x": 0.25, "y": -0.5,
                                            "tau": 0.3, "lr": 0.05}}
    at.run()
    _ok(at)
    ans = _live(at)["answer"]
    assert ans["seq"] == 11 and ans["kind"] == "start" and ans["s"] == 1 and ans["methods"] == ["pcd", "ws"]
    assert [ans["x"][m][0][0] for m in range(2)] == [0.25, 0.25] and ans["record"][-1] == 200
    at.run()  # a request is answered once: a later run (the same state) sends no answer again
    assert _live(at)["answer"] is None
    for bad, word in (({"x": 99.0}, "start x"), ({"tau": 2.0}, "τ"), ({"lr": 0.03}, "learning rate"),
                      ({"s": 5}, "start index"), ({"kind": "exec"}, "kind")):
        req = {"kind": "start", "seq": 12 + len(word), "s": 0, "x": 0.0, "y": 0.0, "tau": 0.1, "lr": 0.02, **bad}
        at.session_state["toy_live"] = {"req": req}
        at.run()
        _ok(at)
        ans = _live(at)["answer"]
        assert set(ans) == {"seq", "error"} and word in ans["error"], ans
    at.session_state["toy_live"] = {"req": "not an object"}
    at.run()
    _ok(at)
