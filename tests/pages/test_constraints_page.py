"""AppTest of pages/07_Constraints_vs_penalties.py: default run, widgets, friendly errors."""
from __future__ import annotations

from pathlib import Path

import pytest
import torch
from streamlit.testing.v1 import AppTest

from tests.pages._apptest import figure_specs, tables

torch.set_num_threads(1)
PAGE = str(Path(__file__).resolve().parents[2] / "pages" / "07_Constraints_vs_penalties.py")


def _metrics(at):
    return {m.label: m.value for m in at.metric}


@pytest.fixture(scope="module")
def app():
    at = AppTest.from_file(PAGE, default_timeout=240)
    at.run()
    return at


def test_default_run_shows_results_and_claims(app):
    assert not app.exception
    assert not app.error
    m = _metrics(app)
    assert m["x* = arcsin ε"] == "0.5236"  # eps = 0.5
    assert m["penalty c = 0.5 ends at"] == "1.5708"  # c < tan(x0): descent runs to pi/2
    text = " ".join(md.value for md in app.markdown)
    assert "paper:" in text and "here:" in text
    assert "0.00 %" in text and "7 full trainings" in text and "+5.2 %" in text
    # the final-x table for the chosen eps: AL and nuPI sit on arcsin eps
    final = tables(app)[0]
    al = final[final["method"].isin(["augmented Lagrangian", "nuPI"])]
    assert len(al) == 2 and (al["|x_T − x*| / x*"] < 1e-3).all()
    assert len(figure_specs(app)) >= 6
    assert app.query_params["eps"] == "0.5" and app.query_params["c"] == "0.5"  # shareable URL


def test_changing_eps_and_c_rerenders_with_new_numbers(app):
    before = _metrics(app)
    app.number_input(key="cp_eps").set_value(0.3).run()
    after = _metrics(app)
    assert not app.exception and not app.error
    assert after["x* = arcsin ε"] == "0.3047" != before["x* = arcsin ε"]
    assert after["λ* = ε/√(1−ε²)"] != before["λ* = ε/√(1−ε²)"]
    app.number_input(key="cp_c").set_value(2.0).run()
    m = _metrics(app)
    assert "penalty c = 2 ends at" in m and m["penalty c = 2 ends at"] == "0.0000"  # c > tan(x0): runs to 0
    # an off-grid eps is computed live, same story
    app.number_input(key="cp_eps").set_value(0.33).run()
    assert not app.exception and _metrics(app)["x* = arcsin ε"] == "0.3363"


def _trace_names(app, title_part):
    for spec in figure_specs(app):
        title = spec.get("layout", {}).get("title", {}).get("text", "")
        if title_part in title:
            return [t.get("name") for t in spec["data"]]
    raise AssertionError(f"no chart titled {title_part!r}")


def test_rate_widgets_pick_other_runs(app):
    before = _trace_names(app, "Decision boundaries")
    assert any(n.startswith("fixed penalty c = 2.15: 74.25 % class 0") for n in before)
    app.select_slider(key="cp_rate_c").set_value(100.0).run()
    app.select_slider(key="cp_eta").set_value(10.0).run()
    assert not app.exception
    after = _trace_names(app, "Decision boundaries")
    assert any(n.startswith("fixed penalty c = 100: 100.00 % class 0") for n in after)
    assert any(n.startswith("Lagrangian (GDA) η = 10: 70.00 % class 0") for n in after)
    assert app.query_params["rc"] == "100.0" and app.query_params["eta"] == "10.0"
    pcd_text = [t.value for t in app.markdown if t.value.startswith("**PCD** (τ")]
    assert pcd_text and "surrogate" in pcd_text[0]


@pytest.mark.parametrize("key, value, msg", [("cp_eps", 1.2, "strictly between 0 and 1"),
                                             ("cp_eps", 0.0, "strictly between 0 and 1"),
                                             ("cp_c", -1.0, "c must be >= 0")])
def test_invalid_input_shows_an_error_not_a_traceback(app, key, value, msg):
    app.number_input(key="cp_eps").set_value(0.5)
    app.number_input(key="cp_c").set_value(0.5)
    app.number_input(key=key).set_value(value).run()
    assert not app.exception
    assert any(msg in e.value for e in app.error)
    # the rest of the page still renders
    assert any("rate-constrained" in h.value for h in app.header)


def test_tables_and_legends_use_display_names():
    """No code names (gda, auglag, nupi, penalty(c=...)) in the page's tables and legends."""
    app = AppTest.from_file(PAGE, default_timeout=240)
    app.run()
    code = ("gda", "auglag", "nupi", "penalty(")
    names = [t.get("name") or "" for spec in figure_specs(app) for t in spec["data"]]
    frames = [df.value for df in app.dataframe] + tables(app)
    heads = [str(c) for f in frames for c in f.columns]
    cells = [str(v) for f in frames if "method" in f.columns for v in f["method"]]
    bad = [s for s in names + heads + cells if any(s.startswith(c) or f" {c}" in s for c in code)]
    assert not bad, bad
    assert "fixed penalty c = 0.5" in cells and "Lagrangian (GDA) η = 0.1" in cells and "augmented Lagrangian" in heads
