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
