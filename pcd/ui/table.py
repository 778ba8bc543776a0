"""The studio's tables: a pandas DataFrame as a light HTML table (``st.html``).

Why not ``st.table``: a styled ``st.table`` makes the browser fetch and run Streamlit's Arrow
table chunks (~0.9 MB: the Arrow reader and the Styler's formatter) before the page's first
figure is drawn -- measured ~0.5 s of the toy page's cold first load on a 2-core machine. A table
of a few dozen rows needs none of it: ``table_html`` writes the formatted cells once, on the
server.

What a Styler did, a keyword does here: ``formats`` (a format string, or a callable, per column;
or one string for every numeric column), ``na_rep`` for missing values, ``styles`` (a function
value -> CSS per column, e.g. a diagnosis shaded by outcome). The index is never shown. Numbers are
right-aligned in tabular figures; cells wrap (a long word too) so a table never widens the page
at 800 px. Each cell carries its raw value as ``data-v`` (JSON), so a test reads the numbers back
exactly (``tests/pages/_apptest.py``: ``tables``).
"""
from __future__ import annotations

import html
import json
import math
import numbers
from collections.abc import Callable, Mapping
from typing import Any

import streamlit as st

CLASS = "pcd-table"
DEFAULT_FLOAT = "{:.6g}"  # a float column without a format: six significant digits

# the tables' style (pcd/ui/static/table.css) is part of every page's style sheet (pcd.ui.page.setup_page)

Format = str | Callable[[Any], str]


def _missing(v: Any) -> bool:
    """None, NaN, pd.NA, NaT (a scalar only: a list in a cell is a value)."""
    import pandas as pd

    return v is None or (pd.api.types.is_scalar(v) and bool(pd.isna(v)))


def _is_number(v: Any) -> bool:
    return isinstance(v, numbers.Number) and not isinstance(v, bool)


def _raw(v: Any) -> Any:
    """The cell's value as JSON-able data (numpy scalars to Python, non-finite floats as strings)."""
    if _missing(v):
        return None
    if hasattr(v, "item") and not isinstance(v, str):
        v = v.item()
    if isinstance(v, float) and not math.isfinite(v):
        return repr(v)
    if isinstance(v, (bool, int, float, str)):
        return v
    return str(v)


def format_cell(v: Any, fmt: Format | None, na_rep: str) -> str:
    """The text shown for ``v``: ``na_rep`` when missing, else ``fmt`` (a ``str.format`` pattern
    or a callable), else six significant digits for a float and ``str`` for anything else."""
    if _missing(v):
        return na_rep
    if fmt is None:
        fmt = DEFAULT_FLOAT if isinstance(v, float) else "{}"
    return fmt(v) if callable(fmt) else fmt.format(v)


def table_html(df: Any, *, formats: Mapping[str, Format] | str | None = None, na_rep: str = "—",
               styles: Mapping[str, Callable[[Any], str]] | None = None) -> str:
    """``df`` (a DataFrame) as an HTML ``<table>`` inside ``<div class="pcd-table">`` (see the
    module docstring). ``formats``: per column, or one pattern for every numeric column.
    ``styles``: per column, value -> CSS declarations for that cell ("" for none)."""
    cols = [str(c) for c in df.columns]
    if isinstance(formats, str):
        pattern = formats
        fmts: dict[str, Format] = {c: pattern for c, dt in zip(cols, df.dtypes) if dt.kind in "iuf"}
    else:
        fmts = {str(k): v for k, v in (formats or {}).items()}
    unknown = sorted(set(fmts) - set(cols)) + sorted(set(map(str, styles or {})) - set(cols))
    if unknown:
        raise ValueError(f"table formats/styles name columns the table does not have: {', '.join(unknown)}")
    css = {str(k): f for k, f in (styles or {}).items()}
    numeric = [dt.kind in "iuf" for dt in df.dtypes]
    head = "".join(f'<th{" class=num" if num else ""}>{html.escape(c)}</th>' for c, num in zip(cols, numeric))
    rows = []
    for values in df.itertuples(index=False, name=None):
        cells = []
        for c, v, num in zip(cols, values, numeric):
            text = html.escape(format_cell(v, fmts.get(c), na_rep))
            style = css[c](v) if c in css else ""
            attrs = (' class="num"' if num and _is_number(v) else "") + (
                f' style="{html.escape(style)}"' if style else "")
            data = html.escape(json.dumps(_raw(v), ensure_ascii=False))
            cells.append(f"<td{attrs} data-v=\"{data}\">{text}</td>")
        rows.append("<tr>" + "".join(cells) + "</tr>")
    return (f'<div class="{CLASS}"><table><thead><tr>{head}</tr></thead>'
            f"<tbody>{''.join(rows)}</tbody></table></div>")


def html_table(df: Any, *, formats: Mapping[str, Format] | str | None = None, na_rep: str = "—",
               styles: Mapping[str, Callable[[Any], str]] | None = None) -> None:
    """Show ``df`` as the studio's HTML table (arguments: :func:`table_html`)."""
    st.html(table_html(df, formats=formats, na_rep=na_rep, styles=styles))
