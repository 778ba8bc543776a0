"""pcd.ui.throttled_progress: the bar in its slot, clipped to [0, 1], at most one update per interval; and on
the K-objective page a computed setting shows it while a lookup shows none."""
from __future__ import annotations

from pathlib import Path

import streamlit as st
from streamlit.testing.v1 import AppTest

from pcd.ui import widgets

ROOT = Path(__file__).resolve().parents[2]


class Slot:
    def __init__(self):
        self.calls = []

    def progress(self, value, text=None):
        self.calls.append((value, text))


def test_updates_are_clipped_and_throttled(monkeypatch):
    clock = [100.0]
    monkeypatch.setattr(widgets.time, "monotonic", lambda: clock[0])
    slot = Slot()
    cb = widgets.throttled_progress(slot, "running", every_s=0.2)
    cb(-0.5, "K = 65: step 10")
    cb(0.3, "K = 65: step 20")  # within 0.2 s: not drawn
    clock[0] += 0.25
    cb(1.7, "K = 33: step 5")
    assert slot.calls == [(0.0, "running… K = 65: step 10"), (1.0, "running… K = 33: step 5")]


def test_a_share_of_a_longer_computation_and_the_message_alone(monkeypatch):
    clock = [100.0]
    monkeypatch.setattr(widgets.time, "monotonic", lambda: clock[0])
    slot = Slot()
    cb = widgets.throttled_progress(slot, "running", every_s=0.0, share=(0.5, 0.25))  # the 3rd of 4 equal parts
    cb(0.0, "pcd")
    cb(1.0, "ws")
    plain = widgets.throttled_progress(slot, None, every_s=0.0)
    plain(0.4, "batch size 64")
    assert slot.calls == [(0.5, "running… pcd"), (0.75, "running… ws"), (0.4, "batch size 64")]


def _page(qp):
    at = AppTest.from_file(str(ROOT / "pages" / "03_K_objective_benchmark.py"), default_timeout=240)
    for k, v in qp.items():
        at.query_params[k] = v
    return at


def test_the_k_page_shows_progress_only_while_it_computes(monkeypatch, tmp_path):
    monkeypatch.setenv("PCD_DATA_DIR", str(tmp_path))
    st.cache_resource.clear()  # the page's store (pcd.studio.kbench): nothing another test computed
    seen = []
    real = widgets.throttled_progress

    def spy(slot, text, every_s=0.4):
        cb = real(slot, text, every_s=0.0)  # every update drawn here

        def report(f, m):
            seen.append(f)
            cb(f, m)
        return report
    monkeypatch.setattr("pcd.ui.throttled_progress", spy)
    at = _page({"kmin": "2", "kmax": "5", "steps": "200", "lr": "0.05", "methods": "pcd,ws"}).run()
    assert not at.exception, at.exception
    assert seen and max(seen) <= 1.0
    assert len(at.main.get("progress")) == 0  # emptied once the figure is there
    n = len(seen)
    at.run()  # the same view: a lookup
    assert not at.exception and len(seen) == n
