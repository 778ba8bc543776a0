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


def test_home_and_menu_list_the_registry_pages(tmp_path, monkeypatch):
    """The sidebar menu (home first) and the home page's list are the page registry's titles, in its
    order, with its blurbs: nothing is read from the pages' sources."""
    from pcd.studio.registry import HOME_TITLE, PAGES

    monkeypatch.setenv("PCD_DATA_DIR", str(tmp_path))
    monkeypatch.setenv("PCD_NO_AUTOSTART", "1")
    at = AppTest.from_file(APP, default_timeout=30).run()
    assert not at.exception
    menu = [e.proto.label for e in at.sidebar.get("page_link")]
    assert menu[:len(PAGES) + 1] == [HOME_TITLE] + [p.title for p in PAGES]
    listed = [e.proto.label for e in at.main.get("page_link")]
    assert listed == [p.title for p in PAGES[0::2] + PAGES[1::2]]  # two columns, filled row by row
    captions = {c.value for c in at.caption}
    assert all(p.blurb in captions for p in PAGES)
