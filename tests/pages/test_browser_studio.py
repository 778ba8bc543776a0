"""Real browser (Playwright + Debian Chromium) against `streamlit run app.py`: open the home page
and every Studio page 01-05 (and screenshot pages 00, 06, 07, 09), wait for the figure, move the page's main slider and check the figure
changes (measuring first load and change -> new figure), screenshot every page at 1440×900,
1280×720 and 800×1000 (first view as the audience sees it, plus the whole page at that width), and
assert what can be asserted: nothing clipped (page, metrics, figures, tables), the default scale
drift shown <= 0.0075, no "still moving" point drawn as an end point on the τ dial, the toy map's
last-frame PNG differs from step 0, the menu starts with the home page and uses page titles.

Latencies go to ``test-artifacts/studio_latency.json`` and ``test-artifacts/studio_latency.md``.
"""
from __future__ import annotations

import base64
import io
import json
import os
import time

import pytest

from tests.pages._browser import open_page, wait_server_idle, wait_until

pytestmark = [pytest.mark.slow, pytest.mark.browser]

# (url path, main slider key, page title)
PAGES = [
    ("", "home_angle", "PCD Studio"),
    ("Gradient_geometry", "geo_angle", "Gradient geometry"),
    ("Toy_landscapes", "toy_tau", "Toy landscapes"),
    ("K_objective_benchmark", "kb_range", "K-objective benchmark"),
    ("Scale_invariance", "sc_k", "Scale invariance"),
    ("Tau_dial", "td_tau", "τ dial"),
]
VIEWPORTS = [(1440, 900), (1280, 720), (800, 1000)]
FIRST_LOAD_S = 3.0
CHANGE_S = 1.0

# Signature of the page: every Plotly chart's drawn coordinates plus layout annotations, or the
# metric values on pages without a chart (so any change of the content shows).
SIGNATURE = """() => {
  const gds = Array.from(document.querySelectorAll('.js-plotly-plot'));
  let acc = 0, n = 0;
  gds.forEach((gd, g) => {
    if (!gd.data) return;
    gd.data.forEach((t, j) => {
      n += 1;
      for (const key of ['x', 'y']) {
        const v = t[key];
        if (!v) continue;
        if (typeof v.bdata === 'string') {
          for (let i = 0; i < v.bdata.length; i++) acc += v.bdata.charCodeAt(i) * ((i % 97) + 1) * (j + 1) * (g + 1);
          continue;
        }
        const a = Array.from(v);
        for (let i = 0; i < a.length; i++) { const x = Number(a[i]); if (isFinite(x)) acc += x * ((i % 97) + 1) * (j + 1) * (g + 1); }
      }
    });
    acc += JSON.stringify((gd.layout.annotations || []).map(a => [a.x, a.y, a.text])).length * (g + 7);
  });
  const metrics = Array.from(document.querySelectorAll('[data-testid="stMetricValue"]')).map(e => e.innerText).join('|');
  if (!n && !metrics) return null;
  return n + ':' + acc.toPrecision(15) + ':' + metrics;
}"""
# Elements whose content does not fit their box (clipped text, figures wider than their column,
# tables that scroll sideways), and page-level horizontal overflow.
CLIPPED = """() => {
  const out = [];
  const doc = document.documentElement;
  if (doc.scrollWidth > window.innerWidth + 1) out.push('page scrolls sideways: ' + doc.scrollWidth);
  document.querySelectorAll('[data-testid="stMetricValue"], [data-testid="stMetricValue"] *, [data-testid="stMetricLabel"] *').forEach(e => {
    if (e.children.length === 0 && e.scrollWidth > e.clientWidth + 1)
      out.push('metric clipped: ' + e.innerText.slice(0, 40));
  });
  document.querySelectorAll('[data-testid="stMain"] button *').forEach(e => {
    if (e.children.length === 0 && e.innerText && e.scrollWidth > e.clientWidth + 1)
      out.push('button label clipped: ' + e.innerText.slice(0, 40));
  });
  document.querySelectorAll('.js-plotly-plot').forEach(gd => {
    const box = gd.getBoundingClientRect();
    const parent = gd.parentElement.getBoundingClientRect();
    if (box.width > parent.width + 2) out.push('figure wider than its column: ' + box.width + ' > ' + parent.width);
    if (box.height < 200) out.push('figure too small: ' + box.height + ' px tall');
    const plot = gd.querySelector('.nsewdrag');
    if (plot && plot.getBoundingClientRect().height < 150) out.push('plot area too small: ' + plot.getBoundingClientRect().height);
  });
  document.querySelectorAll('.katex-display').forEach(k => {
    if (k.scrollWidth > k.clientWidth + 2) out.push('formula clipped: ' + k.scrollWidth + ' > ' + k.clientWidth);
  });
  document.querySelectorAll('[data-testid="stTable"], .pcd-table').forEach(t => {
    if (t.scrollWidth > t.clientWidth + 2) out.push('table wider than the page: ' + t.scrollWidth + ' > ' + t.clientWidth);
  });
  // every chosen method's chip inside its multiselect's box (not scrolled away under a fade)
  document.querySelectorAll('[data-testid="stMultiSelect"] .react-aria-ComboBox').forEach(box => {
    const r = box.getBoundingClientRect();
    box.querySelectorAll('[data-tag]').forEach(tag => {
      const t = tag.getBoundingClientRect();
      if (t.right > r.right + 1 || t.bottom > r.bottom + 1 || t.left < r.left - 1)
        out.push('multiselect chip hidden: ' + tag.innerText.slice(0, 30));
    });
  });
  // a widget's label is never cut to "…"
  document.querySelectorAll('[data-testid="stMain"] [data-testid="stWidgetLabel"] [data-testid="stMarkdownContainer"]').forEach(e => {
    if (e.innerText && e.scrollWidth > e.clientWidth + 1) out.push('widget label cut: ' + e.innerText.slice(0, 40));
  });
  // a sidebar page name fits the sidebar (wraps, never cut)
  document.querySelectorAll('.st-key-pcd_menu a').forEach(a => {
    const r = a.getBoundingClientRect();
    a.querySelectorAll('p').forEach(p => { if (p.getBoundingClientRect().right > r.right + 1 || p.scrollWidth > p.clientWidth + 1)
      out.push('sidebar page name cut: ' + p.innerText.slice(0, 40)); });
  });
  document.querySelectorAll('[data-testid="stDataFrame"] .dvn-scroller').forEach(s => {
    if (s.scrollWidth > s.clientWidth + 2) out.push('table scrolls sideways: ' + s.scrollWidth + ' > ' + s.clientWidth);
  });
  return out;
}"""
# Settings in the same place on every page: the page's settings panel (pcd.ui.settings_panel) is in
# the main area, above the page's first figure, and the sidebar holds no setting but presenter mode.
SETTINGS_PLACE = """() => {
  const out = [];
  const panel = document.querySelector('[data-testid="stMain"] [class*="st-key-pcd_settings_"]');
  const fig = document.querySelector('[data-testid="stMain"] .js-plotly-plot');
  if (!panel) out.push('no settings panel in the page');
  else if (fig && panel.getBoundingClientRect().top > fig.getBoundingClientRect().top)
    out.push('settings panel below the first figure');
  const side = document.querySelectorAll('[data-testid="stSidebar"] [data-testid="stWidgetLabel"]');
  Array.from(side).forEach(l => { if (!/Presenter mode/.test(l.innerText)) out.push('setting in the sidebar: ' + l.innerText); });
  return out;
}"""
# Every chart on the page was drawn by the studio's Plotly.js basic bundle (pcd.ui.chart) and the
# browser never fetched Streamlit's full Plotly.js chunk.
BASIC_ONLY = """() => { const gds = Array.from(document.querySelectorAll('.js-plotly-plot'));
  return gds.length > 0 && !!window.__pcdPlotly && gds.every(g => g._pcdPlotly === window.__pcdPlotly)
    && !performance.getEntriesByType('resource').some(e => e.name.includes('/PlotlyChart.')); }"""
