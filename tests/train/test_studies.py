"""Study statistics (``pcd.train.studies``): points, Pareto front, matched comparison, exact hypervolume,
estimates, and the same summaries streamed from a run store."""
from __future__ import annotations

import itertools
import math
import random

import pytest

from pcd.jobs import RunStore
from pcd.train import studies as R
from pcd.train.studies import done_studies, study_points, summary_rows
from tests.jobs._stores import finish_next, seeded_store


def _run(i, method, acc, gs, pa=500, status="done", secondary="group_lasso", rank=3.0, seconds=10.0, epochs=2,
         started=100.0, finished=115.0):
    cfg = {"dataset": "digits", "arch": "smallcnn", "method": method, "tau": 0.02, "seed": 0, "epochs": epochs,
           "batch_size": 128, "secondary": secondary, "max_train_samples": None, "device": "auto"}
    return {"id": i, "status": status, "config": cfg, "started_at": started, "finished_at": finished,
            "result": {"config": cfg, "test_acc": acc, "group_sparsity": gs, "param_sparsity": gs,
                       "effective_rank": rank, "seconds": seconds, "epochs_completed": epochs,
                       "export": {"params_before": 1000, "params_after": pa, "flops_before": 100.0,
                                  "flops_after": 25.0, "latency_ms_before": 2.0, "latency_ms_after": 1.0,
                                  "file_bytes_before": 900, "file_bytes_after": 100, "test_acc": acc - 1}}}


def test_run_point_derived_measures():
    p = R.run_point(_run(1, "pcd", 90.0, 60.0, pa=200))
    assert p["param_reduction"] == pytest.approx(80.0)
    assert p["flops_factor"] == 4.0 and p["latency_factor"] == 2.0 and p["size_factor"] == 9.0
    assert p["export_acc"] == 89.0
    assert R.run_point(_run(2, "pcd", 1, 1, status="failed")) is None
    assert R.run_points([_run(1, "pcd", 1, 1), _run(2, "ws", 1, 1, status="queued")])[0]["id"] == 1


def test_latency_factor_is_the_protocols_median_ratio_also_from_the_store(tmp_path):
    """Issue 29: the study's latency axis is the protocol's median of per-round ratios (what the run's
    inside view shows), not the ratio of two medians that load on one side skews (0.04x seen for an
    unchanged network whose protocol said 0.46x); runs without a protocol keep the ratio."""
    run = _run(1, "pcd", 90.0, 60.0)
    sp = {"median": 1.25, "p25": 1.2, "p75": 1.3}
    proto = {"batch_1": {"speedup": {"after": sp}}, "batch_128": {"speedup": {"after": {"median": 3.0}}}}
    run["result"]["export"]["latency_protocol"] = {"cuda:0": {"batch_1": {"speedup": {"after": {"median": 9.0}}}},
                                                   "cpu": proto}
    run["result"]["provenance"] = {"device": "cpu"}
    assert R.run_point(run)["latency_factor"] == 1.25
    del run["result"]["provenance"]  # two devices and no record of which one ran: the medians' ratio
    assert R.run_point(run)["latency_factor"] == 2.0
    run["result"]["export"]["latency_protocol"] = {"cpu": proto}
    assert R.run_point(run)["latency_factor"] == 1.25
    run["result"]["export"]["latency_speedup"] = 1.5  # what pcd.train.run records now: read first
    assert R.run_point(run)["latency_factor"] == 1.5
    store = RunStore(tmp_path)  # the study summaries' light runs (SQL) carry that one scalar
    rid = store.submit(run["config"])
    claimed = store.claim("test", "cpu:0")
    store.finish(rid, claimed["token"], "done", result=run["result"])
    light = next(store.iter_done(R.POINT_RESULT_PATHS))
    assert "latency_protocol" not in light["result"]["export"]
    assert R.run_point(light)["latency_factor"] == 1.5


def _dominated(p, q):
    return q[0] >= p[0] and q[1] >= p[1] and (q[0] > p[0] or q[1] > p[1])


def test_pareto_front_is_exactly_the_non_dominated_set():
    rng = random.Random(0)
    pts = [{"group_sparsity": rng.uniform(0, 100), "test_acc": rng.uniform(0, 100)} for _ in range(40)]
    front = R.pareto_front(pts, "group_sparsity")
    xy = [(p["group_sparsity"], p["test_acc"]) for p in pts]
    for i, p in enumerate(xy):
        assert (i in front) == (not any(_dominated(p, q) for q in xy))
    assert [xy[i][0] for i in front] == sorted(xy[i][0] for i in front)
    with pytest.raises(ValueError, match="unknown x axis"):
        R.pareto_front(pts, "bogus")


