"""Page 03, K-objective benchmark: its defaults and its cached runs, one per (K, method, settings).

A change of any control at the page's default range must redraw at once (issue 28: change -> figure
<= 1 s). Three things make that so, none of which changes a number:

* **Budgets are read off one run.** A run of the double well to ``n`` steps passes through the exact
  state of every run to fewer steps (:func:`pcd.engine.run_budgets`: bit for bit the same results),
  so each (K, method, lr, τ, optimizer) is run once, to the longest budget asked for so far, and
  every page budget up to it (:data:`STEP_CHOICES`) is read off that one run.
* **One engine call per K.** The methods missing at one K run together in one engine call (the
  engine's trajectories do not depend on which methods run beside them: same records as one call
  per method, tested), which shares the problem, the optimizer and the per-step bookkeeping: a new
  learning rate at the default view costs ~15 % less CPU than 21 calls (1.36-1.74 s against
  1.69-1.87 s of the thread's CPU, alternated, at load 5.5). The QP solves of PCD and MGDA at every
  step (~50 % and ~27 % of it) remain: a setting computed on the click at the default view costs
  3.7-4.0 s of engine in one thread (7 Dec, 1000 steps, the 2-core machine at load ~1).
* **Prefetch.** After the page has drawn a view it asks (:func:`prefetch`) for the settings a user
  reaches with one click: the learning rate one notch down and up, the other optimizer, τ ± 0.01
  (PCD only), then the shown view extended to the longest budget. One background thread computes
  them into the same store, bounded: one thread per server process, at most :data:`PREFETCH_MAX`
  settings queued (a new view replaces the queue; the run under way is finished, never killed), at
  most :data:`PREFETCH_CPU_S` s of its own CPU per view (checked before each K's run), and it pauses
  (inside a run, at the engine's progress points, every 1/20 of a run) while any page computes and
  for :data:`pcd.studio.prefetch.GRACE_S` after: a page's computation shares the CPU with it for one progress
  step at most. A page that needs a run the thread has under way waits for it instead of running it
  twice (the thread goes on meanwhile). ``PCD_NO_PREFETCH=1`` (or the warm-up's
  ``PCD_NO_WARMUP=1``) turns it off.

* **Worker processes.** The Ks a page's computation lacks are shared between its own thread and
  :func:`workers` processes (one fewer than the machine's cores, at most ``len(KS) - 1``;
  ``PCD_KBENCH_WORKERS=n`` sets it, 0 turns them off), largest K first: one engine call per K
  wherever it runs, so the records are the same, bit for bit (tested). The numbers of NumPy's small
  arrays hold the GIL, so threads would not run side by side; processes do. On this 2-core machine
  (one worker) a setting computed at the default view took 3.71 -> 2.18 s and 3.96 -> 1.91 s
  (``python benchmarks/bench_kbench_workers.py``), and the browser test's computed change 4.97 -> 3.13 s;
  an 8-core machine runs each K in its own process. A worker is ``python -m pcd._workers``
  (:mod:`pcd._workers`: why not :mod:`multiprocessing`); one that dies is replaced on the next
  computation and its Ks are run here. The background prefetch stays on one thread (the machine
  stays the user's).

The server warm-up computes the default view (:func:`warm`) and then what the prefetch of the default
view computes (:func:`warm_later`): at the default view every step budget, both neighbouring
learning rates and the other optimizer are lookups. It then asks the prefetch thread, at the lowest
priority (only while no view's neighbours wait; :data:`LATER_CPU_S` of CPU at most, once per
process), for every learning rate with either optimizer at the default budget (:func:`grid`): once
done, any learning-rate or optimizer change at the default τ and budget is a lookup.
"""
from __future__ import annotations

import atexit
import contextlib
import copy
import logging
import os
import threading
from collections import OrderedDict
from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import Future
from typing import Any

import streamlit as st

import pcd._validate as V
import pcd.methods as registry
from pcd._workers import Worker, WorkerDied
from pcd.experiments import synthetic
from pcd.studio import available
from pcd.studio.prefetch import GRACE_S, foreground, hush
from pcd.studio.prefetch import Prefetcher as _Prefetcher
from pcd.studio.prefetch import enabled as prefetch_on

_LOG = logging.getLogger(__name__)

