"""Presets: valid studies, the paper's protocol as published, `prune --preset`, and `unpruned`."""
from __future__ import annotations

import json

import pytest

from pcd.cli import build_parser
from pcd.cli.prune import config_from_args
from pcd.train import presets as P
from pcd.train.run import train, validate_config


def test_cpu_presets_queue_only_valid_configs_with_every_baseline():
    for name in ("digits-demo", "digits-k3"):
        pre = P.get(name)
        cfgs = [validate_config(c) for c in pre.configs()]
        assert len(cfgs) == len(pre.grid) * len(pre.seeds) and sorted({c["seed"] for c in cfgs}) == [0, 1, 2]
        methods = {c["method"] for c in cfgs}
        assert {"unpruned", "pcd", "ws", "mgda", "pcgrad", "cagrad", "famo", "auxinash", "dbgd"} <= methods
        assert all(c["device"] == "cpu" for c in cfgs)
    demo = P.get("digits-demo")
    assert {"prox", "lagrangian"} <= set(demo.methods)
    # the settings that span each method's range are really different runs
    for m, key in (("pcd", "tau"), ("ws", "w"), ("prox", "lam"), ("lagrangian", "target_density")):
        vals = {c["method_params"][key] for c in map(validate_config, demo.configs([0])) if c["method"] == m}
        assert len(vals) >= 3, (m, vals)
    assert all(validate_config(c)["secondary"] == "l1+nuclear" for c in P.get("digits-k3").configs([0]))


def test_paper_protocol_is_the_published_one():
    pre = P.get("paper-protocol")
    b = pre.base
    assert (b["epochs"], b["optimizer"], b["lr"], b["schedule"], b["batch_size"]) == (300, "adam", 1e-3, "cosine", 128)
    assert (b["dataset"], b["arch"]) == ("cifar100", "resnet34")
    assert list(pre.seeds) == [0, 1, 2, 3, 4]
    taus = [s["tau"] for m, s in pre.grid if m == "pcd"]
    assert taus == [0.0, 0.01, 0.02, 0.03, 0.04, 0.05, 0.06, 0.07, 0.08, 0.09, 0.1,
                    0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0]
    assert pre.needs_gpu and P.get("cifar10-resnet20-short").needs_gpu
    est = P.nominal_seconds(pre)
    assert est["total"] == pytest.approx(est["per_run"] * len(pre.configs())) and "nominal" in est["basis"]
    assert est["total"] > 24 * 3600  # 140 runs of 300 CIFAR epochs: days, not minutes


def test_unknown_preset_lists_the_allowed_ones():
    with pytest.raises(ValueError, match="unknown preset 'nope'; allowed: digits-quick, digits-demo, digits-k3"):
        P.get("nope")


def _args(*argv):
    return build_parser().parse_args(["prune", "--out", "/tmp/x", *argv])


def test_prune_preset_uses_its_training_settings_and_explicit_options_win():
    cfg = validate_config(config_from_args(_args("--preset", "digits-demo")))
    base = P.get("digits-demo").base
    for k in ("dataset", "arch", "epochs", "lr", "grouping", "tau", "batch_size", "optimizer"):
        assert cfg[k] == base[k], k
    cfg = validate_config(config_from_args(_args("--preset", "digits-demo", "--epochs", "3", "--method", "ws")))
    assert cfg["epochs"] == 3 and cfg["method"] == "ws" and cfg["lr"] == 0.01
    plain = validate_config(config_from_args(_args()))  # no preset: the documented defaults
    assert (plain["epochs"], plain["lr"], plain["tau"], plain["grouping"]) == (2, 1e-3, 0.02, "filter")


@pytest.mark.slow
def test_unpruned_is_primary_only_training(tmp_path):
    """`unpruned` is plain cross-entropy training: the same run as WS with weight 0 on the secondary."""
    base = {"dataset": "digits", "epochs": 1, "max_train_samples": 256, "max_test_samples": 90, "seed": 4,
            "latency_repeats": 1, "export": False, "grouping": "filter+bn", "lr": 0.01}
    a = train({**base, "method": "unpruned"}, out_dir=tmp_path / "a")
    b = train({**base, "method": "ws", "method_params": {"w": 0.0}}, out_dir=tmp_path / "b")
    c = train({**base, "method": "ws", "method_params": {"w": 1.0}}, out_dir=tmp_path / "c")
    assert a["test_acc"] == b["test_acc"] and a["history"][0]["train_loss"] == b["history"][0]["train_loss"]
    assert a["history"][0]["train_loss"] != c["history"][0]["train_loss"]
    assert json.loads((tmp_path / "a" / "config.json").read_text())["method"] == "unpruned"


def test_first_look_preset_is_small_and_shows_the_claim():
    q = P.get("digits-quick")
    cfgs = q.configs()
    assert [(c["method"], c.get("tau"), c["method_params"]) for c in cfgs] == [
        ("unpruned", 0.2, {}), ("pcd", 0.2, {}), ("ws", 0.2, {"w": 1.0})]
    assert all(c["epochs"] == 40 and c["dataset"] == "digits" and c.get("export", True) for c in cfgs)
    assert P.nominal_seconds(q)["total"] < 5 * 60
