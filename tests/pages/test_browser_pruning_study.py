"""Real browser: queue the digits-demo study from its preset, select rows in the run table itself,
cancel exactly the selected run, watch a finished run appear in the results explorer without a
reload, then select every row and cancel the rest."""
from __future__ import annotations

import os
import re
import signal

import pytest

from pcd.jobs import RunStore, supervisor_pid
from pcd.train import presets
from pcd.train.queue import train_available
from pcd.viz.theme import method_label
from tests.conftest import serve_studio
from tests.pages._browser import show_parallel_coordinates, tall_screenshot, wait_until

pytestmark = [pytest.mark.slow, pytest.mark.browser, pytest.mark.timeout(1500),  # bounded waits, a busy machine
              pytest.mark.skipif(not train_available(), reason="pcd.train.run is not installed")]

ROW_H = 35  # st.dataframe's row height in px (header row included)


def _click_row(page, table, row):
    """Toggle the selection box of data row ``row`` (0 = first under the header)."""
    box = table.bounding_box()
    page.mouse.click(box["x"] + 18, box["y"] + ROW_H * (row + 1) + ROW_H / 2)


@pytest.fixture
def own_server(tmp_path):
    """A server and data folder of this test's own: with the session's shared server, the explorer's
    first study could be another test's run (issue 29: 1 line drawn for a 2-run study)."""
    data_dir = tmp_path / "data"
    data_dir.mkdir()
    with serve_studio(data_dir, tmp_path / "server.log") as server:
        yield server


def test_queue_study_select_rows_cancel_the_right_one(own_server, page, artifacts_dir):
    data_dir = own_server["data_dir"]
    store = RunStore(data_dir)
    before = {r["id"] for r in store.list()}
    n = len(presets.get("digits-demo").configs([0]))
    try:
        page.goto(own_server["url"] + "/Pruning_lab?preset=digits-demo", wait_until="domcontentloaded")
        seeds = page.get_by_role("textbox", name="study seeds")
        seeds.wait_for(timeout=60_000)
        seeds.fill("0")
        seeds.press("Enter")
        epochs = page.get_by_role("spinbutton", name="epochs per run")
        epochs.fill("2")  # a reduced study for CI time: every run of the grid, one seed, 2 epochs
        epochs.press("Enter")
        button = page.get_by_role("button", name=f"Queue the digits-demo study ({n} runs)")
        button.wait_for(timeout=120_000)
        page.screenshot(path=str(artifacts_dir / "pruning_study_form.png"), full_page=True)
        button.click()
        page.get_by_text(f"Queued {n} runs").wait_for(timeout=120_000)
        new = sorted(r["id"] for r in store.list() if r["id"] not in before)
        assert len(new) == n and all(store.get(i)["config"]["epochs"] == 2 for i in new)
        assert wait_until(lambda: supervisor_pid(data_dir), 120, "the supervisor started by the page")

        page.get_by_role("tab", name="Queue & runs").click()
        table = page.locator('[data-testid="stDataFrame"] >> visible=true').first
        table.wait_for(timeout=120_000)
        page.wait_for_timeout(1500)
        # the running run pinned on top, then newest first: row 2 is a queued run; the page names it
        _click_row(page, table, 2)
        sel = page.get_by_text("Selected: run ")
        sel.first.wait_for(timeout=90_000)
        target = int(re.search(r"Selected: run (\d+) \(", sel.first.inner_text()).group(1))
        assert target in new and target in (new[-3], new[-2]) and store.get(target)["status"] == "queued"
        page.get_by_role("button", name="Cancel (1)").click()
        wait_until(lambda: store.get(target)["status"] == "cancelled", 90, f"run {target} cancelled")
        others = {r["id"]: r["status"] for r in store.list() if r["id"] in new and r["id"] != target}
        assert "cancelled" not in others.values(), others  # only the selected run was cancelled
        page.wait_for_timeout(2500)  # a live refresh: the selection stays on the same run
        assert page.get_by_text(f"run {target} (").count() >= 1
        page.screenshot(path=str(artifacts_dir / "pruning_study_runs.png"), full_page=True)

        # the first run finishes and appears in the explorer without a reload
        wait_until(lambda: any(store.get(i)["status"] == "done" for i in new), 240, "a finished run")
        page.get_by_role("tab", name="Results explorer").click()
        page.get_by_text("Summary: mean ± std over seeds").wait_for(timeout=120_000)
        # the visible plot: the first one in the page may be the live curves on the (hidden) queue tab
        page.locator(".js-plotly-plot >> visible=true").first.wait_for(timeout=60_000)
        tall_screenshot(page, artifacts_dir / "pruning_study_results.png")

        # select every row with the header box and cancel what is still queued or running
        page.get_by_role("tab", name="Queue & runs").click()
        box = table.bounding_box()
        page.mouse.click(box["x"] + 18, box["y"] + ROW_H / 2)
        cancel = page.get_by_role("button", name="Cancel (")
        wait_until(lambda: cancel.count() and cancel.first.is_enabled() and cancel.first.inner_text() != "Cancel (0)",
                   90, "the multi-selection")
        label = cancel.first.inner_text()
        # issue 29: force what raced the click -- the queue changes (a run queued elsewhere lands on top
        # of the natural order) and the table refreshes between the selection and the click. The rows
        # hold still under the selection, the new run comes below, unselected, and the count stays.
        intruder = store.submit({**store.get(new[0])["config"], "seed": 99})
        page.wait_for_timeout(4500)  # at least two 2-second refreshes with the changed queue

        def cancellable_selected():  # the button counts the selected runs still queued or running; a
            # run may finish meanwhile (a fast machine), the intruder must not be counted
            return sum(store.get(i)["status"] in ("queued", "running") for i in new)

        wait_until(lambda: cancel.first.inner_text() == f"Cancel ({cancellable_selected()})", 30,
                   f"the count of the selected runs, without the intruder (was {label!r})")
        cancel.first.click()
        # a cancelled running run stops at its next check (a child still importing torch on a busy
        # machine takes a while): a generous bound, and the statuses in the message if it is not met
        try:
            wait_until(lambda: all(store.get(i)["status"] in ("done", "cancelled") for i in new), 240,
                       "every run of the study finished or cancelled")
        except AssertionError as exc:
            raise AssertionError(f"{exc}; after clicking {label!r}: "
                                 f"{ {i: store.get(i)['status'] for i in new} }") from None
        assert not store.get(intruder)["cancel_requested"]  # not selected, not cancelled
        store.cancel(intruder)

        # issue 29: the finished study at a glance -- parallel coordinates, one line per finished run
        # (the intruder is of the same study: a supervisor that reached it before its cancel finishes it)
        done = [store.get(i) for i in [*new, intruder] if store.get(i)["status"] == "done"]
        page.get_by_role("tab", name="Results explorer").click()
        page.get_by_text("Summary: mean ± std over seeds").wait_for(timeout=120_000)
        dims = show_parallel_coordinates(page, artifacts_dir / "pruning_study_parallel.png")
        assert len(dims["method"]["values"]) == len(done), (dims, [r["id"] for r in done])
        assert set(dims["method"]["ticktext"]) == {method_label(r["config"]["method"]) for r in done}, dims
        accs = sorted(round(v, 6) for v in dims["accuracy %"]["values"])
        assert accs == sorted(round(r["result"]["test_acc"], 6) for r in done), (accs, done)
        assert page.locator('[data-testid="stException"]').count() == 0
    finally:
        pid = supervisor_pid(data_dir)
        if pid and pid > 0:
            try:
                os.kill(pid, signal.SIGTERM)
            except ProcessLookupError:
                pass
