from pathlib import Path

from streamlit.testing.v1 import AppTest

APP = str(Path(__file__).resolve().parents[2] / "app.py")


def test_home_renders_formulas_and_live_k2_demo(tmp_path, monkeypatch):
    monkeypatch.setenv("PCD_DATA_DIR", str(tmp_path))
    monkeypatch.setenv("PCD_NO_AUTOSTART", "1")
    at = AppTest.from_file(APP, default_timeout=30).run()
    assert not at.exception
    assert len(at.latex) >= 2  # the QP and the K = 2 closed form
    before = [m.value for m in at.metric]
    at.slider(key="home_angle").set_value(30).run()  # g1 alone already helps g2: mu = 0
    after = [m.value for m in at.metric]
    assert before != after and after[0] == "0.000"
    assert at.success  # "PCD is plain gradient descent here"
