"""Real browser, the pages as a lecturer opens them (issue 28, "labels collide"): the τ dial, the
lesson's step 7, the gradient geometry with fifteen methods and the toy page with fifteen methods at
its last frame, at 800 px, 1280 x 720 in presenter mode, 1440 x 900 and 1920 x 1080 -- every chart's
drawn text measured on screen (tests/pages/_browser.TEXT_COLLISIONS): no two labels overlap, no label
covers a start or a τ curve's marker, no tick label reaches into the next panel (the toy page's loss
panels), no start name cut off; in presenter mode the labels on the data are >= 14 px (read from the back
of a room). A full-page screenshot of each in test-artifacts/labels_page_*.png.
And a shared link keeps the selected tab on the Jacobian descent and Pruning lab pages.

One page load per view and mode (issue 28, suite time): the window sizes of a view share one browser page,
loaded at the first (800 px) and resized to the next (1440 x 900, 1920 x 1080) -- a resize reruns a page
whose layout depends on its width (the toy page's width class) -- and presenter mode, a mode of the URL,
loads its own. Every size is still its own test."""
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
DATA_LABELS = ("end label", "τ label", "method label")  # the annotations placed on the data
MARKERS = ["starts", "PCD after 1000 steps", "PCD after 300 steps", "PCD after 100 steps", "now"]
BUSY = "() => !!document.querySelector('[data-testid=\"stStatusWidget\"]')"


def _settle(page, n_charts, quiet=8):
    """Until the script is idle, ``n_charts`` charts are drawn and nothing changes for ``quiet`` polls
    (~0.25 s each: ~2 s after a page load)."""
    seen: list[str] = []

    def ok():
        sig = page.evaluate("""() => Array.from(document.querySelectorAll('.js-plotly-plot'))
            .map(g => (g._fullLayout ? g.getBoundingClientRect().height + ':' + (g.data || []).length : 'x')).join('|')""")
        good = not page.evaluate(BUSY) and sig.count("|") + 1 >= n_charts and "x" not in sig.split("|")
        seen.append(sig if good else "")
        return good and len(seen) >= quiet and len(set(seen[-quiet:])) == 1

    wait_until(ok, 240, f"{n_charts} charts drawn and the page idle")


def _last_frame(page):
    """The toy page's player at its last frame: the endings (end labels, full paths) shown."""
    scrub = page.locator(".pcd-scrub").first
    wait_until(lambda: scrub.count() and int(scrub.evaluate("s => +s.max")) > 0, 120, "the player's frames")
    seen: list[bool] = []

    def at_the_end():  # (again, should a rerun after a resize have drawn the figure anew at frame 0)
        scrub.evaluate("s => { s.value = s.max; s.dispatchEvent(new Event('input')); }")
        page.wait_for_timeout(400)
        seen.append(page.evaluate("""() => Array.from(document.querySelectorAll('.js-plotly-plot'))
            .some(g => (g.layout.annotations || []).some(a => a.name === 'end label' && a.visible !== false))"""))
        return len(seen) >= 3 and all(seen[-3:])

    wait_until(at_the_end, 60, "the end labels shown")


@pytest.fixture(scope="module")
def view_pages(browser, streamlit_server):
    """``get(view, present, w, h)``: the browser page of ``view`` (presenter mode or not), loaded once and
    resized to ``w x h`` on later calls -- ``(page, errors, fresh)``; the pages of the view before are
    closed when the next view's first is opened."""
    held: dict[tuple[str, bool], tuple] = {}

    def get(view, present, w, h):
        key = (view, present)
        if key in held:
            ctx, page, errors = held[key]
            page.set_viewport_size({"width": w, "height": h})
            return page, errors, False
        for k in [k for k in held if k[0] != view]:
            held.pop(k)[0].close()
        ctx, page, errors = held[key] = open_page(browser, w, h)
        path = VIEWS[view] + (("&" if "?" in VIEWS[view] else "?") + "present=1" if present else "")
        page.goto(streamlit_server["url"] + path)
        return page, errors, True

    try:
        yield get
    finally:
        for ctx, _, _ in held.values():
            ctx.close()


@pytest.mark.parametrize("size", list(SIZES))
@pytest.mark.parametrize("view", list(VIEWS))
def test_no_label_collides(view_pages, artifacts_dir, view, size):
    w, h, present = SIZES[size]
    page, errors, fresh = view_pages(view, present, w, h)
    try:
        if not fresh:  # a resize: the charts' new width (the toy page: its width class, a rerun, 250 ms after)
            page.wait_for_timeout(1000 if view == "toy15" else 400)
        _settle(page, {"tau": 2, "lesson7": 1, "geometry": 1, "toy15": 3}[view], 8 if fresh else 5)
        if view == "toy15":
            _last_frame(page)
        page.wait_for_timeout(800)
        found = []
        for gd in page.query_selector_all(".js-plotly-plot"):
            r = page.evaluate(TEXT_COLLISIONS, [gd, MARKERS, 1])
            if r["pairs"] or r["clipped"]:
                found.append(r)
        fonts = page.evaluate("""names => Array.from(document.querySelectorAll('.js-plotly-plot'))
            .flatMap(g => ((g.layout || {}).annotations || []).filter(a => names.includes(a.name) && a.visible !== false)
            .map(a => (a.font || {}).size || 12))""", list(DATA_LABELS))
        tall = max(h, int(page.evaluate("() => document.querySelector('[data-testid=stMain]').scrollHeight")) + 40)
        page.set_viewport_size({"width": w, "height": min(tall, 7000)})
        page.wait_for_timeout(1500 if fresh else 700)  # a fresh page draws its charts below the window now
        page.screenshot(path=str(artifacts_dir / f"labels_page_{view}_{size}.png"))
        assert not found, found
        assert fonts, "the view's labels on the data were found"
        if present:  # presenter mode: readable from the back of a room
            assert min(fonts) >= 14, fonts
        assert page.locator('[data-testid="stException"]').count() == 0
        assert not errors, errors
    finally:
        errors.clear()


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