# The same on a page whose figures need more than the basic bundle (pcd.ui.chart.bundle_for): the
# cartesian bundle draws those, the basic one the rest; pages 06 and 09 keep st.plotly_chart.
STUDIO_BUNDLES_ONLY = """() => { const gds = Array.from(document.querySelectorAll('.js-plotly-plot'));
  return gds.length > 0 && gds.every(g => !!g._pcdPlotly)
    && !performance.getEntriesByType('resource').some(e => e.name.includes('/PlotlyChart.')); }"""
STUDIO_BUNDLE_PAGES = {"Guided_lesson", "Constraints_vs_penalties"}
# every studio chart box holds a drawn chart: a script run being over does not mean its charts are drawn (the
# bundle is fetched and evaluated after; under CI's load a check right after the run failed)
STUDIO_CHARTS_DRAWN = """() => { const boxes = Array.from(document.querySelectorAll('.pcd-chart'));
  return boxes.length > 0 && boxes.every(b => { const g = b.querySelector('.js-plotly-plot'); return !!(g && g._fullLayout); }); }"""
LATENCY: dict[str, dict] = {}
# Where a first load's time goes (ms after navigation start, in the page): the request for the
# charts' Plotly.js (the basic bundle, pcd.ui.chart; started by pcd.ui.preload_plotly), its
# arrival, window.Plotly defined (the bundle evaluated), and the first chart drawn.
LOAD_MARKS = """() => { const m = window.__pcdMarks = {};
  const mark = (k) => { if (!(k in m)) m[k] = Math.round(performance.now()); };
  const iv = setInterval(() => { if (window.Plotly) mark('plotly_ready');
    const p = document.querySelector('.js-plotly-plot'); if (p && p.data) { mark('first_chart'); clearInterval(iv); } }, 10);
  new PerformanceObserver((l) => l.getEntries().forEach(e => { if ((e.name.includes('/PlotlyChart.') || e.name.includes('plotly-basic'))) {
    m.chunk_request = Math.round(e.startTime); m.chunk_arrived = Math.round(e.responseEnd); } }))
    .observe({type: 'resource', buffered: true}); }"""