KS = (2, 3, 5, 9, 17, 33, 65)
METHODS = ("pcd", "mgda", "ws")
STEP_CHOICES = (200, 300, 500, 800, 1000, 2000, 3000)  # the page's step budgets
LRS = (0.005, 0.01, 0.02, 0.03, 0.05)
OPTS = ("adam", "sgd")
# 800 Adam steps at lr 0.03 take PCD to an exactly zero residual at every K (measured; 600 leave ~1e-12).
STEPS, LR, TAU, OPT = 800, 0.03, 0.3, "adam"
TAU_STEP = 0.01  # the page's τ slider step (the prefetch computes τ ± one step)
MAX_ENTRIES = 2048  # (K, method, lr, τ, optimizer) keys kept (least recently used go): ~97 settings of the default
# view (21 keys each: the grid is 10, a view prefetches up to 6); a key with all 7 budgets pickles to ~5 KB at K = 65
PREFETCH_MAX = 6  # settings queued per view (lr down, lr up, other optimizer, τ down, τ up, longest budget)
PREFETCH_CPU_S = 12.0  # the prefetch thread's own CPU per view, at most (the 6 above at the default view: ~10 s)
LATER_CPU_S = 30.0  # the settings asked for later (the warm-up's grid: ~8 s at the default view), in all
MAX_WORKERS = 16  # PCD_KBENCH_WORKERS' upper bound (each worker is a Python process with NumPy: ~100 MB)
KDW_CALL = "pcd.experiments.synthetic:kdw_budgets"  # what a worker runs (pcd._workers.CALLS)

Key = tuple  # (K, method, lr, τ or None, optimizer)
Runs = dict[str, dict[int, list[dict[str, Any]]]]  # {method: {budget: records}} of one K
Setting = tuple  # (Ks, methods, steps, lr, τ, optimizer): one view of the page


class _Budgets:
    """``(K, method, lr, tau, opt) -> {steps: records}``, least recently used first out; thread-safe
    (sessions and the prefetch thread share it). The records are handed out as copies (a page may
    change them). :meth:`claim` says who computes a missing key, so no run is made twice at once."""

    def __init__(self, max_entries: int = MAX_ENTRIES) -> None:
        self.max_entries = max_entries
        self._lock = threading.Lock()
        self._runs: OrderedDict[tuple, dict[int, list[dict[str, Any]]]] = OrderedDict()
        self._flight: dict[tuple, tuple[int, threading.Event, object]] = {}  # key -> (steps, done, owner)

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

    def claim(self, keys: Iterable[tuple], steps: int, owner: object
              ) -> tuple[list[tuple], list[tuple[tuple, threading.Event]]]:
        """Of ``keys`` without a run to ``steps``: those ``owner`` computes now (marked under way until
        :meth:`release`), and ``(key, event)`` of those another thread has under way to at least
        ``steps`` (the event is set when that run is stored or has failed)."""
        mine: list[tuple] = []
        theirs: list[tuple[tuple, threading.Event]] = []
        with self._lock:
            for key in keys:
                runs = self._runs.get(key)
                if runs is not None and steps in runs:
                    continue
                flight = self._flight.get(key)
                if flight is not None and flight[0] >= steps:
                    theirs.append((key, flight[1]))
                    continue
                if flight is None:
                    self._flight[key] = (steps, threading.Event(), owner)
                mine.append(key)
        return mine, theirs

    def release(self, keys: Iterable[tuple], owner: object) -> None:
        """``owner``'s runs of ``keys`` are stored (or failed): whoever waits for them goes on."""
        with self._lock:
            for key in keys:
                flight = self._flight.get(key)
                if flight is not None and flight[2] is owner:
                    del self._flight[key]
                    flight[1].set()


@st.cache_resource(show_spinner=False)
def _budgets() -> _Budgets:
    """The one store per server process (cleared with Streamlit's resource cache)."""
    return _Budgets()


def _key(K: int, method: str, lr: float, tau: float | None, opt: str) -> Key:
    """The store's key of one (K, method) run; ``tau`` the page's τ (kept for methods that have it)."""
    t = kbench_tau(method, tau) if tau is not None else None
    return (int(K), str(method), float(lr), None if t is None else float(t), str(opt))


def _budgets_to(steps: int) -> list[int]:
    """The budgets a run to ``steps`` records: ``steps`` and every page budget below it."""
    return sorted({b for b in STEP_CHOICES if b < steps} | {steps})


def _run_k(K: int, methods: Sequence[str], steps: int, lr: float, tau: float | None, opt: str,
           progress: Any = None) -> Runs:
    """``{method: {budget: records}}`` of ``methods`` at one K, from one engine call
    (:func:`pcd.experiments.synthetic.kdw_budgets`; ``tau`` goes to the methods with a primary knob)."""
    return _by_method(methods, synthetic.kdw_budgets(**_kdw_args(K, methods, steps, lr, tau, opt), progress=progress))


