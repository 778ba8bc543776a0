"""Every CSV / HTML download of the studio pages carries the settings that produced it (the helpers
of pcd.ui write them as ``setting: <name>`` columns, a settings line or a GIF's caption strip, plus
the version): each call of ``download_csv``, ``download_figure``, ``download_row`` and
``download_gif`` in a page passes ``settings=``.

Page 08 (Pruning lab) writes each run's config into its tables itself and is left out here."""
from __future__ import annotations

import ast
from pathlib import Path

import pytest

PAGE_DIR = Path(__file__).resolve().parents[2] / "pages"
HELPERS = {"download_csv", "download_figure", "download_row", "download_gif"}
PAGES = sorted(p for p in PAGE_DIR.glob("*.py") if not p.name.startswith("08_"))


def _calls(path: Path) -> list[ast.Call]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    return [n for n in ast.walk(tree) if isinstance(n, ast.Call)
            and getattr(n.func, "id", getattr(n.func, "attr", None)) in HELPERS]


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.stem)
def test_every_download_passes_its_settings(page):
    missing = [f"{page.name}:{c.lineno}" for c in _calls(page)
               if not any(k.arg == "settings" and not (isinstance(k.value, ast.Constant) and k.value.value is None)
                          for k in c.keywords)]
    assert not missing, f"downloads without settings: {missing}"


def test_the_audit_sees_the_downloads():
    assert sum(len(_calls(p)) for p in PAGES) >= 14  # pages 01-07 and 09: the audit is not vacuous
