"""AppTest of the Pruning lab page on a temporary data folder (the supervisor is not started:
``PCD_NO_AUTOSTART=1``; the queue itself is tested in ``tests/jobs``)."""
from __future__ import annotations

import json
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from pcd.jobs import RunStore
from tests.pages._apptest import figure_specs

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


def _result(method, tau, acc, gs, params_after, secondary="group_lasso", rank=None, seed=0, model_path=None,
            method_params=None, channels_removed=None):
    cfg = {"dataset": "digits", "arch": "smallcnn", "method": method, "tau": tau, "seed": seed, "epochs": 3,
           "secondary": secondary, "grouping": "filter", "batch_size": 128, "optimizer": "adam", "lr": 1e-3,
           "method_params": dict(method_params or ({"tau": tau} if method == "pcd" else {}))}
    return cfg, {"config": cfg, "test_acc": acc, "group_sparsity": gs, "param_sparsity": gs, "grouping": "filter",
                 "effective_rank": rank if rank is not None else 3.0, "seconds": 6.0, "epochs_completed": 3,
                 "history": [{"epoch": e, "test_acc": acc * e / 3, "train_loss": 1.0 / e} for e in (1, 2, 3)],
                 "export": {"params_before": 1000, "params_after": params_after, "flops_before": 2e6,
                            "flops_after": 2e6 * params_after / 1000, "latency_ms_before": 1.0,
                            "latency_ms_after": 0.8, "file_bytes_before": 8000, "file_bytes_after": 8 * params_after,
                            "test_acc": acc - 0.5, "channels_total": 100, "threshold": 1e-4,
                            "weakest_channel_norm": 0.031,
                            "channels_removed": (channels_removed if channels_removed is not None
                                                 else int(100 * (1 - params_after / 1000))),
                            **({"path": str(model_path)} if model_path else {})}}


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
    assert "unpruned" in at.multiselect(key="pl_methods").options or any(
        "Unpruned" in o for o in at.multiselect(key="pl_methods").options)


def test_first_visit_lands_on_the_laptop_preset_and_a_form_link_on_the_form(data_dir):
    at = _app()
    assert at.selectbox(key="pl_preset").value == "digits-quick"
    assert any("**3 runs**" in i.value for i in at.info)  # PCD, WS and unpruned, one seed
    at.button(key="pl_submit_study").click().run()
    runs = RunStore(data_dir).list()
    assert sorted(r["config"]["method"] for r in runs) == ["pcd", "unpruned", "ws"]
    at = AppTest.from_file(PAGE, default_timeout=120)
    at.query_params["epochs"] = "3"
    at.run()
    assert at.selectbox(key="pl_preset").value == "custom" and at.number_input(key="pl_epochs").value == 3


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


@pytest.mark.parametrize("key,value,message", [
    ("pl_epochs", 0, "epochs must be in [1, 10000], got 0"),
    ("pl_epochs", 20000, "epochs must be in [1, 10000], got 20000"),
    ("pl_lr", 0.0, "learning rate must be in (0, 10], got 0.0"),
    ("pl_batch", 100000, "batch size must be in [1, 65536], got 100000"),
])
def test_out_of_range_values_are_refused_visibly_not_replaced(data_dir, key, value, message):
    at = _app()
    at.number_input(key=key).set_value(value).run()
    assert at.number_input(key=key).value == value  # kept as typed, not silently replaced
    assert any(message in e.value for e in at.error), [e.value for e in at.error]
    assert at.button(key="pl_submit").disabled and at.button(key="pl_calibrate").disabled
    assert RunStore(data_dir).list() == []


def test_out_of_range_hyper_parameter_is_refused(data_dir):
    at = _app()
    at.multiselect(key="pl_methods").set_value(["pcd", "prox"]).run()
    at.number_input(key="pl_hp_prox_lam").set_value(-1.0).run()
    assert any("lam must be in [0.0, 1000000.0], got -1.0" in e.value for e in at.error), [e.value for e in at.error]
    assert at.button(key="pl_submit").disabled


