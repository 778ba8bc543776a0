"""A shared link must always open: every page survives malformed or hostile query parameters
(wrong types, out-of-range numbers, unknown methods/problems, injection attempts) without an
exception -- it falls back to defaults or shows a friendly error."""

import pytest

from tests.pages._apptest import PAGES, open_page

GARBAGE = {
    "angle": "abc", "norm2": "-1e309", "tau": "7", "methods": "nope,__import__('os')", "problem": "zzz",
    "lr": "nan", "steps": "-5", "starts": "1,2;;x", "k": "1e999", "kmin": "1", "kmax": "9999",
    "eps": "2", "c": "-3", "optimizer": "rmsprop", "f1": "__import__('os').system('true')", "f2": "x**99999",
    "dataset": "imagenet", "seed": "1.5", "eta": "inf", "x0": "[]", "tab": "9",
}


@pytest.mark.parametrize("page", PAGES)
def test_page_opens_with_hostile_query_params(page, tmp_path, monkeypatch):
    at = open_page(page, GARBAGE, tmp_path, monkeypatch)
    assert not at.exception, f"{page}: {at.exception}"


def _geometry(query, tmp_path, monkeypatch):
    at = open_page("01_Gradient_geometry.py", query, tmp_path, monkeypatch)
    assert not at.exception
    return at


def test_a_bad_shared_value_falls_back_to_the_default_and_says_so(tmp_path, monkeypatch):
    at = _geometry({"angle": "1e999", "tau": "7", "norm2": "nan", "methods": "nope,pcd,ws"}, tmp_path, monkeypatch)
    assert at.slider(key="geo_angle").value == 150
    assert at.slider(key="geo_tau").value == 0.3
    assert at.slider(key="geo_norm2").value == 1.0
    assert at.multiselect(key="geo_methods").value == ["pcd", "ws"]  # the unknown method is left out
    toasts = " ".join(t.value for t in at.toast)
    assert "angle must be" in toasts and "tau must be in [0.0, 1.0]" in toasts and "norm2 must be" in toasts


def test_a_good_shared_value_is_read(tmp_path, monkeypatch):
    at = _geometry({"angle": "90", "tau": "0.5", "norm2": "2.0", "g3": "1"}, tmp_path, monkeypatch)
    assert (at.slider(key="geo_angle").value, at.slider(key="geo_tau").value) == (90, 0.5)
    assert at.slider(key="geo_norm2").value == 2.0 and at.toggle(key="geo_g3").value is True
    assert not at.toast
