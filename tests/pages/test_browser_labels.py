"""Real browser, the pages as a lecturer opens them (issue 28, "labels collide"): the τ dial, the
lesson's step 7, the gradient geometry with fifteen methods and the toy page with fifteen methods at
its last frame, at 800 px, 1280 x 720 in presenter mode, 1440 x 900 and 1920 x 1080 -- every chart's
drawn text measured on screen (tests/pages/_browser.TEXT_COLLISIONS): no two labels overlap, no label
covers a start or a τ curve's marker, no tick label reaches into the next panel (the toy page's loss
panels), no start name cut off. A full-page screenshot of each in test-artifacts/labels_page_*.png.
And a shared link keeps the selected tab on the Jacobian descent and Pruning lab pages."""
from __future__ import annotations

from urllib.parse import quote

import pytest

from tests.pages._browser import TEXT_COLLISIONS, open_page, wait_until

pytestmark = [pytest.mark.slow, pytest.mark.browser]

FIFTEEN = "pcd,ws,mgda,pcgrad,cagrad,famo,upgrad,dualproj,imtlg,alignedmtl,nashmtl,graddrop,rgw,dbgd,auxinash"
VIEWS = {"tau": "/Tau_dial", "lesson7": "/Guided_lesson?step=7", "geometry": "/Gradient_geometry?methods=" + FIFTEEN,
         "toy15": "/Toy_landscapes?methods=" + FIFTEEN}
SIZES = {"800": (800, 1000, False), "1280x720_present": (1280, 720, True), "1440": (1440, 900, False),
         "1920": (1920, 1080, False)}
MARKERS = ["starts", "PCD after 1000 steps", "PCD after 300 steps", "PCD after 100 steps", "now"]
BUSY = "() => !!document.querySelector('[data-testid=\"stStatusWidget\"]')"


def _settle(page, n_charts):
    """Until the script is idle, ``n_charts`` charts are drawn and nothing changes for ~2 s."""
    seen: list[str] = []

    def ok():
        sig = page.evaluate("""() => Array.from(document.querySelectorAll('.js-plotly-plot'))
            .map(g => (g._fullLayout ? g.getBoundingClientRect().height + ':' + (g.data || []).length : 'x')).join('|')""")
        good = not page.evaluate(BUSY) and sig.count("|") + 1 >= n_charts and "x" not in sig.split("|")
        seen.append(sig if good else "")
        return good and len(seen) >= 8 and len(set(seen[-8:])) == 1

    wait_until(ok, 240, f"{n_charts} charts drawn and the page idle")


def _last_frame(page):
    """The toy page's player at its last frame: the endings (end labels, full paths) shown."""
    scrub = page.locator(".pcd-scrub").first
    wait_until(lambda: scrub.count() and int(scrub.evaluate("s => +s.max")) > 0, 120, "the player's frames")
    scrub.evaluate("s => { s.value = s.max; s.dispatchEvent(new Event('input')); }")
    wait_until(lambda: page.evaluate("""() => Array.from(document.querySelectorAll('.js-plotly-plot'))
        .some(g => (g.layout.annotations || []).some(a => a.name === 'end label' && a.visible !== false))"""),
               60, "the end labels shown")


@pytest.mark.parametrize("size", list(SIZES))
@pytest.mark.parametrize("view", list(VIEWS))
def test_no_label_collides(browser, streamlit_server, artifacts_dir, view, size):
    w, h, present = SIZES[size]
    path = VIEWS[view] + (("&" if "?" in VIEWS[view] else "?") + "present=1" if present else "")
    ctx, page, errors = open_page(browser, w, h)
    try:
        page.goto(streamlit_server["url"] + path)
        _settle(page, {"tau": 2, "lesson7": 1, "geometry": 1, "toy15": 3}[view])
        if view == "toy15":
            _last_frame(page)
        page.wait_for_timeout(800)
        found = []
        for gd in page.query_selector_all(".js-plotly-plot"):
            r = page.evaluate(TEXT_COLLISIONS, [gd, MARKERS, 1])
            if r["pairs"] or r["clipped"]:
                found.append(r)
        tall = max(h, int(page.evaluate("() => document.querySelector('[data-testid=stMain]').scrollHeight")) + 40)
        page.set_viewport_size({"width": w, "height": min(tall, 7000)})
        page.wait_for_timeout(1500)
        page.screenshot(path=str(artifacts_dir / f"labels_page_{view}_{size}.png"))
        assert not found, found
        assert page.locator('[data-testid="stException"]').count() == 0
        assert not errors, errors
    finally:
        ctx.close()


@pytest.mark.parametrize("page_path, tab, text", [
    ("/Jacobian_descent", "Gramian memory", "Gramian"),
    ("/Pruning_lab", "Results explorer", "Results explorer"),
])
def test_a_shared_link_opens_on_its_tab(browser, streamlit_server, page_path, tab, text):
    ctx, page, errors = open_page(browser, 1440, 900)
    try:
        page.goto(f"{streamlit_server['url']}{page_path}?tab={quote(tab)}")
        selected = page.locator('[role="tab"][aria-selected="true"]').first
        selected.wait_for(timeout=180_000)
        wait_until(lambda: selected.inner_text().strip() == tab, 120, f"the tab {tab!r} selected")
        assert f"tab={quote(tab)}" in page.url or f"tab={tab.replace(' ', '+')}" in page.url, page.url
        # a click on the first tab writes it to the URL (the default tab leaves the parameter out)
        page.locator('[role="tab"]').first.click()
        wait_until(lambda: "tab=" not in page.url, 60, "the URL to follow the clicked tab")
        assert not errors, errors
    finally:
        ctx.close()
