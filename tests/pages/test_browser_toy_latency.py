"""Change -> figure on the toy page, in Chromium (issue 28, part 4: <= 0.25 s median on the toy page).

A server with the prefetch on, shared by both latency tests (``prefetch_server``, tests/conftest.py), one headless Chromium at
1440 x 900. The clock is the page's own: from the user's input event (``pointerdown`` on a radio, a
chip's remove button; ``keydown`` on a slider) to the moment the map's chart component has finished
drawing the new figure (``pcd/ui/static/chart.js`` sets ``data-drawn`` on the chart's box once
``Plotly.react`` has resolved; a MutationObserver stamps it). Playwright's own time to find and press
an element is not counted. The server runs with its idle-time prefetch on (pcd.studio.prefetch: after a
view is drawn, the other optimizer and the learning rate and steps one notch each way are computed in the
background); each click comes once the server is idle (a lecturer's pace), so a one-notch change is
served from the prefetch, and a change back from the caches ("stored"). A change of problem and a
method put back into the set are computed on the click. Every figure is printed with ``os.getloadavg()`` beside it
and written to ``test-artifacts/toy_latency.json``; the only timed assertion is a loose, load-tolerant
ceiling (CI runs on a busy 2-core machine): the goal is reported, not gated.
"""
from __future__ import annotations

import json
import os
import statistics

import pytest

from tests.pages._browser import open_page, wait_server_idle, wait_until

pytestmark = [pytest.mark.slow, pytest.mark.browser]

CEILING_S = 5.0
STAMPS = r"""
window.__pcdInput = [];
window.__pcdDrawn = [];
for (const ev of ['pointerdown', 'keydown']) document.addEventListener(ev, () => window.__pcdInput.push(Date.now()), true);
new MutationObserver(ms => { for (const m of ms) if (m.target.closest && m.target.closest('.st-key-toy_map'))
  window.__pcdDrawn.push(Date.now()); }).observe(document, {subtree: true, attributes: true, attributeFilter: ['data-drawn']});
"""
IDLE = "() => !document.querySelector('[data-testid=\"stStatusWidget\"]')"


def _timed(page, act, what: str) -> float:
    """Seconds from the input event ``act()`` makes to the map redrawn (browser clock)."""
    page.evaluate("window.__pcdInput = []; window.__pcdDrawn = []")
    act()
    wait_until(lambda: page.evaluate("window.__pcdDrawn.length") > 0, 180, f"{what}: the map redrawn")
    page.wait_for_function(IDLE, timeout=180_000)
    page.wait_for_timeout(600)  # the rerun's tail (tables, downloads) is done before the next change
    assert page.locator('[data-testid="stException"]').count() == 0, what
    t_drawn = page.evaluate("window.__pcdDrawn[0]")
    t_in = page.evaluate("(t) => Math.max(...window.__pcdInput.filter(x => x <= t))", t_drawn)  # the last input before it
    assert t_in is not None and t_drawn >= t_in, (what, t_in, t_drawn)
    return (t_drawn - t_in) / 1000.0


def _row(name: str, times: list[float]) -> dict:
    return {"change": name, "each_s": [round(t, 3) for t in times], "median_s": round(statistics.median(times), 3),
            "loadavg_1_5_15": [round(v, 2) for v in os.getloadavg()], "cores": os.cpu_count()}


def test_change_to_figure_on_the_toy_page(browser, prefetch_server, artifacts_dir):
    rows = []
    srv = prefetch_server  # the server is shared with the K-objective page's latency test: tests/conftest.py
    ctx, page, errors = open_page(browser, 1440, 900)
    page.add_init_script(STAMPS)
    try:
        page.goto(srv["url"] + "/Toy_landscapes")
        wait_until(lambda: page.evaluate("window.__pcdDrawn.length") > 0, 300, "the toy map drawn")
        waited = wait_server_idle(srv["pid"], 400, window=1.5)
        print(f"\nserver warm-up done after {waited:.1f} s more")
        page.wait_for_function(IDLE, timeout=180_000)
        page.wait_for_timeout(1500)

        def idle():  # the server idle again (the prefetch done) before the next click
            wait_server_idle(srv["pid"], 60, window=1.0)

        def radio(label):
            return lambda: page.locator(".st-key-toy_opt label").filter(has_text=label).first.click()

        new, stored = [], []
        for label, into in (("SGD", new), ("Adam", stored), ("SGD", stored), ("Adam", stored)):
            idle()
            into.append(_timed(page, radio(label), f"optimizer {label}"))
        rows.append(_row("optimizer Adam→SGD (prefetched)", new))
        rows.append(_row("optimizer SGD↔Adam (stored)", stored))

        def key(sel, k):
            def act():
                el = page.locator(f"{sel} input[type='range']").first
                el.focus()
                el.press(k)
            return act

        for name, sel in (("learning rate", ".st-key-toy_lr"), ("steps", ".st-key-toy_steps")):
            new, stored = [], []
            for k, into in (("ArrowLeft", new), ("ArrowRight", stored), ("ArrowRight", new),
                            ("ArrowLeft", stored)):
                idle()
                into.append(_timed(page, key(sel, k), f"{name} {k}"))
            rows.append(_row(f"{name} one notch (prefetched)", new))
            rows.append(_row(f"{name} one notch back (stored)", stored))

        # the last methods taken out of the set (Backspace in the picker removes its last chip): their
        # runs are kept per method, nothing runs
        def backspace():
            box = page.locator(".st-key-toy_methods input").first
            box.focus()
            box.press("Backspace")
        out = []
        for _ in range(2):
            idle()
            out.append(_timed(page, backspace, "a method taken out"))
            page.keyboard.press("Escape")
        rows.append(_row("the last method taken out of the set", out))

        # computed on the click: a method put back (it alone runs) and another problem (every method)
        def choose(key, label):
            def act():  # typed into the widget, Enter picks it (the last input event before the redraw)
                box = page.locator(f".st-key-{key} input").first
                box.focus()
                box.press_sequentially(label)
                box.press("Enter")
            return act
        idle()
        back = [_timed(page, choose("toy_methods", "FAMO"), "FAMO put back")]
        page.keyboard.press("Escape")
        idle()
        back.append(_timed(page, choose("toy_problem", "Double well"), "problem → double well"))
        rows.append(_row("computed on the click: a method put back, another problem", back))
        assert not errors, errors
    finally:
        ctx.close()
    (artifacts_dir / "toy_latency.json").write_text(json.dumps(rows, indent=2))
    lines = ["| change | each (s) | median (s) | load avg 1/5/15 (cores) |", "|---|---|---|---|"]
    lines += [f"| {r['change']} | {', '.join(f'{t:.2f}' for t in r['each_s'])} | {r['median_s']:.2f} | "
              f"{' / '.join(f'{v:.1f}' for v in r['loadavg_1_5_15'])} ({r['cores']}) |" for r in rows]
    print("\nchange → map redrawn (Chromium, input event → data-drawn):\n" + "\n".join(lines))
    for r in rows:
        assert r["median_s"] < CEILING_S, r
