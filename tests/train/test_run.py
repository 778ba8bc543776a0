import json
import math

import pytest
import torch

import pcd.methods as M
from pcd.train.run import Cancelled, train, validate_config

SMALL = dict(dataset="digits", epochs=2, batch_size=64, max_train_samples=256, max_test_samples=120,
             latency_repeats=1, lr=1e-2)


def _finite(x):
    return x is not None and math.isfinite(x)


# ---------------------------------------------------------------------------- validation

@pytest.mark.parametrize("bad, msg", [
    ({"arch": "vgg"}, "unknown arch"),
    ({"tau": 1.5}, "tau must be in"),
    ({"tau": -0.1}, "tau must be in"),
    ({"method": "sgd"}, "unknown method"),
    ({"dataset": "mnist"}, "unknown dataset"),
    ({"dataset": "cifar10", "data_dir": "/nonexistent/pcd"}, "cifar-10-python.tar.gz"),
    ({"epochs": 0}, "epochs"),
    ({"lr": 0}, "lr"),
    ({"optimizer": "rmsprop"}, "optimizer"),
    ({"grouping": "layer"}, "grouping"),
    ({"secondary": "l2"}, "secondary"),
    ({"device": "tpu"}, "device"),
    ({"method": "ws", "method_params": {"bogus": 1}}, "unknown hyper-parameter"),
    ({"method": "prox", "secondary": "l1+nuclear"}, "group_lasso only"),
    ({"target_reduction": 1.0}, "target_reduction"),
    ({"colour": "red"}, "unknown config key"),
])
def test_invalid_configs_rejected(bad, msg):
    with pytest.raises(ValueError, match=msg):
        validate_config({**SMALL, **bad})


def test_defaults_and_tau_passed_to_pcd():
    cfg = validate_config({"dataset": "digits", "tau": 0.1})
    assert cfg["arch"] == "smallcnn" and cfg["method"] == "pcd" and cfg["method_params"]["tau"] == 0.1
    assert validate_config({"dataset": "cifar10", "download": True})["arch"] == "resnet18"
    assert validate_config({"method_params": {"tau": 0.3}})["tau"] == 0.3  # one recorded tau
    json.dumps(cfg)  # plain data


# ---------------------------------------------------------------------------- every method, one path

METHODS = M.available() + ["prox", "lagrangian"]


@pytest.mark.slow
@pytest.mark.parametrize("method", METHODS)
def test_two_epoch_digits_run_per_method(method, tmp_path):
    calls = []
    res = train({**SMALL, "method": method}, out_dir=tmp_path, on_progress=calls.append)
    assert res["epochs_completed"] == 2 and not res["diverged"]
    for k in ("test_acc", "group_sparsity", "param_sparsity", "effective_rank", "seconds"):
        assert _finite(res[k]), k
    assert res["test_acc"] > 10.0  # better than chance on 10 classes after 8 steps at lr 1e-2
    e = res["export"]
    for k in ("params_before", "params_after", "flops_before", "flops_after", "latency_ms_before",
              "latency_ms_after", "file_bytes_before", "file_bytes_after", "test_acc"):
        assert _finite(e[k]), k
    assert e["params_after"] <= e["params_before"] and e["max_abs_diff_vs_masked"] < 1e-4
    ends = [c for c in calls if c["metrics"] is not None]
    assert [c["epoch"] for c in ends] == [1, 2] and ends[-1]["progress"] == 1.0
    assert set(calls[0]) == {"epoch", "epochs", "step", "steps_total", "progress", "metrics"}
    lines = (tmp_path / "metrics.jsonl").read_text().splitlines()
    assert len(lines) == 2 and json.loads((tmp_path / "final.json").read_text())["test_acc"] == res["test_acc"]


@pytest.mark.slow
def test_pcd_diagnostics_and_k3(tmp_path):
    res = train({**SMALL, "method": "pcd", "secondary": "l1+nuclear", "epochs": 1}, out_dir=tmp_path)
    row = res["history"][-1]
    assert len(row["weights"]) == 3 and _finite(row["secondary_2"]) and _finite(row["mu"])
    assert 0.0 <= row["infeasible_fraction"] <= 1.0 and -1.0 <= row["cosine"] <= 1.0
    assert row["weights"][0] > 0  # PCD pins the primary (raw-space weight rescaled, never negative)


@pytest.mark.slow
def test_pcd_sparsifies_more_with_larger_tau(tmp_path):
    """tau is a compression knob: a larger tau shrinks the group lasso further (same seed, data, steps)."""
    base = {**SMALL, "method": "pcd", "grouping": "filter+bn", "epochs": 3, "export": False}
    lo = train({**base, "tau": 0.0}, out_dir=tmp_path / "lo")
    hi = train({**base, "tau": 0.5}, out_dir=tmp_path / "hi")
    assert hi["history"][-1]["secondary_1"] < lo["history"][-1]["secondary_1"]


