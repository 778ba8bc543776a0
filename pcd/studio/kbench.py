"""Page 03, K-objective benchmark: its defaults and its cached runs, one per (K, method, settings).

A change of the step budget must redraw at once (issue 28: change -> figure <= 1 s). A run of the
double well to ``n`` steps passes through the exact state of every run to fewer steps
(:func:`pcd.engine.run_budgets`: bit for bit the same results), so each (K, method, lr, τ,
optimizer) is run once, to the longest budget asked for so far, and every page budget up to it
(:data:`STEP_CHOICES`) is read off that one run: a smaller budget is a lookup, a larger one runs
once more to it. The server warm-up runs the default view to every budget (:func:`warm_later`),
so at the default view every step budget is a lookup.
"""
from __future__ import annotations

import copy
import threading
from collections import OrderedDict
from typing import Any

import streamlit as st

import pcd.methods as registry
from pcd.experiments import synthetic
from pcd.studio import available

KS = (2, 3, 5, 9, 17, 33, 65)
METHODS = ("pcd", "mgda", "ws")
STEP_CHOICES = (200, 300, 500, 800, 1000, 2000, 3000)  # the page's step budgets
LRS = (0.005, 0.01, 0.02, 0.03, 0.05)
# 800 Adam steps at lr 0.03 take PCD to an exactly zero residual at every K (measured; 600 leave ~1e-12).
STEPS, LR, TAU, OPT = 800, 0.03, 0.3, "adam"
MAX_ENTRIES = 512  # (K, method, lr, τ, optimizer) keys kept, each with its budgets (least recently used go)


class _Budgets:
    """``(K, method, lr, tau, opt) -> {steps: records}``, least recently used first out; thread-safe
    (sessions share it). The records are handed out as copies (a page may change them)."""

    def __init__(self, max_entries: int = MAX_ENTRIES) -> None:
        self.max_entries = max_entries
        self._lock = threading.Lock()
        self._runs: OrderedDict[tuple, dict[int, list[dict[str, Any]]]] = OrderedDict()

    def get(self, key: tuple, steps: int) -> list[dict[str, Any]] | None:
        with self._lock:
            runs = self._runs.get(key)
            if runs is None or steps not in runs:
                return None
            self._runs.move_to_end(key)
            return copy.deepcopy(runs[steps])

    def put(self, key: tuple, runs: dict[int, list[dict[str, Any]]]) -> None:
        with self._lock:
            self._runs.setdefault(key, {}).update(copy.deepcopy(runs))
            self._runs.move_to_end(key)
            while len(self._runs) > self.max_entries:
                self._runs.popitem(last=False)


@st.cache_resource(show_spinner=False)
def _budgets() -> _Budgets:
    """The one store per server process (cleared with Streamlit's resource cache)."""
    return _Budgets()


def kbench_one(K: int, method: str, steps: int, lr: float, tau: float | None, opt: str) -> list[dict[str, Any]]:
    """The records of one (K, method) run of the double well to ``steps``
    (:func:`pcd.experiments.synthetic.kdw`, the same numbers): from the store when a run to at least
    ``steps`` was made with these settings, else one run to ``steps`` that also stores every page
    budget below it. ``tau`` only for methods with a primary knob (:func:`kbench_tau`)."""
    key = (int(K), str(method), float(lr), None if tau is None else float(tau), str(opt))
    store = _budgets()
    hit = store.get(key, steps)
    if hit is not None:
        return hit
    budgets = sorted({b for b in STEP_CHOICES if b < steps} | {steps})
    runs = synthetic.kdw_budgets(Ks=[K], methods=[method], budgets=budgets, lr=lr, optimizer=opt,
                                 tau=tau if registry.get(method).primary_knob else None)
    store.put(key, runs)
    return copy.deepcopy(runs[steps])


def kbench_tau(method: str, tau: float) -> float | None:
    """The τ a (K, method) entry is keyed by: τ for methods that have it, else None (one entry)."""
    return tau if registry.get(method).primary_knob else None


def law_table() -> Any:
    """The measured 1.536·√(K−1) law at the page's defaults (:func:`pcd.experiments.kdw_law.table`)."""
    from pcd.experiments import kdw_law

    return kdw_law.table()


def warm() -> None:
    """The page's default view (and the budgets below its default)."""
    for K in KS:
        for m in available(METHODS):
            kbench_one(K, m, STEPS, LR, kbench_tau(m, TAU), OPT)


def warm_later() -> None:
    """Every step budget of the default view (one run to the longest per (K, method)): after it, a
    change of the step budget at the default view is a lookup. The warm-up runs it after every
    page's default view (:func:`pcd.studio.warmup.warm_up`)."""
    for K in KS:
        for m in available(METHODS):
            kbench_one(K, m, max(STEP_CHOICES), LR, kbench_tau(m, TAU), OPT)
