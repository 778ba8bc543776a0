"""Data for the exported animations (:mod:`pcd.viz.export`) that the pages' own runs do not record.

The τ dial's budget curves (:func:`pcd.experiments.synthetic.tau_sweep`) record each τ's run only at
the step budgets; an animation of those curves needs the runs at many steps. :func:`tau_budget_run`
is the same batched run (one labelled PCD instance per τ, the problem's starts, Adam) recorded at
``frames`` steps spread over the largest budget plus every budget itself.
"""
from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import numpy as np

from pcd import _validate as V
from pcd.engine import RunResult, run


def film_record(steps: int, frames: int, budgets: Iterable[int] = ()) -> list[int]:
    """The steps to record for a ``frames``-frame animation of a ``steps``-step run: ``frames``
    steps spread evenly over ``[0, steps]`` (all of them when fewer), plus every budget."""
    steps = V.integer(steps, "steps", low=1, high=V.LIMITS["steps"])
    frames = V.integer(frames, "frames", low=2, high=V.LIMITS["frames"])
    even = np.unique(np.round(np.linspace(0, steps, min(frames, steps + 1))).astype(int))
    return sorted({int(s) for s in even} | {int(b) for b in budgets if 0 <= int(b) <= steps})


def tau_budget_run(problem: str, taus: Iterable[float], budgets: Iterable[int], lr: float,
                   frames: int = 100, optimizer: str = "adam", seed: int = 0) -> RunResult:
    """PCD on ``problem`` for every τ of ``taus`` in one batched run of ``max(budgets)`` steps (the
    τ dial's :func:`pcd.experiments.synthetic.tau_sweep`, same instances and starts), recorded at
    :func:`film_record` steps: ``res.losses[m, s, t]`` is τ ``m``'s loss from start ``s``."""
    import pcd.methods as registry

    taus = [V.number(t, "tau", low=0.0, high=1.0) for t in taus]
    if not taus:
        raise ValueError("taus must list at least one tau in [0, 1], got none")
    bl = sorted({V.integer(b, "budget", low=1, high=V.LIMITS["steps"]) for b in budgets})
    if not bl:
        raise ValueError("budgets must list at least one step budget, got none")
    steps = bl[-1]
    lr = V.number(lr, "lr", low=0.0, open_low=True)
    insts: list[tuple[str, Any]] = [(f"pcd tau={t!r}", registry.make("pcd", tau=t)) for t in taus]
    if len({lab for lab, _ in insts}) != len(insts):
        raise ValueError(f"taus must be distinct, got {taus}")
    return run(problem, insts, steps=steps, optimizer=optimizer, lr=lr, seed=seed,
               record=film_record(steps, frames, bl))
