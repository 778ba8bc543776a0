"""Helpers shared by the real-browser page tests."""
from __future__ import annotations

import os
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


def cpu_seconds(pid: int) -> float:
    """CPU time (user + system) of process ``pid`` so far, from /proc (Linux)."""
    fields = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def wait_server_idle(pid: int, timeout: float = 90.0, window: float = 1.0) -> float:
    """Wait until the server has finished starting (its warm-up thread, pcd.studio.warmup, fills the
    pages' caches after the first request): under 5 % of a core over ``window`` s. Returns the
    seconds waited (bounded: a busy server is measured as it is)."""
    t0 = time.monotonic()
    while time.monotonic() - t0 < timeout:
        c0 = cpu_seconds(pid)
        time.sleep(window)
        if cpu_seconds(pid) - c0 < 0.05 * window:
            break
    return time.monotonic() - t0


def open_page(browser, width=1280, height=720):
    """A fresh browser context with a ``width`` x ``height`` viewport and its page (default timeout 120 s),
    with the list the page's uncaught JavaScript errors go to: ``(context, page, errors)``."""
    ctx = browser.new_context(viewport={"width": width, "height": height})
    page = ctx.new_page()
    page.set_default_timeout(120_000)
    errors: list[str] = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    return ctx, page, errors


def tall_screenshot(page, path, height=2600, restore=True):
    """A screenshot of ``page`` in a window ``height`` px tall (the app scrolls inside, so a tall window shows
    the charts below the first screen), the viewport put back after unless ``restore=False``; then no
    Streamlit exception shown. Returns the viewport size before."""
    page.wait_for_timeout(1000)
    size = page.viewport_size
    page.set_viewport_size({"width": size["width"], "height": height})
    page.wait_for_timeout(1200)
    page.screenshot(path=str(path))
    if restore:
        page.set_viewport_size(size)
    assert page.locator('[data-testid="stException"]').count() == 0
    return size


def plot_data(chart):
    """The traces Plotly drew in this graph div (``.js-plotly-plot``): ``[{type, n (x values),
    ny (y values), dims: [{label, values, ticktext}] (parcoords)}]``."""
    return chart.evaluate("""gd => (gd.data || []).map(t => ({type: t.type || 'scatter',
        n: (t.x || []).length, ny: (t.y || []).length,
        dims: (t.dimensions || []).map(d => ({label: d.label, values: Array.from(d.values || []),
                                              ticktext: d.ticktext || null}))}))""")


def show_parallel_coordinates(page, path):
    """Pruning lab, results explorer: switch on the study's parallel coordinates, wait until Plotly
    drew them (axis titles in the SVG), check the method / accuracy / sparsity / FLOPs dimensions,
    screenshot the chart to ``path``; returns ``{label: {values, ticktext}}``."""
    page.get_by_text("The study at a glance: parallel coordinates").first.click()
    par = page.locator('[data-testid="stPlotlyChart"] .js-plotly-plot >> visible=true').filter(
        has=page.locator(".parcoords")).first
    par.wait_for(timeout=60_000)
    traces = wait_until(lambda: [t for t in plot_data(par) if t["dims"]], 30, "the parallel coordinates' dimensions")
    assert len(traces) == 1 and traces[0]["type"] == "parcoords", traces
    dims = {d["label"]: d for d in traces[0]["dims"]}
    assert {"method", "accuracy %", "params removed %", "FLOPs ÷"} <= set(dims), list(dims)
    n = len(dims["method"]["values"])
    assert n >= 1 and all(len(d["values"]) == n for d in dims.values()), dims
    assert all(0 <= v <= 100 for v in dims["accuracy %"]["values"]), dims["accuracy %"]
    wait_until(lambda: par.locator(".parcoords .axis-title").count() >= len(dims), 30, "the axes drawn")
    page.mouse.move(0, 0)
    page.wait_for_timeout(800)
    par.locator("xpath=ancestor::*[@data-testid='stPlotlyChart'][1]").screenshot(path=str(path))
    return dims
