"""Real browser, the queue tab's refresh / selection race of issue 29, made deterministic.

The race needed a click to land while a refresh of the runs table was on its way to the browser.
Here the test holds every server -> browser message of the app's websocket (Playwright's
``route_web_socket``), changes the queue so the next 2-second refresh sees a new run on top, clicks
select-all while that refresh is held, then lets the messages through. Before the fix the refresh
re-positioned the previous selection in the browser (a programmatic selection) and the select-all
collapsed back to the one run selected before; the server had also read the select-all's row
positions against a row order the browser had never shown. Now the rows hold still under a
selection (``pcd.ui.queue_tab``) and the select-all names exactly the runs that were shown.
"""
from __future__ import annotations

import re

import pytest

from pcd.jobs import RunStore
from tests.conftest import serve_studio
from tests.pages._browser import wait_until

pytestmark = [pytest.mark.slow, pytest.mark.browser]

ROW_H = 35  # st.dataframe's row height in px (header row included)
CFG = {"dataset": "digits", "arch": "smallcnn", "method": "pcd", "tau": 0.2, "epochs": 2, "secondary": "group_lasso",
       "grouping": "filter+bn", "optimizer": "adam", "lr": 0.01, "batch_size": 128}


def test_select_all_survives_a_refresh_in_flight(tmp_path, monkeypatch, page, artifacts_dir):
    monkeypatch.setenv("PCD_NO_AUTOSTART", "1")  # no supervisor: the queued runs stay queued, the tab refreshes
    data_dir = tmp_path / "data"
    with RunStore(data_dir) as store:
        ids = [store.submit({**CFG, "seed": s}) for s in range(6)]
        run = store.claim("test", "cpu:0")  # one running run, pinned on top of the table
        store.report_progress(run["id"], run["token"], {"epoch": 0, "epochs": 2, "progress": 0.1})
    store = RunStore(data_dir)
    held: list = []
    hold = {"on": False}

    def route(ws):
        server = ws.connect_to_server()
        ws.on_message(lambda m: server.send(m))
        server.on_message(lambda m: held.append((ws, m)) if hold["on"] else ws.send(m))

    with serve_studio(data_dir, tmp_path / "server.log") as srv:
        page.route_web_socket(re.compile(r".*/_stcore/stream.*"), route)
        page.goto(srv["url"] + "/Pruning_lab", wait_until="domcontentloaded")
        page.get_by_role("tab", name="Queue & runs").click(timeout=60_000)
        table = page.locator('[data-testid="stDataFrame"] >> visible=true').first
        table.wait_for(timeout=60_000)
        page.wait_for_timeout(2500)
        box = table.bounding_box()
        page.mouse.click(box["x"] + 18, box["y"] + ROW_H * 3 + ROW_H / 2)  # data row 2: a queued run
        sel = page.get_by_text("Selected: run ")
        sel.first.wait_for(timeout=90_000)
        first = int(re.search(r"Selected: run (\d+) \(", sel.first.inner_text()).group(1))
        shown = [r["id"] for r in store.list() if r["status"] in ("queued", "running")]
        assert first in ids

        hold["on"] = True  # the server's answers wait from here
        intruder = store.submit({**CFG, "seed": 99})  # the next refresh sees a new run on top
        page.wait_for_timeout(3000)  # a 2-second refresh is requested; its answer is held
        page.mouse.click(box["x"] + 18, box["y"] + ROW_H / 2)  # select-all, while that refresh is in flight
        page.wait_for_timeout(1500)
        while held:  # in order: what arrives meanwhile (callbacks run inside these calls) queues behind
            ws, m = held.pop(0)
            ws.send(m)
        hold["on"] = False  # no Playwright call between the last send and this line: nothing overtakes
        cancel = page.get_by_role("button", name="Cancel (")
        page.wait_for_timeout(5000)  # two more refreshes after the held ones arrived
        page.screenshot(path=str(artifacts_dir / "queue_race_select_all.png"), full_page=True)
        label = cancel.first.inner_text()
        assert label == f"Cancel ({len(shown)})", (label, shown)
        def cancelled():
            return all(store.get(i)["status"] == "cancelled" or store.get(i)["cancel_requested"] for i in shown)

        cancel.first.click()
        try:
            wait_until(cancelled, 30, "the selected runs cancelled")
        except AssertionError:  # seen once in a full run on an idle machine: the click changed nothing
            # (it landed while a refresh redrew the button); a person clicks again, so does the test
            assert not any(store.get(i)["cancel_requested"] for i in shown), "a partial cancel"
            cancel.first.click()
            wait_until(cancelled, 60, "the selected runs cancelled (second click)")
        assert store.get(intruder)["status"] == "queued" and not store.get(intruder)["cancel_requested"]
