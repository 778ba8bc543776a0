"""Helpers shared by the real-browser page tests."""
from __future__ import annotations

import time


def wait_until(pred, timeout, what):
    """Poll ``pred()`` every 0.25 s until it returns something truthy (returned); fail after ``timeout`` s."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        v = pred()
        if v:
            return v
        time.sleep(0.25)
    raise AssertionError(f"timed out after {timeout} s waiting for {what}")


def open_page(browser, width=1280, height=720):
    """A fresh browser context with a ``width`` x ``height`` viewport and its page (default timeout 120 s),
    with the list the page's uncaught JavaScript errors go to: ``(context, page, errors)``."""
    ctx = browser.new_context(viewport={"width": width, "height": height})
    page = ctx.new_page()
    page.set_default_timeout(120_000)
    errors: list[str] = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    return ctx, page, errors


def tall_screenshot(page, path, height=2600):
    """A screenshot of ``page`` in a window ``height`` px tall (the app scrolls inside, so a tall window shows
    the charts below the first screen), the viewport put back after; then no Streamlit exception shown."""
    page.wait_for_timeout(1000)
    size = page.viewport_size
    page.set_viewport_size({"width": size["width"], "height": height})
    page.wait_for_timeout(1200)
    page.screenshot(path=str(path))
    page.set_viewport_size(size)
    assert page.locator('[data-testid="stException"]').count() == 0
