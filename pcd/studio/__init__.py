"""The Studio's page data: one module per page (its default settings, cached computations and
``warm()``), the page registry (:mod:`pcd.studio.registry`) and the server warm-up that loops over
it (:mod:`pcd.studio.warmup`). A page script holds widgets -> its module here -> :mod:`pcd.viz`."""
from __future__ import annotations

import functools
from collections.abc import Sequence

import pcd.methods as _methods
import pcd.problems as _problems


def available(names: Sequence[str] | None = None) -> list[str]:
    """``names`` that the method registry has (a page's default method list); without ``names``,
    every registered method in display order (a page's method picker)."""
    if names is None:
        return _methods.available()
    have = set(_methods.available())
    return [m for m in names if m in have]


@functools.cache
def problem_label(key: str) -> str:
    """The menu label of a page problem (a key of :data:`pcd.problems.NAMED`): its ``display_name``."""
    return _problems.named(key).display_name or key