def test_matched_comparison_picks_best_in_window():
    pts = R.run_points([_run(1, "pcd", 70, 82), _run(2, "pcd", 73, 84), _run(3, "mgda", 1.2, 83),
                        _run(4, "mgda", 50, 60), _run(5, "famo", 2.7, 95)])
    rows = R.matched_comparison(pts, "group_sparsity", 83, 2)
    assert [(r["method"], r["test_acc"], r["run_id"], r["runs_in_window"]) for r in rows] == \
        [("pcd", 73, 2, 2), ("mgda", 1.2, 3, 1)]
    with pytest.raises(ValueError, match="tol"):
        R.matched_comparison(pts, "group_sparsity", 83, -1)


def _hv_monte_carlo_free(points, ref):
    """Reference: exact hypervolume on the grid of coordinates (inclusion by cells)."""
    d = len(ref)
    axes = [sorted({ref[k]} | {p[k] for p in points}) for k in range(d)]
    vol = 0.0
    for cell in itertools.product(*[range(len(a) - 1) for a in axes]):
        lo = [axes[k][cell[k]] for k in range(d)]
        hi = [axes[k][cell[k] + 1] for k in range(d)]
        if any(all(p[k] >= hi[k] for k in range(d)) for p in points):
            v = 1.0
            for k in range(d):
                v *= hi[k] - lo[k]
            vol += v
    return vol


@pytest.mark.parametrize("d", [1, 2, 3])
def test_hypervolume_matches_grid_reference(d):
    rng = random.Random(d)
    for _ in range(5):
        pts = [tuple(rng.uniform(0, 1) for _ in range(d)) for _ in range(8)]
        assert R.hypervolume(pts) == pytest.approx(_hv_monte_carlo_free(pts, (0.0,) * d), rel=1e-12)
    assert R.hypervolume([(0.5, 0.5, 0.5)]) == pytest.approx(0.125)
    assert R.hypervolume([]) == 0.0
    with pytest.raises(ValueError, match="same length"):
        R.hypervolume([(1, 2), (1, 2, 3)])


def test_hypervolume_by_method_states_normalization():
    pts = R.run_points([_run(1, "pcd", 90, 80, secondary="l1+nuclear", rank=2.0),
                        _run(2, "auxinash", 50, 50, secondary="l1+nuclear", rank=4.0),
                        _run(3, "ws", 99, 99)])  # K = 2 run: not part of the K = 3 hypervolume
    hv = R.hypervolume_by_method(pts)
    assert hv["rank_ref"] == 4.0 and set(hv["methods"]) == {"pcd", "auxinash"}
    assert hv["methods"]["pcd"] == pytest.approx(0.9 * 0.8 * 0.5)
    assert hv["methods"]["auxinash"] == 0.0  # its effective rank is the reference: no volume
    assert "reference point (0, 0, 0)" in hv["normalization"]


def test_estimate_from_runs_of_the_same_shape():
    runs = [_run(1, "pcd", 1, 1, seconds=10.0, epochs=2, started=0, finished=14),
            _run(2, "ws", 1, 1, seconds=20.0, epochs=4, started=0, finished=24)]
    cfg = dict(runs[0]["config"], epochs=10, method="mgda")  # no mgda run: every run of the shape
    est = R.estimate_seconds(runs, cfg)
    assert est["per_epoch"] == 5.0 and est["overhead"] == 4.0 and est["seconds"] == 54.0 and est["basis"] == 2
    assert not est["same_method"] and est["low"] == 54.0 and est["high"] == 54.0
    runs.append(_run(3, "pcd", 1, 1, seconds=30.0, epochs=2, started=0, finished=34))  # a slow pcd run
    est = R.estimate_seconds(runs, dict(cfg, method="pcd"))  # pcd's own runs: 5 and 15 s/epoch
    assert est["same_method"] and est["basis"] == 2 and est["per_epoch"] == 10.0 and est["seconds"] == 104.0
    assert est["low"] < est["seconds"] < est["high"]
    study = R.estimate_study(runs, [dict(cfg, method="pcd"), dict(cfg, method="ws"), dict(cfg, arch="x")], 7.0,
                             "nominal")
    assert study["measured"] == 2 and study["n"] == 3 and study["total"] == 104.0 + 54.0 + 7.0
    assert "2 of 3" in study["basis"] and "the other 1: nominal" in study["basis"]
    cfg = dict(cfg, method="pcd")
    assert R.estimate_seconds(runs, dict(cfg, arch="resnet18")) is None
    cal = R.calibration_config(cfg)
    assert cal["epochs"] == 1 and cal["export"] is False and cal["method"] == "pcd"


