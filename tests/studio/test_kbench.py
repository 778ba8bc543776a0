"""The K-objective page's store (pcd.studio.kbench): every budget is the library's fresh run
(synthetic.kdw), a budget at or below the longest run made is a lookup, a larger one runs once,
the records handed out are copies, and the store is bounded."""
from __future__ import annotations

import threading
import time
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


# ---- one engine call per K, runs under way, the prefetch -------------------------------------------------
def _fresh(Ks, methods, steps, lr, tau, opt):
    """What the page showed before: one fresh library run per (K, method)."""
    return [r for K in Ks for m in methods
            for r in synthetic.kdw(Ks=[K], methods=[m], steps=steps, lr=lr, optimizer=opt, tau=KB.kbench_tau(m, tau))]


@pytest.mark.parametrize("opt", ["adam", "sgd"])
def test_records_are_one_call_per_k_and_equal_fresh_runs_per_method(opt):
    methods = ["pcd", "mgda", "ws", "cagrad", "upgrad"]
    calls, spy = _counting()
    with spy:
        recs = KB.kbench_records([2, 5], methods, 300, 0.02, 0.4, opt)
        assert calls == [[200, 300], [200, 300]]  # one engine call per K, every method in it
        again = KB.kbench_records([2, 5], methods, 200, 0.02, 0.4, opt)
        assert len(calls) == 2  # a lookup
    assert recs == _fresh([2, 5], methods, 300, 0.02, 0.4, opt)
    assert again == _fresh([2, 5], methods, 200, 0.02, 0.4, opt)
    assert [(r["K"], r["method"]) for r in recs] == [(K, m) for K in (2, 5) for m in methods]


def test_only_the_missing_methods_run_and_tau_keys_only_pcd():
    KB.kbench_records([3], ["pcd", "mgda"], 200, 0.03, 0.3, "adam")
    calls, spy = _counting()
    with spy:
        KB.kbench_records([3], ["pcd", "mgda", "ws"], 200, 0.03, 0.5, "adam")  # τ changes PCD only
    assert len(calls) == 1
    store = KB._budgets()
    assert store.get((3, "pcd", 0.03, 0.5, "adam"), 200) is not None
    assert store.get((3, "mgda", 0.03, None, "adam"), 200) is not None


def test_claim_and_release():
    store = KB._Budgets()
    a, b = object(), object()
    mine, theirs = store.claim([("k", 1), ("k", 2)], 500, a)
    assert mine == [("k", 1), ("k", 2)] and theirs == []
    mine_b, theirs_b = store.claim([("k", 1)], 300, b)  # under way to 500 >= 300: b waits for a
    assert mine_b == [] and [k for k, _ in theirs_b] == [("k", 1)] and not theirs_b[0][1].is_set()
    mine_b, theirs_b2 = store.claim([("k", 2)], 800, b)  # a's run stops short of 800: b makes its own
    assert mine_b == [("k", 2)] and theirs_b2 == []
    store.release([("k", 1), ("k", 2)], b)  # not b's: nothing happens
    assert not theirs_b[0][1].is_set()
    store.put(("k", 1), {300: [{"x": 1}], 500: [{"x": 2}]})
    store.release([("k", 1), ("k", 2)], a)
    assert theirs_b[0][1].is_set()
    assert store.claim([("k", 1)], 300, b) == ([], [])  # stored now


def test_a_run_under_way_elsewhere_is_waited_for_not_made_twice():
    key = KB._key(2, "mgda", 0.01, 0.3, "adam")
    other = object()
    store = KB._budgets()
    assert store.claim([key], 200, other)[0] == [key]
    runs = KB._run_k(2, ["mgda"], 200, 0.01, 0.3, "adam")

    def finish():
        time.sleep(0.3)
        store.put(key, runs["mgda"])
        store.release([key], other)

    th = threading.Thread(target=finish)
    calls, spy = _counting()
    with spy:
        th.start()
        recs = KB.kbench_records([2], ["mgda", "ws"], 200, 0.01, 0.3, "adam")
        th.join()
    assert calls == [[200]]  # the weighted sum only: MGDA was waited for
    assert recs == _fresh([2], ["mgda", "ws"], 200, 0.01, 0.3, "adam")


