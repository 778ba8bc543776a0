"""Real browser: presenter mode is for the projector (issue 28 part 6). At 1280 x 720 with
``?present=1`` the toy page's figure and its play controls are whole on the first screen, under the
header (which never covers it), the settings folded into a one-line drawer that opens on demand,
the figure's axes and legend in large type; basin maps share one size on one grid (3 a row), also at
1440 px. Screenshots in ``test-artifacts/present_*.png``."""
from __future__ import annotations

import pytest

from tests.pages._browser import open_page, wait_until

pytestmark = [pytest.mark.slow, pytest.mark.browser]

GEOMETRY = """(sel) => { const r = e => { if (!e) return null; const b = e.getBoundingClientRect();
    return {x: b.x, y: b.y, w: b.width, h: b.height, bottom: b.bottom}; };
  return {header: r(document.querySelector('[data-testid="stHeader"]')),
          figs: Array.from(document.querySelectorAll(sel)).map(r),
          stale: !!document.querySelector('[data-stale="true"]'),
          busy: !!document.querySelector('[data-testid="stStatusWidget"]'),
          font: parseFloat(getComputedStyle(document.documentElement).fontSize)}; }"""


def _settled(page, sel: str, n: int = 1, what: str = "the figures"):
    """The geometry once ``n`` figures are drawn and unchanged for ~2 s (the toy page redraws once for
    its width class)."""
    seen: list[str] = []

    def ok():
        g = page.evaluate(GEOMETRY, sel)
        good = len(g["figs"]) >= n and not g["stale"] and not g["busy"] and all(f["h"] > 50 for f in g["figs"])
        seen.append(repr(g["figs"]) if good else "")
        return g if good and len(seen) >= 8 and len(set(seen[-8:])) == 1 else None

    return wait_until(ok, 150, what)


def test_toy_figure_and_controls_whole_on_the_first_screen_at_1280x720(browser, streamlit_server, artifacts_dir):
    ctx, page, errors = open_page(browser)
    try:
        page.goto(f"{streamlit_server['url']}/Toy_landscapes?present=1")
        g = _settled(page, ".st-key-toy_map .pcd-chart", what="the toy map in presenter mode")
        page.mouse.move(640, 5)
        page.screenshot(path=str(artifacts_dir / "present_toy_1280x720.png"))
        fig, header = g["figs"][0], g["header"]
        assert g["font"] >= 18  # large type
        assert fig["y"] >= header["bottom"] - 1, ("the header covers the figure's top", header, fig)
        assert fig["bottom"] <= 720, ("the figure is not whole on the first screen", fig)
        assert fig["w"] > 1000
        player = page.locator(".pcd-player").first.bounding_box()
        assert player and player["y"] >= fig["bottom"] - 1 and player["y"] + player["height"] <= 720, player
        # the axes' and legend's type is scaled up for the room (the layout's font, 12 px by default)
        size = page.evaluate("() => document.querySelector('.st-key-toy_map .js-plotly-plot')._fullLayout.font.size")
        assert size >= 14, size
        # the settings: one line above the figure, folded; a click opens them (the widgets are there)
        drawer = page.locator("[class*='st-key-pcd_drawer_'] details").first
        assert drawer.get_attribute("open") is None
        box = drawer.bounding_box()
        assert box["height"] < 70 and box["y"] + box["height"] <= fig["y"]
        drawer.locator("summary").click()
        page.locator(".st-key-pcd_settings_main").first.wait_for(state="visible")
        assert page.locator(".st-key-pcd_settings_main [data-testid='stMultiSelect']").first.is_visible()
        page.screenshot(path=str(artifacts_dir / "present_toy_1280x720_settings_open.png"))
        # the animation still plays (Step moves the frame)
        page.locator(".pcd-b[data-act=fwd]").first.click()
        wait_until(lambda: page.locator(".pcd-player").first.get_attribute("data-frame") == "1", 30, "Step ▶")
        assert not errors, errors
    finally:
        ctx.close()


@pytest.mark.parametrize("w,h,query,per_row", [(1280, 720, "&present=1", 3), (1440, 900, "", 2)])
def test_basin_maps_share_one_size_and_one_grid(browser, streamlit_server, artifacts_dir, w, h, query, per_row):
    ctx, page, _ = open_page(browser, w, h)
    try:
        page.goto(f"{streamlit_server['url']}/Basin_maps?grid=25&steps=500&methods=ws,pcd,mgda,pcgrad{query}")
        g = _settled(page, "[class*='st-key-basin_map_'] .js-plotly-plot", n=4, what="four basin maps")
        page.mouse.move(w // 2, 5)
        page.screenshot(path=str(artifacts_dir / f"present_basin_{w}x{h}.png"))
        figs = g["figs"]
        assert len({round(f["w"]) for f in figs}) == 1 and len({round(f["h"]) for f in figs}) == 1, figs
        xs = sorted({round(f["x"]) for f in figs})
        assert len(xs) == per_row, figs  # one grid: the columns line up from row to row
        rows = sorted({round(f["y"]) for f in figs})
        assert len(rows) == -(-len(figs) // per_row), figs
        if query:  # presenter mode: the first row whole on the first screen, under the header
            first = [f for f in figs if round(f["y"]) == rows[0]]
            assert all(f["y"] >= g["header"]["bottom"] - 1 and f["bottom"] <= h for f in first), first
    finally:
        ctx.close()
