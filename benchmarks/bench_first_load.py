"""Cold first load of the Studio pages in a real browser, before vs after, in ONE run.

    python benchmarks/bench_first_load.py [--before REV] [--rounds 3] [--pages Toy_landscapes,...]

Serves this tree (and, with ``--before``, REV checked out into a temporary git worktree) with
``streamlit run app.py`` on 127.0.0.1, lets each server finish its start-up warm-up, then loads
every page ``--rounds`` times in a fresh browser context (cold cache, as a first visitor), alternating
the two servers so both see the same machine load. A load ends when the page's first figure has
data (or, on a page without one, its metrics show): the measure the browser test
(``tests/pages/test_browser_studio.py``) reports. Prints the median and minimum per page and side.

Debian Chromium at /usr/bin/chromium and Python Playwright are needed (as for the browser tests).
"""
from __future__ import annotations

import argparse
import os
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from contextlib import ExitStack, contextmanager
from pathlib import Path

HERE = Path(__file__).resolve().parents[1]
PAGES = ["Gradient_geometry", "Toy_landscapes", "K_objective_benchmark", "Scale_invariance", "Tau_dial", ""]
FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
         "--disable-component-update", "--disable-sync", "--no-first-run"]
# the page's first figure has data, or its metrics show (home)
READY = """() => { const g = document.querySelector('.js-plotly-plot'); if (g && g.data) return true;
  return document.querySelectorAll('[data-testid="stMetricValue"]').length > 0; }"""


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextmanager
def serve(tree: Path):
    port = _free_port()
    env = dict(os.environ, PCD_DATA_DIR=tempfile.mkdtemp(), PCD_NO_AUTOSTART="1", PYTHONPATH=str(tree))
    proc = subprocess.Popen([sys.executable, "-m", "streamlit", "run", str(tree / "app.py"), "--server.port", str(port),
                             "--server.address", "127.0.0.1", "--server.headless", "true",
                             "--browser.gatherUsageStats", "false", "--server.fileWatcherType", "none"],
                            cwd=tree, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            start_new_session=True)
    url = f"http://127.0.0.1:{port}"
    try:
        for _ in range(200):
            try:
                with urllib.request.urlopen(url + "/_stcore/health", timeout=2):
                    break
            except OSError:
                time.sleep(0.3)
        yield url, proc.pid
    finally:
        os.killpg(proc.pid, signal.SIGTERM)
        proc.wait(timeout=20)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--before", default=None, help="a git revision to compare with")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--pages", default=",".join(PAGES), help="url paths, comma separated ('' = home)")
    a = ap.parse_args(argv)
    from playwright.sync_api import sync_playwright

    sys.path.insert(0, str(HERE))
    from tests.pages.test_browser_studio import _wait_server_idle  # the browser test's own wait

    pages = a.pages.split(",")
    with ExitStack() as stack:
        trees = {"after": HERE}
        if a.before:
            wt = Path(tempfile.mkdtemp(prefix="pcd-first-load-"))
            subprocess.run(["git", "-C", str(HERE), "worktree", "add", "--detach", str(wt), a.before],
                           check=True, capture_output=True)
            stack.callback(lambda: subprocess.run(["git", "-C", str(HERE), "worktree", "remove", "--force", str(wt)],
                                                  capture_output=True))
            trees = {"before": wt, "after": HERE}
        servers = {side: stack.enter_context(serve(tree)) for side, tree in trees.items()}
        pw = stack.enter_context(sync_playwright())
        browser = pw.chromium.launch(executable_path="/usr/bin/chromium", args=FLAGS)
        for url, _pid in servers.values():  # one visit (the server imports the library), then its warm-up
            ctx = browser.new_context()
            ctx.new_page().goto(url + "/", wait_until="load")
            time.sleep(3)
            ctx.close()
        for _, pid in servers.values():
            _wait_server_idle(pid, timeout=120.0)
        times: dict[tuple[str, str], list[float]] = {}
        for r in range(a.rounds):
            for page in pages:
                for side in (list(servers) if r % 2 == 0 else list(servers)[::-1]):
                    url, _ = servers[side]
                    ctx = browser.new_context(viewport={"width": 1440, "height": 900})
                    pg = ctx.new_page()
                    t0 = time.perf_counter()
                    pg.goto(f"{url}/{page}")
                    pg.wait_for_function(READY, timeout=120_000)
                    times.setdefault((page, side), []).append(time.perf_counter() - t0)
                    pg.wait_for_timeout(1500)  # let the page finish before the next load
                    ctx.close()
        browser.close()
    sides = list(trees)
    print(f"cold first load (s), 1440x900, {a.rounds} rounds, alternating; load/core now "
          f"{os.getloadavg()[0] / (os.cpu_count() or 1):.2f}")
    print("| page | " + " | ".join(f"{s} median (min)" for s in sides) + (" | after / before |" if a.before else " |"))
    print("|---" * (len(sides) + 1 + bool(a.before)) + "|")
    for page in pages:
        med = {s: statistics.median(times[(page, s)]) for s in sides}
        row = " | ".join(f"{med[s]:.2f} ({min(times[(page, s)]):.2f})" for s in sides)
        ratio = f" | {med['after'] / med['before']:.2f} |" if a.before else " |"
        print(f"| {page or 'Home'} | {row}{ratio}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
