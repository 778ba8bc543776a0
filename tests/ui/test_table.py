"""The studio's HTML tables (pcd.ui.table): formatting, missing values, per-cell styles, escaping,
and the raw values read back exactly (what the page tests rely on)."""
from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from pcd.ui.table import CLASS, format_cell, table_html
from tests.pages._apptest import _TableParser


def _read(html: str) -> pd.DataFrame:
    p = _TableParser()
    p.feed(html)
    (head, rows), = p.tables
    return pd.DataFrame([r for r in rows if r], columns=head)


def _texts(html: str) -> list[str]:
    import re

    return re.findall(r"<td[^>]*>(.*?)</td>", html)


def test_formats_na_rep_and_default_float():
    df = pd.DataFrame({"method": ["PCD", "MGDA"], "g1·d": [-0.0168201, 0.25], "‖d‖": [1.0, np.nan],
                       "steps": [100, 300]})
    html = table_html(df, formats={"g1·d": "{:+.4f}"}, na_rep="—")
    assert html.startswith(f'<div class="{CLASS}"><table>')
    assert _texts(html) == ["PCD", "-0.0168", "1", "100", "MGDA", "+0.2500", "—", "300"]
    # one pattern for every numeric column
    assert _texts(table_html(df, formats="{:.2f}"))[1:4] == ["-0.02", "1.00", "100.00"]


def test_raw_values_round_trip_exactly():
    df = pd.DataFrame({"method": ["PCD", "WS"], "x": [1 / 3, 1e-300], "n": [np.int64(7), np.int64(-2)],
                       "flag": [True, False], "gap": [np.nan, math.inf]})
    back = _read(table_html(df, formats={"x": "{:.2e}"}))
    assert list(back.columns) == list(df.columns)
    assert back["x"].tolist() == [1 / 3, 1e-300]
    assert back["n"].tolist() == [7, -2] and back["flag"].tolist() == [True, False]
    assert pd.isna(back["gap"].iloc[0]) and back["gap"].iloc[1] == "inf"


def test_styles_per_cell_and_numbers_right_aligned():
    df = pd.DataFrame({"diagnosis": ["reached CMS", "stalled"], "f": [0.5, 2.0]})
    html = table_html(df, styles={"diagnosis": lambda v: "background-color: #dafbe1" if v == "reached CMS" else ""})
    assert html.count("background-color: #dafbe1") == 1 and html.count("style=") == 1
    assert html.count('<td class="num"') == 2 and "<th class=num>f</th>" in html


def test_cell_text_and_headers_are_escaped():
    evil = '<img src=x onerror="alert(1)">'
    df = pd.DataFrame({evil: [evil], "ok": ['a "quoted" & <b>']})
    html = table_html(df)
    assert "<img" not in html and "&lt;img" in html
    assert _read(html)[evil].tolist() == [evil]


def test_unknown_columns_are_refused():
    df = pd.DataFrame({"a": [1.0]})
    with pytest.raises(ValueError, match="not have: b"):
        table_html(df, formats={"b": "{:.2f}"})
    with pytest.raises(ValueError, match="not have: c"):
        table_html(df, styles={"c": lambda v: ""})


def test_format_cell_callable_and_missing():
    assert format_cell(0.25, lambda v: f"{v:.0%}", "—") == "25%"
    assert format_cell(None, "{:.2f}", "n/a") == "n/a" and format_cell(pd.NA, None, "—") == "—"
    assert format_cell(1 / 3, None, "—") == "0.333333" and format_cell("x", None, "—") == "x"
