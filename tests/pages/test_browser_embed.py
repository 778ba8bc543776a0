"""Real browser: an embed URL (``?embed=true&hide=...``) shows the figure in its URL's state with the
named controls hidden, sized for a slide (1280 x 720)."""
from __future__ import annotations

import pytest

from tests.pages._browser import open_page, wait_until

pytestmark = [pytest.mark.slow, pytest.mark.browser]


def test_embed_with_hidden_controls(streamlit_server, browser, artifacts_dir):
    ctx, page, errors = open_page(browser)
    try:
        page.goto(streamlit_server["url"] + "/Scale_invariance?embed=true&hide=sidebar,title,intro,settings&m=1",
                  wait_until="domcontentloaded")
        wait_until(lambda: page.locator(".js-plotly-plot").count() > 0, 120, "the figure")
        panel = page.locator('[class*="st-key-pcd_settings_"]')
        assert panel.count() >= 1 and not panel.first.is_visible()  # there (its state holds), not shown
        assert page.locator("h1").count() == 0  # no title
        assert page.locator(".js-plotly-plot").first.is_visible()
        assert not page.locator('[data-testid="stSidebar"]').is_visible()  # hide=sidebar (Streamlit's embed mode keeps the menu)
        box = page.locator(".js-plotly-plot").first.bounding_box()
        assert box is not None and box["y"] < 360  # the figure starts in the top half of a 720 px slide
        page.screenshot(path=str(artifacts_dir / "embed_scale_1280x720.png"))
        assert not errors, errors
    finally:
        ctx.close()
