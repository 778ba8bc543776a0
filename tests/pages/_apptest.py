"""Opening a Studio page under Streamlit's AppTest (no browser): shared by the page and fuzz tests."""
from __future__ import annotations

import json
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import pandas as pd
from streamlit.testing.v1 import AppTest

from pcd.studio import registry

PAGE_DIR = registry.PAGES_DIR
PAGES = [p.script for p in registry.PAGES]  # every page file, in menu order (the page registry)


def open_page(page: str, params: dict[str, Any], tmp_path: Path, monkeypatch: Any, timeout: float = 180) -> AppTest:
    """Run ``pages/<page>`` once with the query parameters ``params`` (a fresh data folder, no queue
    supervisor) and return the AppTest."""
    monkeypatch.setenv("PCD_DATA_DIR", str(tmp_path))
    monkeypatch.setenv("PCD_NO_AUTOSTART", "1")
    at = AppTest.from_file(str(PAGE_DIR / page), default_timeout=timeout)
    for k, v in params.items():
        at.query_params[k] = v
    at.run()
    return at


def figure_specs(at: AppTest) -> list[dict]:
    """The figures a page drew, in order, as Plotly JSON dicts (``{"data", "layout", "frames"}``):
    the studio charts' (:func:`pcd.ui.chart.plotly_chart`), else ``st.plotly_chart``'s."""
    ours = [json.loads(json.loads(e.proto.json)["spec"]) for e in at.get("bidi_component")
            if str(getattr(e.proto, "component_name", "")).endswith("pcd_plotly")]
    return ours or [json.loads(e.proto.spec) for e in at.get("plotly_chart")]


def component_names(at: AppTest) -> list[str]:
    """Names of the custom components (``st.components.v2``) on the page, in order, charts left out."""
    names = [str(getattr(e.proto, "component_name", "")) for e in at.get("bidi_component")]
    return [n for n in names if not n.endswith("pcd_plotly")]


class _TableParser(HTMLParser):
    """Reads the studio's HTML tables (:mod:`pcd.ui.table`): header texts and each cell's raw value."""

    def __init__(self) -> None:
        super().__init__()
        self.tables: list[tuple[list[str], list[list[Any]]]] = []
        self._cell: list[str] | None = None
        self._raw: Any = None

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        a = dict(attrs)
        if tag == "table":
            self.tables.append(([], []))
        elif tag == "tr" and self.tables:
            self.tables[-1][1].append([])
        elif tag in ("th", "td"):
            self._cell, self._raw = [], json.loads(a["data-v"] or "null") if "data-v" in a else None

    def handle_data(self, data: str) -> None:
        if self._cell is not None:
            self._cell.append(data)

    def handle_endtag(self, tag: str) -> None:
        if tag in ("th", "td") and self._cell is not None:
            head, rows = self.tables[-1]
            if tag == "th":
                head.append("".join(self._cell))
            else:
                rows[-1].append(self._raw)
            self._cell = None


def tables(at: AppTest) -> list[pd.DataFrame]:
    """The studio tables (:func:`pcd.ui.table.html_table`) a page showed, in order, as DataFrames of
    the cells' raw values (what ``st.table(...).value`` gave)."""
    out = []
    for e in at.get("html"):
        body = str(getattr(e.proto, "body", ""))
        if 'class="pcd-table"' not in body:
            continue
        parser = _TableParser()
        parser.feed(body)
        for head, rows in parser.tables:
            out.append(pd.DataFrame([r for r in rows if r], columns=head))
    return out