def _screens_and_clipping(page, name: str, artifacts_dir, settings: bool = True) -> dict:
    """Every viewport: the first view as the audience sees it (``studio_<name>_<w>x<h>.png``), then
    the whole page at that width (``_<w>_full.png``); returns what is clipped (or misplaced) per viewport."""
    problems = {}
    for w, h in VIEWPORTS:
        page.set_viewport_size({"width": w, "height": h})
        page.wait_for_timeout(900)
        page.screenshot(path=str(artifacts_dir / f"studio_{name}_{w}x{h}.png"))
        page.set_viewport_size({"width": w, "height": 3400})
        page.wait_for_timeout(900)
        page.screenshot(path=str(artifacts_dir / f"studio_{name}_{w}_full.png"))
        check = f"() => [...({CLIPPED})(), ...({SETTINGS_PLACE if settings else '() => []'})()]"
        bad = page.evaluate(check)
        for _ in range(12):  # tables and figures re-measure after a resize: give them time under load
            if not bad:
                break
            page.wait_for_timeout(500)
            bad = page.evaluate(check)
        if bad:
            problems[f"{w}x{h}"] = bad
    return problems


def _wait_content(page, timeout_ms: int = 180_000) -> None:
    page.wait_for_function(f"({SIGNATURE})() !== null", timeout=timeout_ms)


def _wait_idle(page) -> None:
    # Streamlit shows a "running" status widget while the script runs
    page.wait_for_timeout(300)
    page.wait_for_function("() => !document.querySelector('[data-testid=\"stStatusWidget\"]')", timeout=180_000)


def _no_exception(page) -> None:
    assert page.locator("[data-testid='stException']").count() == 0


@pytest.fixture(scope="module", autouse=True)
def _report(artifacts_dir):
    yield
    (artifacts_dir / "studio_latency.json").write_text(json.dumps(LATENCY, indent=2))
    lines = ["| page | first load (s) | return visit (s) | change → figure (s), 1st / 2nd | load per core "
             "| within 3 s / 1 s | Plotly.js requested / arrived / evaluated / first chart (s) |",
             "|---|---|---|---|---|---|---|"]
    for name, v in LATENCY.items():
        marks = v.get("load_marks") or {}
        where = " / ".join(f"{marks[k] / 1000:.2f}" if isinstance(marks.get(k), (int, float)) else "—"
                           for k in ("chunk_request", "chunk_arrived", "plotly_ready", "first_chart"))
        ret = v.get("return_visit_s")
        lines.append(f"| {name} | {v['first_load_s']:.2f} | {'—' if ret is None else f'{ret:.2f}'} | "
                     + " / ".join(f"{x:.2f}" for x in v["change_to_new_figure_s"])
                     + f" | {v['load_per_core']:.1f} | {'yes' if v.get('within_budget') else 'no'} | {where} |")
    (artifacts_dir / "studio_latency.md").write_text("\n".join(lines) + "\n")
    print("\nstudio page latency (s):\n" + "\n".join(lines))


@pytest.fixture(scope="module")
def warm(streamlit_server, browser):
    """One visit to the home page first (the server imports the library once), as a visitor would,
    then the server's start-up warm-up is let finish: the budgets are those of a running server,
    not of one still starting (a visitor in its first ~10 s gets slower first views)."""
    ctx = browser.new_context(viewport={"width": 1440, "height": 900})
    pg = ctx.new_page()
    pg.goto(streamlit_server["url"] + "/")
    _wait_content(pg)
    _wait_idle(pg)
    ctx.close()
    waited = wait_server_idle(streamlit_server["pid"])
    print(f"\nserver warm-up finished after {waited:.1f} s more")
    return streamlit_server


