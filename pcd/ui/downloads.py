"""Downloads under a figure: a table as CSV, a figure as standalone HTML or PNG, an animation as a
GIF, data as JSON. Each file carries the settings that produced it (and the version), and is made
when it is asked for (a click), not on every rerun of the page."""
from __future__ import annotations

import json
import textwrap
from collections.abc import Callable
from typing import Any

import streamlit as st


def _csv_bytes(df: Any, settings: dict | None) -> bytes:
    from pcd.viz.stamp import table_with_settings

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
    from pcd.viz.stamp import figure_html

    def _html() -> bytes:
        return figure_html(fig() if callable(fig) else fig, settings).encode("utf-8")

    st.download_button(label, _html, file_name=filename, mime="text/html", on_click="ignore",
                       key=key or f"html-{filename}")


#: px: the width a PNG is rendered at when the figure's layout has none -- the page column the studio's
#: figures are laid out for (kaleido's own default, 700 px, drew the toy map's inset numbers over each other)
PNG_WIDTH = 1000
_STRIP_LINE_PX, _STRIP_FONT_PX = 16, 11


def png_figure(fig: Any, settings: dict | None = None, width: int = PNG_WIDTH) -> Any:
    """A copy of ``fig`` for a static PNG: ``width`` px wide unless its layout says otherwise, and with
    ``settings`` (what produced it, plus the version: :func:`pcd.viz.stamp.export_settings`) as a strip of
    small type above the plot (as the HTML download's settings line), the figure made taller by the
    strip (the plot and a legend anchored to the figure's bottom keep their places)."""
    import html

    import plotly.graph_objects as go

    out = go.Figure(fig)
    if out.layout.width is None:
        out.layout.width = int(width)
    if settings:
        from pcd.viz.stamp import export_settings

        text = " · ".join(f"{k}: {v}" for k, v in export_settings(settings).items())
        lines = textwrap.wrap(text, width=max(40, int(out.layout.width / (0.6 * _STRIP_FONT_PX))))
        strip = _STRIP_LINE_PX * len(lines) + 10
        height = out.layout.height if out.layout.height is not None else 450  # Plotly's defaults
        top = out.layout.margin.t if out.layout.margin.t is not None else 100
        bottom = out.layout.margin.b if out.layout.margin.b is not None else 80
        plot_h = max(1.0, height - top - bottom)
        out.update_layout(height=height + strip, margin={"t": top + strip})
        out.add_annotation(text="<br>".join(html.escape(line) for line in lines), name="settings strip",
                           xref="paper", yref="paper", x=0, xanchor="left", y=1 + (top + strip - 4) / plot_h,
                           yanchor="top", showarrow=False, align="left",
                           font={"size": _STRIP_FONT_PX, "color": "#57606a"})
    return out


def png_export(fig: Any, filename: str, key: str, label: str = "Figure (PNG)", settings: dict | None = None) -> None:
    """A toggle offering the figure as a static PNG (rendered offline by kaleido + Chromium), at the
    width the figure is laid out for (:data:`PNG_WIDTH` unless its layout has one), ``settings`` in a
    strip above the plot (:func:`png_figure`).

    Off by default: a static render takes a few seconds. Degrades to a note when no exporter works.
    ``fig`` may be a function returning the figure (built only when the toggle is on).
    """
    from pcd.viz.theme import to_png_bytes

    if st.toggle("PNG export", False, key=f"{key}-toggle"):
        png = to_png_bytes(png_figure(fig() if callable(fig) else fig, settings))
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
        png_export(fig, f"{stem}.png", key=f"{key}_png", settings=settings)


def download_gif(build: Callable[[dict], bytes], filename: str, label: str = "Animation (GIF)",
                 key: str | None = None, settings: dict | None = None) -> None:
    """An animation as a GIF, built only when the button is pressed: ``build(settings)`` returns
    the bytes; the settings go into the picture (its caption strip, :mod:`pcd.viz.export`)."""
    st.download_button(label, lambda: build(dict(settings or {})), file_name=filename, mime="image/gif",
                       key=key or f"gif-{filename}")


def download_json(data: Any, filename: str, label: str = "Download JSON", key: str | None = None) -> None:
    st.download_button(label, json.dumps(data, indent=2, default=float).encode("utf-8"),
                       file_name=filename, mime="application/json", key=key or f"json-{filename}")
