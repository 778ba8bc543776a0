"""Shared Streamlit helpers of the studio's pages. Only presentation lives here -- no math.

One module per concern; every public name is importable from ``pcd.ui`` (the pages do):

* :mod:`pcd.ui.page` -- page set-up (:func:`setup_page`), settings panel, claims, errors, links;
* :mod:`pcd.ui.url_state` -- settings in the URL (``url_default``, ``url_json``, ``url_sync``, ``url_tabs``);
* :mod:`pcd.ui.presenter` -- presenter mode (``?present=1``);
* :mod:`pcd.ui.embed` -- ``?hide=`` for embedded views;
* :mod:`pcd.ui.downloads` -- CSV / HTML / PNG / GIF / JSON downloads carrying their settings;
* :mod:`pcd.ui.preload` -- Plotly.js preloading;
* :mod:`pcd.ui.widgets` -- the hyper-parameter widget and the method picker;
* :mod:`pcd.ui.chart`, :mod:`pcd.ui.controls`, :mod:`pcd.ui.table` -- charts, lecturer controls, tables.

The style sheets and the components' JavaScript and HTML are files in ``pcd/ui/static/``
(read once per process, :mod:`pcd.ui._assets`).
"""
from __future__ import annotations

from pcd.ui.downloads import download_csv, download_figure, download_gif, download_json, download_row, png_export
from pcd.ui.embed import HIDE_PARTS, MAX_HIDE, hidden_parts, hide_css, parse_hide
from pcd.ui.page import (
    APP_TITLE,
    FAVICON,
    LOGO,
    claim,
    figure_grid,
    figure_row,
    hand_over,
    page_link,
    rest_of_page_follows,
    settings_panel,
    setup_page,
    show_error,
    stop_page,
)
from pcd.ui.preload import plotly_chunk, preload_plotly
from pcd.ui.presenter import PRESENT_PARAM, presenter_mode, text_scale
from pcd.ui.url_state import url_default, url_json, url_sync, url_tabs
from pcd.ui.widgets import method_picker, param_widget, throttled_progress

__all__ = [
    "APP_TITLE", "FAVICON", "HIDE_PARTS", "LOGO", "MAX_HIDE", "PRESENT_PARAM",
    "claim", "download_csv", "download_figure", "download_gif", "download_json", "download_row", "figure_grid", "figure_row",
    "hand_over", "hidden_parts", "hide_css", "method_picker", "page_link", "param_widget", "parse_hide", "plotly_chunk",
    "png_export", "preload_plotly", "presenter_mode", "rest_of_page_follows", "settings_panel", "setup_page",
    "show_error", "stop_page", "throttled_progress",
    "text_scale", "url_default", "url_json", "url_sync", "url_tabs",
]