def test_preset_fills_the_form_and_queues_the_whole_study(data_dir):
    from pcd.train import presets

    at = _app()
    at.selectbox(key="pl_preset").set_value("digits-demo").run()
    assert not at.exception
    base = presets.get("digits-demo").base
    assert at.number_input(key="pl_epochs").value == base["epochs"]
    assert at.number_input(key="pl_lr").value == base["lr"]
    assert at.selectbox(key="pl_grouping").value == base["grouping"]
    assert at.number_input(key="pl_tau").value == base["tau"]
    n = len(presets.get("digits-demo").configs())
    assert any(f"**{n} runs**, estimated" in i.value for i in at.info)
    at.text_input(key="pl_study_seeds_digits-demo").set_value("0").run()
    n1 = len(presets.get("digits-demo").configs([0]))
    at.button(key="pl_submit_study").click().run()
    runs = RunStore(data_dir).list()
    assert len(runs) == n1 and all(r["label"].startswith("digits-demo · ") for r in runs)
    methods = {r["config"]["method"] for r in runs}
    assert {"unpruned", "pcd", "ws", "mgda", "pcgrad", "cagrad", "famo", "auxinash", "dbgd", "prox",
            "lagrangian"} <= methods
    assert all(r["config"]["epochs"] == base["epochs"] and r["config"]["grouping"] == "filter+bn" for r in runs)
    # the form's own button queues single runs with the preset's training settings
    at.button(key="pl_submit").click().run()
    single = RunStore(data_dir).list()[-1]["config"]
    assert (single["method"], single["tau"], single["lr"], single["epochs"]) == ("pcd", 0.2, 0.01, 40)


def test_gpu_preset_shows_its_estimate_and_refuses_without_gpu(data_dir):
    at = _app()
    at.selectbox(key="pl_preset").set_value("paper-protocol").run()
    assert any("140 runs" in i.value and " h on one slot" in i.value and "nominal" in i.value for i in at.info)
    assert at.button(key="pl_submit_study").disabled  # no GPU / no CIFAR-100 here: refused with the reason
    assert at.error
    assert RunStore(data_dir).list() == []


def _select(at, key, rows):
    at.session_state[key] = {"selection": {"rows": rows, "columns": []}}
    at.run()


def test_runs_table_actions_follow_the_selected_runs(data_dir):
    store = RunStore(data_dir)
    running = store.submit({"dataset": "digits", "method": "pcd", "tau": 0.02, "epochs": 4})
    queued = store.submit({"dataset": "digits", "method": "ws", "tau": 0.02, "epochs": 4})
    run = store.claim("test", "cpu:0")
    store.report_progress(running, run["token"], {"epoch": 1, "epochs": 4, "progress": 0.25,
                                                  "metrics": {"epoch": 1, "test_acc": 40.0, "mu": 0.3}})
    at = _app()
    df = _table(at, "ETA")
    assert list(df["run"]) == [running, queued]  # the running run pinned on top, then newest first
    assert list(df["status"]) == ["running", "queued"]
    assert list(df["method"]) == ["PCD", "Weighted sum"]  # display names, never raw ids
    assert df.loc[df["run"] == running, "progress"].item() == pytest.approx(0.25)
    assert df.loc[df["run"] == running, "heartbeat"].item().endswith("s ago")
    assert df.loc[df["run"] == queued, "accuracy %"].item() == "—"  # unfinished: a dash, never None
    assert "None" not in df.astype(str).to_string()
    live = [json.dumps(f) for f in figure_specs(at)]
    assert any(f"run {running}" in spec for spec in live)
    assert at.button(key="pl_cancel").disabled  # nothing selected, nothing to act on
    _select(at, "pl_table", [1])  # the queued ws run
    # meanwhile a new run is queued: under a selection the rows hold still (issue 29's refresh /
    # selection race), the new run is added below, and the selection stays on the ws run
    newer = store.submit({"dataset": "digits", "method": "mgda", "epochs": 4})
    at.run()
    assert list(_table(at, "ETA")["run"]) == [running, queued, newer]
    assert at.session_state["pl_table"]["selection"]["rows"] == [1]
    assert any(f"run {queued} (Weighted sum" in m.value for m in at.markdown)
    at.button(key="pl_cancel").click().run()
    assert store.get(queued)["status"] == "cancelled"
    assert store.get(newer)["status"] == "queued" and store.get(running)["status"] == "running"
    _select(at, "pl_table", [])  # nothing selected: the natural order again (running, newest first)
    assert list(_table(at, "ETA")["run"]) == [running, newer, queued]
    # multi-select: cancel the running one and the newer one; retry the cancelled one
    _select(at, "pl_table", [0, 1])
    assert at.button(key="pl_cancel").label == "Cancel (2)"
    at.button(key="pl_cancel").click().run()
    assert store.get(newer)["status"] == "cancelled"
    assert store.get(running)["cancel_requested"] and store.get(running)["status"] == "running"
    _select(at, "pl_table", [2])
    at.button(key="pl_retry").click().run()
    assert store.get(queued)["status"] == "queued"
    assert at.button(key="pl_delete").disabled  # a queued run cannot be deleted
    _select(at, "pl_table", [1])
    at.button(key="pl_delete").click().run()
    assert all(r["id"] != newer for r in store.list())
    assert not at.exception


