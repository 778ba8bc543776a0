"""The Pruning lab's inside view (issue 29): a real finished digits run shows its per-layer diff,
norms, latency protocol and provenance; the curve is computed on the page from the run's checkpoint
and its points and budget answer equal the library's; selected runs show only the keys that differ;
the study has parallel coordinates."""
from __future__ import annotations

import json
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from pcd.jobs import RunStore
from pcd.train.run import train
from tests.pages._apptest import figure_specs, tables

PAGE = str(Path(__file__).resolve().parents[2] / "pages" / "08_Pruning_lab.py")
SMALL = dict(dataset="digits", method="pcd", tau=0.5, epochs=2, batch_size=64, max_train_samples=256,
             max_test_samples=120, lr=0.02, latency_repeats=3, device="cpu")


@pytest.fixture(scope="module")
def lab(tmp_path_factory):
    data = tmp_path_factory.mktemp("lab")
    store = RunStore(data)
    ids = []
    for cfg in (SMALL, {**SMALL, "method": "ws", "seed": 1}):
        rid = store.submit(cfg)
        run = store.claim("test", "cpu:0")
        res = train(run["config"], out_dir=store.run_dir(rid))
        store.finish(rid, run["token"], "done", result=res)
        ids.append(rid)
    return data, ids


def _app(data, monkeypatch):
    monkeypatch.setenv("PCD_DATA_DIR", str(data))
    monkeypatch.setenv("PCD_NO_AUTOSTART", "1")
    at = AppTest.from_file(PAGE, default_timeout=300)
    at.run()
    assert not at.exception, at.exception
    return at


def test_inside_view_and_curve_of_a_real_run(lab, monkeypatch):
    data, ids = lab
    at = _app(data, monkeypatch)
    at.selectbox(key="pl_detail").set_value(ids[0]).run()
    assert not at.exception, at.exception
    final = json.loads((Path(data) / "runs" / str(ids[0]) / "final.json").read_text())
    layers = final["export"]["layers"]
    diff = next(t for t in tables(at) if "kept %" in t.columns)
    assert list(diff["layer"]) == [r["layer"] for r in layers]
    assert any("Why (not) faster:" in md.value for md in at.markdown)
    assert any("torch" in c.value and "thread(s)" in c.value for c in at.caption)
    specs = [json.dumps(s) for s in figure_specs(at)]
    assert any("channels kept" in s for s in specs) and any("export threshold" in s for s in specs)
    at.number_input(key=f"pl_curve_n_{ids[0]}").set_value(3)
    at.button(key=f"pl_curve_go_{ids[0]}").click().run()
    assert not at.exception, at.exception
    curve = json.loads((Path(data) / "runs" / str(ids[0]) / "curve.json").read_text())["curve"]
    fig = next(s for s in figure_specs(at) if any(t.get("name") == f"run {ids[0]}" and "test accuracy" not in
                                                   json.dumps(t) for t in s["data"]) and "MFLOPs" in json.dumps(s))
    acc = fig["data"][0]
    assert list(acc["y"]) == [r["test_acc"] for r in curve]
    at.number_input(key=f"pl_curve_kparams_{ids[0]}").set_value(1e9).run()
    assert any("Meets the budget:** threshold" in md.value for md in at.markdown)
    at.button(key=f"pl_reexport_go_{ids[0]}").click().run()
    assert not at.exception, at.exception
    assert any("channels removed:" in s.value for s in at.success)
    assert any(b.label.startswith("Download model_r0.5.pt") for b in at.get("download_button"))


def test_config_diff_and_parallel_coordinates(lab, monkeypatch):
    data, ids = lab
    at = _app(data, monkeypatch)
    assert not any(t.get("type") == "parcoords" for s in figure_specs(at) for t in s["data"])  # off: no 4.7 MB
    at.toggle(key="pl_parallel_on").set_value(True).run()
    par = [json.loads(e.proto.spec) for e in at.get("plotly_chart")]
    dims = next(t for s in par for t in s["data"] if t.get("type") == "parcoords")["dimensions"]
    assert [d["label"] for d in dims][:3] == ["method", "accuracy %", "params removed %"]
    from tests.pages.test_pruning_lab import _select

    _select(at, "pl_table", [0, 1])
    at.toggle(key="pl_compare").set_value(True).run()
    assert not at.exception, at.exception
    diff = next(t for t in tables(at) if "key" in t.columns)
    assert set(diff["key"]) == {"method", "seed"}
