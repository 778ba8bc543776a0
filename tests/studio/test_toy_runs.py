"""The toy page's runs (pcd.studio.toy.toy_run_set): each method's runs are kept on their own, so a
changed method set runs only the methods it has not run yet -- and the result is exactly a fresh
engine run of the whole set (every recorded field, every method, in the set's order)."""
from __future__ import annotations

import dataclasses

import numpy as np

import pcd.engine as engine
from pcd.experiments.toy import merge_results, select_methods
from pcd.studio import toy as T

STARTS = ((-2.5, 0.4), (-1.0, 1.5), (0.3, -0.8))


def _same(a, b):
    assert a.methods == b.methods
    for f in dataclasses.fields(a):
        va, vb = getattr(a, f.name), getattr(b, f.name)
        if f.name in ("seconds", "method_seconds"):
            continue
        if isinstance(va, np.ndarray):
            np.testing.assert_array_equal(va, vb, err_msg=f.name)
        else:
            assert va == vb, f.name


def _page_runs(methods, tau=0.3, opt="adam"):
    return T.toy_run_set.__wrapped__("saddle2d", None, None, None, tuple(methods), "{}", tau, opt, 0.02, 600, STARTS)


def _fresh(methods, tau=0.3, opt="adam"):
    return engine.run(T.make_problem("saddle2d"), list(methods), starts=np.array(STARTS), steps=600, optimizer=opt,
                      lr=0.02, method_params=T.method_params(methods, {}, tau), record=T.LIVE_RECORD)


def test_a_changed_method_set_runs_only_the_new_methods_and_equals_a_fresh_run(monkeypatch):
    T._method_runs().__init__()  # an empty store
    calls = []
    real = engine.run

    def spy(problem, methods, *a, **kw):
        calls.append(list(methods))
        return real(problem, methods, *a, **kw)

    monkeypatch.setattr(engine, "run", spy)
    first = _page_runs(["pcd", "ws", "mgda", "famo"])
    assert calls == [["pcd", "ws", "mgda", "famo"]]          # one engine call for the set
    more = _page_runs(["famo", "pcgrad", "pcd", "graddrop"])
    assert calls[1:] == [["pcgrad", "graddrop"]]             # only the methods not run yet
    fewer = _page_runs(["mgda", "pcd"])
    assert len(calls) == 2                                   # nothing to run
    other_tau = _page_runs(["pcd", "ws"], tau=0.05)
    assert calls[2:] == [["pcd"]]                            # τ moves PCD only; WS is kept
    monkeypatch.setattr(engine, "run", real)
    for got, methods, tau in ((first, ["pcd", "ws", "mgda", "famo"], 0.3), (more, ["famo", "pcgrad", "pcd", "graddrop"], 0.3),
                              (fewer, ["mgda", "pcd"], 0.3), (other_tau, ["pcd", "ws"], 0.05)):
        _same(got, _fresh(methods, tau))


def test_select_methods_is_the_inverse_of_merge_results():
    res = _fresh(["pcd", "ws", "graddrop"])
    parts = [select_methods(res, [m]) for m in res.methods]
    _same(merge_results(parts), res)
    _same(select_methods(res, ["graddrop", "pcd"]), merge_results([parts[2], parts[0]]))
    for bad in (["nope"], ["pcd", "pcd"]):
        try:
            select_methods(res, bad)
        except ValueError as exc:
            assert "select_methods" in str(exc)
        else:
            raise AssertionError(bad)