def test_compare_shows_the_selected_runs_curves(data_dir):
    store = RunStore(data_dir)
    ids = _add_done(store, ("pcd", 0.02, 95.0, 60.0, 300), ("ws", 0.02, 60.0, 82.0, 160))
    at = _app()
    _select(at, "pl_table", [0, 1])
    at.toggle(key="pl_compare").set_value(True).run()
    spec = next(sp for sp in map(json.dumps, figure_specs(at)) if f'"run {ids[0]}"' in sp and f'"run {ids[1]}"' in sp)
    assert "test accuracy" in spec


def test_results_explorer_means_pairs_front_and_hypervolume(data_dir):
    store = RunStore(data_dir)
    model = data_dir / "model_pruned.pt"
    model.write_bytes(b"pruned-model-bytes")
    _add_done(store,
              ("unpruned", 0.02, 99.0, 0.0, 1000, {"channels_removed": 0}),
              ("pcd", 0.2, 98.0, 80.0, 200), ("pcd", 0.2, 97.0, 80.0, 200, {"seed": 1}),
              ("pcd", 0.05, 99.0, 10.0, 900, {"model_path": model}),
              ("ws", 0.0, 9.0, 99.0, 5, {"method_params": {"w": 1.0}}),
              ("ws", 0.0, 11.0, 99.0, 5, {"method_params": {"w": 1.0}, "seed": 1}),
              ("mgda", 0.02, 99.0, 0.0, 1000, {"channels_removed": 0}),
              ("pcd", 0.02, 93.0, 70.0, 300, {"secondary": "l1+nuclear", "rank": 2.0}),
              ("auxinash", 0.02, 50.0, 50.0, 500, {"secondary": "l1+nuclear", "rank": 4.0}))
    at = _app()
    assert at.selectbox(key="pl_study").options[0].startswith("digits/smallcnn · l1+nuclear")  # newest first
    at.selectbox(key="pl_study").set_value(at.selectbox(key="pl_study").options[1]).run()
    summary = _table(at, "where it lands")
    row = summary[(summary["method"] == "PCD") & (summary["setting"] == "τ=0.2")].iloc[0]
    assert row["seeds"] == 2 and row["accuracy %"] == "97.5 ± 0.7" and row["param. reduction %"] == "80.0 ± 0.0"
    ws = summary[summary["method"] == "Weighted sum"].iloc[0]
    assert ws["setting"] == "w=1 (default)" and ws["where it lands"].startswith("collapsed")
    assert summary[summary["method"] == "MGDA"]["where it lands"].item() == "removes nothing"
    assert any("- PCD τ=0.2: removes 80 % of the parameters within 1.5 points (97.5 % vs 99.0 % unpruned)" in md.value
               for md in at.markdown)
    # pairs: ws (99.5 %) -> PCD tau=0.2 (80 %, closest), mgda (0 %) -> PCD tau=0.05 (10 %)
    pairs = _table(at, "verdict")
    assert list(pairs["paired PCD"]) == ["τ=0.2", "τ=0.05"]
    assert list(pairs["verdict"]) == ["better", "tie"]
    line = "here: PCD better 1 / worse 0 / tie 1 of 2 baseline points (1 Pareto-dominated by a PCD point) · paper: 28 / 1 / 18 of 47"
    assert any(line in md.value for md in at.markdown), [md.value for md in at.markdown if "Matched" in md.value]
    assert any("PCD 97.5 % (τ=0.2, 80 % removed)" in md.value and "MGDA: no setting reaches 80 %" in md.value
               for md in at.markdown)
    specs = figure_specs(at)
    scatter = next(s for s in specs if any(t.get("name") == "PCD front" for t in s["data"]))
    front = next(t for t in scatter["data"] if t["name"] == "PCD front")
    assert list(zip(front["x"], front["y"])) == [(pytest.approx(10.0), 99.0), (pytest.approx(80.0), 97.5)]
    assert not at.exception


def test_export_report_says_when_nothing_was_removed(data_dir):
    store = RunStore(data_dir)
    model = store.run_dir(2) / "model_pruned.pt"  # the file of run 2, inside its own run folder
    model.parent.mkdir(parents=True)
    model.write_bytes(b"x" * 10)
    ids = _add_done(store, ("pcd", 0.02, 95.0, 0.0, 1000, {"channels_removed": 0, "model_path": model}),
                    ("pcd", 0.2, 90.0, 85.0, 150, {"model_path": model}),
                    ("pcd", 0.3, 90.0, 85.0, 150, {"model_path": "/etc/passwd"}))
    assert ids[1] == 2
    at = _app()
    at.selectbox(key="pl_detail").set_value(ids[0]).run()
    assert any("Nothing could be removed: no channel's filters have an L2 norm below the export threshold 0.0001 "
               "(the weakest channel's norm is 0.031)" in w.value for w in at.warning)
    assert "Download pruned model" not in [b.label for b in at.get("download_button")]
    at.selectbox(key="pl_detail").set_value(ids[1]).run()
    assert any("Removed 85 of 100 channels: 85.0 % fewer parameters" in s.value for s in at.success)
    labels = [b.label for b in at.get("download_button")]
    assert "Download pruned model" in labels and "Download metrics CSV (with config)" in labels
    assert "Download run JSON" in labels
    rep = _table(at, "measure")
    assert rep.loc[rep["measure"] == "parameters", "after"].item() == "150"
    at.selectbox(key="pl_detail").set_value(ids[2]).run()  # a stored path outside the run's folder
    assert "Download pruned model" not in [b.label for b in at.get("download_button")]
    assert any("not serving the pruned model" in e.value and "must be inside" in e.value for e in at.error)


