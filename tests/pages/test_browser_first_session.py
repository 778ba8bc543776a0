"""The first session a fresh server serves (a shared deep link opened right after a deploy) gets
the same menu as every later one: the home page first as "PCD Studio", then the registry's page
titles, in its order.

The page scripts live in ``pages/``. Streamlit lists such a folder by file name ("app", "Tau dial",
...) and, in a server's first session, runs a deep link's script directly, without ``app.py``.
The Studio switches that listing off (``client.showSidebarNavigation = false``), draws the menu
from the page registry in ``app.py``, and a page run directly hands over to ``app.py``
(:func:`pcd.studio.registry.this_page`). Each case needs its own server: a server that has served
one session is no longer in its first.
"""
from __future__ import annotations

from urllib.parse import urlparse

import pytest

from pcd.studio.registry import HOME_TITLE, PAGES
from tests.conftest import serve_studio
from tests.pages._browser import wait_until

pytestmark = [pytest.mark.slow, pytest.mark.browser]

MENU = "() => Array.from(document.querySelectorAll('.st-key-pcd_menu a')).map(a => a.innerText.trim())"
STREAMLIT_NAV = "() => document.querySelectorAll('[data-testid=stSidebarNav] a').length"
TITLES = [HOME_TITLE] + [p.title for p in PAGES]


def _menu_after_settling(page) -> list[str]:
    wait_until(lambda: len(page.evaluate(MENU)) >= len(TITLES), 60, "the sidebar menu")
    page.wait_for_timeout(1500)  # a menu that is replaced later would be replaced by now
    return [label.splitlines()[-1].strip() for label in page.evaluate(MENU)]


@pytest.mark.parametrize("path, heading", [("/Tau_dial", "τ dial"), ("/", HOME_TITLE)], ids=["deep_link", "home"])
def test_first_session_gets_the_registry_titles(page, tmp_path, artifacts_dir, path, heading):
    with serve_studio(tmp_path / "data", tmp_path / "server.log") as server:
        page.goto(f"{server['url']}{path}")
        page.wait_for_function("() => document.querySelector('[data-testid=stMain] h1')")
        labels = _menu_after_settling(page)
        assert labels == TITLES, labels
        assert page.evaluate(STREAMLIT_NAV) == 0  # Streamlit's own file-name listing never shows
        assert page.locator("[data-testid='stMain'] h1").first.inner_text().strip() == heading
        if path != "/":
            assert urlparse(page.url).path == path  # the shared link's URL stays as it was
        page.screenshot(path=str(artifacts_dir / f"first_session_{heading.split()[0]}.png"))
        # the menu's links open the old URLs, and the second session is the same
        page.locator(".st-key-pcd_menu a[href$='Basin_maps']").first.click()
        page.wait_for_function("() => Array.from(document.querySelectorAll('[data-testid=stMain] h1'))"
                               ".some(h => h.innerText.trim() === 'Basin maps')")
        assert urlparse(page.url).path == "/Basin_maps"
        second = page.context.new_page()
        second.goto(f"{server['url']}/Scale_invariance")
        second.wait_for_function("() => document.querySelector('[data-testid=stMain] h1')")
        assert _menu_after_settling(second) == TITLES
        assert second.locator("[data-testid='stMain'] h1").first.inner_text().strip() == "Scale invariance"
        second.close()
