"""Embeds (issue 28 part 3): ``?hide=`` names parts of a page or widget keys to hide; bad values are
refused in one line; the page keeps the hidden widgets' URL state."""
from __future__ import annotations

from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from pcd.ui import HIDE_PARTS, MAX_HIDE, hide_css, parse_hide

PAGE = str(Path(__file__).resolve().parents[2] / "pages" / "04_Scale_invariance.py")


def test_parse_hide_words_and_keys():
    assert parse_hide("settings, title,kb_steps,settings") == ["settings", "title", "kb_steps"]
    assert parse_hide("") == []
    for bad, msg in (("a b", "widget keys"), ("<script>", "widget keys"), ("1abc", "widget keys"),
                     (",".join(f"k{i}" for i in range(MAX_HIDE + 1)), "at most"), (3, "hide")):
        with pytest.raises(ValueError, match=msg):
            parse_hide(bad)


def test_hide_css_selects_parts_and_widgets():
    css = hide_css(["settings", "kb_steps", "title"])
    assert HIDE_PARTS["settings"] in css and ".st-key-kb_steps" in css and "display: none" in css
    assert hide_css(["title", "intro"]) == ""  # not drawn at all, nothing to hide with CSS


def test_page_with_hidden_parts_keeps_its_url_state():
    at = AppTest.from_file(PAGE, default_timeout=120)
    at.query_params["hide"] = "title,intro,settings"
    at.query_params["embed"] = "true"
    at.run()
    assert not at.exception, at.exception
    assert not at.title  # the title is not drawn
    assert any(HIDE_PARTS["settings"] in m.value for m in at.markdown)
    at2 = AppTest.from_file(PAGE, default_timeout=120)
    at2.query_params["hide"] = "bad key!"
    at2.run()
    assert not at2.exception and at2.title  # a bad value is ignored (a toast says so): the page opens
