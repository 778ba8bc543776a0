"""Real browser (Playwright + Debian Chromium) against `streamlit run app.py`: the teaching views.

* Toy page: the gradient inset is drawn (under the controls: the objective space is beside the map,
  or with the map in a narrow window); the frame controls play (the inset's
  numbers change with the frame), step forward / back, reset, follow the keyboard, and the loss
  plot's cursor follows the frame shown.
* Gradient geometry: dragging g2's tip in the figure moves the sliders to that vector.
* Guided lesson in presenter mode at 1280 x 720: every step, screenshot each; paragraphs are
  one line, the animation step's controls fit on the screen.

Screenshots go to ``test-artifacts/teach_*.png``.
"""
from __future__ import annotations

import pytest

from tests.pages._browser import wait_until

pytestmark = [pytest.mark.slow, pytest.mark.browser]

MAP = ".st-key-toy_map .js-plotly-plot"
INSET = ".st-key-toy_inset_fig .js-plotly-plot"  # the inset's own chart (the objective space beside the map)
STATUS = ".pcd-status"


def _wait_idle(page) -> None:
    page.wait_for_timeout(300)
    page.wait_for_function("() => !document.querySelector('[data-testid=\"stStatusWidget\"]')", timeout=90_000)


def _frame(page) -> int:
    return int(page.locator(".pcd-player").first.get_attribute("data-frame"))


def _slider_active(page) -> int:
    # the frame controls' scrubber (the one play control: the chart has no Plotly slider of its own)
    return int(page.locator(".pcd-player .pcd-scrub").first.input_value())


def _inset_text(page) -> list[str]:
    return page.evaluate(f"""() => {{ for (const gd of [document.querySelector('{INSET}'), document.querySelector('{MAP}')]) {{
        const t = gd && gd._fullData && gd._fullData.find(d => d.name === 'inset numbers');
        if (t) return Array.from(t.text); }} return null; }}""")


def _cursor(page) -> list[float]:
    return page.evaluate("""() => { const gd = document.querySelector('.st-key-toy_loss .js-plotly-plot');
        return (gd.layout.shapes || []).filter(s => s.name === 'step cursor').map(s => s.x0); }""")


def _button(page, act: str):
    return page.locator(f".pcd-b[data-act={act}]").first


def test_toy_inset_play_step_back_reset(page, streamlit_server, artifacts_dir):
    page.goto(f"{streamlit_server['url']}/Toy_landscapes?steps=1000")
    page.wait_for_selector(MAP + " .main-svg", timeout=90_000)
    _wait_idle(page)
    page.wait_for_function("() => window.Plotly", timeout=30_000)
    page.locator(".pcd-player").first.wait_for(timeout=30_000)  # (in the component's shadow root)
    assert page.locator("[data-testid='stException']").count() == 0
    frames = page.evaluate(f"() => document.querySelector('{MAP}')._transitionData._frames.map(f => f.name)")
    assert len(frames) >= 90  # toy_map.TOY_FRAMES frames spread over the ~170 recorded steps
    wait_until(lambda: _inset_text(page), 60, "the gradient inset drawn")
    text0 = _inset_text(page)
    assert text0 and len(text0) == 6 and all("‖g₁‖" in t for t in text0)
    # the inset's panels are drawn (arrows, numbers): its own chart under the controls, the objective space
    # beside the map
    assert page.locator(INSET + " .x2y2 .scatterlayer .trace").count() >= 8
    assert page.locator(".st-key-toy_obj .js-plotly-plot").count() == 1
    assert _frame(page) == 0

    # play at 4x; the frame advances and the inset's numbers change with it
    page.locator(".pcd-s[data-speed='4']").first.click()
    _button(page, "play").click()
    for _ in range(150):
        if _frame(page) > 8:
            break
        page.wait_for_timeout(200)
    assert _frame(page) > 8, "playing advances the frames"
    page.screenshot(path=str(artifacts_dir / "teach_toy_playing.png"))
    _button(page, "play").click()  # pause
    page.wait_for_timeout(400)
    paused = _frame(page)
    page.wait_for_timeout(800)
    assert _frame(page) == paused, "pause must stop the animation"
    assert _inset_text(page) != text0
    assert _slider_active(page) == paused  # the scrubber shows the same frame
    assert _cursor(page) == [int(frames[paused]) + 1] * 2  # loss-plot cursor at that step (x = step + 1)

    # one recorded step forward, two back, by buttons and keyboard
    _button(page, "fwd").click()
    page.wait_for_timeout(300)
    assert _frame(page) == paused + 1 and _slider_active(page) == paused + 1
    _button(page, "back").click()
    page.wait_for_timeout(300)
    assert _frame(page) == paused
    page.keyboard.press("ArrowLeft")
    page.wait_for_timeout(300)
    assert _frame(page) == paused - 1
    assert page.locator(STATUS).first.text_content().startswith(f"step {frames[paused - 1]} / ")
    assert _cursor(page) == [int(frames[paused - 1]) + 1] * 2
    page.screenshot(path=str(artifacts_dir / "teach_toy_stepped.png"))

    # to the end of the run: the stalled methods' panels say d ~ 0
    page.evaluate(f"() => Plotly.animate(document.querySelector('{MAP}'), ['{frames[-1]}'], "
                  "{mode: 'immediate', frame: {duration: 0, redraw: false}, transition: {duration: 0}})")
    page.wait_for_timeout(500)
    end = _inset_text(page)
    assert sum("‖d‖ ≈ 0" in t for t in end) >= 3, end
    page.screenshot(path=str(artifacts_dir / "teach_toy_end.png"))
    _button(page, "reset").click()
    page.wait_for_timeout(300)
    assert _frame(page) == 0 and _slider_active(page) == 0 and _inset_text(page) == text0