def _kdw_args(K: int, methods: Sequence[str], steps: int, lr: float, tau: float | None, opt: str) -> dict[str, Any]:
    """The arguments of a K's one engine call (:func:`pcd.experiments.synthetic.kdw_budgets`; a worker
    process runs that function with these: it imports the experiments, not this module nor Streamlit)."""
    return {"Ks": [K], "methods": list(methods), "budgets": _budgets_to(steps), "lr": lr, "optimizer": opt, "tau": tau}


def _by_method(methods: Sequence[str], runs: dict[int, list[dict[str, Any]]]) -> Runs:
    """One K's ``{budget: records}`` (one record per method, in ``methods``' order) as ``{method: {budget: [record]}}``."""
    return {m: {b: [recs[i]] for b, recs in runs.items()} for i, m in enumerate(methods)}


def workers() -> int:
    """How many worker processes a page's computation uses besides its own thread:
    ``PCD_KBENCH_WORKERS`` (an integer 0..:data:`MAX_WORKERS`; 0: none), else one fewer than the
    machine's cores, at most ``len(KS) - 1``. A value that is not such an integer is reported in the
    server's log, and the default is used."""
    default = max(0, min((os.cpu_count() or 1) - 1, len(KS) - 1))
    raw = os.environ.get("PCD_KBENCH_WORKERS")
    if raw is None or not raw.strip():
        return default
    try:
        return V.integer(raw.strip(), "PCD_KBENCH_WORKERS", low=0, high=MAX_WORKERS, strict=False)
    except ValueError as exc:
        _LOG.warning("%s; using %d", exc, default)
        return default


_POOL: list[Worker] = []  # the worker processes of this server process, made on first use
_POOL_LOCK = threading.Lock()


def _pool(n: int) -> list[Worker]:
    """``n`` live worker processes (those that stopped are replaced)."""
    with _POOL_LOCK:
        live = [w for w in _POOL if w.alive()]
        if len(live) < len(_POOL):
            _LOG.warning("a K-objective worker process stopped; a new one is started")
        while len(live) > n:
            live.pop().close()
        while len(live) < n:
            live.append(Worker())
        _POOL[:] = live
        return list(live)


def shutdown_workers() -> None:
    """Stop the worker processes (they are made again when needed)."""
    with _POOL_LOCK:
        pool = list(_POOL)
        _POOL.clear()
    for w in pool:
        w.close()


atexit.register(shutdown_workers)


def _run_ks(todo: dict[int, list[str]], steps: int, lr: float, tau: float | None, opt: str,
            on_k: Callable[[int, Runs], None], progress: Any = None) -> None:
    """:func:`_run_k` for every K of ``todo`` (``{K: methods}``), each K's runs handed to ``on_k(K, runs)``
    as soon as they are there: largest K first, shared round-robin between this thread and
    :func:`workers` processes (one engine call per K wherever it runs: the same records). A worker that
    dies: its Ks are run here. ``progress(fraction, message)``: the share of the Ks done (and of the one
    this thread runs), called along this thread's runs (it may raise -- e.g. Streamlit stopping a run
    whose settings the user has left: the Ks not yet sent to a worker are then dropped). An error of a
    run (bad input) is raised."""
    order = sorted(todo, reverse=True)
    n = min(workers(), len(order) - 1)
    pool = _pool(workers())[:n] if n > 0 else []
    remote: dict[int, Future] = {}
    for i, K in enumerate(order):
        if i % (n + 1):
            remote[K] = pool[i % (n + 1) - 1].call(KDW_CALL, **_kdw_args(K, todo[K], steps, lr, tau, opt))
    taken: set[int] = set()

    def collect(wait: bool) -> None:  # the workers' Ks that are there (all of them: wait)
        for K, fut in remote.items():
            if K not in taken and (wait or fut.done()):
                taken.add(K)
                try:
                    runs = _by_method(todo[K], fut.result())
                except WorkerDied:  # its Ks are run here (the next computation starts a new worker)
                    runs = _run_k(K, todo[K], steps, lr, tau, opt, share(K))
                on_k(K, runs)

    def share(K: int) -> Any:
        if progress is None:
            return None
        return lambda f, msg: progress(min(1.0, (len(taken) + f) / len(order)), f"K = {K}: {msg}")

    try:
        for K in order:
            if K not in remote:
                collect(wait=False)
                on_k(K, _run_k(K, todo[K], steps, lr, tau, opt, share(K)))
                taken.add(K)
        collect(wait=True)
    finally:
        for fut in remote.values():
            fut.cancel()  # an error above: the calls not yet sent are dropped (the one under way finishes)


