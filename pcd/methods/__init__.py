"""Every multi-objective method, batched over Gram matrices ``[B, K, K]`` -> a :class:`Step`.

``available()`` lists registry names in display order, ``families()`` groups them by family
(hierarchical, gradient aggregation, loss weighting, constrained); ``get(name)`` returns the class,
``make(name, **hparams)`` a validated instance and ``resolve(...)`` an instance whose capabilities
(losses, Jacobian) the caller has checked once, up front. One module per method family; modules
register themselves with :func:`pcd.methods.base.register` and are imported automatically. The
contract (``init`` / ``update`` / ``Step.direction``, claims, ``primary_knob``) is in
:mod:`pcd.methods.base`.
"""
from __future__ import annotations

import importlib
import pkgutil
from collections.abc import Iterable
from typing import Any

from pcd.methods.base import (
    _REGISTRY,
    CAPABILITIES,
    CLAIMS,
    FAMILIES,
    DirectionMethod,
    Kernel,
    Method,
    MethodOutput,
    Param,
    Step,
    check_capabilities,
    check_gram,
    register,
)

# Display order on pages and in tables (registry names). Methods not listed come after.
ORDER = [
    "pcd", "ws", "mgda", "pcgrad", "cagrad", "famo", "upgrad", "dualproj", "imtlg",
    "alignedmtl", "nashmtl", "graddrop", "rgw", "dbgd", "auxinash",
    "uw", "dwa", "gls", "stch",
    "config", "fairgrad", "gradvac", "excessmtl", "crmogm", "modo", "sdmgrad", "krum", "trimmedmean",
]

for _info in pkgutil.iter_modules(__path__):
    if _info.name not in ("base",) and not _info.name.startswith("_"):
        importlib.import_module(f"{__name__}.{_info.name}")


def available() -> list[str]:
    """Registry names, in display order."""
    names = list(_REGISTRY)
    return sorted(names, key=lambda n: (ORDER.index(n) if n in ORDER else len(ORDER), n))


def families() -> dict[str, list[str]]:
    """Family (:data:`FAMILIES`, in that order) -> its registry names in display order; every
    family is a key, an empty list when no method of it is registered (e.g. ``"constrained"``)."""
    out: dict[str, list[str]] = {f: [] for f in FAMILIES}
    for n in available():
        out[_REGISTRY[n].family].append(n)
    return out


def get(name: str) -> type[Method]:
    """The method class registered as ``name`` (case-insensitive)."""
    key = str(name).strip().lower()
    if key not in _REGISTRY:
        raise ValueError(f"unknown method {name!r}; available: {', '.join(available())}")
    return _REGISTRY[key]


def make(name: str, **hparams: Any) -> Method:
    """A validated instance of method ``name`` with the given hyper-parameters."""
    return get(name)(**hparams)


def parse_names(methods: Any, *, duplicates: str = "error") -> list[str]:
    """THE method-name parser: ``"pcd, ws"`` or an iterable of names -> validated lower-case registry
    names in the given order. ``duplicates``: ``"error"`` (a name listed twice is a ValueError) or
    ``"drop"`` (later repeats are dropped). Unknown names raise, listing the available ones."""
    if isinstance(methods, str):
        methods = [m for m in (p.strip() for p in methods.split(",")) if m]
    try:
        names = [str(m).strip().lower() for m in methods]
    except TypeError:
        raise ValueError(f"methods must be a list of method names, got {methods!r}") from None
    if not names:
        raise ValueError(f"no methods given; available: {', '.join(available())}")
    for n in names:
        get(n)  # raises "unknown method ..."
    if duplicates == "drop":
        return list(dict.fromkeys(names))
    if len(set(names)) != len(names):
        raise ValueError(f"a method is listed twice: {names}")
    return names


def resolve(method: str | Method, hparams: dict | None = None, *,
            provides: Iterable[str] = CAPABILITIES) -> Method:
    """A method instance (a registry name with ``hparams``, or an instance as is) that needs nothing
    beyond what the caller ``provides`` (:data:`CAPABILITIES`): checked here, once, not per call."""
    if isinstance(method, Method):
        if hparams:
            raise ValueError("pass hyper-parameters either in the Method instance or in hparams, not both")
        inst = method
    else:
        inst = make(method, **(hparams or {}))
    check_capabilities(inst, provides)
    return inst


__all__ = ["Method", "DirectionMethod", "Kernel", "Step", "MethodOutput", "Param", "CLAIMS", "CAPABILITIES", "FAMILIES",
           "available", "families", "get",
           "make", "resolve", "parse_names", "register", "check_gram", "check_capabilities"]
