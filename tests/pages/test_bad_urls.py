"""A shared link must always open: every page survives malformed or hostile query parameters
(wrong types, out-of-range numbers, unknown methods/problems, injection attempts) without an
exception -- it falls back to defaults or shows a friendly error."""
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

ROOT = Path(__file__).resolve().parents[2]
PAGES = sorted(p.name for p in (ROOT / "pages").glob("[0-9][0-9]_*.py"))
GARBAGE = {
    "angle": "abc", "norm2": "-1e309", "tau": "7", "methods": "nope,__import__('os')", "problem": "zzz",
    "lr": "nan", "steps": "-5", "starts": "1,2;;x", "k": "1e999", "kmin": "1", "kmax": "9999",
    "eps": "2", "c": "-3", "optimizer": "rmsprop", "f1": "__import__('os').system('true')", "f2": "x**99999",
    "dataset": "imagenet", "seed": "1.5", "eta": "inf", "x0": "[]", "tab": "9",
}


@pytest.mark.parametrize("page", PAGES)
def test_page_opens_with_hostile_query_params(page, tmp_path, monkeypatch):
    monkeypatch.setenv("PCD_DATA_DIR", str(tmp_path))
    monkeypatch.setenv("PCD_NO_AUTOSTART", "1")
    at = AppTest.from_file(str(ROOT / "pages" / page), default_timeout=180)
    for k, v in GARBAGE.items():
        at.query_params[k] = v
    at.run()
    assert not at.exception, f"{page}: {at.exception}"
