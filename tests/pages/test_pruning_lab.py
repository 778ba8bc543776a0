"""AppTest of the Pruning lab page on a temporary data folder (the supervisor is not started:
``PCD_NO_AUTOSTART=1``; the queue itself is tested in ``tests/jobs``)."""
from __future__ import annotations

import json
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from pcd.jobs import RunStore

PAGE = str(Path(__file__).resolve().parents[2] / "pages" / "08_Pruning_lab.py")


@pytest.fixture
def data_dir(tmp_path, monkeypatch):
    monkeypatch.setenv("PCD_DATA_DIR", str(tmp_path))
    monkeypatch.setenv("PCD_NO_AUTOSTART", "1")
    return tmp_path


def _app():
    at = AppTest.from_file(PAGE, default_timeout=120)
    at.run()
    assert not at.exception, at.exception
    return at


def _result(method, tau, acc, gs, params_after, secondary="group_lasso", rank=None, seed=0, model_path=None):
    cfg = {"dataset": "digits", "arch": "smallcnn", "method": method, "tau": tau, "seed": seed, "epochs": 3,
           "secondary": secondary, "grouping": "filter", "batch_size": 128}
    return cfg, {"config": cfg, "test_acc": acc, "group_sparsity": gs, "param_sparsity": gs, "grouping": "filter",
                 "effective_rank": rank if rank is not None else 3.0, "seconds": 6.0, "epochs_completed": 3,
                 "history": [{"epoch": e, "test_acc": acc * e / 3, "train_loss": 1.0 / e} for e in (1, 2, 3)],
                 "export": {"params_before": 1000, "params_after": params_after, "flops_before": 2e6,
                            "flops_after": 2e6 * params_after / 1000, "latency_ms_before": 1.0,
                            "latency_ms_after": 0.8, "file_bytes_before": 8000, "file_bytes_after": 8 * params_after,
                            "test_acc": acc - 0.5, **({"path": str(model_path)} if model_path else {})}}


def _add_done(store, *specs):
    ids = []
    for spec in specs:
        cfg, res = _result(*spec[:5], **spec[5] if len(spec) > 5 else {})
        rid = store.submit(cfg)
        run = store.claim("test", "cpu:0")
        assert run["id"] == rid
        for row in res["history"]:
            store.report_progress(rid, run["token"], {"epoch": row["epoch"], "progress": row["epoch"] / 3,
                                                      "metrics": row})
        store.finish(rid, run["token"], "done", result=res)
        ids.append(rid)
    return ids


def _table(at, column):
    """The first dataframe on the page that has ``column`` (AppTest does not expose dataframe keys)."""
    for el in at.dataframe:
        if column in el.value.columns:
            return el.value
    raise AssertionError(f"no table with column {column!r}")


def test_empty_store_renders_form_and_hints(data_dir):
    at = _app()
    assert any("No runs yet" in i.value for i in at.info)
    assert any("No finished run yet" in i.value for i in at.info)
    assert at.button(key="pl_submit").disabled is False
    assert any("1 run(s)" in m.value for m in at.markdown)


def test_sweep_queues_methods_x_taus_x_seeds_with_validated_configs(data_dir):
    at = _app()
    at.multiselect(key="pl_methods").set_value(["pcd", "ws"])
    at.toggle(key="pl_sweep").set_value(True)
    at.run()
    at.text_input(key="pl_taus").set_value("0, 0.05")
    at.text_input(key="pl_seeds").set_value("0, 1")
    at.number_input(key="pl_epochs").set_value(2)
    at.run()
    assert any("6 run(s)" in m.value for m in at.markdown)  # pcd: 2 tau x 2 seeds; ws: 2 seeds
    at.button(key="pl_submit").click().run()
    assert not at.exception
    runs = RunStore(data_dir).list()
    assert len(runs) == 6 and all(r["status"] == "queued" for r in runs)
    got = sorted((r["config"]["method"], r["config"]["tau"], r["config"]["seed"]) for r in runs)
    assert got == [("pcd", 0.0, 0), ("pcd", 0.0, 1), ("pcd", 0.05, 0), ("pcd", 0.05, 1), ("ws", 0.0, 0), ("ws", 0.0, 1)]
    pcd_runs = [r for r in runs if r["config"]["method"] == "pcd"]
    assert all(r["config"]["method_params"]["tau"] == r["config"]["tau"] for r in pcd_runs)
    assert all(r["config"]["epochs"] == 2 and r["config"]["batch_size"] == 128 for r in runs)  # defaults filled


def test_invalid_input_shows_the_message_and_queues_nothing(data_dir):
    at = _app()
    at.text_input(key="pl_seeds").set_value("0, one")
    at.run()
    assert any("seeds: 'one' is not a number" in e.value for e in at.error)
    assert at.button(key="pl_submit").disabled
    at.text_input(key="pl_seeds").set_value("0")
    at.selectbox(key="pl_device").set_value("cuda")
    at.run()
    assert any("CUDA is not available" in e.value for e in at.error)
    assert RunStore(data_dir).list() == []


