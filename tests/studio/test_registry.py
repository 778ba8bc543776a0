"""The page registry (pcd.studio.registry) is the one list of pages: every script in pages/ is in it
once, each entry's module exists, the URL paths are the ones shared links already use, and the
page scripts take their title and icon from it (no page source is parsed for them)."""
from __future__ import annotations

import ast
import importlib

import pytest

from pcd.studio import registry
from pcd.studio.registry import PAGES, PAGES_DIR

# the URLs Streamlit's automatic multipage menu gave the pages (links people have): kept
OLD_URLS = ["Guided_lesson", "Gradient_geometry", "Toy_landscapes", "K_objective_benchmark", "Scale_invariance",
            "Tau_dial", "Jacobian_descent", "Constraints_vs_penalties", "Pruning_lab", "Basin_maps",
            "Training_geometry"]


def test_every_page_script_is_registered_once_in_file_order():
    scripts = sorted(p.name for p in PAGES_DIR.glob("*.py") if p.name != "__init__.py")
    assert [p.script for p in PAGES] == scripts
    assert len({p.title for p in PAGES}) == len(PAGES) and all(p.blurb and p.icon.startswith(":material/") for p in PAGES)


def test_old_urls_keep_working():
    assert [p.url_path for p in PAGES] == OLD_URLS
    assert registry.page("05_Tau_dial.py").link == "pages/05_Tau_dial.py"


def test_each_module_exists_and_warm_is_a_function():
    for p in PAGES:
        if p.module is None:
            continue
        mod = importlib.import_module(f"pcd.studio.{p.module}")
        assert callable(getattr(mod, "warm", lambda: None)), p.module


def test_unknown_page_is_a_value_error():
    with pytest.raises(ValueError, match="not a registered page"):
        registry.page("99_Nope.py")


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.script)
def test_page_script_takes_title_and_icon_from_the_registry(page):
    tree = ast.parse(page.path.read_text(encoding="utf-8"))
    calls = [n for n in ast.walk(tree) if isinstance(n, ast.Call) and getattr(n.func, "id", "") == "setup_page"]
    assert len(calls) == 1
    call = calls[0]
    assert not call.args and [ast.unparse(k.value) for k in call.keywords if k.arg is None] == [
        "this_page(__file__).setup"]
    assert not {"title", "icon", "full_plotly"} & {k.arg for k in call.keywords}
    assert page.setup == {"title": page.title, "icon": page.icon, "full_plotly": page.full_plotly}
