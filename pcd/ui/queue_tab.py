"""The Pruning lab's runs table: a row order that holds still under a selection.

Why (issue 29, part 7): the queue tab redraws the table every ~2 s while runs are active, and its
natural order (running runs pinned on top, then newest first) changes whenever a run starts, ends or
is queued. ``st.dataframe`` reports and keeps a selection as row *positions*, so after each such
reorder :func:`pcd.ui.selection.selected_ids` had to move the selection with its runs by writing the
new positions into ``st.session_state`` -- a *programmatic* selection that Streamlit sends to the
browser with the refreshed table. A click made while that refresh was on its way (select-all on
the header box, a row's box) was then overwritten in the browser by the positions the refresh had
computed from the selection *before* the click: the select-all collapsed back to the previously
selected (already cancelled) run and the button stayed at "Cancel (0)". A busy machine makes a
refresh slower and that window wider, which is why it showed only in full CI runs.

The fix removes the cause instead of narrowing the window: while any row is selected, the table
keeps the row order it showed (rows whose runs still exist keep their positions; runs that are new
since are added *below*), so a refresh never moves a selected row and never needs to rewrite the
selection. With nothing selected the table takes its natural order again. Positions therefore mean
the same runs in the browser and on the server, whenever the click arrives. (A selected run deleted
elsewhere still shifts the rows below it: the selection then follows its runs as before.)
"""
from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import streamlit as st

from pcd.ui.selection import selected_ids


def natural_order(runs: Sequence[dict], running: Sequence[dict], first_page: bool) -> list[int]:
    """Ids in the table's natural order: on the first page the running runs pinned on top (a run
    started long ago would otherwise sink below the newer queued rows, out of the table's window),
    then ``runs`` as given (newest first)."""
    pinned = [int(r["id"]) for r in running] if first_page else []
    return pinned + [int(r["id"]) for r in runs if int(r["id"]) not in set(pinned)]


def table_order(previous: Sequence[int] | None, natural: Sequence[int], *, hold: bool,
                exists: Callable[[int], bool] = lambda _i: True) -> list[int]:
    """The row order to draw. ``hold`` (rows are selected) and a ``previous`` order: that order with
    the runs that no longer ``exists`` dropped and the ids of ``natural`` not in it appended, so
    no shown run changes position; otherwise ``natural``."""
    if not hold or not previous:
        return list(natural)
    nat = set(natural)
    kept = [i for i in dict.fromkeys(int(i) for i in previous) if i in nat or exists(i)]
    seen = set(kept)
    return kept + [int(i) for i in natural if int(i) not in seen]


def _selected_rows(key: str) -> list[int]:
    state = st.session_state.get(key)
    try:
        return [int(i) for i in state["selection"]["rows"]]  # type: ignore[index]
    except (KeyError, TypeError, ValueError):
        return []


def table_runs(store: Any, data: Any, key: str) -> tuple[list[dict], list]:
    """The runs to draw in the table ``key`` (in :func:`table_order`) and the ids selected in it.
    ``data`` is a :class:`pcd.jobs.queue_view.QueuePage`; runs held in the order that have left its
    page are read with ``store.get`` (deleted ones dropped). Call right before
    ``st.dataframe(..., key=key, on_select="rerun")``."""
    ss = st.session_state
    first = data.offset == 0
    natural = natural_order(data.runs, data.running if first else [], first)
    by_id: dict[int, dict] = {int(r["id"]): r for r in list(data.runs) + (list(data.running) if first else [])}
    held = ss.get(f"{key}__order")
    previous = held["ids"] if isinstance(held, dict) and held.get("offset") == data.offset else None
    extra: dict[int, dict | None] = {}

    def exists(i: int) -> bool:
        if i not in extra:
            try:
                extra[i] = store.get(i)
            except ValueError:  # deleted (elsewhere, or by this table's Delete)
                extra[i] = None
        return extra[i] is not None

    order = table_order(previous, natural, hold=bool(_selected_rows(key)), exists=exists)
    for i, r in extra.items():
        if r is not None:
            by_id[i] = r
    order = [i for i in order if i in by_id]
    ss[f"{key}__order"] = {"offset": data.offset, "ids": order}
    chosen = selected_ids(key, order)
    return [by_id[i] for i in order], chosen
