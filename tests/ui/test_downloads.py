"""The PNG download's figure (pcd.ui.downloads.png_figure): rendered at the width the studio's figures
are laid out for (kaleido's 700 px default drew the toy map's inset numbers over each other), with the
settings that produced it in a strip above the plot; the plot area itself keeps its size."""
from __future__ import annotations

import plotly.graph_objects as go
import pytest

from pcd.ui.downloads import PNG_WIDTH, png_figure


def _fig(**layout):
    return go.Figure(go.Scatter(x=[0, 1], y=[1, 0]), layout=dict(height=500, margin=dict(t=30, b=120), **layout))


def test_width_is_the_layout_width_else_the_studio_column():
    assert png_figure(_fig()).layout.width == PNG_WIDTH == 1000
    assert png_figure(_fig(width=640)).layout.width == 640
    fig = _fig()
    png_figure(fig, {"problem": "valleys"})
    assert fig.layout.width is None and len(fig.layout.annotations) == 0  # the page's figure is left alone


def test_settings_strip_names_every_setting_and_the_version_above_the_plot():
    settings = {"problem": "valleys", "methods": ["pcd", "mgda"], "tau": 0.02, "optimizer": "adam", "lr": 0.02,
                "steps": 1000, "starts": "presets"}
    fig = png_figure(_fig(), settings)
    strip = [a for a in fig.layout.annotations if a.name == "settings strip"]
    assert len(strip) == 1
    text = strip[0].text
    for key, value in [("problem", "valleys"), ("tau", "0.02"), ("optimizer", "adam"), ("lr", "0.02"),
                       ("steps", "1000"), ("starts", "presets")]:
        assert f"{key}: {value}" in text
    assert "methods: PCD, MGDA" in text and "version: pcd " in text  # display names, as the HTML download
    # the figure grows by the strip at its top; the plot area keeps its height
    grow = fig.layout.height - 500
    assert grow > 0 and fig.layout.margin.t == 30 + grow and fig.layout.margin.b == 120
    assert strip[0].yanchor == "top" and strip[0].y > 1  # above the plot, in the added top margin
    plot_h = 500 - 30 - 120
    assert strip[0].y * plot_h <= plot_h + 30 + grow  # inside the figure


@pytest.mark.parametrize("settings", [None, {}])
def test_no_settings_no_strip(settings):
    fig = png_figure(_fig(), settings)
    assert fig.layout.height == 500 and not fig.layout.annotations
