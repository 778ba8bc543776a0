"""``python -m pcd runs presets | submit --preset | summary``."""
from __future__ import annotations

import json

from pcd.cli import main
from pcd.jobs import RunStore
from pcd.train import presets as P


def _run(capsys, *argv):
    rc = main([str(a) for a in argv])
    out = capsys.readouterr()
    return rc, out.out, out.err


def test_presets_lists_every_study_with_runs_and_estimate(capsys):
    rc, out, _ = _run(capsys, "runs", "presets", "--json")
    got = {p["name"]: p for p in json.loads(out)}
    assert rc == 0 and list(got) == P.names()
    assert got["paper-protocol"]["runs"] == 140 and got["paper-protocol"]["needs_gpu"]
    assert got["digits-demo"]["estimate"]["total"] > 0


def test_submit_preset_queues_the_study(tmp_path, capsys):
    d = tmp_path / "data"
    rc, out, _ = _run(capsys, "runs", "submit", "--data-dir", d, "--preset", "digits-demo", "--seeds", "0, 1",
                      "--threads", "1")
    n = len(P.get("digits-demo").grid) * 2
    assert rc == 0 and len(out.split()) == n
    runs = RunStore(d).list()
    assert len(runs) == n and all(r["config"]["threads"] == 1 for r in runs)
    assert runs[0]["label"] == "digits-demo · unpruned seed 0 · digits/smallcnn · 40 ep"
    rc, _, err = _run(capsys, "runs", "submit", "--data-dir", d, "--preset", "nope")
    assert rc == 2 and "unknown preset 'nope'" in err
    f = tmp_path / "c.json"
    f.write_text("{}")
    rc, _, err = _run(capsys, "runs", "submit", "--data-dir", d, "--config", f, "--seeds", "0")
    assert rc == 2 and "go with --preset" in err


def _done(store, method, mp, acc, pa, seed):
    cfg = {"dataset": "digits", "arch": "smallcnn", "method": method, "method_params": mp, "seed": seed,
           "epochs": 40, "secondary": "group_lasso", "grouping": "filter+bn", "optimizer": "adam", "lr": 0.01,
           "batch_size": 128}
    rid = store.submit(cfg)
    run = store.claim("t", "cpu:0")
    store.finish(rid, run["token"], "done", result={
        "config": cfg, "test_acc": acc, "seconds": 3.0, "export": {
            "params_before": 1000, "params_after": pa, "flops_before": 10.0, "flops_after": pa / 100,
            "file_bytes_before": 4096, "file_bytes_after": 4 * pa, "channels_total": 10,
            "channels_removed": 10 - pa // 100}})


def test_summary_prints_mean_std_per_method_and_setting_and_the_pairs(tmp_path, capsys):
    d = tmp_path / "data"
    with RunStore(d) as store:
        for seed, (a, b) in enumerate(((99.0, 98.0), (99.4, 99.0))):
            _done(store, "unpruned", {}, a, 1000, seed)
            _done(store, "pcd", {"tau": 0.2}, b, 200, seed)
            _done(store, "ws", {"w": 1.0}, 8.0, 100, seed)
    rc, out, _ = _run(capsys, "runs", "summary", "--data-dir", d)
    assert rc == 0
    assert "| pcd | τ=0.2 | 2 | 98.5 ± 0.7 | 80.0 ± 0.0 | 200 |" in out
    assert "| ws | w=1 (default) | 2 | 8.0 ± 0.0 | 90.0 ± 0.0 |" in out and "collapsed" in out
    assert "here: PCD better 1 / worse 0 / tie 0 of 1 baseline points" in out
    rc, out, _ = _run(capsys, "runs", "summary", "--data-dir", d, "--json")
    data = json.loads(out)
    assert [r["method"] for r in data["rows"]] == ["unpruned", "pcd", "ws"]
    assert list(data["comparisons"].values())[0]["better"] == 1


def test_summary_of_a_k3_study_states_its_measures_and_shows_sparsity_and_rank(tmp_path, capsys):
    d = tmp_path / "data"
    with RunStore(d) as store:
        for seed, (sp, er) in enumerate(((80.0, 10.0), (84.0, 12.0))):
            cfg = {"dataset": "digits", "arch": "smallcnn", "method": "pcd", "tau": 0.2, "method_params": {},
                   "seed": seed, "epochs": 40, "secondary": "l1+nuclear", "grouping": "filter", "optimizer": "adam",
                   "lr": 0.01, "batch_size": 128}
            rid = store.submit(cfg)
            run = store.claim("t", "cpu:0")
            store.finish(rid, run["token"], "done", result={"config": cfg, "test_acc": 99.0, "seconds": 3.0,
                                                             "param_sparsity": sp, "effective_rank": er})
        cfg = {**cfg, "method": "unpruned", "tau": None, "seed": 0}
        rid = store.submit(cfg)
        run = store.claim("t", "cpu:0")
        store.finish(rid, run["token"], "done", result={"config": cfg, "test_acc": 99.5, "seconds": 3.0,
                                                         "param_sparsity": 0.0, "effective_rank": 20.0})
    rc, out, _ = _run(capsys, "runs", "summary", "--data-dir", d)
    assert rc == 0 and "K = 3 measures: parameter sparsity: % of penalized conv weights with |w| < 0.001" in out
    assert "effective rank: exp(entropy of the normalized singular values)" in out
    assert "| pcd | τ=0.2 | 2 | 99.0 ± 0.0 | 82.0 ± 2.8 | 11.00 ± 1.41 |" in out
    # PCD's mean point (0.99, 0.82, 1 - 11/20) against the origin; the unpruned network removes nothing
    assert f"dominated hypervolume per method, of its settings' mean points: pcd {0.99 * 0.82 * 0.45:.3f}, unpruned 0.000" in out
    assert "1 - effective rank/20" in out
