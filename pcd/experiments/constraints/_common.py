"""Shared pieces of the constraints experiments: the published figures (seed 003, arXiv 2505.20628),
defaults, argument validation and the single-threaded torch helpers."""
from __future__ import annotations

import contextlib
import functools
import math
from typing import Any

import numpy as np

# ---- published figures (seed 003, arXiv 2505.20628; see ../shared/CLAIMS.md) ------------------
PAPER_EPS = (0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8)
PAPER_C = (0.0, 1e-3, 0.46, 1.0, 2.15, 4.6, 10.0, 100.0)
PAPER_PENALTY_RATE = (49.75, 49.75, 49.75, 50.5, 76.0, 99.75, 100.0, 100.0)
PAPER_PENALTY_ACC = (99.75, 99.75, 99.75, 99.5, 74.0, 50.25, 50.0, 50.0)
PAPER_ETA = (0.0, 1e-3, 4.6e-3, 1e-2, 0.1, 1.0, 10.0, 100.0)
PAPER_LAGRANGIAN_RATE = (49.75, 60.0, 70.0, 70.0, 70.0, 70.0, 70.0, 69.75)
PAPER_LAGRANGIAN_ACC = (99.75, 90.0, 80.0, 80.0, 80.0, 80.0, 80.0, 80.25)
PAPER_BISECTION_RUNS = 7
PAPER_OVERHEAD_PCT = {"rate": 5.2, "sparsity": 1.6}

TOY_METHODS = ("penalty", "gda", "auglag", "nupi", "pcd")
# Display names of the method families (tables, legends, figures); the ids above stay in CSV/CLI.
FAMILY_LABELS = {"penalty": "fixed penalty", "gda": "Lagrangian (GDA)", "auglag": "augmented Lagrangian",
                 "nupi": "nuPI", "pcd": "PCD"}
_KNOB = {"penalty": "c", "gda": "η", "pcd": "τ"}  # the knob named in a run's label (AL / nuPI: fixed settings)


def run_label(family: str, param: float | None = None) -> str:
    """A run's display name: the family's name plus its knob when it has one shown in the page's
    sweeps, e.g. ``run_label("penalty", 0.5) == "fixed penalty c = 0.5"``."""
    name = FAMILY_LABELS.get(family, family)
    knob = _KNOB.get(family)
    return name if knob is None or param is None else f"{name} {knob} = {param:g}"
DEFAULT_TOY_C = (0.0, 0.3, 1.0, 3.0)
DEFAULT_TAUS = (0.1, 0.5, 1.0)
HALF_PI = math.pi / 2


# ---- validation ---------------------------------------------------------------------------------

def _as_1d(values: Any, name: str) -> np.ndarray:
    try:
        arr = np.atleast_1d(np.asarray(values, dtype=np.float64))
    except (TypeError, ValueError):
        raise ValueError(f"{name} must be a number or a list of numbers, got {values!r}") from None
    if arr.ndim != 1 or arr.size == 0:
        raise ValueError(f"{name} must be a number or a non-empty list of numbers, got {values!r}")
    if not np.isfinite(arr).all():
        raise ValueError(f"{name} must be finite, got {arr.tolist()}")
    return arr


def check_eps(eps: Any) -> np.ndarray:
    """Constraint levels ``eps`` (one or many), each strictly inside (0, 1)."""
    arr = _as_1d(eps, "epsilon")
    bad = arr[(arr <= 0) | (arr >= 1)]
    if bad.size:
        raise ValueError(f"epsilon must lie strictly between 0 and 1 (constraint sin x <= eps on "
                         f"[0, pi/2]); got {bad.tolist()}")
    return arr


def check_c(c: Any) -> np.ndarray:
    """Fixed penalty coefficients ``c`` (one or many), each finite and >= 0."""
    arr = _as_1d(c, "penalty coefficient c")
    bad = arr[arr < 0]
    if bad.size:
        raise ValueError(f"penalty coefficient c must be >= 0 (a fixed weight on the constraint); "
                         f"got {bad.tolist()}")
    return arr


def _check_pos(value: Any, name: str, allow_zero: bool = False, high: float | None = None) -> float:
    try:
        v = float(value)
    except (TypeError, ValueError):
        raise ValueError(f"{name} must be a number, got {value!r}") from None
    ok = math.isfinite(v) and (v >= 0 if allow_zero else v > 0) and (high is None or v <= high)
    if not ok:
        rng = f"{'>= 0' if allow_zero else '> 0'}" + (f" and <= {high}" if high is not None else "")
        raise ValueError(f"{name} must be finite and {rng}, got {value!r}")
    return v


def _check_steps(steps: Any, high: int = 200_000, name: str = "steps") -> int:
    try:
        s = int(steps)
    except (TypeError, ValueError):
        raise ValueError(f"{name} must be an integer, got {steps!r}") from None
    if s != steps or not 1 <= s <= high:
        raise ValueError(f"{name} must be an integer in [1, {high}], got {steps!r}")
    return s


def _check_tau(tau: Any) -> np.ndarray:
    arr = _as_1d(tau, "tau")
    if ((arr < 0) | (arr > 1)).any():
        raise ValueError(f"tau must lie in [0, 1], got {arr.tolist()}")
    return arr


def _check_target(target: Any) -> float:
    try:
        t = float(target)
    except (TypeError, ValueError):
        raise ValueError(f"target rate must be a number in (0, 1), got {target!r}") from None
    if not (0 < t < 1):
        raise ValueError(f"target rate must be a fraction strictly between 0 and 1 (e.g. 0.7), got {target!r}")
    return t


def _torch():
    """torch, imported lazily (the NumPy-only parts of this module do not pay for it)."""
    import torch

    return torch


@contextlib.contextmanager
def _one_thread():
    """Run torch single-threaded inside the block and restore the caller's setting afterwards.

    These problems have 1-8 parameters per run: intra-op threads only add synchronization
    (on a loaded 2-core machine multi-threading made the loops ~20x slower)."""
    torch = _torch()
    old = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        yield torch
    finally:
        torch.set_num_threads(old)


def _single_threaded(fn):
    """Decorator: run ``fn`` inside :func:`_one_thread`."""
    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        with _one_thread():
            return fn(*args, **kwargs)
    return wrapper
