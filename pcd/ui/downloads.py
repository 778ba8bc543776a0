"""Downloads under a figure: a table as CSV, a figure as standalone HTML or PNG, an animation as a
GIF, data as JSON. Each file carries the settings that produced it (and the version), and is made
when it is asked for (a click), not on every rerun of the page."""
from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import streamlit as st


def _csv_bytes(df: Any, settings: dict | None) -> bytes:
    from pcd.studio import table_with_settings

    return table_with_settings(df, settings).to_csv(index=False).encode("utf-8")


def download_csv(df: Any, filename: str, label: str = "Download CSV", key: str | None = None,
                 settings: dict | None = None) -> None:
    """The table as CSV; ``settings`` (what produced it) become constant columns, plus the version.
    The file is written when it is asked for (a click), not on every rerun of the page."""
    st.download_button(label, lambda: _csv_bytes(df, settings), file_name=filename, mime="text/csv",
                       on_click="ignore", key=key or f"csv-{filename}")


def download_figure(fig: Any, filename: str, label: str = "Download figure (HTML)", key: str | None = None,
                    settings: dict | None = None) -> None:
    """The figure as a standalone HTML file (Plotly bundled, works offline), headed by its settings.

    ``fig``: a figure, or a function returning one (built only when the file is asked for). The
    HTML (~4 MB with Plotly bundled) is made on the click, not on every rerun of the page.
    """
    from pcd.studio import figure_html

    def _html() -> bytes:
        return figure_html(fig() if callable(fig) else fig, settings).encode("utf-8")

    st.download_button(label, _html, file_name=filename, mime="text/html", on_click="ignore",
                       key=key or f"html-{filename}")


def png_export(fig: Any, filename: str, key: str, label: str = "Figure (PNG)") -> None:
    """A toggle offering the figure as a static PNG (rendered offline by kaleido + Chromium).

    Off by default: a static render takes a few seconds. Degrades to a note when no exporter works.
    ``fig`` may be a function returning the figure (built only when the toggle is on).
    """
    from pcd.viz.theme import to_png_bytes

    if st.toggle("PNG export", False, key=f"{key}-toggle"):
        png = to_png_bytes(fig() if callable(fig) else fig)
        if png:
            st.download_button(label, png, file_name=filename, mime="image/png", key=f"{key}-dl")
        else:
            st.caption("PNG export needs the optional `kaleido` package and a Chromium/Chrome browser; "
                       "the HTML download works everywhere.")


def download_row(fig: Any, stem: str, key: str, table: Any = None, settings: dict | None = None) -> None:
    """The standard downloads under a figure: table as CSV (when given), figure as HTML and PNG;
    CSV and HTML carry ``settings`` (problem, methods, τ, optimizer, lr, steps, ...) and the version."""
    cols = st.columns(3)
    if table is not None:
        with cols[0]:
            download_csv(table, f"{stem}.csv", key=f"{key}_csv", settings=settings)
    with cols[1]:
        download_figure(fig, f"{stem}.html", key=f"{key}_html", settings=settings)
    with cols[2]:
        png_export(fig, f"{stem}.png", key=f"{key}_png")


def download_gif(build: Callable[[dict], bytes], filename: str, label: str = "Animation (GIF)",
                 key: str | None = None, settings: dict | None = None) -> None:
    """An animation as a GIF, built only when the button is pressed: ``build(settings)`` returns
    the bytes; the settings go into the picture (its caption strip, :mod:`pcd.viz.export`)."""
    st.download_button(label, lambda: build(dict(settings or {})), file_name=filename, mime="image/gif",
                       key=key or f"gif-{filename}")


def download_json(data: Any, filename: str, label: str = "Download JSON", key: str | None = None) -> None:
    st.download_button(label, json.dumps(data, indent=2, default=float).encode("utf-8"),
                       file_name=filename, mime="application/json", key=key or f"json-{filename}")
