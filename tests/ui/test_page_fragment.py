"""pcd.ui.page's fragment helpers: a fragment's own rerun hands over to a run of the whole page."""
from __future__ import annotations

import types

import pytest
import streamlit as st
from streamlit.runtime.scriptrunner import get_script_run_ctx
from streamlit.testing.v1 import AppTest

from pcd.ui import page as P


class _Reran(Exception):
    pass


def _ctx(monkeypatch, fragment_ids):
    fake = types.SimpleNamespace(fragment_ids_this_run=fragment_ids)
    monkeypatch.setattr("streamlit.runtime.scriptrunner.get_script_run_ctx", lambda suppress_warning=False: fake)
    calls = []

    def rerun(*, scope="app"):
        calls.append(scope)
        raise _Reran

    monkeypatch.setattr(st, "rerun", rerun)
    return calls


def test_a_fragments_own_rerun_runs_the_whole_page_after_it(monkeypatch):
    calls = _ctx(monkeypatch, ["frag-1"])
    assert P.fragment_rerun()
    with pytest.raises(_Reran):
        P.rest_of_page_follows()
    with pytest.raises(_Reran):  # stop_page: the whole page runs (and stops at the same place), not st.stop
        P.stop_page()
    assert calls == ["app", "app"]


def test_a_run_of_the_whole_page_goes_on_and_stop_page_stops_it(monkeypatch):
    calls = _ctx(monkeypatch, [])
    assert not P.fragment_rerun()
    P.rest_of_page_follows()  # nothing happens
    monkeypatch.setattr(st, "stop", lambda: calls.append("stop"))
    P.stop_page()
    assert calls == ["stop"]


def test_outside_a_script_run_nothing_is_a_fragment_rerun():
    assert get_script_run_ctx(suppress_warning=True) is None
    assert not P.fragment_rerun()


def _script():
    import streamlit as st

    from pcd.ui import rest_of_page_follows, stop_page

    @st.fragment
    def settings():
        n = st.number_input("n", 0, 10, 1, key="n")
        if n == 0:
            stop_page()
        rest_of_page_follows()
        return n

    n = settings()
    st.markdown(f"rest of the page: n = {n}")


def test_in_a_page_run_the_fragment_returns_its_settings_and_stop_page_stops():
    at = AppTest.from_function(_script).run()
    assert not at.exception
    assert [m.value for m in at.markdown] == ["rest of the page: n = 1"]
    at.number_input(key="n").set_value(3).run()
    assert [m.value for m in at.markdown] == ["rest of the page: n = 3"]
    at.number_input(key="n").set_value(0).run()
    assert not at.exception and [m.value for m in at.markdown] == []


def test_the_page_run_waits_for_the_chart_and_starts_when_it_reports(monkeypatch):
    """rest_of_page_follows(when_drawn=key) in a fragment's rerun: no page run yet; the chart's report
    (chart_drawn, its ``drawn`` callback) makes the fragment's next rerun hand over at once (hand_over)."""
    state: dict = {}
    monkeypatch.setattr(st, "session_state", state)
    calls = _ctx(monkeypatch, ["frag-1"])
    P.rest_of_page_follows(when_drawn="toy_map")  # no rerun: the browser is drawing the map
    assert calls == [] and state[P._WAITING] == "toy_map"
    P.hand_over()  # a rerun of the fragment for another reason (a setting): nothing reported, it goes on
    assert calls == []
    P.chart_drawn("toy_obj")  # another chart's report is not the one waited for
    P.hand_over()
    assert calls == [] and P._DRAWN not in state
    P.chart_drawn("toy_map")
    with pytest.raises(_Reran):
        P.hand_over()
    assert calls == ["app"] and P._WAITING not in state and P._DRAWN not in state
    P.hand_over()  # reported once, handed over once
    assert calls == ["app"]


def test_in_a_run_of_the_whole_page_nothing_waits(monkeypatch):
    state: dict = {P._WAITING: "toy_map"}
    monkeypatch.setattr(st, "session_state", state)
    calls = _ctx(monkeypatch, [])
    P.rest_of_page_follows(when_drawn="toy_map")  # the page is running: nothing to wait for
    P.chart_drawn("toy_map")
    P.hand_over()
    assert calls == [] and state == {}


def _waiting_script():
    import streamlit as st

    from pcd.ui import hand_over, rest_of_page_follows
    from pcd.ui.page import fragment_rerun

    @st.fragment
    def settings():
        hand_over()
        n = st.number_input("n", 0, 10, 1, key="n")
        st.markdown(f"reports its draw: {fragment_rerun()}")
        rest_of_page_follows(when_drawn="chart")
        return n

    n = settings()
    st.markdown(f"rest of the page: n = {n}")


def test_a_page_that_waits_for_its_chart_still_runs_whole_in_apptest():
    """AppTest (no browser: nothing reports a draw) runs the whole script on every change, so the page
    never waits there."""
    at = AppTest.from_function(_waiting_script).run()
    assert not at.exception
    at.number_input(key="n").set_value(4).run()
    assert [m.value for m in at.markdown] == ["reports its draw: False", "rest of the page: n = 4"]
