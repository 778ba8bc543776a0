"""The studio's front-end code lives in front-end files (pcd/ui/static/: CSS, JavaScript, HTML),
read once per process, shipped as package data; no Python module of pcd.ui carries a script or a
style sheet in a string, and pcd.ui's public names stay importable from pcd.ui."""
from __future__ import annotations

import fnmatch
import re
import tomllib
from pathlib import Path

import pytest

import pcd.ui as ui
from pcd.ui import _assets, chart, controls, table

ROOT = Path(__file__).resolve().parents[2]
STATIC = ROOT / "pcd" / "ui" / "static"


def test_every_front_end_file_is_package_data():
    globs = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["package-data"]["pcd"]
    files = sorted(p.relative_to(ROOT / "pcd").as_posix() for p in STATIC.iterdir() if p.is_file())
    assert files, "pcd/ui/static/ is empty"
    for f in files:
        assert any(fnmatch.fnmatch(f, g) for g in globs), f"{f} is not in [tool.setuptools.package-data]"


def test_every_front_end_file_is_used_and_every_python_module_is_free_of_front_end_code():
    sources = {p.name: p.read_text() for p in (ROOT / "pcd" / "ui").glob("*.py")}
    text = "\n".join(sources.values())
    for f in STATIC.iterdir():
        assert f'"{f.name}"' in text or f"'{f.name}'" in text, f"static/{f.name} is read by no module"
    for name, src in sources.items():
        for marker in ("export default function", "addEventListener", "querySelector", "@media", "<script>("):
            assert marker not in src, f"pcd/ui/{name} holds front-end code ({marker!r}); it belongs in pcd/ui/static/"


def test_components_get_the_files_text():
    assert chart._CHART_JS.startswith(_assets.asset("plotly_loader.js"))
    assert "export default function(component)" in chart._CHART_JS and "window.__pcdLoadPlotly" in chart.LOADER_JS
    assert controls._PLAYER_JS == _assets.asset("player.js") and 'class="pcd-player"' in controls._PLAYER_HTML
    assert "export default function(component)" in controls._DRAG_JS
    assert "export default function(component)" in controls._TOP_JS


def test_style_blocks_have_no_blank_line_and_carry_every_page_sheet():
    """st.markdown renders a <style> block as HTML only up to its first blank line."""
    css = ui.page.page_css()
    assert css.startswith("<style>") and css.endswith("</style>") and "\n\n" not in css
    assert f".{table.CLASS} td.num" in css and ".pcd-claim" in css
    pres = ui.presenter.presenter_css()
    assert "\n\n" not in pres and "html {font-size" in pres


def test_asset_takes_only_a_file_name_and_reads_it_once():
    for bad in ("", "../chart.py", "/etc/passwd", "sub/x.js", ".hidden"):
        with pytest.raises(ValueError, match="file name"):
            _assets.asset(bad)
    assert _assets.asset("chart.css") is _assets.asset("chart.css")


def test_public_names_are_importable_from_pcd_ui():
    for name in ui.__all__:
        assert getattr(ui, name) is not None, name
    from pcd.ui import (  # noqa: F401  (what the pages import)
        claim,
        download_csv,
        download_figure,
        method_picker,
        page_link,
        param_widget,
        presenter_mode,
        settings_panel,
        setup_page,
        show_error,
        url_default,
        url_json,
        url_sync,
    )
    assert re.fullmatch(r"PlotlyChart\..+\.js", ui.plotly_chunk() or "PlotlyChart.x.js")
