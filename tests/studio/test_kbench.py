"""The K-objective page's store (pcd.studio.kbench): every budget is the library's fresh run
(synthetic.kdw), a budget at or below the longest run made is a lookup, a larger one runs once,
the records handed out are copies, and the store is bounded."""
from __future__ import annotations

from unittest import mock

import pytest
import streamlit as st

from pcd.experiments import synthetic
from pcd.studio import kbench as KB


@pytest.fixture(autouse=True)
def _fresh_store():
    st.cache_resource.clear()
    yield
    st.cache_resource.clear()


def _counting():
    real = synthetic.kdw_budgets
    calls = []

    def spy(*a, **k):
        calls.append(k["budgets"])
        return real(*a, **k)
    return calls, mock.patch.object(synthetic, "kdw_budgets", spy)


def test_budgets_are_fresh_runs_and_lookups_after_the_longest():
    calls, spy = _counting()
    with spy:
        r500 = KB.kbench_one(9, "pcd", 500, 0.03, 0.3, "adam")
        assert calls == [[200, 300, 500]]
        r200 = KB.kbench_one(9, "pcd", 200, 0.03, 0.3, "adam")
        r300 = KB.kbench_one(9, "pcd", 300, 0.03, 0.3, "adam")
        assert len(calls) == 1  # both read off the run to 500
        r800 = KB.kbench_one(9, "pcd", 800, 0.03, 0.3, "adam")
        assert calls[-1] == [200, 300, 500, 800] and len(calls) == 2
        KB.kbench_one(9, "pcd", 800, 0.02, 0.3, "adam")  # another lr: its own run
        assert len(calls) == 3
    for steps, recs in ((200, r200), (300, r300), (500, r500), (800, r800)):
        assert recs == synthetic.kdw(Ks=[9], methods=["pcd"], steps=steps, lr=0.03, optimizer="adam", tau=0.3), steps
    assert r200 != r800  # the budgets really differ (PCD's residual at 200 steps is not yet 0)


def test_kdw_budgets_equal_kdw_for_every_method_and_k():
    out = synthetic.kdw_budgets(Ks=[2, 5], methods=["pcd", "mgda", "ws"], budgets=[40, 7, 120], lr=0.03,
                                optimizer="sgd", tau=0.5)
    assert sorted(out) == [7, 40, 120]
    for b, recs in out.items():
        assert recs == synthetic.kdw(Ks=[2, 5], methods=["pcd", "mgda", "ws"], steps=b, lr=0.03, optimizer="sgd",
                                     tau=0.5), b


def test_records_are_copies_and_the_store_is_bounded():
    recs = KB.kbench_one(2, "ws", 200, 0.03, None, "adam")
    recs[0]["primary_grad_norm"] = -1.0
    recs[0]["losses"].append(99.0)
    again = KB.kbench_one(2, "ws", 200, 0.03, None, "adam")
    assert again[0]["primary_grad_norm"] >= 0 and 99.0 not in again[0]["losses"]
    store = KB._Budgets(max_entries=2)
    for i in range(4):
        store.put(("k", i), {200: [{"i": i}]})
    assert store.get(("k", 0), 200) is None and store.get(("k", 3), 200) == [{"i": 3}]


@pytest.mark.parametrize("bad", [0, -5, "x"])
def test_bad_budgets_are_value_errors(bad):
    with pytest.raises(ValueError):
        synthetic.kdw_budgets(Ks=[2], methods=["ws"], budgets=[bad])
