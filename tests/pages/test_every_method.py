"""Issue 27: every registered method is offered and runs on every page that chooses methods
(geometry, toy landscapes, K-objective, scale, basin maps, the pruning lab's picker); a method
that cannot run on a problem (a loss-weighting method refusing the negative losses of
``two_task``) shows its one-line reason, never a traceback. Small settings, all methods at once."""
from __future__ import annotations

import pcd.methods as registry
from tests.pages._apptest import figure_specs, open_page, tables

ALL = registry.available()
LABELS = {m: registry.get(m).display_name for m in ALL}
# on two_task f2 < 0: the methods whose weights need non-negative losses refuse it (measured: these two)
REFUSE_NEGATIVE = ("uw", "gls")


def _ok(at) -> None:
    assert not at.exception, at.exception
    assert not at.error, [e.value for e in at.error]


def _names(spec: dict) -> set[str]:
    return {str(t.get("name")) for t in spec["data"]}


def _refusals(at) -> dict[str, str]:
    """``{method: message}`` of the page's '<label> failed: …' warnings."""
    out = {}
    for w in at.warning:
        for m, label in LABELS.items():
            if str(w.value).startswith(f"{label} failed: "):
                out[m] = str(w.value)
    return out


def test_geometry_page_draws_every_method(tmp_path, monkeypatch):
    at = open_page("01_Gradient_geometry.py", {"methods": ",".join(ALL)}, tmp_path, monkeypatch)
    _ok(at)
    assert at.multiselect(key="geo_methods").value == ALL
    assert set(LABELS.values()) <= _names(figure_specs(at)[0])
    assert not at.warning  # no method fails on two gradients
    table = tables(at)[0]
    assert list(table["method"]) == [LABELS[m] for m in ALL]
    k3 = open_page("01_Gradient_geometry.py", {"methods": ",".join(ALL), "g3": "true", "angle3": -110},
                   tmp_path, monkeypatch)  # K = 3: every method again
    _ok(k3)
    assert k3.toggle(key="geo_g3").value and set(LABELS.values()) <= _names(figure_specs(k3)[0])
    assert not k3.warning


def test_toy_page_runs_every_method_and_names_the_refusals(tmp_path, monkeypatch):
    at = open_page("02_Toy_landscapes.py", {"methods": ",".join(ALL), "problem": "two_task", "steps": 200},
                   tmp_path, monkeypatch)
    _ok(at)
    assert set(LABELS.values()) <= _names(figure_specs(at)[0])
    refused = _refusals(at)
    assert sorted(refused) == sorted(REFUSE_NEGATIVE)
    for msg in refused.values():
        assert "losses must be >= 0" in msg and "\n" not in msg and "Traceback" not in msg
    diag = tables(at)[0]
    assert set(diag["method"]) == set(LABELS.values())


def test_k_objective_page_runs_every_method_and_shows_the_measured_verdicts(tmp_path, monkeypatch):
    at = open_page("03_K_objective_benchmark.py", {"methods": ",".join(ALL), "kmin": 2, "kmax": 3, "steps": 200},
                   tmp_path, monkeypatch)
    _ok(at)
    assert set(LABELS.values()) <= _names(figure_specs(at)[0])
    live, *_rest, measured = tables(at)
    assert list(live["method"]) == [LABELS[m] for m in ALL]  # the live verdict of every picked method
    from pcd.experiments import kdw_law

    stored = {v["method"] for v in kdw_law.table()["verdicts"]}
    assert set(measured["method"]) == {LABELS[m] for m in stored}
    assert all(str(v) for v in measured["outcome"])


def test_scale_page_runs_every_method(tmp_path, monkeypatch):
    at = open_page("04_Scale_invariance.py", {"methods": ",".join(ALL), "steps": 200}, tmp_path, monkeypatch)
    _ok(at)
    specs = figure_specs(at)
    assert set(LABELS.values()) <= _names(specs[1])  # the drift figure: one line per method
    assert {m.split(": drift")[0] for m in (x.label for x in at.metric)} == set(LABELS.values())


def test_basin_page_maps_every_method_and_names_the_refusals(tmp_path, monkeypatch):
    at = open_page("09_Basin_maps.py", {"methods": ",".join(ALL), "problem": "two_task", "grid": 25, "steps": 200},
                   tmp_path, monkeypatch, timeout=300)
    _ok(at)
    specs = figure_specs(at)
    maps = [t["name"] for sp in specs for t in sp["data"] if str(t.get("name", "")).startswith("map: ")]
    assert maps == [f"map: {m}" for m in ALL]
    refused = _refusals(at)
    assert sorted(refused) == sorted(REFUSE_NEGATIVE)
    assert all("losses must be >= 0" in msg for msg in refused.values())
    assert f"--methods {','.join(ALL)}" in at.code[0].value


def test_pruning_lab_offers_every_method(tmp_path, monkeypatch):
    at = open_page("08_Pruning_lab.py", {}, tmp_path, monkeypatch)
    _ok(at)
    opts = " | ".join(at.multiselect(key="pl_methods").options)
    assert all(LABELS[m] in opts for m in ALL)


def test_tau_dial_compares_every_other_method_and_names_the_refusals(tmp_path, monkeypatch):
    others = [m for m in ALL if m != "pcd"]
    at = open_page("05_Tau_dial.py", {"problem": "two_task", "budgets": 30, "others": ",".join(others)},
                   tmp_path, monkeypatch)
    _ok(at)
    names = _names(figure_specs(at)[0])
    refused = _refusals(at)
    assert sorted(refused) == sorted(REFUSE_NEGATIVE)
    assert {LABELS[m] for m in others if m not in refused} <= names  # one marker per method that ran
    assert not {LABELS[m] for m in refused} & names
    default = open_page("05_Tau_dial.py", {}, tmp_path, monkeypatch)  # none by default: the warmed view
    assert at.multiselect(key="td_others").value and not default.multiselect(key="td_others").value
