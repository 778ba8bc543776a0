"""Where the time of a settings change on the toy page goes, in Chromium (issue 28, part 4: <= 0.25 s).

    python benchmarks/trace_toy_change.py [--changes 8] [--width 1440]

A server as deployed (warm-up and prefetch on; ``tests/conftest.py``'s ``serve_studio``), the toy page in
headless Debian Chromium, the warm-up awaited; then the optimizer is switched Adam <-> SGD ``--changes``
times (the first SGD comes from the prefetch, the rest from the caches: no engine run), the server idle
before each. Per change, in ms from the user's ``pointerdown`` (the page's clock, as
``tests/pages/test_browser_toy_latency.py``; nothing here changes what the page does):

* ``first_msg`` / ``last_msg``: the first and the last websocket message from the server that the page's
  main thread handled before the map was drawn (``messages``: how many); a message waits there while the
  thread is busy, so ``first_msg`` is the server's answer plus any wait, and ``last_msg`` includes the
  browser's work on the messages before it;
* ``spec``: the map's chart component handed its new figure (``pcd/ui/static/chart.js`` asks the Plotly
  loader for each new spec; Streamlit's React tree has applied the run's elements before it);
* ``drawn``: the map's ``Plotly.react`` resolved (chart.js sets ``data-drawn``).

So ``spec - first_msg`` is the browser applying the run's elements and ``drawn - spec`` is Plotly drawing
the map. Medians over the changes, with ``os.getloadavg()`` beside (the machine is shared).
``python benchmarks/bench_pages.py`` splits the server's share.
"""
from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

WS_LOG = """
window.__pcdWS = [];
(() => {
  const Native = window.WebSocket;
  function Logged(...args) {
    const ws = new Native(...args);
    ws.addEventListener('message', () => window.__pcdWS.push(Date.now()));
    return ws;
  }
  Logged.prototype = Native.prototype;
  Object.assign(Logged, Native);
  window.WebSocket = Logged;
  // pcd/ui/static/chart.js asks the Plotly loader for every new spec it is handed: log when (the map's first)
  window.__pcdSpecs = [];
  let loader;
  const logged = (...a) => { window.__pcdSpecs.push(Date.now()); return loader(...a); };
  Object.defineProperty(window, '__pcdLoadPlotly', {configurable: true,
    get: () => loader && logged,
    set: f => { if (f !== logged) loader = f; }});
})();
"""


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--changes", type=int, default=8, help="optimizer changes to trace (default 8)")
    ap.add_argument("--width", type=int, default=1440, help="window width in px (default 1440; height 900)")
    args = ap.parse_args(argv)
    if not 1 <= args.changes <= 40 or not 640 <= args.width <= 2560:
        ap.error("--changes must be 1..40 and --width 640..2560")
    from playwright.sync_api import sync_playwright

    from tests.conftest import CHROMIUM, CHROMIUM_ARGS, serve_studio
    from tests.pages._browser import open_page, wait_server_idle, wait_until
    from tests.pages.test_browser_toy_latency import IDLE, STAMPS

    tmp = Path(tempfile.mkdtemp(prefix="pcd-trace-"))
    rows = []
    with serve_studio(tmp / "data", tmp / "server.log", prefetch=True) as srv, sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, headless=True, args=CHROMIUM_ARGS)
        try:
            ctx, page, errors = open_page(browser, args.width, 900)
            page.add_init_script(STAMPS)
            page.add_init_script(WS_LOG)
            page.goto(srv["url"] + "/Toy_landscapes")
            wait_until(lambda: page.evaluate("window.__pcdDrawn.length") > 0, 300, "the toy map drawn")
            wait_server_idle(srv["pid"], 400, window=1.5)
            page.wait_for_function(IDLE, timeout=180_000)
            for i in range(args.changes):
                label = "SGD" if i % 2 == 0 else "Adam"
                wait_server_idle(srv["pid"], 60, window=1.0)
                page.evaluate("window.__pcdInput = []; window.__pcdDrawn = []; window.__pcdWS = []; window.__pcdSpecs = []")
                page.locator(".st-key-toy_opt label").filter(has_text=label).first.click()
                wait_until(lambda: page.evaluate("window.__pcdDrawn.length") > 0, 180, "the map redrawn")
                t_in = min(page.evaluate("window.__pcdInput"))
                drawn = page.evaluate("window.__pcdDrawn[0]") - t_in
                specs = [t - t_in for t in page.evaluate("window.__pcdSpecs") if t >= t_in]
                msgs = [t - t_in for t in page.evaluate("window.__pcdWS") if t - t_in <= drawn]
                rows.append({"change": f"optimizer → {label}", "first_msg_ms": msgs[0] if msgs else None,
                             "last_msg_ms": msgs[-1] if msgs else None, "spec_ms": specs[0] if specs else None, "drawn_ms": drawn,
                             "messages": len(msgs), "load1": round(os.getloadavg()[0], 2)})
                page.wait_for_function(IDLE, timeout=180_000)
                page.wait_for_timeout(800)
            assert not errors, errors
            ctx.close()
        finally:
            browser.close()
    cols = ["first_msg_ms", "last_msg_ms", "spec_ms", "drawn_ms", "messages"]
    print("| change | " + " | ".join(cols) + " | load (1 min) |")
    print("|---|" + "---|" * (len(cols) + 1))
    for r in rows:
        print(f"| {r['change']} | " + " | ".join(f"{r.get(c, 0) or 0:.0f}" for c in cols) + f" | {r['load1']} |")
    print("| **median** | " + " | ".join(f"{statistics.median(r.get(c, 0) or 0 for r in rows):.0f}" for c in cols)
          + f" | cores {os.cpu_count()} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
