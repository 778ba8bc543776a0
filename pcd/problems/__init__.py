"""Batched landscapes: analytic objectives and exact gradients over many points at once (float64).

Registry::

    pcd.problems.available()            -> ["saddle2d", "double_well", "scale", "two_task", "quadratic", "custom"]
    pcd.problems.make(name, **params)   -> a validated :class:`Problem`
    pcd.problems.get(name)              -> its class

Every problem gives ``losses_and_jacobian(x [B, dim]) -> (L [B, K], J [B, K, dim])`` (objective 0
is the primary), plotting ``bounds``, ``default_starts()``, ``optima()``, ``pareto_set()`` and a
``grid(nx, ny)`` for contour backgrounds. See :mod:`pcd.problems.base`.
"""
from __future__ import annotations

import importlib
import pkgutil
from typing import Any

from pcd.problems.base import _REGISTRY, Problem, check_points, register

ORDER = ["saddle2d", "double_well", "scale", "two_task", "quadratic", "custom"]

for _info in pkgutil.iter_modules(__path__):
    if _info.name not in ("base",) and not _info.name.startswith("_"):
        importlib.import_module(f"{__name__}.{_info.name}")


# The problems the Studio pages offer, by key (one list: the toy, basin, τ and lesson pages pick
# from it; each shows ``problem.display_name``): key -> (registry name, parameters). A registered
# problem not listed here is offered under its own name with its defaults.
NAMED: dict[str, tuple[str, dict[str, Any]]] = {
    "saddle2d": ("saddle2d", {}),
    "double_well": ("double_well", {"K": 2, "dim": 2}),   # the K = 2 slice: two coordinates, one secondary
    "scale": ("scale", {}),
    "two_task": ("two_task", {}),
    "quadratic": ("quadratic", {}),
    "quadratic_torchjd": ("quadratic", {"variant": "torchjd"}),
    "custom": ("custom", {}),
}


def named(key: str, **params: Any) -> Problem:
    """The page problem ``key``: an entry of :data:`NAMED`, else a registered problem with its
    defaults (``params`` on top, e.g. a custom problem's formulas)."""
    k = str(key).strip().lower()
    if k not in NAMED and k not in _REGISTRY:
        raise ValueError(f"unknown problem {key!r}; allowed: {', '.join(dict.fromkeys([*NAMED, *available()]))}")
    name, base = NAMED.get(k, (k, {}))
    return make(name, **{**base, **params})


def available() -> list[str]:
    """Registry names, in display order."""
    return sorted(_REGISTRY, key=lambda n: (ORDER.index(n) if n in ORDER else len(ORDER), n))


def get(name: str) -> type[Problem]:
    """The problem class registered as ``name`` (case-insensitive)."""
    key = str(name).strip().lower()
    if key not in _REGISTRY:
        raise ValueError(f"unknown problem {name!r}; available: {', '.join(available())}")
    return _REGISTRY[key]


def make(name: str | Problem, **params: Any) -> Problem:
    """A validated problem instance (an instance passed in is returned as is, without params)."""
    if isinstance(name, Problem):
        if params:
            raise ValueError("make(): parameters given together with a problem instance")
        return name
    cls = get(name)
    try:
        return cls(**params)
    except TypeError as exc:  # unknown keyword -> a ValueError with the allowed ones
        import inspect
        allowed = [p for p in inspect.signature(cls.__init__).parameters if p != "self"]
        raise ValueError(f"{cls.name}: bad parameters {sorted(params)}; allowed: {', '.join(allowed) or 'none'} ({exc})") from None


__all__ = ["NAMED", "Problem", "available", "check_points", "get", "make", "named", "register"]