@pytest.mark.parametrize("path,slider_key,title", PAGES)
def test_page_first_view_latency_screens_and_nothing_clipped(browser, warm, artifacts_dir, path, slider_key, title):
    ctx = browser.new_context(viewport={"width": 1440, "height": 900})
    page = ctx.new_page()
    page.set_default_timeout(120_000)
    name = path or "Home"
    try:
        page.add_init_script(f"({LOAD_MARKS})()")
        t0 = time.perf_counter()
        page.goto(f"{warm['url']}/{path}")
        _wait_content(page)
        first_load = time.perf_counter() - t0
        _wait_idle(page)
        _no_exception(page)
        assert page.locator("h1").first.inner_text().strip() == title
        if path:  # the studio charts: drawn by the basic bundle, Streamlit's 4.7 MB chunk never fetched
            assert page.evaluate(BASIC_ONLY), name
        before = page.evaluate(SIGNATURE)
        slider = page.locator(f".st-key-{slider_key} input[type='range']").first
        latencies = []
        for _ in range(2):  # the first change after a load, then a second (warm) one
            slider.focus()
            t1 = time.perf_counter()
            slider.press("ArrowRight")
            page.wait_for_function(f"(before) => ({SIGNATURE})() !== before", arg=before, timeout=180_000)
            latencies.append(time.perf_counter() - t1)
            _wait_idle(page)
            _no_exception(page)
            before = page.evaluate(SIGNATURE)
        assert "=" in page.url.split("?", 1)[-1]  # the new value is in the URL (shareable view)
        load = os.getloadavg()[0] / (os.cpu_count() or 1)
        LATENCY[name] = {"first_load_s": round(first_load, 3), "change_to_new_figure_s": [round(v, 3) for v in latencies],
                         "load_per_core": round(load, 2), "load_marks": page.evaluate("window.__pcdMarks || {}")}
        # every viewport: the first view as the audience sees it, then the whole page at that width;
        # this second load (same browser, its cache warm: a returning visitor) is timed too
        t2 = time.perf_counter()
        page.goto(f"{warm['url']}/{path}")
        _wait_content(page)
        LATENCY[name]["return_visit_s"] = round(time.perf_counter() - t2, 3)
        _wait_idle(page)
        problems = _screens_and_clipping(page, name, artifacts_dir, settings=bool(path))
        assert not problems, (name, problems)
    finally:
        ctx.close()
    # Speed goals are measured, not gated (the team's rule: timed tests are noise on shared
    # machines). The figures, the load they were taken under and whether they meet the budgets go to
    # the artifact (studio_latency.json / .md); the closing note reports them.
    LATENCY[name]["within_budget"] = bool(first_load <= FIRST_LOAD_S and max(latencies) <= CHANGE_S)
    LATENCY[name]["budget_s"] = {"first_load": FIRST_LOAD_S, "change_to_new_figure": CHANGE_S}


# The other pages' first views (no latency budget): (url path, artifact name, title, has settings).
OTHER_PAGES = [
    ("Guided_lesson", "Guided_lesson", None, False),
    ("Jacobian_descent", "Jacobian_descent", "Jacobian descent", True),
    ("Constraints_vs_penalties", "Constraints_vs_penalties", "Constraints vs fixed penalties", True),
    ("Basin_maps?grid=50", "Basin_maps", "Basin maps", True),
]


@pytest.mark.parametrize("path,name,title,settings", OTHER_PAGES, ids=[p[1] for p in OTHER_PAGES])
def test_other_pages_screens_and_nothing_clipped(browser, warm, artifacts_dir, path, name, title, settings):
    ctx = browser.new_context(viewport={"width": 1440, "height": 900})
    page = ctx.new_page()
    page.set_default_timeout(180_000)
    try:
        page.goto(f"{warm['url']}/{path}")
        _wait_content(page)
        _wait_idle(page)
        _no_exception(page)
        if title:
            assert page.locator("h1").first.inner_text().strip() == title
        if name in STUDIO_BUNDLE_PAGES:  # every chart drawn by a studio bundle, Streamlit's 4.7 MB chunk never fetched
            page.wait_for_function(STUDIO_CHARTS_DRAWN, timeout=180_000)
            assert page.evaluate(STUDIO_BUNDLES_ONLY), name
        problems = _screens_and_clipping(page, name, artifacts_dir, settings=settings)
        assert not problems, (name, problems)
    finally:
        ctx.close()


def test_menu_starts_with_home_and_uses_page_titles(page, warm):
    page.goto(warm["url"] + "/")
    _wait_content(page)
    links = page.locator(".st-key-pcd_menu a")
    # a link's text is "<icon name>\n\n<label>"
    labels = [links.nth(i).inner_text().strip().split("\n")[-1].strip() for i in range(links.count())]
    assert labels[0] == "PCD Studio"
    assert [t for _, _, t in PAGES[1:]] == [lb for lb in labels if lb in {t for _, _, t in PAGES[1:]}]
    assert not any("_" in lb or lb.lower() == "app" for lb in labels)
    # old multipage URLs still open their page
    page.goto(warm["url"] + "/Scale_invariance?k=2")
    page.wait_for_function("() => Array.from(document.querySelectorAll('h1')).some(h => h.innerText.trim() === 'Scale invariance')",
                           timeout=180_000)


def test_scale_default_drift_shown_is_the_invariance(page, warm):
    page.goto(warm["url"] + "/Scale_invariance")
    _wait_content(page)
    _wait_idle(page)
    metric = page.locator("[data-testid='stMetric']", has_text="PCD: drift over 10⁻³ … 10⁷")
    assert float(metric.locator("[data-testid='stMetricValue']").inner_text()) <= 0.0075


