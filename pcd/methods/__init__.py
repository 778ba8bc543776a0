"""Every multi-objective method, batched over Gram matrices ``[B, K, K]`` -> weights ``[B, K]``.

``available()`` lists registry names in display order; ``get(name)`` returns the class and
``make(name, **hparams)`` a validated instance. One module per method family; modules register
themselves with :func:`pcd.methods.base.register` and are imported automatically.
"""
from __future__ import annotations

import importlib
import pkgutil
from typing import Any

from pcd.methods.base import _REGISTRY, COLORS, Method, MethodOutput, Param, check_gram, register

# Display order on pages and in tables (registry names). Methods not listed come after.
ORDER = [
    "pcd", "ws", "mgda", "pcgrad", "cagrad", "famo", "upgrad", "dualproj", "imtlg",
    "alignedmtl", "nashmtl", "graddrop", "rgw", "dbgd", "auxinash",
]

for _info in pkgutil.iter_modules(__path__):
    if _info.name not in ("base",) and not _info.name.startswith("_"):
        importlib.import_module(f"{__name__}.{_info.name}")


def available() -> list[str]:
    """Registry names, in display order."""
    names = list(_REGISTRY)
    return sorted(names, key=lambda n: (ORDER.index(n) if n in ORDER else len(ORDER), n))


def get(name: str) -> type[Method]:
    """The method class registered as ``name`` (case-insensitive)."""
    key = str(name).strip().lower()
    if key not in _REGISTRY:
        raise ValueError(f"unknown method {name!r}; available: {', '.join(available())}")
    return _REGISTRY[key]


def make(name: str, **hparams: Any) -> Method:
    """A validated instance of method ``name`` with the given hyper-parameters."""
    return get(name)(**hparams)


def color(name: str) -> str:
    """The method's colour (the same on every page)."""
    return COLORS.get(str(name).lower(), "#444444")


__all__ = ["Method", "MethodOutput", "Param", "available", "get", "make", "color", "register", "check_gram", "COLORS"]