def _fill(Ks: Sequence[int], methods: Sequence[str], steps: int, lr: float, tau: float | None, opt: str,
          owner: object, progress: Any = None, busy: Callable[[], Any] = contextlib.nullcontext
          ) -> list[tuple[Key, threading.Event]]:
    """Compute into the store the runs of ``methods`` at each of ``Ks`` that it lacks to ``steps`` and
    nobody has under way (one engine call per K, :func:`_run_ks`, inside ``busy()``; each K stored as
    soon as it is done; ``progress`` as :func:`_run_ks`'); returns ``(key, event)`` of those another
    thread has under way (not waited for here)."""
    store = _budgets()
    keys = {K: {m: _key(K, m, lr, tau, opt) for m in methods} for K in Ks}
    todo: dict[int, list[str]] = {}
    claimed: list[Key] = []
    theirs: list[tuple[Key, threading.Event]] = []
    for K in Ks:
        mine, others = store.claim(keys[K].values(), steps, owner)
        theirs += others
        if mine:
            claimed += mine
            todo[K] = [m for m in methods if keys[K][m] in mine]

    def stored(K: int, runs: Runs) -> None:
        for m in todo[K]:
            store.put(keys[K][m], runs[m])
        store.release([keys[K][m] for m in todo[K]], owner)  # whoever waits for this K goes on

    if todo:
        try:
            with busy():
                _run_ks(todo, steps, lr, tau, opt, stored, progress)
        finally:
            store.release(claimed, owner)  # (those not stored: an error)
    return theirs


def kbench_records(Ks: Sequence[int], methods: Sequence[str], steps: int, lr: float, tau: float | None,
                   opt: str, progress: Any = None) -> list[dict[str, Any]]:
    """The page's records, K by K and method by method: exactly
    ``synthetic.kdw(Ks, methods, steps, lr, opt, tau)``'s. From the store where it has them; the rest
    computed now, one engine call per K, shared with the worker processes (:func:`_run_ks`; while the
    prefetch thread pauses); a run the prefetch thread has under way is waited for, not made again.
    ``tau`` is the page's τ (used by the methods that have a primary knob). ``progress(fraction, message)``: called while runs are computed here (not
    for a lookup; see :func:`_run_ks`)."""
    owner = object()
    waits: list[tuple[Key, threading.Event]] = []
    try:
        waits += _fill(Ks, methods, steps, lr, tau, opt, owner, progress, busy=foreground)
        for _, done in waits:  # outside foreground(): the prefetch thread finishes them meanwhile
            done.wait()
        failed = sorted({key[0] for key, _ in waits})  # a prefetch run that failed: made here
        if failed:
            _fill(failed, methods, steps, lr, tau, opt, owner, progress, busy=foreground)
        store = _budgets()
        out = []
        for K in Ks:
            for m in methods:
                recs = store.get(_key(K, m, lr, tau, opt), steps)
                if recs is None:  # evicted meanwhile (a store full of other settings): run it once more
                    recs = _run_k(K, [m], steps, lr, tau, opt)[m][steps]
                out += recs
        return out
    finally:
        hush(GRACE_S)


def kbench_one(K: int, method: str, steps: int, lr: float, tau: float | None, opt: str) -> list[dict[str, Any]]:
    """The records of one (K, method) run of the double well to ``steps``
    (:func:`pcd.experiments.synthetic.kdw`, the same numbers): from the store when a run to at least
    ``steps`` was made with these settings, else one run to ``steps`` that also stores every page
    budget below it. ``tau`` only for methods with a primary knob (:func:`kbench_tau`)."""
    return kbench_records([K], [method], steps, lr, tau, opt)


def kbench_tau(method: str, tau: float) -> float | None:
    """The τ a (K, method) entry is keyed by: τ for methods that have it, else None (one entry)."""
    return tau if registry.get(method).primary_knob else None


def law_table() -> Any:
    """The measured 1.536·√(K−1) law at the page's defaults (:func:`pcd.experiments.kdw_law.table`)."""
    from pcd.experiments import kdw_law

    return kdw_law.table()


def warm() -> None:
    """The page's default view (and the budgets below its default)."""
    kbench_records(KS, available(METHODS), STEPS, LR, TAU, OPT)


