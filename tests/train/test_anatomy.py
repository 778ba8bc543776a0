"""Inside a pruned network (:mod:`pcd.train.anatomy`): the structure diff equals the exported model's
actual shapes, per-layer FLOPs add up to the FLOP counter, each curve point is a physically exported
model reloaded and evaluated, the latency protocol measures an unchanged network at 1.0x within its
spread, budgets, provenance and config diffs."""
from __future__ import annotations

import copy

import pytest
import torch
from torch import nn

from pcd.train import anatomy as A
from pcd.train import export as ex
from pcd.train.models import ARCHS
from tests.train.test_export import _trained_like


@pytest.mark.parametrize("arch", list(ARCHS))
def test_layer_table_matches_the_exported_shapes_and_the_flop_counter(arch):
    m, shape = _trained_like(arch)
    plan = ex.plan_pruning(m, shape, threshold=1e-4)
    pruned, _ = ex.prune_model(ex.mask_model(m, shape, plan), shape, plan)
    rows = A.layer_table(m, pruned, shape)
    mods = dict(pruned.named_modules())
    for r in rows:
        mod = mods[r["layer"]]
        if isinstance(mod, nn.Conv2d):
            assert (r["in_after"], r["out_after"]) == (mod.in_channels, mod.out_channels)
        else:
            assert (r["in_after"], r["out_after"]) == (mod.in_features, mod.out_features)
        assert r["params_after"] == sum(p.numel() for p in mod.parameters(recurse=False))
    assert sum(r["flops_before"] for r in rows) == ex.count_flops(m, shape)
    assert sum(r["flops_after"] for r in rows) == ex.count_flops(pruned, shape)
    assert any(r["out_after"] < r["out_before"] for r in rows)


def test_channel_norms_are_what_the_threshold_compares():
    m, shape = _trained_like("smallcnn")
    norms = A.channel_norms(m, shape)
    below = sum(r["norm"] < 1e-4 for r in norms)
    plan = ex.plan_pruning(m, shape, threshold=1e-4)
    # every channel below the threshold goes, except one kept per fully-dead group
    assert plan.channels_removed <= below and plan.channels_removed >= below - len({r["group"] for r in norms})


def test_curve_points_are_reloaded_exports_evaluated(monkeypatch):
    m, shape = _trained_like("smallcnn", frac=0.5)
    x = torch.randn(16, *shape)
    y = m(x).argmax(1)
    seen = []
    real_load = ex.load_pruned

    def spy(path, *a, **k):
        out = real_load(path, *a, **k)
        seen.append(out)
        return out

    monkeypatch.setattr(ex, "load_pruned", spy)

    def evaluate(net):
        with torch.no_grad():
            return float((net(x).argmax(1) == y).float().mean() * 100)

    curve = A.tradeoff_curve(m, shape, evaluate, arch="smallcnn", num_classes=10, points=5, repeats=3)
    assert len(curve) == len(seen) >= 3
    thr = [r["threshold"] for r in curve]
    assert thr == sorted(thr) and thr[0] == 0.0
    removed = [r["channels_removed"] for r in curve]
    assert removed == sorted(removed) and removed[-1] > removed[0]
    for r, net in zip(curve, seen):  # every number is the reloaded model's own
        assert r["params"] == ex.count_params(net) and r["flops"] == ex.count_flops(net, shape)
        assert r["test_acc"] == evaluate(net)
    assert curve[0]["param_reduction"] == 0.0 or curve[0]["channels_removed"] > 0
    best = A.meets_budget(curve, max_flops=curve[-1]["flops"])
    assert best is not None and best["flops"] <= curve[-1]["flops"]
    assert A.meets_budget(curve, max_params=1) is None
    with pytest.raises(ValueError, match="unknown budget"):
        A.meets_budget(curve, max_mflops=3)
    with pytest.raises(ValueError, match="positive finite"):
        A.meets_budget(curve, max_flops=float("nan"))


def test_unchanged_network_measures_one_within_its_spread():
    m, shape = _trained_like("smallcnn")
    lat = A.latency({"before": m, "after": copy.deepcopy(m)}, shape, batch=4, repeats=40, warmup=3, threads=1)
    sp = lat["speedup"]["after"]
    assert sp["p10"] <= 1.0 <= sp["p90"]
    assert lat["threads"] == 1 and lat["ms"]["before"]["p25"] <= lat["ms"]["before"]["median"] <= lat["ms"]["before"]["p75"]
    layers = A.layer_table(m, m, shape)
    assert "no speed-up is expected" in A.speedup_reason(layers, lat)


def test_latency_refuses_bad_settings():
    m, shape = _trained_like("smallcnn")
    for kw, msg in (({"repeats": 1}, "repeats"), ({"batch": 0}, "batch"), ({"threads": 0}, "threads"),
                    ({"warmup": -1}, "warmup")):
        with pytest.raises(ValueError, match=msg):
            A.latency({"a": m}, shape, **kw)


def test_speedup_reason_names_misaligned_channels_and_overhead():
    layers = [{"kind": "conv", "out_before": 64, "out_after": 37, "flops_before": 1000, "flops_after": 500}]
    lat = {"batch": 1, "ms": {"after": {"median": 0.4}},
           "speedup": {"after": {"median": 1.01, "p25": 0.97, "p75": 1.05}}}
    text = A.speedup_reason(layers, lat)
    assert "not measurably faster" in text and "multiples of 8" in text and "overhead" in text
    lat["speedup"]["after"] = {"median": 1.8, "p25": 1.6, "p75": 2.0}
    assert "50% fewer FLOPs" in A.speedup_reason(layers, lat)


def test_curve_thresholds_span_the_norms():
    thr = A.curve_thresholds([0.0, 0.0, 0.1, 0.2, 0.3, 1.0, 2.0, 3.0], points=4)
    assert thr[0] == 0.0 and thr == sorted(set(thr)) and thr[-1] > 1.0
    with pytest.raises(ValueError, match="points"):
        A.curve_thresholds([1.0], points=1)


def test_provenance_and_config_diff():
    p = A.provenance("cpu")
    assert p["torch"] == torch.__version__ and p["threads"] >= 1 and p["device_model"]
    assert p["git"] is None or len(p["git"]) == 12
    d = A.config_diff({1: {"method": "pcd", "tau": 0.1, "seed": 0}, 2: {"method": "ws", "tau": 0.1, "seed": 0, "w": 1}})
    assert d == {"method": {1: "pcd", 2: "ws"}, "w": {1: None, 2: 1}}