# ---- studies: settings, means over seeds, the paper's pairing, the export report

def _pt(method, setting, x, acc, seed=0, study="s"):
    return {"id": seed, "method": method, "setting": setting, "study": study, "seed": seed,
            "param_reduction": x, "test_acc": acc}


def test_setting_labels_name_the_knob():
    assert R.setting_label({"method": "pcd", "tau": 0.2, "method_params": {"tau": 0.2, "beta": 0.999}}) == "τ=0.2"
    assert R.setting_label({"method": "ws", "method_params": {"w": 1.0, "normalize": True}}) == "w=1 (default)"
    assert R.setting_label({"method": "ws", "method_params": {"w": 0.01, "normalize": False}}) == "w=0.01 · normalize=False"
    assert R.setting_label({"method": "prox", "method_params": {"lam": 2.0}}) == "λ=2"
    assert R.setting_label({"method": "lagrangian", "method_params": {"target_density": 0.2, "dual_lr": 0.01}}) \
        == "target density=0.2"
    assert R.setting_label({"method": "mgda", "method_params": {"solver": "exact"}}) == "default"
    assert R.setting_label({"method": "unpruned"}) == "—"


def test_aggregate_means_and_sample_std_over_seeds():
    pts = [_pt("pcd", "τ=0.2", 80, 97, 0), _pt("pcd", "τ=0.2", 82, 99, 1), _pt("ws", "w=1", 99, 10, 0)]
    rows = R.aggregate(pts)
    assert [(r["method"], r["n"]) for r in rows] == [("pcd", 2), ("ws", 1)]
    assert rows[0]["test_acc"] == 98 and rows[0]["test_acc_std"] == pytest.approx(2 ** 0.5)
    assert rows[1]["test_acc_std"] is None and rows[0]["seeds"] == [0, 1]
    assert len(R.aggregate(pts + [_pt("pcd", "τ=0.2", 80, 97, 2, study="other")])) == 3  # studies never mix


def test_pairs_are_chosen_on_sparsity_alone_and_judged_against_seed_noise():
    rows = R.aggregate([
        _pt("pcd", "τ=0.1", 50, 99.0, 0), _pt("pcd", "τ=0.1", 50, 99.0, 1),
        _pt("pcd", "τ=0.3", 90, 90.0, 0), _pt("pcd", "τ=0.3", 90, 92.0, 1),   # std 1.41
        _pt("ws", "w=1", 88, 95.0, 0), _pt("ws", "w=1", 88, 95.0, 1),          # closest: τ=0.3 although τ=0.1 is better
        _pt("mgda", "default", 52, 98.5, 0), _pt("mgda", "default", 52, 99.5, 1),  # std 0.71: diff 0 -> tie
        _pt("famo", "default", 45, 50.0, 0),
        _pt("unpruned", "—", 0, 99.5, 0),
    ])
    comp = R.paired_comparison(rows)
    by = {p["method"]: p for p in comp["pairs"]}
    assert set(by) == {"ws", "mgda", "famo"}  # unpruned is the reference, not a baseline
    assert by["ws"]["pcd_setting"] == "τ=0.3" and by["ws"]["verdict"] == "worse"
    assert by["mgda"]["pcd_setting"] == "τ=0.1" and by["mgda"]["verdict"] == "tie"
    assert by["famo"]["verdict"] == "better" and by["famo"]["dominated_by_pcd"]
    assert not by["ws"]["dominated_by_pcd"]
    assert (comp["better"], comp["worse"], comp["tie"], comp["n"], comp["dominated"]) == (1, 1, 1, 3, 1)
    assert R.pairs_line(comp) == ("here: PCD better 1 / worse 1 / tie 1 of 3 baseline points (1 Pareto-dominated "
                                  "by a PCD point) · paper: 28 / 1 / 18 of 47")
    assert R.paired_comparison(rows, min_x=80)["n"] == 1
    assert R.paired_comparison([r for r in rows if r["method"] != "pcd"])["n"] == 0
    with pytest.raises(ValueError, match="unknown x axis"):
        R.paired_comparison(rows, x="nope")


