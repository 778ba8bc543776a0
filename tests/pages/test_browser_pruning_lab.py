"""Real browser: queue a tiny digits run from the Pruning lab form, watch it train through the
supervisor that the page starts, see it reach "done" and appear in the results plot."""
from __future__ import annotations

import os
import signal

import pytest

from pcd.jobs import RunStore, supervisor_pid
from pcd.train.queue import train_available
from tests.pages._browser import plot_data, show_parallel_coordinates, tall_screenshot, wait_until

pytestmark = [pytest.mark.slow, pytest.mark.browser, pytest.mark.timeout(1500),  # bounded waits, a busy machine
              pytest.mark.skipif(not train_available(), reason="pcd.train.run (issue 6) is not installed")]


def _metric(page, label):
    """Text value of the st.metric with this label ('' when absent)."""
    loc = page.locator('[data-testid="stMetric"]').filter(
        has=page.locator('[data-testid="stMetricLabel"]', has_text=label))
    if loc.count() == 0:
        return ""
    return loc.first.locator('[data-testid="stMetricValue"]').inner_text().strip()


def _expander(page, title):
    """The (visible) st.expander whose summary starts with ``title``."""
    return page.locator('[data-testid="stExpander"] >> visible=true').filter(
        has=page.locator("summary", has_text=title)).first


def _open(page, title):
    exp = _expander(page, title)
    exp.wait_for(timeout=120_000)
    summary = exp.locator("summary").first
    summary.scroll_into_view_if_needed()
    if exp.locator("details").first.get_attribute("open") is None:
        summary.click()
    return exp


def _inside_curve_and_parallel(page, artifacts_dir):
    """Issue 29 in the browser: a finished run's inside view (per-layer table and figures), its
    trade-off curve computed on the page, and the study's parallel coordinates; a screenshot of each."""
    # the study's parallel coordinates, behind a toggle (Plotly's full bundle): this study's one run
    dims = show_parallel_coordinates(page, artifacts_dir / "pruning_lab_parallel.png")
    assert dims["method"]["ticktext"] == ["PCD"] and len(dims["accuracy %"]["values"]) == 1, dims

    # inside the network: channels per layer before -> after, norms, latency protocol, provenance
    inside = _open(page, "Inside the network")
    table = inside.locator("table").filter(has_text="kept %").first
    table.wait_for(timeout=120_000)
    heads = [h.strip() for h in table.locator("thead th").all_inner_texts()]
    body = [[c.strip() for c in r.locator("td, th").all_inner_texts()] for r in table.locator("tbody tr").all()]
    assert len(body) >= 3, body  # digits CNN: convs and linear layers
    col = {h: i for i, h in enumerate(heads)}
    assert {"layer", "out", "params", "kept %"} <= set(col), heads
    for row in body:
        before, after = (int(v.replace(",", "")) for v in row[col["out"]].split("→"))
        assert 0 < after <= before, row
        assert 0 <= float(row[col["kept %"]]) <= 100, row
    assert inside.locator(".js-plotly-plot").count() >= 2  # channels per layer, channel norms
    assert "speed-up" in inside.inner_text() and "Ran with pcd" in inside.inner_text()
    page.wait_for_timeout(1500)  # the figures draw when they scroll into view
    inside.screenshot(path=str(artifacts_dir / "pruning_lab_inside.png"))

    # the trade-off curve, computed on the page (button + progress bar), then its figure
    curve = _open(page, "Trade-off curve from this run")
    pts = curve.get_by_role("spinbutton", name="points")
    pts.fill("5")
    pts.press("Enter")
    page.wait_for_timeout(1200)
    curve.get_by_role("button", name="Compute the curve").click()
    fig = curve.locator(".js-plotly-plot").filter(has_text="MFLOPs (batch 1)").first
    fig.wait_for(timeout=300_000)
    wait_until(lambda: plot_data(fig), 120, "the curve's traces")
    traces = plot_data(fig)
    assert len(traces) >= 4 and all(t["n"] >= 2 and t["ny"] == t["n"] == traces[0]["n"] for t in traces[:4]), traces
    assert fig.locator(".scatterlayer .point").count() >= 2 * 4  # points drawn on each panel
    page.mouse.move(0, 0)  # the button's tooltip would cover the expander's title
    page.wait_for_timeout(1000)
    curve.screenshot(path=str(artifacts_dir / "pruning_lab_curve.png"))


def test_queue_watch_and_explore_a_digits_run(streamlit_server, page, artifacts_dir):
    data_dir = streamlit_server["data_dir"]
    store = RunStore(data_dir)
    before = {r["id"] for r in store.list()}
    try:
        page.goto(streamlit_server["url"] + "/Pruning_lab?epochs=3", wait_until="domcontentloaded")
        page.get_by_role("button", name="Queue run(s)").wait_for(timeout=60_000)
        subset = page.get_by_role("spinbutton", name="training images (0 = all)")
        subset.fill("384")
        subset.press("Enter")
        page.wait_for_timeout(1500)
        page.get_by_role("button", name="Queue run(s)").click()
        page.get_by_text("Queued run(s)").wait_for(timeout=120_000)
        new = wait_until(lambda: [r for r in store.list() if r["id"] not in before], 60, "the queued run in the store")
        rid = new[0]["id"]
        cfg = new[0]["config"]
        assert cfg["dataset"] == "digits" and cfg["epochs"] == 3 and cfg["max_train_samples"] == 384

        page.get_by_role("tab", name="Queue & runs").click()
        # the page started a supervisor; the run starts and its progress advances
        assert wait_until(lambda: supervisor_pid(data_dir), 120, "the supervisor started by the page")
        seen = []

        def progressed():
            r = store.get(rid)
            seen.append(r["progress"])
            return r["status"] == "done" or (r["status"] == "running" and r["progress"] > 0)

        wait_until(progressed, 120, "progress")
        wait_until(lambda: _metric(page, "done") == "1" or store.get(rid)["status"] == "running"
              and _metric(page, "running") == "1", 60, "the page showing the run")
        wait_until(lambda: store.get(rid)["status"] in ("done", "failed"), 240, "the run to finish")
        assert store.get(rid)["status"] == "done", store.get(rid)["error"]
        progress = [p for p in seen if p is not None]
        assert progress == sorted(progress)  # never goes backwards
        # the live fragment notices and refreshes without a reload
        # (both counters in one condition: the fragment re-renders its metrics one after the other)
        wait_until(lambda: _metric(page, "done") == "1" and _metric(page, "running") == "0", 30,
                   "the page counting the run as done and nothing running")
        # nothing runs any more: the live curves go away (and the 2 s refresh with them)
        wait_until(lambda: page.get_by_text("Live curves of the running runs").count() == 0, 120, "live curves gone")
        page.screenshot(path=str(artifacts_dir / "pruning_lab_runs.png"))

        page.get_by_role("tab", name="Results explorer").click()
        page.get_by_text("Summary: mean ± std over seeds").wait_for(timeout=120_000)
        page.locator(".js-plotly-plot").filter(has_text="test accuracy").first.wait_for(timeout=120_000)
        size = tall_screenshot(page, artifacts_dir / "pruning_lab_results.png", restore=False)
        _inside_curve_and_parallel(page, artifacts_dir)  # in the tall window: the panels sit below the first screen
        page.set_viewport_size(size)
        assert page.locator('[data-testid="stException"]').count() == 0
    finally:
        pid = supervisor_pid(data_dir)
        if pid and pid > 0:
            try:
                os.kill(pid, signal.SIGTERM)  # requeues nothing here: the run is finished
            except ProcessLookupError:
                pass