def warm_later() -> None:
    """What the prefetch computes after the default view (:func:`neighbours`: both neighbouring
    learning rates, the other optimizer, τ ± 0.01, every step budget), here in the warm-up's thread;
    then it asks the prefetch thread for :func:`grid` (every learning rate with either optimizer at
    the default budget), to compute while no page computes and no view's neighbours wait. With the
    prefetch off (``PCD_NO_PREFETCH=1``), only the default view to every step budget. The warm-up
    runs it after every page's default view (:func:`pcd.studio.warmup.warm_up`)."""
    view = (tuple(KS), tuple(available(METHODS)), STEPS, LR, TAU, OPT)
    if not prefetch_on():  # no prefetch: the default view to its longest budget only (a budget change a lookup)
        kbench_records(view[0], view[1], max(STEP_CHOICES), *view[3:])
        return
    for setting in neighbours(*view):
        kbench_records(*setting)
    _prefetcher().ask_later(grid(*view))


def grid(Ks: Sequence[int], methods: Sequence[str], steps: int, lr: float, tau: float, opt: str) -> list[Setting]:
    """Every learning rate (:data:`LRS`) with either optimizer at this view's K, methods, budget and τ,
    the learning rates nearest ``lr`` first: any learning-rate / optimizer change of the view is
    then a lookup (~10 settings x ~1.2 s of CPU at the default view, once per server process)."""
    Ks, methods = tuple(int(k) for k in Ks), tuple(methods)
    by_distance = sorted(LRS, key=lambda v: abs(LRS.index(v) - LRS.index(lr)) if lr in LRS else 0)
    return [(Ks, methods, steps, v, tau, o) for v in by_distance for o in (opt, *(o for o in OPTS if o != opt))]


def neighbours(Ks: Sequence[int], methods: Sequence[str], steps: int, lr: float, tau: float, opt: str
               ) -> list[Setting]:
    """The settings one click away from a view, likeliest first: the learning rate one notch down and
    up (:data:`LRS`), the other optimizer, τ one slider step down and up (only when a method has a
    primary knob: τ changes nothing else), then the view itself to the longest budget (every budget
    move a lookup). ``(Ks, methods, steps, lr, tau, opt)`` each, as :func:`kbench_records` takes them."""
    Ks, methods = tuple(int(k) for k in Ks), tuple(methods)
    out: list[Setting] = []
    if lr in LRS:
        i = LRS.index(lr)
        out += [(Ks, methods, steps, LRS[j], tau, opt) for j in (i - 1, i + 1) if 0 <= j < len(LRS)]
    out += [(Ks, methods, steps, lr, tau, o) for o in OPTS if o != opt]
    knobbed = tuple(m for m in methods if registry.get(m).primary_knob)
    if knobbed:
        for t in (round(tau - TAU_STEP, 2), round(tau + TAU_STEP, 2)):
            if 0.0 <= t <= 1.0:
                out.append((Ks, knobbed, steps, lr, t, opt))
    if steps < max(STEP_CHOICES):
        out.append((Ks, methods, max(STEP_CHOICES), lr, tau, opt))
    return out[:PREFETCH_MAX]


def prefetch(Ks: Sequence[int], methods: Sequence[str], steps: int, lr: float, tau: float, opt: str) -> bool:
    """Ask the prefetch thread for the :func:`neighbours` of the view just drawn (it replaces what was
    queued for an earlier view); returns whether it was asked (False when turned off). Never blocks
    (beyond a lock)."""
    if not prefetch_on():
        return False
    _prefetcher().ask(neighbours(Ks, methods, steps, lr, tau, opt))
    return True


class Prefetcher(_Prefetcher):
    """The page's prefetcher (:class:`pcd.studio.prefetch.Prefetcher`): a setting's units of work are
    its Ks, one engine call each (:func:`_prefetch_k`; ``compute`` replaced in tests)."""

    def __init__(self, compute: Callable[[Setting, int, Any], Any] | None = None, max_settings: int = PREFETCH_MAX,
                 cpu_s: float = PREFETCH_CPU_S, later_cpu_s: float = LATER_CPU_S) -> None:
        super().__init__(compute or _prefetch_k, units=lambda setting: setting[0], max_settings=max_settings,
                         cpu_s=cpu_s, later_cpu_s=later_cpu_s, name="pcd-kbench-prefetch")


def _prefetch_k(setting: Setting, K: int, progress: Any) -> None:
    """One K of a prefetched setting into the store; runs a page has under way are left to it."""
    Ks, methods, steps, lr, tau, opt = setting
    _fill([K], methods, steps, lr, tau, opt, object(), progress)


_PREFETCH: list[Prefetcher] = []
_PREFETCH_LOCK = threading.Lock()


def _prefetcher() -> Prefetcher:
    """The one prefetch thread's owner per process (made on first use; its thread starts on the first ask)."""
    with _PREFETCH_LOCK:
        if not _PREFETCH:
            _PREFETCH.append(Prefetcher())
        return _PREFETCH[0]