def test_neighbours_of_the_default_view():
    Ks, ms = KB.KS, KB.METHODS
    assert KB.neighbours(Ks, ms, 800, 0.03, 0.3, "adam") == [
        (Ks, ms, 800, 0.02, 0.3, "adam"), (Ks, ms, 800, 0.05, 0.3, "adam"), (Ks, ms, 800, 0.03, 0.3, "sgd"),
        (Ks, ("pcd",), 800, 0.03, 0.29, "adam"), (Ks, ("pcd",), 800, 0.03, 0.31, "adam"),
        (Ks, ms, 3000, 0.03, 0.3, "adam")]
    edge = KB.neighbours((2,), ("mgda",), 3000, 0.005, 1.0, "sgd")  # no τ (no knob), no longer budget
    assert edge == [((2,), ("mgda",), 3000, 0.01, 1.0, "sgd"), ((2,), ("mgda",), 3000, 0.005, 1.0, "adam")]


def test_prefetch_is_off_with_the_env_switches(monkeypatch):
    monkeypatch.delenv("PCD_NO_WARMUP", raising=False)
    monkeypatch.setenv("PCD_NO_PREFETCH", "1")
    assert KB.prefetch(KB.KS, KB.METHODS, 800, 0.03, 0.3, "adam") is False
    monkeypatch.delenv("PCD_NO_PREFETCH")
    monkeypatch.setenv("PCD_NO_WARMUP", "1")
    assert KB.prefetch(KB.KS, KB.METHODS, 800, 0.03, 0.3, "adam") is False


def test_the_prefetch_fills_the_store_with_fresh_runs_and_the_click_is_a_lookup():
    pre = KB.Prefetcher()
    setting = ((2, 3), ("pcd", "ws"), 300, 0.05, 0.3, "sgd")
    pre.ask([setting])
    assert pre.idle.wait(60) and pre.done == [setting]
    with mock.patch.object(synthetic, "kdw_budgets", side_effect=AssertionError("not a lookup")):
        recs = KB.kbench_records(*setting)
    assert recs == _fresh(*setting)


def test_the_prefetch_pauses_while_a_page_computes_and_a_new_view_replaces_its_queue():
    seen = []
    gate = threading.Event()

    def compute(setting, K, progress):
        seen.append((setting[3], K, time.monotonic()))
        if setting[3] == 1:
            gate.wait(5)  # the first setting's first K runs until the test lets it go
        progress(0.5, "half")  # an engine progress point: pauses while a page computes

    pre = KB.Prefetcher(compute)
    pre.ask([((2, 3), ("ws",), 200, 1, 0.3, "adam"), ((2,), ("ws",), 200, 2, 0.3, "adam")])
    time.sleep(0.1)
    with pre.foreground():
        gate.set()
        time.sleep(0.3)
        assert [s[:2] for s in seen] == [(1, 2)]  # paused at its progress point
        released = time.monotonic()
    pre.ask([((5,), ("ws",), 200, 3, 0.3, "adam")])  # the newer view's queue replaces the rest
    assert pre.idle.wait(10)
    assert [s[:2] for s in seen] in ([(1, 2), (3, 5)], [(1, 2), (1, 3), (3, 5)])
    assert seen[-1][2] >= released
    assert pre.done[-1][3] == 3 and all(s[3] != 2 for s in pre.done)


def test_the_prefetch_stops_at_its_cpu_budget_and_survives_a_failure():
    seen = []

    def compute(setting, K, progress):
        seen.append(K)
        if K == 3:
            raise RuntimeError("boom")
        t = time.thread_time()
        while time.thread_time() - t < 0.05:
            pass

    pre = KB.Prefetcher(compute, cpu_s=0.12)
    pre.ask([((2, 3, 5, 9, 17), ("ws",), 200, 1, 0.3, "adam"), ((33,), ("ws",), 200, 2, 0.3, "adam")])
    assert pre.idle.wait(10)
    assert seen == [2, 3, 5, 9] and pre.done == []  # 3 x 0.05 s >= 0.12 s: the rest is dropped
    pre.ask([((2,), ("ws",), 200, 3, 0.3, "adam")])  # a new view: a new budget, the thread alive
    assert pre.idle.wait(10) and seen[-1] == 2 and len(pre.done) == 1


