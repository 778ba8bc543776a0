"""Row selection in ``st.dataframe`` that follows the runs, not the row positions.

Streamlit reports a table selection as row *positions*. When the table changes between two
renders (a new run is queued on top, one is deleted), a position can point at another run. This
helper remembers which ids each position showed at the last render, turns the selection into ids
and, when the rows moved, moves the selection with them before the table is drawn again.
"""
from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import streamlit as st


def remap(prev_ids: Sequence[Any] | None, rows: Sequence[int], ids_now: Sequence[Any]) -> tuple[list, list[int]]:
    """Pure part: ``(selected ids still present, their positions in ids_now)``."""
    prev = list(prev_ids or [])
    chosen = [prev[i] for i in rows if isinstance(i, int) and 0 <= i < len(prev)]
    now = list(ids_now)
    chosen = [i for i in dict.fromkeys(chosen) if i in now]
    return chosen, [now.index(i) for i in chosen]


def selected_ids(key: str, ids_now: Sequence[Any]) -> list:
    """Call right before ``st.dataframe(..., key=key, on_select="rerun")`` whose rows show
    ``ids_now`` in order: returns the ids the user has selected and keeps the highlighted rows
    on those ids if the rows moved since the last render."""
    ss = st.session_state
    state = ss.get(key)
    rows: list[int] = []
    if state is not None:
        try:
            rows = list(state["selection"]["rows"])
        except (KeyError, TypeError):
            rows = []
    prev = ss.get(f"{key}__ids")
    chosen, new_rows = remap(prev if prev is not None else ids_now, rows, ids_now)
    if new_rows != rows:
        ss[key] = {"selection": {"rows": new_rows, "columns": []}}
    ss[f"{key}__ids"] = list(ids_now)
    return chosen
