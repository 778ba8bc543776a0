"""Shared fixtures: a real `streamlit run app.py` server on a free loopback port and a headless
Debian Chromium driven by Playwright (never `playwright install`: we use /usr/bin/chromium).

Browser tests are marked ``slow`` and ``browser``; they skip cleanly when Chromium or Playwright is
missing. Everything started here is stopped at the end of the session (the server runs in its own
process group, so the queue supervisor it may start is killed with it).
"""
from __future__ import annotations

import contextlib
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
ARTIFACTS = ROOT / "test-artifacts"
CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync", "--no-first-run", "--disable-quic"]


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.hookimpl(tryfirst=True)  # before xdist's own hook, which reads the groups into the test ids
def pytest_collection_modifyitems(config, items):
    """The README's test command runs the suite on two processes (pytest-xdist, ``-n 2 --dist loadgroup``).
    The browser tests share one server and one Chromium and measure latencies: they stay together on one
    process (group ``browser``), first, so the other process runs every other test beside them; the Ray
    tests share one $HOME and their clusters (group ``ray``). Serial runs see the same order."""
    for item in items:
        if item.get_closest_marker("browser"):
            item.add_marker(pytest.mark.xdist_group("browser"))
        elif item.nodeid.startswith("tests/jobs/test_ray_"):
            item.add_marker(pytest.mark.xdist_group("ray"))
    items.sort(key=lambda item: item.get_closest_marker("browser") is None)  # stable: files keep their order


@pytest.fixture(scope="session")
def artifacts_dir() -> Path:
    ARTIFACTS.mkdir(exist_ok=True)
    return ARTIFACTS


@pytest.fixture(autouse=True)
def _no_warmup_thread(monkeypatch):
    """In-process AppTests of app.py would start the server warm-up (pcd.studio.warmup) as a background
    thread competing with the tests: off here; the browser tests' real server keeps it."""
    monkeypatch.setenv("PCD_NO_WARMUP", "1")
    # nor the K-objective page's worker processes (pcd.studio.kbench.workers): tests/studio/test_kbench.py
    # turns them on where it checks them, and the prefetch server below runs them as deployed
    monkeypatch.setenv("PCD_KBENCH_WORKERS", "0")


@contextlib.contextmanager
def serve_studio(data_dir: Path, log_path: Path, prefetch: bool = False):
    """`streamlit run app.py` on a free 127.0.0.1 port until the block ends (stopped by process
    group: the queue supervisor it may start goes with it); yields ``{"url", "data_dir", "pid"}``.
    ``prefetch``: the K-objective page's background prefetch on (tens of seconds of CPU per server:
    off, ``PCD_NO_PREFETCH=1``, unless a test measures what it buys)."""
    port = _free_port()
    env = dict(os.environ, PCD_DATA_DIR=str(data_dir), PYTHONUNBUFFERED="1")
    env.pop("PCD_NO_WARMUP", None)  # a real server warms its caches up, as deployed (pcd.studio.warmup)
    if prefetch:  # as deployed: the prefetch on, and the K-objective page's worker processes
        env.pop("PCD_NO_PREFETCH", None)
        env.pop("PCD_KBENCH_WORKERS", None)
    else:
        env["PCD_NO_PREFETCH"] = "1"
        env["PCD_KBENCH_WORKERS"] = "0"
    log = open(log_path, "w")
    proc = subprocess.Popen(
        [sys.executable, "-m", "streamlit", "run", str(ROOT / "app.py"), "--server.port", str(port),
         "--server.address", "127.0.0.1", "--server.headless", "true",
         "--browser.gatherUsageStats", "false", "--server.fileWatcherType", "none"],
        cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    url = f"http://127.0.0.1:{port}"
    deadline = time.time() + 60
    try:
        while time.time() < deadline:
            if proc.poll() is not None:
                raise RuntimeError(f"streamlit exited with code {proc.returncode}")
            try:
                with urllib.request.urlopen(url + "/_stcore/health", timeout=2) as r:
                    if r.status == 200:
                        break
            except OSError:
                time.sleep(0.3)
        else:
            raise RuntimeError("streamlit did not become healthy within 60 s")
        yield {"url": url, "data_dir": data_dir, "pid": proc.pid}
    finally:
        try:
            os.killpg(proc.pid, signal.SIGTERM)
            proc.wait(timeout=10)
        except (ProcessLookupError, subprocess.TimeoutExpired):
            try:
                os.killpg(proc.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        log.close()


@pytest.fixture(scope="session")
def streamlit_server(tmp_path_factory):
    """Base URL of `streamlit run app.py` on 127.0.0.1; ``PCD_DATA_DIR`` is a fresh temp folder."""
    with serve_studio(tmp_path_factory.mktemp("pcd-data"),
                      tmp_path_factory.mktemp("streamlit-log") / "server.log") as server:
        yield server


@pytest.fixture(scope="session")
def prefetch_server(tmp_path_factory):
    """One server with the prefetch on (``serve_studio(prefetch=True)``), shared by the latency tests of
    the toy and K-objective pages: its warm-up and the warm-up's background prefetch (~40-70 s of a
    2-core machine's time) are paid once. Each test waits for the server to be idle before it clicks."""
    with serve_studio(tmp_path_factory.mktemp("pcd-data"), tmp_path_factory.mktemp("prefetch-log") / "server.log",
                      prefetch=True) as server:
        yield server


@pytest.fixture(scope="session")
def browser():
    """A headless Chromium (Playwright); skips when Playwright or Chromium is not installed."""
    sync_api = pytest.importorskip("playwright.sync_api")
    if not os.path.exists(CHROMIUM):
        pytest.skip("Debian chromium is not installed (apt-get install chromium)")
    with sync_api.sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, headless=True, args=CHROMIUM_ARGS)
        try:
            yield b
        finally:
            b.close()


@pytest.fixture
def page(browser):
    ctx = browser.new_context(viewport={"width": 1400, "height": 1000})
    pg = ctx.new_page()
    pg.set_default_timeout(120_000)
    try:
        yield pg
    finally:
        ctx.close()