def test_method_fronts_are_each_methods_own_non_dominated_settings():
    rows = R.aggregate([_pt("pcd", "a", 10, 99), _pt("pcd", "b", 50, 98), _pt("pcd", "c", 40, 90),
                        _pt("ws", "d", 99, 10)])
    assert R.method_fronts(rows, "param_reduction") == {"pcd": [0, 1], "ws": [3]}


def _export(removed, fb=900, fa=100, **kw):
    return {"test_acc": 90.0, "config": {}, "export": {
        "params_before": 1000, "params_after": 1000 if not removed else 200, "channels_total": 40,
        "channels_removed": removed, "threshold": 1e-4, "weakest_channel_norm": 0.0213, "file_bytes_before": fb,
        "file_bytes_after": fa, "test_acc": 89.0, **kw}}


def test_export_report_never_offers_a_bigger_file_and_says_why_nothing_went():
    rep = R.export_report(_export(0, fb=900, fa=950))
    assert not rep["removed"] and not rep["offer_model"]
    assert rep["message"].startswith("Nothing could be removed: no channel's filters have an L2 norm below the "
                                     "export threshold 0.0001 (the weakest channel's norm is 0.0213)")
    assert "would only be bigger" in rep["message"]
    ok = R.export_report(_export(30))
    assert ok["removed"] and ok["offer_model"] and ok["message"] == "Removed 30 of 40 channels: 80.0 % fewer parameters."
    odd = R.export_report(_export(1, fb=900, fa=900))
    assert odd["removed"] and not odd["offer_model"] and "not offered" in odd["message"]
    assert R.export_report({"diverged": True})["message"] == "No pruned model: training diverged."
    assert [r["measure"] for r in ok["rows"]][:2] == ["parameters", "channels"] and ok["rows"][1]["after"] == 10


def test_landing_words():
    assert R.landing({"method": "ws", "test_acc": 7.8, "param_reduction": 99.8}, 99.4).startswith("collapsed")
    assert R.landing({"method": "mgda", "test_acc": 99.2, "param_reduction": 0.0}, 99.4) == "removes nothing"
    assert R.landing({"method": "pcd", "test_acc": 99.0, "param_reduction": 81.0}, 99.4) == \
        "within 1.5 points at 81 % removed"
    assert R.landing({"method": "pcd", "test_acc": 96.0, "param_reduction": 96.0}, 99.4) == \
        "loses 3.4 points at 96 % removed"


def test_findings_name_the_best_setting_within_the_margin_and_where_the_rest_land():
    rows = R.aggregate([_pt("unpruned", "—", 0, 99.4), _pt("pcd", "τ=0.2", 82, 99.0), _pt("pcd", "τ=0.5", 96, 96.1),
                        _pt("pcd", "τ=0.05", 10, 99.7), _pt("ws", "w=1 (default)", 99.8, 7.8),
                        _pt("mgda", "default", 0.0, 99.2)])
    got = R.findings(rows, label=str.upper)
    assert got[0] == ("PCD τ=0.2: removes 82 % of the parameters within 1.5 points (99.0 % vs 99.4 % unpruned); "
                      "τ=0.5 loses 3.3 points at 96 % removed; τ=0.05 within 1.5 points at 10 % removed.")
    assert got[1] == ("WS: no setting removes parameters within 1.5 points of the unpruned network; "
                      "w=1 (default) collapsed: 100 % removed, 7.8 % accuracy.")
    assert got[2].endswith("default removes nothing.")
    assert R.findings(rows[1:]) == ["No unpruned run in this study: nothing to measure the accuracy loss against."]


def test_best_above_is_the_most_accurate_setting_past_the_reduction():
    rows = R.aggregate([_pt("pcd", "a", 83, 99.5), _pt("pcd", "b", 91, 98.8), _pt("pcd", "c", 58, 99.6),
                        _pt("mgda", "default", 0.0, 99.4)])
    got = R.best_above(rows, 80)
    assert got["pcd"]["row"]["setting"] == "a" and got["mgda"] == {"row": None, "max_x": 0.0}