def test_tau_dial_never_draws_a_moving_point_as_an_end_point(page, warm):
    page.goto(warm["url"] + "/Tau_dial")
    _wait_content(page)
    _wait_idle(page)
    curves = page.evaluate("""() => {
      const gd = document.querySelector('.js-plotly-plot');
      return gd.data.filter(t => (t.name || '').startsWith('PCD after'))
                    .map(t => ({name: t.name, symbol: t.marker.symbol, outcome: t.customdata.map(c => c[2])}));
    }""")
    assert [c["name"] for c in curves] == ["PCD after 1000 steps", "PCD after 300 steps", "PCD after 100 steps"]
    for c in curves:
        for sym, outcome in zip(c["symbol"], c["outcome"]):
            assert (sym == "circle-open") == outcome.startswith("still moving"), (c["name"], sym, outcome)


def test_chart_full_screen_button(browser, warm, artifacts_dir):
    """The studio charts' toolbar has a full-screen button (st.plotly_chart's has one): the figure
    takes the whole screen, and its column's width and height back after Esc."""
    ctx = browser.new_context(viewport={"width": 1280, "height": 720})
    page = ctx.new_page()
    page.set_default_timeout(120_000)
    size = """() => { const gd = document.querySelector('.st-key-geo_chart .js-plotly-plot');
      const f = document.fullscreenElement;
      return {full: !!f && f.contains(gd), w: gd._fullLayout.width, h: gd._fullLayout.height}; }"""
    try:
        page.goto(warm["url"] + "/Gradient_geometry")
        _wait_content(page)
        _wait_idle(page)
        before = page.evaluate(size)
        page.locator(".st-key-geo_chart .js-plotly-plot").first.hover()
        page.locator(".st-key-geo_chart [data-title^='Full screen']").first.click()
        page.wait_for_function(f"() => ({size})().full && ({size})().w === window.innerWidth")
        on = page.evaluate(size)
        assert (on["w"], on["h"]) == (1280, 720), on
        page.screenshot(path=str(artifacts_dir / "studio_Gradient_geometry_fullscreen.png"))
        page.evaluate("() => document.exitFullscreen()")
        page.wait_for_function(f"() => !({size})().full && ({size})().w < window.innerWidth")
        after = page.evaluate(size)
        assert (after["w"], after["h"]) == (before["w"], before["h"]) and not before["full"], (before, after)
    finally:
        ctx.close()


def test_toy_map_png_is_the_last_frame(page, warm, artifacts_dir):
    from PIL import Image, ImageChops, ImageStat

    page.goto(warm["url"] + "/Toy_landscapes")
    _wait_content(page)
    _wait_idle(page)
    step0 = page.evaluate("""async () => {
      const gd = document.querySelector('.js-plotly-plot');
      return await Plotly.toImage(gd, {format: 'png', width: 900, height: 700});
    }""")
    page.locator(".st-key-toy_png-toggle label").first.click()
    button = page.locator(".st-key-toy_png-dl button")
    try:
        button.wait_for(timeout=180_000)
    except Exception:
        pytest.skip("no offline PNG exporter (kaleido + Chromium) on this machine")
    with page.expect_download() as dl:
        button.click()
    png = open(dl.value.path(), "rb").read()
    (artifacts_dir / "studio_toy_last_frame.png").write_bytes(png)
    # rendered at the width the map is laid out for (1000 px, x2): at kaleido's 700 px the inset's numbers
    # were drawn over each other (pcd.ui.downloads.png_figure)
    assert Image.open(io.BytesIO(png)).size[0] == 2000
    a = Image.open(io.BytesIO(png)).convert("RGB").resize((300, 240))
    b = Image.open(io.BytesIO(base64.b64decode(step0.split(",", 1)[1]))).convert("RGB").resize((300, 240))
    diff = ImageStat.Stat(ImageChops.difference(a, b)).mean
    assert sum(diff) > 3.0, diff  # the exported map is not the step-0 picture


def test_toy_page_play_advances_animation(page, warm, artifacts_dir):
    page.goto(f"{warm['url']}/Toy_landscapes")
    _wait_content(page)
    _wait_idle(page)
    # the map may be re-rendered once after the first view (the frame controls report the page's width
    # class): wait until the map with its animated heads is drawn before reading it
    heads = """() => { const gd = document.querySelector('.st-key-toy_map .js-plotly-plot');
                      const t = gd && gd._fullData && gd._fullData.find(d => d.name === 'positions');
                      return t ? JSON.stringify(Array.from(t.x).slice(-6)) : null; }"""  # the animated heads
    page.wait_for_function(f"() => ({heads})() !== null", timeout=120_000)
    _wait_idle(page)
    def frame() -> int:  # the frame controls live in the component's shadow root: a locator pierces it
        return int(page.locator(".pcd-player").first.get_attribute("data-frame") or 0)

    # ONE play control: the page's frame controls (the chart has no Plotly play buttons or slider)
    assert page.locator(".js-plotly-plot .updatemenu-button").count() == 0
    assert page.locator(".js-plotly-plot .slider-container").count() == 0
    start_heads = page.evaluate(heads)
    assert frame() == 0
    page.locator(".pcd-player .pcd-play").first.click()
    page.wait_for_function(f"(h) => {{ const v = ({heads})(); return v !== null && v !== h; }}", arg=start_heads,
                           timeout=60_000)
    wait_until(lambda: frame() > 5, 60, "several frames advanced")  # bounded: a loaded CI machine is slow
    # the background image and the static layers survive the animation
    assert page.locator(".st-key-toy_map .js-plotly-plot .imagelayer image").count() >= 1
    page.screenshot(path=str(artifacts_dir / "studio_Toy_landscapes_playing.png"), full_page=False)
    page.locator(".pcd-player .pcd-play").first.click()  # pause
    page.wait_for_timeout(600)
    paused = frame()
    page.wait_for_timeout(700)
    assert frame() == paused
    # the scrubber jumps to a frame
    page.locator(".pcd-player .pcd-scrub").first.fill("20")
    page.wait_for_timeout(500)
    assert frame() == 20


