"""The widgets every page shares: a method hyper-parameter's input, the method picker, and the progress
bar of a long library computation."""
from __future__ import annotations

import math
import time
from collections.abc import Callable, Sequence
from typing import Any

import streamlit as st


def param_widget(p: Any, key: str, value: Any = None, *, label: str | None = None, help_in_label: bool = False) -> Any:
    """THE widget for a method hyper-parameter (a :class:`pcd.methods.base.Param`): a checkbox, a
    select box or a number input bounded by the Param's range, starting at ``value`` (default: the
    Param's default). The help text goes to the tooltip, or after the name with ``help_in_label``."""
    cur = p.default if value is None else value
    name = p.name if label is None else label
    if help_in_label and p.help:
        name, tip = f"{name} — {p.help}", None
    else:
        tip = p.help or None
    if p.kind == "bool":
        return st.checkbox(name, value=bool(cur), key=key, help=tip)
    if p.kind == "choice":
        return st.selectbox(name, list(p.choices), index=list(p.choices).index(cur), key=key, help=tip)
    if p.kind == "int":
        return int(st.number_input(name, value=int(cur), step=1, key=key, help=tip,
                                   min_value=int(p.low) if p.low is not None else None,
                                   max_value=int(p.high) if p.high is not None else None))
    return float(st.number_input(name, value=float(cur), key=key, format="%g", help=tip,
                                 min_value=float(p.low) if p.low is not None else None,
                                 max_value=float(p.high) if p.high is not None else None))


def method_picker(label: str, options: Sequence[str], *, key: str, default: Sequence[str] | None = None,
                  container: Any = None, help: str | None = None) -> list[str]:
    """THE method multiselect of every page: the options grouped by family (hierarchical · gradient
    aggregation · loss weighting · constrained, :func:`pcd.viz.theme.by_family`), each shown with its
    family's glyph (the marker of its figures) and display name; the tooltip lists the families.
    ``default`` None leaves the widget to its session state (a page that sets it itself)."""
    from pcd.viz import theme

    opts = theme.by_family(options)
    tip = theme.family_legend(opts) + (f"  \n\n{help}" if help else "")
    kw: dict[str, Any] = {} if default is None else {"default": list(default)}
    return list((container or st).multiselect(label, opts, format_func=theme.method_option_label, key=key,
                                              help=tip, **kw))


def throttled_progress(slot: Any, text: str | None, every_s: float = 0.4, *,
                       share: tuple[float, float] = (0.0, 1.0)) -> Callable[[float, str], None]:
    """A ``progress(fraction, message)`` callback for a library computation that draws an ``st.progress``
    bar in ``slot`` (an ``st.empty()`` or the bar itself), at most once every ``every_s`` seconds (the
    engine reports every 1/20 of a run: each bar update is a message the browser applies). The bar says
    ``"{text}… {message}"`` (``text=None``: the message alone) and stands at ``start + width * fraction``
    for ``share = (start, width)`` (one part of a longer computation), clipped to [0, 1]. Each update is a
    Streamlit call, where Streamlit stops a run whose settings the user has already changed: the
    computation stops there, and the new settings' run starts (what it had finished stays stored)."""
    last = [-math.inf]
    start, width = share

    def progress(fraction: float, message: str) -> None:
        now = time.monotonic()
        if now - last[0] >= every_s:
            last[0] = now
            slot.progress(min(max(start + width * float(fraction), 0.0), 1.0),
                          text=message if text is None else f"{text}… {message}")
    return progress
