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


def _view(opt="adam", lr=0.02, steps=500, width="medium"):
    starts = T.make_problem("saddle2d").default_starts()
    return T.view_setting("saddle2d", None, None, None, None, ["pcd", "ws"], {}, 0.02, opt, lr, steps, starts, None, 0,
                          width, False, True, 1.2)


def test_the_views_one_click_away():
    got = T.neighbours(_view())
    assert [(s[8], s[9], s[10]) for s in got] == [("sgd", 0.02, 500), ("adam", 0.01, 500), ("adam", 0.05, 500),
                                                  ("adam", 0.02, 200), ("adam", 0.02, 1000)]
    edge = T.neighbours(_view(opt="sgd", lr=T.LRS[0], steps=T.STEP_CHOICES[-1]))
    assert [(s[8], s[9], s[10]) for s in edge] == [("adam", T.LRS[0], T.STEP_CHOICES[-1]), ("sgd", T.LRS[1],
                                                   T.STEP_CHOICES[-1]), ("sgd", T.LRS[0], T.STEP_CHOICES[-2])]


def test_a_prefetched_view_is_a_lookup_for_the_page(monkeypatch):
    """compute_view fills the caches the page reads: the page's own calls for that view then compute
    nothing (no engine run, no figure built) and return what a fresh computation returns."""
    import json

    import pcd.studio.prefetch as P
    import pcd.viz.toy as vt

    view = T.neighbours(_view())[0]  # SGD
    T.compute_view(view)

    def refuse(*a, **k):
        raise AssertionError("computed although prefetched")

    monkeypatch.setattr(engine, "run", refuse)
    monkeypatch.setattr(vt, "toy_map_figure", refuse)
    (name, f1, f2, pbounds, pstarts, methods, hp, tau, opt, lr, steps, starts, bt, istart, width, present, log,
     font, scale) = view
    problem, res, _v, bg, key = T.toy_runs(name, f1, f2, pbounds, pstarts, list(methods), json.loads(hp), tau, opt,
                                           lr, steps, np.array(starts), bt)
    figs = T.toy_figures(problem, res, bg, key, istart, width, present, log, font, scale)
    assert figs["side"] and figs["inset"] is not None and figs["objective"] is not None
    monkeypatch.undo()
    _same(res, _fresh(["pcd", "ws"], tau=0.02, opt="sgd") if steps == 600 else engine.run(
        T.make_problem("saddle2d"), ["pcd", "ws"], starts=np.array(starts), steps=steps, optimizer="sgd", lr=lr,
        method_params=T.method_params(["pcd", "ws"], {}, 0.02), record=T.LIVE_RECORD))
    # the switch: PCD_NO_PREFETCH=1 asks nothing
    monkeypatch.setenv("PCD_NO_PREFETCH", "1")
    assert P.enabled() is False and T.prefetch(_view()) is False
