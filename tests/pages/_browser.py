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


# Every piece of text Plotly drew in a graph div (annotations, scatter text, tick labels, axis titles,
# the legend) and the markers of the traces named in `markers`, as screen boxes; returns the pairs that
# overlap by more than `tol` px each way (tick labels of one axis among themselves, and an annotation's
# own arrow, are not pairs) and the scatter texts that leave their plot area (clipped). Used by
# test_browser_labels.py on the pages as drawn.
TEXT_COLLISIONS = """([gd, markers, tol]) => {
  const items = [];
  const box = (e) => { const r = e.getBoundingClientRect(); return {x0: r.left, x1: r.right, y0: r.top, y1: r.bottom}; };
  const shown = (e) => { for (let n = e; n && n !== gd; n = n.parentElement) {
      const cs = getComputedStyle(n); if (cs.display === 'none' || cs.visibility === 'hidden' || cs.opacity === '0') return false; }
    return true; };
  const add = (kind, e, group, text) => { const b = box(e);
    if (b.x1 - b.x0 < 0.5 || b.y1 - b.y0 < 0.5 || !shown(e)) return;
    items.push(Object.assign({kind, group, text: (text !== undefined ? text : e.textContent || '').trim()}, b)); };
  gd.querySelectorAll('g.annotation .annotation-text-g').forEach(e => add('annotation', e, 'ann'));
  gd.querySelectorAll('g.textpoint text').forEach(e => {
    const sub = e.closest('g.subplot'); add('text', e, sub ? sub.getAttribute('class') : ''); });
  gd.querySelectorAll('g[class*="axislayer"] > g[class$="tick"] > text').forEach(e => {
    const layer = e.closest('g[class*="axislayer"]'); const sub = e.closest('g.subplot');
    add('tick', e, (sub ? sub.getAttribute('class') : '') + ' ' + layer.getAttribute('class').charAt(0)); });
  gd.querySelectorAll('.infolayer > g[class$="title"] text').forEach(e => add('title', e, e.parentElement.getAttribute('class')));
  gd.querySelectorAll('.legend .scrollbox').forEach(e => add('legend', e, 'legend', 'legend'));
  const names = new Set(markers || []);
  const fd = gd._fullData || [];
  gd.querySelectorAll('g.trace.scatter').forEach(tr => {
    const d = tr.__data__ && tr.__data__[0] && tr.__data__[0].trace;
    if (!d || !names.has(d.name)) return;
    tr.querySelectorAll('path.point').forEach(p => add('marker', p, 'marker:' + d.name, d.name));
  });
  const pairs = [];
  const t = tol || 1;
  for (let i = 0; i < items.length; i++) for (let j = 0; j < i; j++) {
    const a = items[i], b = items[j];
    if (a.kind === 'marker' && b.kind === 'marker') continue;
    if (a.kind === 'tick' && b.kind === 'tick' && a.group === b.group) continue;
    if ((a.kind === 'marker' || b.kind === 'marker') && (a.kind === 'tick' || b.kind === 'tick' || a.kind === 'legend' || b.kind === 'legend')) continue;
    const ox = Math.min(a.x1, b.x1) - Math.max(a.x0, b.x0), oy = Math.min(a.y1, b.y1) - Math.max(a.y0, b.y0);
    if (ox > t && oy > t) pairs.push([a.kind + ' ' + a.text, b.kind + ' ' + b.text, Math.round(ox), Math.round(oy)]);
  }
  const clipped = [];
  const fl = gd._fullLayout, root = gd.querySelector('.main-svg').getBoundingClientRect();
  // a tick label over another subplot's plot area (panels too close for their axes)
  Object.entries(fl._plots || {}).forEach(([id, pl]) => {
    const X0 = root.left + pl.xaxis._offset, Y0 = root.top + pl.yaxis._offset;
    const area = {x0: X0, x1: X0 + pl.xaxis._length, y0: Y0, y1: Y0 + pl.yaxis._length};
    items.filter(a => a.kind === 'tick' && !a.group.split(' ').includes(id)).forEach(a => {
      const ox = Math.min(a.x1, area.x1) - Math.max(a.x0, area.x0), oy = Math.min(a.y1, area.y1) - Math.max(a.y0, area.y0);
      if (ox > t && oy > t) pairs.push(['tick ' + a.text, 'plot area ' + id, Math.round(ox), Math.round(oy)]);
    });
  });
  gd.querySelectorAll('g.trace.scatter').forEach(tr => {
    const d = tr.__data__ && tr.__data__[0] && tr.__data__[0].trace;
    if (!d || d.cliponaxis === false) return;
    const xa = fl[d.xaxis.replace('x', 'xaxis')], ya = fl[d.yaxis.replace('y', 'yaxis')];
    if (!xa || !ya) return;
    const X0 = root.left + xa._offset, X1 = X0 + xa._length, Y0 = root.top + ya._offset, Y1 = Y0 + ya._length;
    tr.querySelectorAll('g.textpoint text').forEach(e => { const b = box(e);
      if (b.x1 - b.x0 < 0.5 || !shown(e)) return;
      if (b.x0 < X0 - t || b.x1 > X1 + t || b.y0 < Y0 - t || b.y1 > Y1 + t) clipped.push((e.textContent || '').trim()); });
  });
  return {pairs, clipped, n: items.length};
}"""