def test_runs_table_live_curves_and_cancel(data_dir):
    store = RunStore(data_dir)
    running = store.submit({"dataset": "digits", "method": "pcd", "tau": 0.02, "epochs": 4})
    queued = store.submit({"dataset": "digits", "method": "ws", "tau": 0.02, "epochs": 4})
    run = store.claim("test", "cpu:0")
    store.report_progress(running, run["token"], {"epoch": 1, "epochs": 4, "progress": 0.25,
                                                  "metrics": {"epoch": 1, "test_acc": 40.0, "mu": 0.3}})
    at = _app()
    df = _table(at, "ETA")
    assert list(df["id"]) == [queued, running]
    assert list(df["status"]) == ["queued", "running"]
    assert df.loc[df["id"] == running, "progress"].item() == pytest.approx(0.25)
    assert df.loc[df["id"] == running, "heartbeat"].item().endswith("s ago")
    assert df.loc[df["id"] == running, "device"].item() == "cpu:0"
    live = at.get("plotly_chart")
    assert any(f"run {running}" in el.proto.spec for el in live)
    at.selectbox(key="pl_action_id").set_value(queued)
    at.button(key="pl_cancel").click().run()
    assert store.get(queued)["status"] == "cancelled"
    at.selectbox(key="pl_action_id").set_value(running)
    at.button(key="pl_cancel").click().run()
    assert store.get(running)["cancel_requested"] and store.get(running)["status"] == "running"
    at.button(key="pl_delete").click().run()  # deleting a running run is refused with the reason
    assert any("cancel it first" in e.value for e in at.error)


def test_results_explorer_front_matched_comparison_and_hypervolume(data_dir):
    store = RunStore(data_dir)
    model = data_dir / "model_pruned.pt"
    model.write_bytes(b"pruned-model-bytes")
    ids = _add_done(store,
                    ("pcd", 0.02, 95.0, 60.0, 300), ("pcd", 0.1, 90.0, 85.0, 150, {"model_path": model}),
                    ("ws", 0.02, 60.0, 82.0, 160), ("mgda", 0.02, 12.0, 99.0, 10),
                    ("pcd", 0.02, 93.0, 70.0, 300, {"secondary": "l1+nuclear", "rank": 2.0}),
                    ("auxinash", 0.02, 50.0, 50.0, 500, {"secondary": "l1+nuclear", "rank": 4.0}))
    at = _app()
    specs = [json.loads(el.proto.spec) for el in at.get("plotly_chart")]
    scatter = next(s for s in specs if any(t.get("name") == "Pareto front" for t in s["data"]))
    front = next(t for t in scatter["data"] if t["name"] == "Pareto front")
    # x = group sparsity by default; front = runs not dominated in (sparsity, accuracy)
    assert list(zip(front["x"], front["y"])) == [(60.0, 95.0), (70.0, 93.0), (85.0, 90.0), (99.0, 12.0)]
    matched = _table(at, "runs_in_window")  # window 80 +- 5
    assert list(matched["method"]) == ["pcd", "ws"] and list(matched["test_acc"]) == [90.0, 60.0]
    assert any("hypervolume" in s.value for s in at.subheader)
    assert any("Normalization: objectives (accuracy/100" in c.value for c in at.caption)
    at.selectbox(key="pl_detail").set_value(ids[1])
    at.run()
    rep = _table(at, "measure")
    assert rep.loc[rep["measure"] == "parameters", "after"].item() == 150
    labels = [b.label for b in at.get("download_button")]
    assert "Download metrics CSV" in labels and "Download pruned model" in labels
    assert not at.exception


def test_reload_shows_the_same_state(data_dir):
    store = RunStore(data_dir)
    _add_done(store, ("pcd", 0.02, 95.0, 60.0, 300))
    store.submit({"dataset": "digits", "method": "mgda", "tau": 0.02, "epochs": 1})
    first = _table(_app(), "ETA")
    second = _table(_app(), "ETA")
    assert first[["id", "status"]].equals(second[["id", "status"]])
    assert list(second["status"]) == ["queued", "done"]


def test_calibration_run_jumps_the_queue_and_estimate_appears(data_dir):
    store = RunStore(data_dir)
    store.submit({"dataset": "digits", "method": "ws", "epochs": 3})
    at = _app()
    assert any("No time estimate yet" in c.value for c in at.caption)
    at.button(key="pl_calibrate").click().run()
    cal = [r for r in store.list() if r["label"] == "calibration"]
    assert len(cal) == 1 and cal[0]["config"]["epochs"] == 1 and cal[0]["config"]["export"] is False
    assert store.queue_order()[0] == cal[0]["id"]
    # once a run of the same shape has finished, the form shows an estimate
    cfg = dict(cal[0]["config"])
    store.cancel(cal[0]["id"])
    rid = store.submit(cfg, priority=100)
    run = store.claim("test", "cpu:0")
    assert run["id"] == rid
    store.finish(rid, run["token"], "done", result={"config": cfg, "seconds": 4.0, "epochs_completed": 1})
    at = _app()
    assert any(c.value.startswith("Estimated ≈") and "4.0 s/epoch" in c.value for c in at.caption)