def test_later_settings_wait_for_the_views_and_resume_after_a_newer_view():
    seen = []
    gate = threading.Event()

    def compute(setting, K, progress):
        seen.append((setting[3], K))
        if (setting[3], K) == (10, 2):
            gate.wait(5)

    pre = KB.Prefetcher(compute)
    pre.ask_later([((2, 3), ("ws",), 200, 10, 0.3, "adam"), ((2,), ("ws",), 200, 11, 0.3, "adam")])
    time.sleep(0.1)
    pre.ask([((5,), ("ws",), 200, 1, 0.3, "adam")])  # a view's neighbours come first, after the K under way
    pre.ask_later([((2,), ("ws",), 200, 11, 0.3, "adam")])  # asked again: kept once
    gate.set()
    assert pre.idle.wait(10)
    assert seen == [(10, 2), (1, 5), (10, 2), (10, 3), (11, 2)]  # the interrupted one starts over (K=2 a lookup)
    assert [s[3] for s in pre.done] == [1, 10, 11]


def test_later_settings_stop_at_their_own_cpu_budget():
    seen = []

    def compute(setting, K, progress):
        seen.append((setting[3], K))
        t = time.thread_time()
        while time.thread_time() - t < 0.05:
            pass

    pre = KB.Prefetcher(compute, later_cpu_s=0.08)
    pre.ask_later([((2, 3, 5), ("ws",), 200, 10, 0.3, "adam"), ((2,), ("ws",), 200, 11, 0.3, "adam")])
    assert pre.idle.wait(10) and seen == [(10, 2), (10, 3)] and pre.done == []
    pre.ask([((2,), ("ws",), 200, 1, 0.3, "adam")])  # a view's own budget is separate
    assert pre.idle.wait(10) and seen[-1] == (1, 2)


def test_grid_is_every_lr_with_either_optimizer_nearest_first():
    g = KB.grid(KB.KS, KB.METHODS, 800, 0.03, 0.3, "adam")
    assert [(s[3], s[5]) for s in g[:6]] == [(0.03, "adam"), (0.03, "sgd"), (0.02, "adam"), (0.02, "sgd"),
                                              (0.05, "adam"), (0.05, "sgd")]
    assert len(g) == len(KB.LRS) * len(KB.OPTS) and {s[:3] for s in g} == {(KB.KS, KB.METHODS, 800)}


# ---- worker processes (pcd.studio.kbench.workers) ------------------------------------------------------
@pytest.fixture
def _stop_workers():
    yield
    KB.shutdown_workers()


@pytest.mark.parametrize("raw, want", [("0", 0), ("1", 1), (" 3 ", 3), ("16", 16)])
def test_workers_from_the_environment(monkeypatch, raw, want):
    monkeypatch.setenv("PCD_KBENCH_WORKERS", raw)
    assert KB.workers() == want


@pytest.mark.parametrize("raw", ["-1", "17", "two", "1.5", "nan", "1e9"])
def test_a_bad_workers_value_is_reported_and_the_default_used(monkeypatch, caplog, raw):
    monkeypatch.setenv("PCD_KBENCH_WORKERS", raw)
    monkeypatch.setattr(KB.os, "cpu_count", lambda: 4)
    with caplog.at_level("WARNING", logger=KB.__name__):
        assert KB.workers() == 3  # one fewer than the cores
    assert "PCD_KBENCH_WORKERS" in caplog.text


def test_the_default_is_one_fewer_than_the_cores_at_most_one_per_k(monkeypatch):
    monkeypatch.delenv("PCD_KBENCH_WORKERS")
    for cores, want in ((None, 0), (1, 0), (2, 1), (8, 6), (64, len(KB.KS) - 1)):
        monkeypatch.setattr(KB.os, "cpu_count", lambda c=cores: c)
        assert KB.workers() == want, cores


def test_worker_processes_give_the_same_records_and_run_their_share(monkeypatch, _stop_workers):
    monkeypatch.setenv("PCD_KBENCH_WORKERS", "1")
    Ks, methods = [2, 3, 5, 9], ["pcd", "mgda", "ws"]
    here = []
    run_k = KB._run_k
    monkeypatch.setattr(KB, "_run_k", lambda K, *a, **k: here.append(K) or run_k(K, *a, **k))  # this thread's runs
    recs = KB.kbench_records(Ks, methods, 200, 0.03, 0.3, "adam")
    assert here == [9, 3]  # largest first, round-robin: 5 and 2 ran in the worker
    assert recs == _fresh(Ks, methods, 200, 0.03, 0.3, "adam")  # bit for bit (== on the floats)
    again = KB.kbench_records(Ks, methods, 200, 0.03, 0.3, "adam")
    assert again == recs  # stored: a lookup