def test_geometry_drag_sets_g2(page, streamlit_server, artifacts_dir):
    chart = ".st-key-geo_chart .js-plotly-plot"
    page.goto(f"{streamlit_server['url']}/Gradient_geometry?angle=150&norm2=1.0")
    page.wait_for_selector(chart + " .main-svg", timeout=90_000)
    _wait_idle(page)
    page.wait_for_timeout(800)

    def pix(x: float, y: float) -> tuple[float, float]:
        return tuple(page.evaluate(f"""([x, y]) => {{ const g = document.querySelector('{chart}');
            const fl = g._fullLayout, r = g.getBoundingClientRect();
            return [r.left + fl.xaxis._offset + fl.xaxis.l2p(x), r.top + fl.yaxis._offset + fl.yaxis.l2p(y)]; }}""",
                                   [x, y]))

    def value(key: str) -> float:
        return float(page.locator(f".st-key-{key} input[type=range]").first.input_value())

    assert value("geo_angle") == 150 and value("geo_norm2") == 1.0
    x0, y0 = pix(-0.866, 0.5)  # g2's tip
    x1, y1 = pix(0.0, 1.0)
    page.mouse.move(x0, y0)
    page.mouse.down()
    page.mouse.move((x0 + x1) / 2, (y0 + y1) / 2, steps=4)
    page.mouse.move(x1, y1, steps=4)
    page.mouse.up()
    page.wait_for_function("() => document.querySelector('.st-key-geo_angle input[type=range]').value !== '150'",
                           timeout=30_000)
    _wait_idle(page)
    assert abs(value("geo_angle") - 90) <= 2 and abs(value("geo_norm2") - 1.0) <= 0.05
    assert "angle=" in page.url and "angle=150" not in page.url
    # the figure follows: g2's line now ends near (0, 1)
    tip = page.evaluate(f"""() => {{ const g = document.querySelector('{chart}');
        const t = g._fullData.find(d => d.name === 'g2'); return [t.x[1], t.y[1]]; }}""")
    assert abs(tip[0]) < 0.05 and abs(tip[1] - 1.0) < 0.05
    assert page.locator("[data-testid='stException']").count() == 0
    page.screenshot(path=str(artifacts_dir / "teach_geometry_dragged.png"))


