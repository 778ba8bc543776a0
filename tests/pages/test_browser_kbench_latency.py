"""Change -> figure redrawn, in Chromium (issue 28, part 4): the K-objective page at its default range
(the step budget, several times; then the optimizer, the learning rate and τ, each click to a new
view, with the server idle before each click -- the page's prefetch has finished -- and clicked at
once after the previous figure at a budget nothing was computed ahead for). The toy page has its own
test (tests/pages/test_browser_toy_latency.py).

A server with the prefetch on, shared by both latency tests (``prefetch_server``, tests/conftest.py), one headless Chromium. The
clock runs from the key press / click to the moment the chart component has finished drawing the
new figure: ``pcd/ui/static/chart.js`` sets ``data-drawn`` on the chart's box to the draw's number
once ``Plotly.react`` (or ``newPlot``) has resolved, so a new number is a figure redrawn in the page.
Every figure is printed with the 1-minute load at its click (``os.getloadavg()``) beside it and written to
``test-artifacts/kbench_latency.json``; the only timed assertion is a loose, load-tolerant ceiling
(median < 5 s for a step-budget change: the budget is 1 s, a shared 2-core machine can be slow).
"""
from __future__ import annotations

import json
import os
import statistics
import time

import pytest

from tests.pages._browser import open_page, wait_server_idle, wait_until

pytestmark = [pytest.mark.slow, pytest.mark.browser]

CEILING_S = 5.0  # load-tolerant: the goal (issue 28) is 1 s, measured and reported, not gated
DRAWN = "(sel) => { const b = document.querySelector(sel + ' .pcd-chart'); return b ? Number(b.dataset.drawn || 0) : 0; }"
# the K-objective page's default view, 800 steps, and the budgets a lecturer slides through: each
# changes the figure (PCD's residual at 200 / 300 / 500 steps is ~1e-5 … 1e-9, exactly 0 from 800 on)
KB_BUDGETS = ("ArrowLeft", "ArrowLeft", "ArrowLeft", "ArrowRight", "ArrowRight", "ArrowRight")


def _drawn(page, key: str) -> int:
    return page.evaluate(DRAWN, f".st-key-{key}")


def _timed(page, key: str, act, what: str, timeout: float = 180) -> float:
    """Seconds from ``act()`` to the chart ``key`` redrawn (its ``data-drawn`` number moved on)."""
    before = _drawn(page, key)
    t = time.perf_counter()
    act()
    wait_until(lambda: _drawn(page, key) > before, timeout, f"{what}: the chart {key} redrawn")
    dt = time.perf_counter() - t
    page.wait_for_function("() => !document.querySelector('[data-testid=\"stStatusWidget\"]')", timeout=180_000)
    page.wait_for_timeout(300)  # the rerun's tail (tables, downloads) is done before the next change
    assert page.locator('[data-testid="stException"]').count() == 0, what
    return dt


def _row(name: str, times: list[float], loads: list[float] | None = None) -> dict:
    return {"change": name, "each_s": [round(t, 3) for t in times], "median_s": round(statistics.median(times), 3),
            "load_1m_each": [round(v, 2) for v in loads or []],
            "loadavg_1_5_15": [round(v, 2) for v in os.getloadavg()], "cores": os.cpu_count()}


