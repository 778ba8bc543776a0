"""The first session a fresh server serves (a shared deep link opened right after a deploy) gets
the same menu as every later one: the home page first as "PCD Studio", then the pages' titles.

Streamlit lists a folder called ``pages/`` by file name ("app", "Tau dial", ...) in a server's first
session and keeps that menu there; the Studio's pages live in ``views/`` (see app.py), which this
test guards. It needs its own server: the session-wide one has served other visitors already.
"""
from __future__ import annotations

import pytest

from tests.conftest import serve_studio
from tests.pages._browser import wait_until

pytestmark = [pytest.mark.slow, pytest.mark.browser]

NAV = "() => Array.from(document.querySelectorAll('[data-testid=stSidebarNav] a')).map(a => a.innerText.trim())"


def test_first_session_on_a_deep_link_gets_the_page_titles(page, tmp_path):
    with serve_studio(tmp_path / "data", tmp_path / "server.log") as server:
        page.goto(f"{server['url']}/Tau_dial")
        page.wait_for_function("() => document.querySelector('[data-testid=stMain] h1')")
        wait_until(lambda: page.evaluate(NAV), 60, "the sidebar menu")
        page.wait_for_timeout(1500)  # a menu that is replaced later would be replaced by now
        labels = [label.splitlines()[-1].strip() for label in page.evaluate(NAV)]
        assert labels[0] == "PCD Studio", labels
        assert "τ dial" in labels and "Tau dial" not in labels and "app" not in labels, labels
        assert page.locator("[data-testid='stMain'] h1").first.inner_text().strip() == "τ dial"
