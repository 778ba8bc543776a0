"""Real browser: the Basin maps page draws one map per method; a click on a start opens that
start's trajectory on the Toy landscapes page (issue 14, part 1). Screenshot in test-artifacts/."""
from __future__ import annotations

import time

import pytest

pytestmark = [pytest.mark.slow, pytest.mark.browser]


def _wait_idle(page) -> None:
    page.wait_for_timeout(300)
    page.wait_for_function("() => !document.querySelector('[data-testid=\"stStatusWidget\"]')", timeout=120_000)


def test_basin_maps_click_opens_the_toy_page(page, streamlit_server, artifacts_dir):
    t0 = time.time()
    page.goto(f"{streamlit_server['url']}/Basin_maps?grid=25&steps=500&methods=ws,pcd&lr=0.02&tau=0.02")
    page.wait_for_function("() => document.querySelectorAll('.js-plotly-plot .heatmaplayer').length >= 2",
                           timeout=180_000)
    print(f"\nbasin page (25x25, 2 methods, cold session): maps after {time.time() - t0:.1f} s")
    _wait_idle(page)
    page.screenshot(path=str(artifacts_dir / "basin_maps.png"), full_page=True)
    plot = page.locator(".js-plotly-plot").first  # WS, the first map
    box = plot.locator(".nsewdrag").first.bounding_box()
    page.mouse.move(box["x"] + box["width"] * 0.15, box["y"] + box["height"] * 0.4)
    page.wait_for_selector(".hoverlayer .hovertext", timeout=30_000)
    assert "conflict equilibrium" in plot.locator(".hoverlayer").text_content()
    page.mouse.click(box["x"] + box["width"] * 0.15, box["y"] + box["height"] * 0.4)
    page.wait_for_selector("h1:has-text('Toy landscapes')", timeout=120_000)
    _wait_idle(page)
    page.wait_for_selector("text=Where each trajectory ended", timeout=120_000)
    from urllib.parse import parse_qs, urlparse

    page.wait_for_function("() => window.location.search.includes('starts=typed')", timeout=60_000)
    q = parse_qs(urlparse(page.url).query)
    assert q["methods"] == ["ws"] and q["lr"] == ["0.02"] and q["steps"] == ["500"]
    x, y = (float(v) for v in q["typed"][0].split(","))
    assert -3.5 < x < -1.5 and -2 < y < 2  # the clicked start, in the left valley
    page.screenshot(path=str(artifacts_dir / "basin_click_toy.png"), full_page=False)