def test_reload_shows_the_same_state(data_dir):
    store = RunStore(data_dir)
    _add_done(store, ("pcd", 0.02, 95.0, 60.0, 300))
    store.submit({"dataset": "digits", "method": "mgda", "tau": 0.02, "epochs": 1})
    first = _table(_app(), "ETA")
    second = _table(_app(), "ETA")
    assert first[["run", "status"]].equals(second[["run", "status"]])
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


def test_k3_hypervolume_warns_when_parameter_sparsity_is_flat(data_dir):
    store = RunStore(data_dir)
    _add_done(store, ("pcd", 0.2, 99.0, 1.0, 600, {"secondary": "l1+nuclear", "rank": 10.0}),
              ("auxinash", 0.02, 98.0, 1.5, 500, {"secondary": "l1+nuclear", "rank": 7.0}))
    at = _app()
    assert any("hypervolume" in s.value for s in at.subheader)
    assert any("stays at or below 1.5 % for every method" in w.value for w in at.warning)
    # the measures are stated next to the axis (pcd.train.metrics: one home for their thresholds)
    assert any("% of penalized conv weights with |w| < 0.001" in c.value and "effective rank: exp(entropy" in c.value
               for c in at.caption)


def test_queue_tab_shows_counts_and_one_page_newest_first(data_dir):
    store = RunStore(data_dir)
    ids = store.submit_many([{"dataset": "digits", "method": "pcd", "seed": i} for i in range(120)])
    store.cancel(ids[0])
    at = _app()
    df = _table(at, "ETA")
    assert list(df["run"]) == ids[::-1][:50]  # the newest page only, never the whole store
    metrics = {m.label: m.value for m in at.metric}
    assert metrics["queued"] == "119" and metrics["cancelled"] == "1"
    assert any("of 120" in c.value for c in at.caption)
    at.number_input(key="pl_page").set_value(3).run()
    assert list(_table(at, "ETA")["run"]) == ids[::-1][100:]
    for rid in ids[:30]:  # page 3 no longer exists: the last page is shown
        if rid != ids[0]:  # ids[0] is cancelled already
            store.cancel(rid)
        store.delete(rid)
    at.run()
    assert not at.exception and list(_table(at, "ETA")["run"]) == ids[::-1][50:90]


def test_running_run_is_pinned_on_top_of_the_newest_page(data_dir):
    store = RunStore(data_dir)
    first = store.submit({"dataset": "digits", "method": "pcd", "tau": 0.02, "epochs": 4})
    run = store.claim("test", "cpu:0")
    assert run["id"] == first
    newer = store.submit_many([{"dataset": "digits", "method": "ws", "epochs": 1}] * 60)  # pages of 50
    at = _app()
    table = _table(at, "status")
    assert table.iloc[0]["status"] == "running" and int(table.iloc[0]["run"]) == first
    assert int(table.iloc[1]["run"]) == newer[-1]  # then newest first
    _select(at, "pl_table", [0])
    assert at.button(key="pl_cancel").label == "Cancel (1)"


@pytest.mark.parametrize("tab", ["Queue & runs", "Results explorer"])
def test_a_shared_link_keeps_the_selected_tab(data_dir, tab):
    """The selected tab is in the URL (``?tab=<label>``, pcd.ui.url_tabs: Streamlit's query-parameter
    binding, which also writes a clicked tab there): a link opens on it."""
    at = AppTest.from_file(PAGE, default_timeout=120)
    at.query_params["tab"] = tab
    at.run()
    assert not at.exception, at.exception
    assert at.session_state["tab"] == tab
    assert at.query_params["tab"] in ([tab], tab)
    assert not at.toast


def test_an_unknown_tab_in_a_link_opens_the_first_tab_and_says_so(data_dir):
    at = AppTest.from_file(PAGE, default_timeout=120)
    at.query_params["tab"] = "<script>9"
    at.run()
    assert not at.exception, at.exception
    assert at.session_state["tab"] == "Queue runs"
    assert any("tab must be one of" in t.value for t in at.toast)