# The toy map's state in the page: its frames, the animated heads and the gradient inset (the
# traces on the second axes of the map, or of the inset's own chart in presenter mode), and the frame
# the controls show.
TOY_STATE = """() => { const gd = document.querySelector('.st-key-toy_map .js-plotly-plot');
  if (!gd || !gd._fullData) return null;
  const xs = t => JSON.stringify(Array.from(t.x || []).slice(-6)) + JSON.stringify(Array.from(t.y || []).slice(-6));
  const heads = gd._fullData.find(d => d.name === 'positions');
  // the inset: on the map's second axes, or (presenter mode) a chart of its own under the controls
  const ig = document.querySelector('.st-key-toy_inset_fig .js-plotly-plot');
  const inset = [gd, ig].filter(g => g && g._fullData).map(g => g._fullData.filter(d => d.xaxis === 'x2').map(xs)
                                                                        .join('|')).join('|');
  const ending = (gd.layout.annotations || []).filter(a => a.name === 'end label' && a.visible !== false).length
                 + gd._fullData.filter(d => d.meta === 'end' && d.visible === true).length;
  // the objective-space panel, played by the same controls
  const og = document.querySelector('.st-key-toy_obj .js-plotly-plot');
  const onow = og && og._fullData && og._fullData.find(d => d.name === 'now');
  const obj = onow ? xs(onow) : null;
  const obj_ending = og && og._fullData ? og._fullData.filter(d => d.meta === 'end' && d.visible === true).length
                     + (og.layout.annotations || []).filter(a => a.name === 'end label' && a.visible !== false).length : 0;
  const drawn = (document.querySelector('.st-key-toy_map .pcd-chart') || {dataset: {}}).dataset.drawn || '';
  return {frames: ((gd._transitionData || {})._frames || []).length, heads: heads ? xs(heads) : null, inset, ending, drawn,
          obj, obj_ending, obj_frames: og ? ((og._transitionData || {})._frames || []).length : 0,
          inset_frames: ig ? ((ig._transitionData || {})._frames || []).length : -1,
          plotly_controls: document.querySelectorAll('.js-plotly-plot .updatemenu-button, .js-plotly-plot .slider-container').length}; }"""


@pytest.mark.parametrize("w,h,query", [(800, 1000, ""), (1280, 720, "?present=1"), (1440, 900, ""),
                                       (1920, 1080, ""), (1280, 720, "lesson")])
