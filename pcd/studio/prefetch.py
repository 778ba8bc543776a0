"""Idle-time prefetch: after a page has drawn a view, the settings a user reaches with one click are
computed into the page's own caches by a background thread, so that the click is a lookup.

Bounded, and never in the way: one thread per prefetcher (one per page that prefetches), a few
settings per view (a newer view replaces them), a CPU budget per view, and a pause while any page
computes (:func:`foreground` around a page's computation pauses every prefetcher, inside a unit of work
too where it reports progress) and for a grace time after. The numbers are the page's own: the thread
calls the page's cached functions. ``PCD_NO_PREFETCH=1`` (or the warm-up's ``PCD_NO_WARMUP=1``) turns
every prefetch off (:func:`enabled`).
"""
from __future__ import annotations

import contextlib
import logging
import os
import threading
import time
import weakref
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import Any

_LOG = logging.getLogger(__name__)
GRACE_S = 0.5  # after a page's computation every prefetcher waits this long (the page draws meanwhile)
_ALL: weakref.WeakSet[Prefetcher] = weakref.WeakSet()  # every prefetcher of the process (foreground() pauses them all)
_ALL_LOCK = threading.Lock()


def enabled() -> bool:
    """The prefetch switch: off with ``PCD_NO_PREFETCH=1`` or the warm-up's ``PCD_NO_WARMUP=1``."""
    return os.environ.get("PCD_NO_PREFETCH") != "1" and os.environ.get("PCD_NO_WARMUP") != "1"


@contextlib.contextmanager
def foreground(grace_s: float = GRACE_S) -> Iterator[None]:
    """A page computes: every prefetcher pauses (at its next progress point) until it is done, and
    ``grace_s`` more after (the page draws what it computed)."""
    with _ALL_LOCK:
        pres = list(_ALL)
    with contextlib.ExitStack() as stack:
        for pre in pres:
            stack.enter_context(pre.foreground())
        yield
    if grace_s > 0:
        hush(grace_s)


def hush(seconds: float) -> None:
    """Every prefetcher waits ``seconds`` more before its next unit of work (a page draws)."""
    with _ALL_LOCK:
        pres = list(_ALL)
    for pre in pres:
        pre.quiet(seconds)


class Prefetcher:
    """One background thread computing queued settings into a page's caches, bounded:
    ``max_settings`` queued per view (:meth:`ask`, which replaces the queue) with ``cpu_s`` of its own
    CPU in all (checked before each unit of work), then, only while no view's queue is waiting, the
    settings of :meth:`ask_later` (kept until done, ``later_cpu_s`` of CPU in all, once); it pauses
    while a page computes (:meth:`foreground`, of this prefetcher or any other: :func:`foreground`)
    and for a while after (:meth:`quiet`), also inside a unit (its ``progress`` callback), and goes on
    to a newer view's queue after the unit under way. ``units(setting)``: the setting's units of work
    (the K-objective page: its Ks); ``compute(setting, unit, progress)`` does one."""

    def __init__(self, compute: Callable[[Any, Any, Any], Any], units: Callable[[Any], Iterable[Any]] = lambda s: (s,),
                 max_settings: int = 6, cpu_s: float = 12.0, later_cpu_s: float = 30.0,
                 name: str = "pcd-prefetch") -> None:
        self.compute, self.units, self.name = compute, units, name
        self.max_settings, self.cpu_s, self.later_cpu_s = max_settings, cpu_s, later_cpu_s
        self._cv = threading.Condition()
        self._queue: list[Any] = []
        self._later: list[Any] = []
        self._busy = 0
        self._quiet_until = 0.0
        self._cpu = 0.0  # CPU seconds spent on the current ask
        self._later_cpu = 0.0  # ... on the settings asked for later, in all
        self._asks = 0
        self._thread: threading.Thread | None = None
        self.done: list[Any] = []  # settings finished, last 64 (for tests and the benchmark)
        self.idle = threading.Event()  # set while both queues are empty and nothing runs
        self.idle.set()
        with _ALL_LOCK:
            _ALL.add(self)

    def _start(self) -> None:
        if self._queue or self._later:
            self.idle.clear()
        if self._thread is None or not self._thread.is_alive():
            self._thread = threading.Thread(target=self._loop, name=self.name, daemon=True)
            self._thread.start()
        self._cv.notify_all()

    def ask(self, settings: Sequence[Any]) -> None:
        """The settings one click away from the view just drawn, likeliest first (replaces the last view's)."""
        with self._cv:
            self._queue = list(settings)[: self.max_settings]
            self._cpu, self._asks = 0.0, self._asks + 1
            self._start()

    def ask_later(self, settings: Sequence[Any]) -> None:
        """Settings to compute when no view's queue waits (added to those asked for before)."""
        with self._cv:
            self._later += [s for s in settings if s not in self._later]
            self._start()

    @contextlib.contextmanager
    def foreground(self) -> Iterator[None]:
        """A page computes: the thread pauses (at its next progress point) until it is done."""
        with self._cv:
            self._busy += 1
        try:
            yield
        finally:
            with self._cv:
                self._busy -= 1
                self._cv.notify_all()

    def quiet(self, seconds: float) -> None:
        """Pause for ``seconds`` more (a page draws what it computed)."""
        with self._cv:
            self._quiet_until = max(self._quiet_until, time.monotonic() + seconds)

    def _wait_idle(self, *_: Any) -> None:
        """Block while a page computes or is in its quiet time (the engine's progress callback)."""
        with self._cv:
            while True:
                left = self._quiet_until - time.monotonic()
                if not self._busy and left <= 0:
                    return
                self._cv.wait(timeout=left if left > 0 else None)

    def _next(self) -> tuple[Any, int, bool]:
        """The next setting, the ask it belongs to, whether it is a later one (waits for one)."""
        with self._cv:
            while not self._queue and not self._later:
                self.idle.set()
                self._cv.wait()
            if self._queue:
                return self._queue[0], self._asks, False
            return self._later[0], self._asks, True

    def _loop(self) -> None:
        while True:
            setting, ask, later = self._next()
            finished = True
            for unit in self.units(setting):
                self._wait_idle()
                with self._cv:  # a newer view (its queue first), or the CPU spent
                    spent, cap = (self._later_cpu, self.later_cpu_s) if later else (self._cpu, self.cpu_s)
                    if ask != self._asks or spent >= cap:
                        finished = False
                        break
                t = time.thread_time()
                try:
                    self.compute(setting, unit, self._wait_idle)
                except Exception:  # a setting that fails is the page's to report, if it is ever shown
                    _LOG.warning("%s: %r (%r) failed", self.name, setting, unit, exc_info=True)
                with self._cv:
                    if later:
                        self._later_cpu += time.thread_time() - t
                    elif ask == self._asks:
                        self._cpu += time.thread_time() - t
            with self._cv:
                if finished:
                    self.done = (self.done + [setting])[-64:]
                queue, spent, cap = (self._later, self._later_cpu, self.later_cpu_s) if later else \
                    (self._queue, self._cpu, self.cpu_s)
                if later or ask == self._asks:  # (a view's queue replaced meanwhile is not this one)
                    if (finished or spent >= cap) and queue and queue[0] is setting:
                        queue.pop(0)
                    if spent >= cap:
                        queue.clear()