def test_lesson_in_presenter_mode_at_1280x720(browser, streamlit_server, artifacts_dir):
    ctx = browser.new_context(viewport={"width": 1280, "height": 720})
    page = ctx.new_page()
    page.set_default_timeout(90_000)
    try:
        page.goto(f"{streamlit_server['url']}/Guided_lesson?present=1")
        page.wait_for_selector(".js-plotly-plot .main-svg")
        _wait_idle(page)
        # presenter CSS: large type, one-line paragraphs, no sidebar in the way
        size = page.evaluate("() => parseFloat(getComputedStyle(document.documentElement).fontSize)")
        assert size >= 18
        assert page.locator("[data-testid='stSidebar'][aria-expanded='true']").count() == 0
        n = page.locator(".st-key-lesson_jump button").count()
        assert n == 7
        keys = ["one_d", "saddle", "basins", "stall", "kbench", "scale", "tau"]
        for i in range(1, n + 1):
            page.wait_for_function(f"""() => Array.from(document.querySelectorAll('h3'))
                .some(h => h.textContent.trim().startsWith('{i} ·'))""")
            page.wait_for_selector(f".st-key-lesson_fig_{keys[i - 1]} .js-plotly-plot .main-svg", timeout=120_000)
            _wait_idle(page)
            page.wait_for_function("() => !document.querySelector('[data-stale=\"true\"]') && "
                                   "!Array.from(document.querySelectorAll('[data-testid=stSpinner]')).length",
                                   timeout=120_000)
            page.wait_for_timeout(800)
            top = page.evaluate("() => (document.querySelector('[data-testid=stMain]') || {}).scrollTop || 0")
            assert top < 5, "a new step opens at its top"
            assert page.locator("[data-testid='stException']").count() == 0
            page.mouse.move(640, 5)  # hovering a paragraph unfolds it: keep the pointer away
            page.wait_for_timeout(200)
            para = page.locator("[data-testid='stMain'] [data-testid='stMarkdown'] p").last
            box = para.bounding_box()
            assert box and box["height"] < 2 * size * 1.7, "presenter mode folds the paragraph to one line"
            chart = page.locator(".js-plotly-plot").first.bounding_box()
            if i in (2, 7):  # a figure and its objective space side by side: together the full width
                other = page.locator(f".st-key-lesson_obj_{keys[i - 1]} .js-plotly-plot").first.bounding_box()
                assert other["x"] + other["width"] - chart["x"] > 1000 and chart["width"] > 600, (chart, other)
            else:
                assert chart["width"] > 1000, "figures are full width on the projector"
            for nav in ("lesson_back", "lesson_next"):  # reachable without scrolling, on every step
                b = page.locator(f".st-key-{nav} button").bounding_box()
                assert b and b["y"] >= 0 and b["y"] + b["height"] <= 720, (i, nav, b)
            if i == 2:  # the animation: its controls are on screen
                ctl = page.locator(".pcd-player").first.bounding_box()
                assert ctl["y"] + ctl["height"] <= 720
                page.locator(".pcd-b[data-act=fwd]").first.click()
                page.wait_for_timeout(300)
                assert page.locator(".pcd-player").first.get_attribute("data-frame") == "1"
                # the lesson's map reveals its ending (as the toy page's): no end label or end diamond
                # before the last frame, both at the last frame, hidden again a step back
                ends = ("() => { const g = document.querySelector('.st-key-lesson_fig_saddle .js-plotly-plot'); "
                        "return [(g.layout.annotations || []).filter(a => a.name === 'end label' && a.visible !== false)"
                        ".length, (g.data || []).filter(t => t.meta === 'end' && t.visible !== false).length]; }")
                assert page.evaluate(ends) == [0, 0], "the ending shown before Play"
                page.screenshot(path=str(artifacts_dir / "teach_lesson_present_step2_frame1.png"))
                scrub = page.locator(".pcd-player .pcd-scrub").first
                scrub.fill(scrub.get_attribute("max"))
                wait_until(lambda e=ends: min(page.evaluate(e)) > 0, 30, "the end labels and diamonds at the last frame")
                page.screenshot(path=str(artifacts_dir / "teach_lesson_present_step2_last.png"))
                page.locator(".pcd-b[data-act=back]").first.click()
                wait_until(lambda e=ends: page.evaluate(e) == [0, 0], 30, "the ending hidden a step back")
            page.screenshot(path=str(artifacts_dir / f"teach_lesson_present_step{i}.png"))
            if i < n:
                assert "present=1" in page.url and f"step={i}" in page.url
                page.locator(".st-key-lesson_next button").click()
    finally:
        ctx.close()


def test_presenter_mode_on_the_studio_pages_and_across_a_page_switch(browser, streamlit_server, artifacts_dir):
    ctx = browser.new_context(viewport={"width": 1280, "height": 720})
    page = ctx.new_page()
    page.set_default_timeout(90_000)
    font = "() => parseFloat(getComputedStyle(document.documentElement).fontSize)"
    try:
        page.goto(f"{streamlit_server['url']}/Gradient_geometry?present=1")
        page.wait_for_selector(".js-plotly-plot .main-svg")
        _wait_idle(page)
        assert page.evaluate(font) >= 18
        # the figure's column takes the full width on the projector
        assert page.locator(".st-key-geo_chart").first.bounding_box()["width"] > 1000
        page.screenshot(path=str(artifacts_dir / "teach_present_geometry.png"))
        # switch page through the app's navigation: presenter mode stays on and back in the URL
        page.locator("[data-testid='stSidebarCollapsedControl'] button, [data-testid='stExpandSidebarButton']").first.click()
        page.locator(".st-key-pcd_menu a[href$='Toy_landscapes']").first.click()
        page.wait_for_selector(".st-key-toy_map .js-plotly-plot .main-svg")
        _wait_idle(page)
        page.wait_for_timeout(800)
        assert page.evaluate(font) >= 18 and "present=1" in page.url
        page.locator("[data-testid='stSidebarCollapseButton'] button").first.click()  # the projector's width back
        page.wait_for_timeout(1200)
        page.mouse.move(640, 5)
        # the map and its objective space side by side take the projector's width
        wait_until(lambda: page.locator(".st-key-toy_map").first.bounding_box()["width"] > 700
                   and page.locator(".st-key-toy_obj").first.bounding_box()["x"] > 700, 30,
                   "the map and its objective space side by side across the width")
        row = [page.locator(f".st-key-{k}").first.bounding_box() for k in ("toy_map", "toy_obj")]
        assert row[1]["x"] + row[1]["width"] - row[0]["x"] > 1000, row
        page.screenshot(path=str(artifacts_dir / "teach_present_toy.png"))
        assert page.locator("[data-testid='stException']").count() == 0
    finally:
        ctx.close()