def test_toy_map_plays_and_steps_in_every_width_class(browser, warm, w, h, query):
    """Regression: outside the default width class the page redraws the map for its width, and
    the frames used to be lost in that redraw (Plotly.react with a config that read as changed): no
    frames, Play did nothing, Step moved only the slider, every click an uncaught "undefined".
    ``"lesson"``: reached as a lecturer does, from the lesson's step 2 in presenter mode ("explore
    this on its page")."""
    ctx = browser.new_context(viewport={"width": w, "height": h})
    page = ctx.new_page()
    page.set_default_timeout(120_000)
    errors: list[str] = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    elsewhere: list[str] = []  # the app works offline: nothing fetched from another host (the tab's icon)
    page.on("request", lambda r: r.url.startswith(("http://127.0.0.1", "data:", "blob:")) or elsewhere.append(r.url))
    try:
        if query == "lesson":
            page.goto(f"{warm['url']}/Guided_lesson?step=2&present=1")
            _wait_content(page)
            _wait_idle(page)
            page.get_by_text("explore this on its page").first.click()
            page.wait_for_url("**/Toy_landscapes**", timeout=120_000)
            assert "present=1" in page.url
        else:
            page.goto(f"{warm['url']}/Toy_landscapes{query}")
        _wait_content(page)
        _wait_idle(page)  # the rerun for the page's width class, when there is one
        player = page.locator(".pcd-player").first  # in the component's shadow root: a locator pierces it

        def state() -> dict:
            v = page.evaluate(TOY_STATE) or {"frames": 0, "inset": ""}
            return dict(v, frame=int(player.get_attribute("data-frame") or 0))

        seen: list[str] = []

        def settled():  # frames in both charts, and no redraw (a rerun for the width class) for 2 s
            v = state()
            ok = v and v["frames"] > 0 and v["inset"] and v["obj_frames"] > 0 and v.get("inset_frames", -1) != 0
            seen.append(v["drawn"] if ok else "")
            return v if ok and len(seen) >= 9 and len(set(seen[-9:])) == 1 else None

        first = wait_until(settled, 90, f"the toy map's frames at {w}x{h}{query}")
        assert first["frames"] >= 50 and first["frame"] == 0
        # one set of play controls: the page's (no Plotly buttons or slider in the chart)
        assert first["plotly_controls"] == 0 and page.locator(".pcd-play").count() == 1
        player.locator("button[data-act=fwd]").click()
        one = wait_until(lambda: (lambda v: v if v["heads"] != first["heads"] and v["inset"] != first["inset"]
                                  and v["obj"] != first["obj"] else None)(state()), 30,
                         "Step ▶ moving the heads, the inset and the objective-space points")
        assert one["frame"] == 1  # one click, one frame
        player.locator(".pcd-play").click()
        moved = wait_until(lambda: (lambda v: v if v["frame"] > 5 else None)(state()), 60, "Play advancing")
        assert moved["heads"] != one["heads"] and moved["inset"] != one["inset"] and moved["obj"] != one["obj"]
        player.locator(".pcd-play").click()  # pause
        # the ending (end markers and labels) is drawn at the last frame only
        assert first["ending"] == 0 and moved["ending"] == 0 and first["obj_ending"] == 0
        player.locator(".pcd-scrub").fill(str(first["frames"] - 1))
        wait_until(lambda: state()["ending"] > 0 and state()["obj_ending"] > 0, 30, "the ending shown at the last frame")
        player.locator("button[data-act=back]").click()
        wait_until(lambda: state()["ending"] == 0 and state()["obj_ending"] == 0, 30,
                   "the ending hidden again one frame back")
        assert not errors, errors
        assert not elsewhere, elsewhere
        icon = page.evaluate("() => (document.querySelector('link[rel~=icon]') || {}).href")
        assert icon and icon.startswith(("data:image/svg+xml", warm["url"])), icon  # the app's own (inline) icon
    finally:
        ctx.close()


def test_toy_page_gif_download(page, warm, artifacts_dir):
    """The toy page's "Animation for slides": Build (a progress bar) then Download gives a GIF of the
    map's frames at 1280 x 720 (pcd.ui.animation_export)."""
    from PIL import Image

    page.goto(f"{warm['url']}/Toy_landscapes?methods=pcd,ws,mgda")
    _wait_content(page)
    _wait_idle(page)
    button = page.locator(".st-key-toy_anim_build button")
    button.scroll_into_view_if_needed()
    t0 = time.monotonic()
    button.click()
    download = page.locator(".st-key-toy_anim_download button")
    download.wait_for(timeout=120_000)
    with page.expect_download(timeout=120_000) as dl:
        download.click()
    took = time.monotonic() - t0
    path = artifacts_dir / "studio_toy_animation.gif"
    dl.value.save_as(str(path))
    im = Image.open(path)
    assert im.size == (1280, 720) and im.n_frames == 100
    print(f"\ntoy GIF: click -> file {took:.2f} s, {path.stat().st_size / 1e6:.2f} MB")


# The pixels of trace t's points, from the chart's own axes (Plotly picks the clicked point by
# hovering: the pointer must be over the point's pixel), with each point's τ and marker symbol.
POINT_PIXELS = """(t) => {
  const gd = document.querySelector('.js-plotly-plot');
  const L = gd._fullLayout, d = gd._fullData[t], r = gd.querySelector('.nsewdrag').getBoundingClientRect();
  return {name: d.name, points: Array.from(d.x).map((x, i) => [r.left + L.xaxis.l2p(L.xaxis.d2l(x)),
          r.top + L.yaxis.l2p(L.yaxis.d2l(d.y[i])), d.customdata[i][0], d.marker.symbol[i]])};
}"""


