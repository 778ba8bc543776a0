"""Settings in the URL: a page reads its widgets' defaults from the query string and writes the
current settings back, so a view can be shared and reopened. A bad value never breaks a link: it
falls back to the default, with one toast per session."""
from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import streamlit as st

from pcd import _validate as V

_REFUSED = "_pcd_url_refused"  # (key, raw) pairs already reported in this session


def refused(key: str, raw: str, exc: ValueError) -> None:
    """Say once per session that a shared link's value was replaced by the default."""
    seen = st.session_state.setdefault(_REFUSED, set())
    if (key, raw) not in seen:
        seen.add((key, raw))
        st.toast(f"Link setting ignored, default used: {exc}", icon=":material/link_off:")


def url_default(key: str, default: Any, allowed: Sequence[Any] | None = None,
                low: float | None = None, high: float | None = None) -> Any:
    """The value of query parameter ``key`` as ``default``'s type, checked by
    :func:`pcd._validate.query_value` (range ``[low, high]``, members of ``allowed``), else ``default``.

    A malformed, non-finite, out-of-range or unknown value falls back to ``default`` (a toast says
    so, once) rather than crash the widget: a shared link must always open.
    """
    raw = st.query_params.get(key)
    if raw is None:
        return default
    try:
        return V.query_value(raw, default, key, allowed=allowed, low=low, high=high)
    except ValueError as exc:
        refused(key, raw, exc)
        return default


def url_json(key: str, default: Any = None) -> Any:
    """Query parameter ``key`` as strict JSON (:func:`pcd._validate.query_json`: size, nesting and
    number limits), else ``default``: a hostile value never reaches the page."""
    raw = st.query_params.get(key)
    if raw is None:
        return default
    try:
        return V.query_json(raw, key)
    except ValueError as exc:
        refused(key, raw, exc)
        return default


def url_tabs(labels: Sequence[str], key: str = "tab") -> Sequence[Any]:
    """``st.tabs(labels)`` whose selected tab is in the URL (``?tab=<label>``: Streamlit's query-parameter
    binding opens a shared link on it and writes a clicked tab back). An unknown label is ignored --
    the first tab opens, one toast says so -- never an exception."""
    raw = st.query_params.get(key)
    if raw is not None and raw not in labels:
        refused(key, raw, ValueError(f"{key} must be one of {', '.join(labels)}; got {raw!r}"))
    return st.tabs(list(labels), key=key, bind="query-params")


def url_sync(**values: Any) -> None:
    """Write the current settings into the URL so the view can be shared and reopened."""
    for key, value in values.items():
        if isinstance(value, (list, tuple)):
            text = ",".join(str(v) for v in value)
        elif isinstance(value, bool):
            text = "1" if value else "0"
        else:
            text = str(value)
        if st.query_params.get(key) != text:
            st.query_params[key] = text