def test_a_dead_worker_leaves_its_ks_to_this_thread(monkeypatch, _stop_workers):
    monkeypatch.setenv("PCD_KBENCH_WORKERS", "1")

    class Dying:  # stops before it answers
        def call(self, name, **kwargs):
            fut = KB.Future()
            fut.set_exception(KB.WorkerDied("stopped"))
            return fut

    monkeypatch.setattr(KB, "_pool", lambda n: [Dying()])
    here = []
    run_k = KB._run_k
    monkeypatch.setattr(KB, "_run_k", lambda K, *a, **k: here.append(K) or run_k(K, *a, **k))
    recs = KB.kbench_records([2, 3], ["ws"], 200, 0.03, None, "adam")
    assert sorted(here) == [2, 3] and recs == _fresh([2, 3], ["ws"], 200, 0.03, None, "adam")


def test_a_killed_worker_is_replaced(monkeypatch, _stop_workers):
    monkeypatch.setenv("PCD_KBENCH_WORKERS", "1")
    first = KB._pool(1)[0]
    first.kill()
    assert not first.alive()
    (second,) = KB._pool(1)
    assert second is not first and second.alive()
    assert KB.kbench_records([2, 3], ["ws"], 200, 0.02, None, "sgd") == _fresh([2, 3], ["ws"], 200, 0.02, None, "sgd")


def test_a_bad_setting_is_a_value_error_with_workers_too(monkeypatch, _stop_workers):
    monkeypatch.setenv("PCD_KBENCH_WORKERS", "1")
    with pytest.raises(ValueError):
        KB.kbench_records([2, 3], ["ws"], 200, -1.0, None, "adam")  # lr must be > 0
    assert KB._budgets().claim([KB._key(2, "ws", -1.0, None, "adam")], 200, object())[1] == []  # released


@pytest.mark.parametrize("n", ["0", "1"])
def test_progress_reports_the_share_of_the_ks_done(monkeypatch, _stop_workers, n):
    monkeypatch.setenv("PCD_KBENCH_WORKERS", n)
    seen = []
    recs = KB.kbench_records([2, 3, 5], ["ws", "mgda"], 200, 0.02, None, "adam",
                             progress=lambda f, msg: seen.append((f, msg)))
    assert recs == _fresh([2, 3, 5], ["ws", "mgda"], 200, 0.02, None, "adam")
    fr = [f for f, _ in seen]
    assert seen and fr == sorted(fr) and 0 < fr[-1] <= 1 and all(m.startswith("K = ") for _, m in seen)
    seen.clear()
    KB.kbench_records([2, 3, 5], ["ws", "mgda"], 200, 0.02, None, "adam", progress=lambda f, m: seen.append(f))
    assert seen == []  # a lookup: nothing to report


class _Left(BaseException):
    """What Streamlit raises in a run whose settings the user has left (a BaseException, as its own)."""


@pytest.mark.parametrize("n", ["0", "1"])
def test_a_progress_that_raises_stops_the_computation_and_keeps_what_was_done(monkeypatch, _stop_workers, n):
    monkeypatch.setenv("PCD_KBENCH_WORKERS", n)
    Ks = [2, 3, 5, 9]

    def leave(f, msg):
        if msg.startswith("K = 3"):  # this thread's second K (9, 3 here; with a worker: 9, 3 here, 5, 2 there)
            raise _Left()

    with pytest.raises(_Left):
        KB.kbench_records(Ks, ["ws"], 200, 0.01, None, "sgd", progress=leave)
    store = KB._budgets()
    assert store.get(KB._key(9, "ws", 0.01, None, "sgd"), 200) is not None  # done before it: kept
    assert store.get(KB._key(3, "ws", 0.01, None, "sgd"), 200) is None
    owner = object()
    assert all(store.claim([KB._key(K, "ws", 0.01, None, "sgd")], 200, owner)[1] == [] for K in Ks)  # released