def test_nothing_removed_means_nothing_to_compare_and_one_seed_is_said():
    rows = R.aggregate([_pt("pcd", "τ=0.2", 0.0, 96.0, 0), _pt("ws", "w=1", 0.0, 95.0, 0),
                        _pt("mgda", "default", 0.2, 97.0, 0), _pt("unpruned", "—", 0, 96.5, 0)])
    comp = R.paired_comparison(rows)
    assert comp["n"] == 0 and comp["pairs"] == [] and "no run removed anything" in comp["nothing"]
    rows = R.aggregate([_pt("pcd", "τ=0.2", 80.0, 96.0, 0), _pt("ws", "w=1", 85.0, 95.0, 0)])
    comp = R.paired_comparison(rows)
    assert comp["n"] == 1 and comp["single_seed"] and comp["nothing"] is None
    assert "one seed per point: no seed noise is known" in R.pairs_line(comp)


def test_front_hypervolume_per_method_in_percent_axes():
    rows = [{"method": "pcd", "param_reduction": 80.0, "test_acc": 99.0},
            {"method": "pcd", "param_reduction": 50.0, "test_acc": 99.5},
            {"method": "ws", "param_reduction": 99.0, "test_acc": 10.0},
            {"method": "unpruned", "param_reduction": 0.0, "test_acc": 99.6}]
    hv = R.front_hypervolumes(rows)
    assert set(hv) == {"pcd", "ws"}
    assert hv["pcd"] == pytest.approx(0.8 * 0.99 + (0.995 - 0.99) * 0.5)
    assert hv["ws"] == pytest.approx(0.99 * 0.10)
    assert R.front_hypervolumes(rows, x="flops_factor") == {}


def test_summary_from_sql_fields_equals_the_full_read(tmp_path):
    s, ids = seeded_store(tmp_path, n=12)
    for i in range(10):
        res = {"test_acc": 90.0 + i, "group_sparsity": 10.0 * i, "seconds": 3.0 + i, "diverged": i == 4,
               "history": [{"epoch": 1, "test_acc": 1.0}], "grouping": "filter",
               "export": {"params_before": 1000, "params_after": 300 + 10 * i, "flops_before": 50.0,
                          "flops_after": 20.0 + i, "latency_ms_before": 1.0, "latency_ms_after": 0.5,
                          "file_bytes_before": 4000, "file_bytes_after": 1000 + i, "test_acc": 89.0 + i}}
        if i == 7:  # a result that carries its own config (the runner's validated one) wins
            res["config"] = {"method": "pcd", "seed": 9, "tau": 0.1, "epochs": 3}
        if i == 8:
            del res["export"]
        finish_next(s, res)
    full = R.aggregate(R.run_points(s.list("done")))
    fast = summary_rows(s)
    assert len(full) == len(fast) >= 3
    for a, b in zip(full, fast):
        for k, v in a.items():
            w = b[k]
            assert (math.isclose(v, w, rel_tol=1e-12) if isinstance(v, float) and isinstance(w, float)
                    else v == w), (k, v, w)
    study = full[0]["study"]
    assert summary_rows(s, study=study) == [r for r in fast if study in r["study"]]
    # the results explorer: studies from one SQL aggregate, one study's points (newest `limit`), rows of all
    answer = done_studies(s)
    marker, studies = answer
    assert sum(v["runs"] for v in studies.values()) == 10 and set(studies) == {r["study"] for r in full}
    assert done_studies(s, answer) is answer  # nothing finished since: not re-read
    for name, info in studies.items():
        pts, rows = study_points(s, info)
        assert rows == [r for r in fast if r["study"] == name] and len(pts) == info["runs"]
        few, rows_few = study_points(s, info, limit=1)  # bounded: the newest run only
        assert len(few) == 1 and few[0]["id"] == info["newest"] and rows_few == R.aggregate(few)
    finish_next(s, {"test_acc": 1.0})
    assert done_studies(s, answer) is not answer


def test_every_special_baseline_has_a_display_name_in_the_figures():
    from pcd.train.catalog import SPECIAL_METHOD_NAMES
    from pcd.viz.theme import BASELINE_LABELS, method_label

    assert set(BASELINE_LABELS) == set(SPECIAL_METHOD_NAMES)
    assert method_label("unpruned") == "Unpruned (primary only)" and method_label("pcd") == "PCD"
