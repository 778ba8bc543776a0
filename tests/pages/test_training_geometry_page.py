"""AppTest of the Training geometry page (issue 25): a run's recorder file opens with its computed
finding, one figure row per method with the collapse stretches shaded, the summary table, and a
link that opens the Gradient geometry page with that step's gradients; a bad file is one error."""
from __future__ import annotations

import json

import torch

from pcd import monitor
from tests.pages._apptest import figure_specs, open_page, tables

PAGE = "10_Training_geometry.py"


def _run_folder(root, rid: int = 1):
    """A data folder whose run ``rid`` holds a recorder file of the 1-D conflict (every symmetric
    method's update is 0 there, PCD's is not)."""
    d = root / "runs" / str(rid)
    d.mkdir(parents=True)
    (d / "config.json").write_text(json.dumps({"method": "pcd"}))
    x = torch.nn.Parameter(torch.tensor([1.0], dtype=torch.float64))
    rec = monitor.Recorder(d / "monitor.jsonl", [x], every=1, methods=["pcd", "ws", "mgda", "pcgrad"])
    for _ in range(6):
        rec.step([0.5 * x.sum(), -0.5 * x.sum()])
    return d / "monitor.jsonl"


def test_page_shows_a_runs_geometry(tmp_path, monkeypatch):
    path = _run_folder(tmp_path)
    at = open_page(PAGE, {}, tmp_path, monkeypatch)
    assert not at.exception, at.exception
    assert not at.error, [e.value for e in at.error]
    # the settings (run, methods, snapshot step) are in the page's settings panel, not the sidebar
    assert [w.key for w in at.sidebar.toggle] == ["pcd_present"] and not at.sidebar.selectbox
    assert [len(at.main.radio), len(at.main.selectbox), len(at.main.multiselect), len(at.main.select_slider)] == [1] * 4
    finding = monitor.finding(monitor.read(path))
    assert finding and [i.value for i in at.info] == [finding]
    assert "PCD's did not" in finding
    spec = figure_specs(at)[0]
    titles = [a["text"] for a in spec["layout"]["annotations"]]
    assert any(t.startswith("Weighted sum: ‖d‖/‖g₁‖ — 1 collapse stretch, 100 %") for t in titles)
    assert any(t.startswith("PCD: ‖d‖/‖g₁‖ — 0 collapse stretches, 0 %") for t in titles)
    shaded = [s for s in spec["layout"].get("shapes", []) if s.get("type") == "rect"]
    assert len(shaded) == 3  # WS, MGDA, PCGrad: one stretch each
    table = tables(at)[0]
    assert list(table["method"]) == ["PCD", "Weighted sum", "MGDA", "PCGrad"]
    assert list(table["collapsed (% of records)"]) == [0.0, 100.0, 100.0, 100.0]
    links = [m.value for m in at.markdown if "Gradient_geometry" in m.value] + \
        [str(p.proto) for p in at.get("page_link")]
    text = " ".join(links)
    assert "angle=180" in text and "norm2=1.0" in text and "tau=0.02" in text  # g2 = -g1


def test_page_refuses_a_damaged_file_in_one_line(tmp_path, monkeypatch):
    path = _run_folder(tmp_path)
    path.write_text(path.read_text()[:-9])
    at = open_page(PAGE, {}, tmp_path, monkeypatch)
    assert not at.exception
    assert [e.value for e in at.error] == [f"recorder file {path}: truncated (the last record, line 7, is incomplete)"]
    assert not figure_specs(at)


def test_page_without_runs_offers_an_upload(tmp_path, monkeypatch):
    at = open_page(PAGE, {}, tmp_path, monkeypatch)
    assert not at.exception and not at.error
    assert at.radio[0].value == "upload a file"


def test_pruning_lab_run_detail_shows_the_runs_geometry(tmp_path, monkeypatch):
    from pcd.jobs import RunStore
    from tests.pages.test_pruning_lab import _add_done

    monkeypatch.setenv("PCD_DATA_DIR", str(tmp_path))
    store = RunStore(tmp_path)
    rid, = _add_done(store, ("pcd", 0.02, 95.0, 50.0, 500))
    folder = store.run_dir(rid)
    folder.mkdir(parents=True, exist_ok=True)
    x = torch.nn.Parameter(torch.tensor([1.0], dtype=torch.float64))
    rec = monitor.Recorder(folder / "monitor.jsonl", [x], every=1, methods=["pcd", "ws"])
    for _ in range(4):
        rec.step([0.5 * x.sum(), -0.5 * x.sum()])
    at = open_page("08_Pruning_lab.py", {}, tmp_path, monkeypatch)
    assert not at.exception, at.exception
    assert [e.label for e in at.expander if "Training geometry" in e.label]
    assert monitor.finding(monitor.read(folder / "monitor.jsonl")) in [i.value for i in at.info]
    assert any(t["layout"].get("annotations") and any("Weighted sum: ‖d‖/‖g₁‖" in a["text"] for a in t["layout"]["annotations"])
               for t in figure_specs(at))
