"""AppTest of pages/06_Jacobian_descent.py: the live properties table, an IWRM run and a memory
measurement, shareable settings and friendly errors."""
from __future__ import annotations

from pathlib import Path

import pytest
import torch
from streamlit.testing.v1 import AppTest

from pcd.experiments import gramian_memory, jd
from pcd.studio import jd as JD

torch.set_num_threads(1)
PAGE = str(Path(__file__).resolve().parents[2] / "pages" / "06_Jacobian_descent.py")


def _text(at) -> str:
    return " ".join(md.value for md in at.markdown)


@pytest.fixture(scope="module")
def app():
    at = AppTest.from_file(PAGE, default_timeout=240)
    at.query_params["samples"] = "1"  # keep the live properties table quick
    at.query_params["methods"] = "pcd,ws,mgda,upgrad,pcgrad,dualproj"
    at.run()
    return at


def test_properties_table_is_live_and_agrees_with_the_paper(app):
    assert not app.exception
    assert not app.error
    assert len(app.get("plotly_chart")) == 1
    df = app.dataframe[0].value
    by = df.set_index("method")
    # the paper's claim, computed live: UPGrad is the only one with all three
    assert bool(by.loc["upgrad", "all_three_jd"])
    assert not by.loc[["ws", "mgda", "pcgrad", "dualproj"], "all_three_jd"].any()
    assert by.loc[["ws", "mgda", "upgrad", "pcgrad", "dualproj"], "matches_paper"].all()
    assert bool(by.loc["pcd", "primary_anchored"]) and bool(by.loc["pcd", "per_secondary_progress"])
    text = _text(app)
    assert "paper:" in text and "here:" in text and "all three: UPGrad;" in text
    assert app.query_params["samples"] == "1"


@pytest.mark.slow
def test_iwrm_run_shows_curves_and_finite_metrics(app):
    app.multiselect(key="jd_iwrm_methods").set_value(["ws", "upgrad"])
    app.slider(key="jd_iwrm_seeds").set_value(1)
    app.slider(key="jd_iwrm_steps").set_value(10)
    app.select_slider(key="jd_iwrm_batch").set_value(8)
    app.run()
    app.button(key="jd_iwrm_run").click().run()
    assert not app.exception
    assert not app.error
    assert len(app.get("plotly_chart")) == 2
    df = app.dataframe[1].value
    assert list(df["method"]) == ["ws", "upgrad"]
    assert df["final_train_loss"].between(0.0, 10.0).all()
    assert df["final_test_acc_pct"].between(0.0, 100.0).all()
    # Mean IS the SGD gradient: its cosine with the SGD gradient is exactly 1
    assert float(df.set_index("method").loc["ws", "early_cosine"]) == pytest.approx(1.0, abs=1e-9)
    assert "MNIST 96.3 / 96.0 %" in _text(app)
    assert app.query_params["iwrm_steps"] == "10"


@pytest.mark.slow
def test_memory_measurement_runs_and_reports_the_gram_check(app):
    app.multiselect(key="jd_mem_b").set_value([8, 32])
    app.select_slider(key="jd_mem_width").set_value(8)
    app.run()
    charts = len(app.get("plotly_chart"))
    app.button(key="jd_mem_run").click().run()
    assert not app.exception
    assert not app.error
    assert len(app.get("plotly_chart")) == charts + 1
    text = _text(app)
    assert "87–93 %" in text
    caps = " ".join(c.value for c in app.caption)
    if jd.torchjd_available():
        assert "Largest relative difference between the modes' Gram matrices" in caps
        assert "autojac" in text and "% lower" in text
    else:  # the page degrades: a warning, only ERM and our per-sample Jacobian are measured
        assert any("torchjd" in w.value for w in app.warning)


def test_empty_method_selection_is_a_friendly_error():
    at = AppTest.from_file(PAGE, default_timeout=240)
    at.query_params["samples"] = "1"
    at.query_params["methods"] = "ws"
    at.run()
    at.multiselect(key="jd_methods").set_value([]).run()
    assert not at.exception
    assert any("no methods given" in e.value for e in at.error)  # pcd.methods.parse_names


@pytest.mark.slow
def test_memory_tab_degrades_without_torchjd(monkeypatch):
    monkeypatch.setattr(JD, "torchjd_available", lambda: False)  # what the page asks (its studio module)
    monkeypatch.setattr(gramian_memory, "torchjd_available", lambda: False)  # what the measurement asks
    at = AppTest.from_file(PAGE, default_timeout=240)
    at.query_params["samples"] = "1"
    at.query_params["methods"] = "ws"
    at.run()
    assert any("torchjd" in w.value and "not installed" in w.value for w in at.warning)
    at.multiselect(key="jd_mem_b").set_value([8])
    at.select_slider(key="jd_mem_width").set_value(8).run()
    at.button(key="jd_mem_run").click().run()
    assert not at.exception and not at.error
    modes = set(at.dataframe[-1].value["mode"])
    assert modes == {"erm", "jacobian"}


def test_a_shared_link_keeps_the_selected_tab():
    """The selected tab is in the URL (``?tab=<label>``, Streamlit's query-parameter binding, which
    also writes a clicked tab there): a link opens on it."""
    at = AppTest.from_file(PAGE, default_timeout=240)
    at.query_params["tab"] = "Gramian memory"
    at.run()
    assert not at.exception
    assert at.session_state["tab"] == "Gramian memory"
    assert at.query_params["tab"] in (["Gramian memory"], "Gramian memory")