def _kb_settings(page, pid: int) -> list[dict]:
    """The optimizer, the learning rate and τ (issue 28: any control of the default range), each
    click to a view not shown before. The page's prefetch (pcd.studio.kbench.prefetch) computes the
    settings one click away once a view is drawn, and the warm-up asks it, at the lowest priority,
    for every learning rate with either optimizer at the default budget (kbench.grid). Measured both ways:

    * *after the prefetch*: the server idle (under 5 % of a core) before each click;
    * *at once*: at 1000 steps (no view there was computed ahead), each click ~0.3 s after the
      previous figure was drawn: the prefetch has barely started, the page computes the runs (or
      waits for the one the prefetch has under way).
    """
    lr = page.locator(".st-key-kb_lr input[type='range']").first
    tau = page.locator(".st-key-kb_tau input[type='range']").first
    steps = page.locator(".st-key-kb_steps input[type='range']").first

    def key(loc, k):
        def press():
            loc.focus()
            loc.press(k)
        return press

    def opt(label):
        return page.locator(".st-key-kb_opt label").filter(has_text=label).first.click

    def clicks(seq, idle_first):
        times, loads = [], []
        for what, act in seq:
            if idle_first:
                wait_server_idle(pid, 120, window=1.5)
            loads.append(os.getloadavg()[0])
            times.append(_timed(page, "kb_chart", act, what))
        return times, loads

    # every click changes the figure (a change that leaves every residual as it was, e.g. τ at Adam
    # 0.01, draws no new figure and is not timed here)
    # one click per kind of control (each waits for the prefetch of the view before it: ~10 s apiece on a
    # 2-core machine, the suite's time)
    t, ld = clicks([("optimizer SGD", opt("SGD")), ("lr 0.02", key(lr, "ArrowLeft")), ("τ 0.29", key(tau, "ArrowLeft"))],
                   idle_first=True)
    rows = [_row("K-objective: SGD@0.03, lr 0.02, τ 0.29 (800 steps), each new — server idle before each (prefetch "
                 "done)", t, ld)]
    t, ld = clicks([("steps 1000", key(steps, "ArrowRight")), ("lr 0.01", key(lr, "ArrowLeft"))], idle_first=False)
    rows.append(_row("K-objective: steps 1000, lr 0.01 (SGD, τ 0.29), each new, clicked at once (prefetch not done: "
                     "computed)", t, ld))
    url = page.url
    assert all(f in url for f in ("steps=1000", "lr=0.01", "tau=0.29", "opt=sgd")), url
    return rows


def test_change_to_figure_kbench(browser, prefetch_server, artifacts_dir):
    rows = []
    srv = prefetch_server  # the server is shared with the toy page's latency test: tests/conftest.py
    ctx, page, errors = open_page(browser, 1440, 900)
    try:
        page.goto(srv["url"] + "/K_objective_benchmark")  # the first visit starts the warm-up
        wait_until(lambda: _drawn(page, "kb_chart") > 0, 300, "the K-objective chart drawn")
        waited = wait_server_idle(srv["pid"], 400, window=1.5)
        print(f"\nserver warm-up done after {waited:.1f} s more")
        page.reload()
        wait_until(lambda: _drawn(page, "kb_chart") > 0, 300, "the K-objective chart drawn again")
        page.wait_for_function("() => !document.querySelector('[data-testid=\"stStatusWidget\"]')",
                               timeout=180_000)
        steps = page.locator(".st-key-kb_steps input[type='range']").first
        times, loads = [], []
        for key in KB_BUDGETS:
            def press(key=key):
                steps.focus()
                steps.press(key)
            loads.append(os.getloadavg()[0])
            times.append(_timed(page, "kb_chart", press, f"steps {key}"))
        assert "steps=800" in page.url or "steps" not in page.url, page.url  # back at the default budget
        rows.append(_row("K-objective: step budget (800→500→300→200→300→500→800)", times, loads))
        rows += _kb_settings(page, srv["pid"])
        assert not errors, errors
    finally:
        ctx.close()
    (artifacts_dir / "kbench_latency.json").write_text(json.dumps(rows, indent=2))
    lines = ["| change | each (s) | median (s) | load 1 min at each click | load avg 1/5/15 after (cores) |",
             "|---|---|---|---|---|"]
    lines += [f"| {r['change']} | {', '.join(f'{t:.2f}' for t in r['each_s'])} | {r['median_s']:.2f} | "
              f"{', '.join(f'{v:.1f}' for v in r['load_1m_each']) or '—'} | "
              f"{' / '.join(f'{v:.1f}' for v in r['loadavg_1_5_15'])} ({r['cores']}) |" for r in rows]
    print("\nchange → figure redrawn (Chromium):\n" + "\n".join(lines))
    assert rows[0]["median_s"] < CEILING_S, rows[0]
