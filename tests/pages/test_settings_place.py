"""One layout: every page keeps its settings in the same place -- a settings panel
(``pcd.ui.settings_panel``) under the title and intro, above the figure -- and the sidebar holds
only the menu and the presenter-mode toggle (the browser test checks the panel sits above the
first figure at every viewport)."""
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

ROOT = Path(__file__).resolve().parents[2]
# cheap but representative views (the basin page at its smallest grid)
PAGES = {
    "01_Gradient_geometry.py": {}, "02_Toy_landscapes.py": {"methods": "pcd,ws", "steps": "200"},
    "03_K_objective_benchmark.py": {"kmax": "3", "steps": "200"}, "04_Scale_invariance.py": {"steps": "200"},
    "05_Tau_dial.py": {"budgets": "30"}, "06_Jacobian_descent.py": {"samples": "1"},
    "07_Constraints_vs_penalties.py": {}, "09_Basin_maps.py": {"grid": "25", "methods": "pcd,ws", "steps": "200"},
}
WIDGETS = ("button", "checkbox", "color_picker", "date_input", "multiselect", "number_input", "radio",
           "select_slider", "selectbox", "slider", "text_area", "text_input", "time_input", "toggle")


@pytest.mark.parametrize("page", sorted(PAGES))
def test_settings_are_in_the_page_not_the_sidebar(page, tmp_path, monkeypatch):
    monkeypatch.setenv("PCD_DATA_DIR", str(tmp_path))
    monkeypatch.setenv("PCD_NO_AUTOSTART", "1")
    at = AppTest.from_file(str(ROOT / "pages" / page), default_timeout=240)
    for k, v in PAGES[page].items():
        at.query_params[k] = v
    at.run()
    assert not at.exception, at.exception
    in_sidebar = [(kind, w.key) for kind in WIDGETS for w in getattr(at.sidebar, kind)]
    assert in_sidebar == [("toggle", "pcd_present")], in_sidebar
    in_main = sum(len(getattr(at.main, kind)) for kind in WIDGETS)
    assert in_main >= 2  # the settings are there, in the page