def test_tau_page_click_on_curve_selects_that_tau(page, warm):
    # one budget (1000 steps): the link's budget is the only curve
    page.goto(f"{warm['url']}/Tau_dial?problem=quadratic&budgets=1000&lr=0.02&tau=0.1")
    _wait_content(page)
    _wait_idle(page)
    names = page.evaluate("() => document.querySelector('.js-plotly-plot')._fullData.map(d => d.name)")
    assert [n for n in names if n.startswith("PCD after")] == ["PCD after 1000 steps"]
    curve = page.evaluate(POINT_PIXELS, 0)
    assert curve["name"] == "PCD after 1000 steps" and len(curve["points"]) == 11  # one point per τ of the sweep
    pts = curve["points"]

    def gap(i):  # pixels to the nearest other point: coinciding points cannot be told apart by a click
        return min(((pts[i][0] - q[0]) ** 2 + (pts[i][1] - q[1]) ** 2) ** 0.5 for j, q in enumerate(pts) if j != i)

    # a filled (ended) point of another τ, well apart from its neighbours; the largest such τ
    i = max((i for i, p in enumerate(pts) if p[3] == "circle" and p[2] != 0.1 and gap(i) > 14), key=lambda i: pts[i][2])
    x, y, tau, _ = pts[i]
    page.mouse.move(x, y)  # hover first, as a pointer does
    page.wait_for_timeout(200)
    page.mouse.click(x, y)
    page.wait_for_function("(t) => parseFloat(new URLSearchParams(location.search).get('tau')) === t", arg=tau,
                           timeout=120_000)
    _wait_idle(page)
    assert page.locator(f"text=PCD trajectories at τ = {tau:g}").count() == 1
    # the ring marks the clicked τ on the redrawn chart
    page.wait_for_function("(want) => { const d = document.querySelector('.js-plotly-plot')._fullData;"
                           " return d[d.length - 1].name === want; }", arg=f"selected τ = {tau:g}", timeout=30_000)


def test_toy_page_click_on_map_adds_a_start(page, warm):
    page.goto(f"{warm['url']}/Toy_landscapes?methods=pcd,ws&steps=200")
    _wait_content(page)
    _wait_idle(page)
    box = page.locator(".js-plotly-plot .nsewdrag").first.bounding_box()
    cx, cy = box["x"] + box["width"] * 0.35, box["y"] + box["height"] * 0.2
    # the place clicked, in the map's units (the start goes exactly there, not to a grid point)
    want = page.evaluate("""([cx, cy]) => { const g = document.querySelector('.js-plotly-plot');
      const r = g.getBoundingClientRect(), xa = g._fullLayout.xaxis, ya = g._fullLayout.yaxis;
      return [xa.p2l(cx - r.left - xa._offset), ya.p2l(cy - r.top - ya._offset)]; }""", [cx, cy])
    page.mouse.click(cx, cy)
    page.wait_for_function("() => window.location.search.includes('starts=typed')", timeout=120_000)
    _wait_idle(page)
    from urllib.parse import parse_qs, urlparse
    typed = parse_qs(urlparse(page.url).query)["typed"][0]
    lines = [ln for ln in typed.splitlines() if ln.strip()]
    assert len(lines) == 4  # the 3 preset starts + the clicked point
    x, y = (float(v) for v in lines[-1].split(","))
    assert -3.5 < x < 0 and 0 < y < 2  # upper-left part of the saddle map
    assert abs(x - want[0]) < 0.02 and abs(y - want[1]) < 0.02, (x, y, want)  # ~1 px (a grid cell was 0.3)
    page.wait_for_selector(".js-plotly-plot text:text-is('S4')", timeout=120_000)


def test_toy_page_rest_follows_once_the_map_is_drawn(browser, warm):
    """A settings change reruns the settings-and-figures fragment; the rest of the page (loss chart, table,
    captions) follows in a run of the whole page once the browser has drawn the new map (pcd.ui.hand_over):
    it must follow every time, also when the map itself did not change (only the objective panel's axes)."""
    ctx, page, errors = open_page(browser, 1440, 900)
    try:
        page.goto(f"{warm['url']}/Toy_landscapes?methods=pcd,ws&steps=200")
        _wait_content(page)
        _wait_idle(page)
        page.wait_for_selector(".st-key-toy_loss .pcd-chart[data-drawn]", timeout=120_000)
        drawn = "(k) => (document.querySelector('.st-key-' + k + ' .pcd-chart') || {dataset: {}}).dataset.drawn"
        table = "() => document.body.innerText.split('Where each trajectory ended')[1].slice(0, 2000)"
        map0, loss0, table0 = page.evaluate(drawn, "toy_map"), page.evaluate(drawn, "toy_loss"), page.evaluate(table)
        page.locator(".st-key-toy_opt label").filter(has_text="SGD").first.click()
        page.wait_for_function(f"() => ({drawn})('toy_map') !== {map0!r}", timeout=120_000)
        page.wait_for_function(f"() => ({drawn})('toy_loss') !== {loss0!r}", timeout=120_000)  # the rest followed
        _wait_idle(page)
        assert page.evaluate(table) != table0  # the endpoint table is SGD's
        assert "opt=sgd" in page.url
        log_note = "Log axes: exact zeros are drawn at 1e-12."
        assert page.get_by_text(log_note).count() == 1
        map1 = page.evaluate(drawn, "toy_map")
        page.locator(".st-key-toy_obj_axes label").filter(has_text="linear").first.click()
        page.wait_for_function(f"() => !document.body.innerText.includes({log_note!r})", timeout=120_000)
        _wait_idle(page)
        assert page.evaluate(drawn, "toy_map") == map1  # the map was not redrawn, and the page followed all the same
        _no_exception(page)
        assert not errors, errors
    finally:
        ctx.close()