@pytest.mark.slow
def test_ws_collapses_where_pcd_keeps_accuracy(tmp_path):
    """PCD paper (CLAIMS: symmetric baselines collapse): with the raw group-lasso gradient ~15x the
    cross-entropy one, Mean-WS lets the secondary dominate and accuracy collapses; PCD keeps it."""
    base = dict(dataset="digits", epochs=3, lr=1e-2, export=False, max_test_samples=200)
    pcd = train({**base, "method": "pcd", "tau": 0.02}, out_dir=tmp_path / "pcd")
    ws = train({**base, "method": "ws"}, out_dir=tmp_path / "ws")
    assert pcd["test_acc"] > 90.0
    assert ws["test_acc"] < 50.0
    assert ws["history"][-1]["secondary_1"] < 0.5 * pcd["history"][-1]["secondary_1"]
    assert pcd["history"][-1]["grad_norm_ratio"] > 3.0  # the scale mismatch the paper blames


# ---------------------------------------------------------------------------- resume / cancel / determinism

@pytest.mark.slow
@pytest.mark.parametrize("method", ["famo", "pcgrad"])  # stateful; stochastic (uses the run's rng)
def test_resume_equals_uninterrupted_and_cancel(method, tmp_path):
    cfg = {**SMALL, "method": method, "epochs": 3, "export": False}
    full = train(cfg, out_dir=tmp_path / "a")
    n = {"k": 0}

    def stop():
        n["k"] += 1
        return n["k"] > 2  # polled at each epoch start and every 5 steps: 4 steps/epoch -> step 5 = epoch 2

    with pytest.raises(Cancelled):
        train(cfg, out_dir=tmp_path / "b", should_stop=stop)
    rows = (tmp_path / "b" / "metrics.jsonl").read_text().splitlines()
    assert len(rows) == 1
    ck = torch.load(tmp_path / "b" / "checkpoint.pt", weights_only=True)
    assert json.loads(ck["mid_epoch"])["batches"] == 1  # cancelled inside epoch 2, after its 1st batch
    resumed = train(cfg, out_dir=tmp_path / "b")
    assert resumed["test_acc"] == full["test_acc"]
    a = torch.load(tmp_path / "a" / "checkpoint.pt", weights_only=True)["model"]
    b = torch.load(tmp_path / "b" / "checkpoint.pt", weights_only=True)["model"]
    for k in a:
        assert torch.equal(a[k], b[k]), k
    def strip(rs):
        return [{k: v for k, v in r.items() if k not in ("seconds", "step_seconds")} for r in rs]

    assert strip(resumed["history"]) == strip(full["history"])
    with pytest.raises(ValueError, match="different run"):
        train({**cfg, "tau": 0.5}, out_dir=tmp_path / "b")


@pytest.mark.slow
def test_cifar_format_end_to_end_resnet8(cifar_dir, tmp_path):
    res = train({"dataset": "cifar10", "data_dir": str(cifar_dir), "arch": "resnet8", "method": "pcd",
                 "grouping": "coupled", "epochs": 1, "batch_size": 32, "latency_repeats": 1,
                 "target_reduction": 0.3}, out_dir=tmp_path)
    e = res["export"]
    assert 1 - e["params_after"] / e["params_before"] >= 0.3
    assert e["flops_after"] < e["flops_before"] and e["file_bytes_after"] < e["file_bytes_before"]
    assert res["config"]["arch"] == "resnet8" and _finite(res["test_acc"])


@pytest.mark.slow
def test_cifar_format_resnet18_coupled_steps(cifar_dir, tmp_path):
    """ResNet-18 on CIFAR-shaped data through the same path (coupled groups, PCD weights finite)."""
    res = train({"dataset": "cifar10", "data_dir": str(cifar_dir), "arch": "resnet18", "method": "pcd",
                 "tau": 0.5, "grouping": "coupled", "epochs": 1, "batch_size": 32, "max_train_samples": 32,
                 "export": False}, out_dir=tmp_path)
    row = res["history"][0]
    assert res["export"] is None and _finite(row["test_acc"]) and _finite(row["secondary_1"])
    assert row["weights"][1] > 0 and math.isfinite(row["cosine"])


@pytest.mark.slow
@pytest.mark.parametrize("method", ["pcd", "prox"])
def test_divergence_is_reported_not_raised(method, tmp_path, monkeypatch):
    """A NaN loss at step 3 ends training with diverged=True, NaN metrics as null, no export."""
    import types

    import torch.nn.functional as F

    import pcd.train.run as R

    calls = {"n": 0}

    def ce(out, y, **kw):
        calls["n"] += 1
        loss = F.cross_entropy(out, y, **kw)
        return loss * float("nan") if calls["n"] >= 3 else loss

    monkeypatch.setattr(R, "F", types.SimpleNamespace(cross_entropy=ce))
    res = train({**SMALL, "method": method}, out_dir=tmp_path)
    assert res["diverged"] is True and res["export"] is None
    assert res["epochs_completed"] == 1 and res["test_acc"] is None
    json.loads((tmp_path / "final.json").read_text())  # strict JSON
