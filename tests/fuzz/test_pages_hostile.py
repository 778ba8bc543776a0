"""Structured hostile query values on every page: the page opens, with no exception.

Uniform garbage is tests/pages/test_bad_urls.py; here each page gets structured values (deep JSON,
400-digit numbers, wrong JSON types, a 398-digit formula literal, NUL bytes, huge lists) on every
query key any page reads, in three rotations; page 2 also gets each of the issue's ``hp`` cases."""
from __future__ import annotations

import re

import pytest

from tests.pages._apptest import PAGE_DIR, PAGES, open_page

KEYS = sorted({m for p in PAGE_DIR.glob("*.py")
               for m in re.findall(r'url_(?:default|json)\("([a-z0-9_]+)"', p.read_text())})
BIG = "9" * 400
DEEP = "[" * 5000 + "]" * 5000
HOSTILE = [
    DEEP, BIG, "-" + BIG, "1e999", "nan", '{"pcd": 5}', '{"cagrad": null}', '{"ws": {"w": [1, 2]}}',
    "x*" + "9" * 398, "\x00", "a" * 20000, ",".join(["pcd"] * 2000), '{"a":' * 50 + "1" + "}" * 50,
    "[1,2,3]", "true", "null", '"x"', "-0", "1e-400", "0x10", "1_0",
]
HP_CASES = ['{"pcd":5}', '{"cagrad":null}', '{"ws":{"w":[1,2]}}', DEEP, '{"pcd":{"tau":' + BIG + '}}',
            '{"cagrad":{"c":' + BIG + '}}', '{"mgda":{"x":1}}', '{"nashmtl":{"max_norm":"0.1"}}', "[]", BIG]


def _open(page, params, tmp_path, monkeypatch):
    return open_page(page, params, tmp_path, monkeypatch, timeout=240)


@pytest.mark.slow
@pytest.mark.parametrize("rotation", [0, 1, 2])
@pytest.mark.parametrize("page", PAGES)
def test_page_opens_with_structured_hostile_values(page, rotation, tmp_path, monkeypatch):
    params = {k: HOSTILE[(i * 3 + rotation) % len(HOSTILE)] for i, k in enumerate(KEYS)}
    at = _open(page, params, tmp_path, monkeypatch)
    assert not at.exception, f"{page} rotation {rotation}: {at.exception}"


@pytest.mark.parametrize("hp", HP_CASES)
def test_toy_page_hp_cases(hp, tmp_path, monkeypatch):
    at = _open("02_Toy_landscapes.py", {"hp": hp, "methods": "pcd,cagrad,ws,nashmtl", "steps": "100"},
               tmp_path, monkeypatch)
    assert not at.exception, f"hp={hp[:40]}: {at.exception}"


def test_toy_page_398_digit_literal_is_a_formula_error(tmp_path, monkeypatch):
    at = _open("02_Toy_landscapes.py", {"problem": "custom", "f1": "x*" + "9" * 398}, tmp_path, monkeypatch)
    assert not at.exception
    assert any("out of range" in e.value for e in at.error), [e.value for e in at.error]


def test_toy_page_reports_a_domain_error_as_such(tmp_path, monkeypatch):
    at = _open("02_Toy_landscapes.py", {"problem": "custom", "f1": "log(x) + y**2", "steps": "100"},
               tmp_path, monkeypatch)
    assert not at.exception
    # one warning: where on the map the formula is undefined, and why (the map hatches that part)
    assert any("undefined" in w.value and "log of a number <= 0" in w.value for w in at.warning), \
        [w.value for w in at.warning]
