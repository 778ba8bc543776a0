"""Real browser (Playwright + Debian Chromium) against `streamlit run app.py`: open each Studio
page, wait for the Plotly chart, press Play on the toy page and check the animation advances,
move a slider and check the figure changes (measuring the latency), screenshot every page.

Measured latencies are printed and written to ``test-artifacts/studio_latency.json``.
"""
from __future__ import annotations

import json
import time

import pytest

pytestmark = [pytest.mark.slow, pytest.mark.browser]

PAGES = [
    ("Gradient_geometry", "geo_angle"),
    ("Toy_landscapes", "toy_tau"),
    ("K_objective_benchmark", "kb_range"),
    ("Scale_invariance", "sc_k"),
    ("Tau_dial", "td_tau"),
]
# Signature of the first Plotly chart on the page: a checksum of every coordinate it draws plus
# the layout's title/annotation/shape count (so any change of the figure's content shows).
SIGNATURE = """() => {
  const gd = document.querySelector('.js-plotly-plot');
  if (!gd || !gd.data) return null;
  let acc = 0;
  gd.data.forEach((t, j) => {
    for (const key of ['x', 'y']) {
      const v = t[key];
      if (!v) continue;
      if (typeof v.bdata === 'string') {            // Plotly's base64 typed-array encoding
        for (let i = 0; i < v.bdata.length; i++) acc += v.bdata.charCodeAt(i) * ((i % 97) + 1) * (j + 1);
        continue;
      }
      const a = Array.from(v);
      for (let i = 0; i < a.length; i++) { const n = Number(a[i]); if (isFinite(n)) acc += n * ((i % 97) + 1) * (j + 1); }
    }
  });
  const ann = (gd.layout.annotations || []).map(a => [a.x, a.y]);
  return gd.data.length + ':' + acc.toPrecision(15) + ':' + JSON.stringify(ann);
}"""
LATENCY: dict[str, dict[str, float]] = {}


def _wait_chart(page, timeout_ms: int = 60_000) -> None:
    page.wait_for_selector(".js-plotly-plot .main-svg", timeout=timeout_ms)
    page.wait_for_function(f"({SIGNATURE})() !== null", timeout=timeout_ms)


def _wait_idle(page) -> None:
    # Streamlit shows a "running" status widget while the script runs
    page.wait_for_timeout(300)
    page.wait_for_function("() => !document.querySelector('[data-testid=\"stStatusWidget\"]')", timeout=60_000)


@pytest.fixture(scope="module", autouse=True)
def _report(artifacts_dir):
    yield
    (artifacts_dir / "studio_latency.json").write_text(json.dumps(LATENCY, indent=2))
    print("\nstudio page latency (s):", json.dumps(LATENCY, indent=1))


@pytest.mark.parametrize("path,slider_key", PAGES)
def test_page_loads_slider_changes_figure(page, streamlit_server, artifacts_dir, path, slider_key):
    t0 = time.perf_counter()
    page.goto(f"{streamlit_server['url']}/{path}")
    _wait_chart(page)
    first_load = time.perf_counter() - t0
    _wait_idle(page)
    assert page.locator("[data-testid='stException']").count() == 0
    before = page.evaluate(SIGNATURE)
    slider = page.locator(f".st-key-{slider_key} input[type='range']").first
    latencies = []
    for _ in range(2):  # the first change after a load, then a second (warm) one
        slider.focus()
        t1 = time.perf_counter()
        slider.press("ArrowRight")
        page.wait_for_function(f"(before) => ({SIGNATURE})() !== before", arg=before, timeout=60_000)
        latencies.append(time.perf_counter() - t1)
        _wait_idle(page)
        assert page.locator("[data-testid='stException']").count() == 0
        before = page.evaluate(SIGNATURE)
    # the new value is in the URL (shareable view)
    assert "=" in page.url.split("?", 1)[-1]
    # Streamlit scrolls inside its own container: a tall viewport captures the whole page
    page.set_viewport_size({"width": 1400, "height": 2400})
    page.wait_for_timeout(800)
    page.screenshot(path=str(artifacts_dir / f"studio_{path}.png"))
    LATENCY[path] = {"first_load_s": round(first_load, 3),
                     "slider_to_new_figure_s": [round(v, 3) for v in latencies]}


def test_toy_page_play_advances_animation(page, streamlit_server, artifacts_dir):
    page.goto(f"{streamlit_server['url']}/Toy_landscapes")
    _wait_chart(page)
    _wait_idle(page)
    heads = """() => { const gd = document.querySelector('.js-plotly-plot');
                      const t = gd._fullData.find(d => d.name === 'positions');  // the animated heads
                      return JSON.stringify(Array.from(t.x).slice(-6)); }"""
    slider_val = """() => { const gd = document.querySelector('.js-plotly-plot');
                           return gd._fullLayout.sliders[0].active; }"""
    start_heads = page.evaluate(heads)
    assert page.evaluate(slider_val) == 0
    page.locator(".js-plotly-plot .updatemenu-button").first.click()  # ▶ Play
    page.wait_for_function(f"(h) => ({heads})() !== h", arg=start_heads, timeout=20_000)
    page.wait_for_timeout(1200)
    active = page.evaluate(slider_val)
    assert active > 5  # several frames advanced
    # the background image and the static layers survive the animation
    assert page.locator(".js-plotly-plot .imagelayer image").count() >= 1
    page.screenshot(path=str(artifacts_dir / "studio_Toy_landscapes_playing.png"), full_page=False)
    page.locator(".js-plotly-plot .updatemenu-button").nth(1).click()  # pause
    page.wait_for_timeout(300)
    paused = page.evaluate(slider_val)
    page.wait_for_timeout(700)
    assert page.evaluate(slider_val) == paused


def test_tau_page_click_on_curve_selects_that_tau(page, streamlit_server):
    page.goto(f"{streamlit_server['url']}/Tau_dial?problem=quadratic&steps=200&lr=0.02&tau=0.1")
    _wait_chart(page)
    _wait_idle(page)
    points = page.locator(".js-plotly-plot").first.locator(".scatterlayer .trace").first.locator(".points path")
    assert points.count() == 11  # one point per τ of the sweep
    points.nth(8).click(force=True)  # τ = 0.5
    page.wait_for_function("() => window.location.search.includes('tau=0.5')", timeout=30_000)
    _wait_idle(page)
    assert page.locator("text=PCD trajectories at τ = 0.5").count() == 1


def test_toy_page_click_on_map_adds_a_start(page, streamlit_server):
    page.goto(f"{streamlit_server['url']}/Toy_landscapes?methods=pcd,ws&steps=200")
    _wait_chart(page)
    _wait_idle(page)
    box = page.locator(".js-plotly-plot .nsewdrag").first.bounding_box()
    page.mouse.click(box["x"] + box["width"] * 0.35, box["y"] + box["height"] * 0.2)
    page.wait_for_function("() => window.location.search.includes('starts=typed')", timeout=30_000)
    _wait_idle(page)
    from urllib.parse import parse_qs, urlparse
    typed = parse_qs(urlparse(page.url).query)["typed"][0]
    lines = [ln for ln in typed.splitlines() if ln.strip()]
    assert len(lines) == 4  # the 3 preset starts + the clicked point
    x, y = (float(v) for v in lines[-1].split(","))
    assert -3.5 < x < 0 and 0 < y < 2  # upper-left part of the saddle map
    page.wait_for_selector(".js-plotly-plot text:text-is('S4')", timeout=30_000)
