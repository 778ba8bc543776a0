"""Figures of a run's inside: the data drawn is the data given (bars, histogram, curve points, budget)."""
from __future__ import annotations

import math

from pcd.viz import anatomy as VA

LAYERS = [{"layer": "conv1", "kind": "conv", "out_before": 16, "out_after": 11},
          {"layer": "fc", "kind": "linear", "out_before": 10, "out_after": 10}]
CURVE = [{"threshold": 0.0, "channels_removed": 0, "channels_total": 10, "params": 100, "param_reduction": 0.0,
          "flops": 2e6, "bytes": 4000, "test_acc": 99.0, "latency_ms": 1.0, "latency_p25": 0.9, "latency_p75": 1.2},
         {"threshold": 0.1, "channels_removed": 5, "channels_total": 10, "params": 40, "param_reduction": 0.6,
          "flops": 1e6, "bytes": 2000, "test_acc": 98.0, "latency_ms": 0.8, "latency_p25": 0.7, "latency_p75": 0.9}]


def test_layers_figure_bars_are_kept_and_removed_channels():
    fig = VA.layers_figure(LAYERS)
    kept, gone = fig.data
    assert list(kept.x) == [11, 10] and list(gone.x) == [5, 0] and list(kept.text) == ["11 / 16", "10 / 10"]
    assert "no layer table" in VA.layers_figure([]).layout.annotations[0].text


def test_norms_figure_counts_below_the_threshold():
    fig = VA.norms_figure([0.0, 1e-6, 2e-6, 0.1, 0.5], 1e-4)
    assert len(fig.data[0].x) == 4 and all(math.isclose(a, math.log10(b)) for a, b in zip(fig.data[0].x, [1e-6, 2e-6, 0.1, 0.5]))
    assert "3 of 5 below" in fig.layout.annotations[0].text
    assert "1 exactly zero" in fig.layout.xaxis.title.text


def test_curve_figure_points_and_budget_ring():
    fig = VA.curve_figure({"run 1": CURVE}, {"run 1": "pcd"}, budget=CURVE[1])
    acc = fig.data[0]
    assert list(acc.x) == [0.0, 60.0] and list(acc.y) == [99.0, 98.0]
    flops = fig.data[1]
    assert list(flops.y) == [2.0, 1.0]  # MFLOPs
    lat = fig.data[2]
    assert list(lat.error_y.array) == [0.19999999999999996, 0.09999999999999998] or math.isclose(lat.error_y.array[0], 0.2)
    rings = [t for t in fig.data if t.name == "meets the budget"]
    assert len(rings) == 4 and rings[0].x[0] == 60.0


def test_parallel_figure_has_a_method_axis_and_skips_empty_axes():
    pts = [{"method": "pcd", "test_acc": 99.0, "param_reduction": 80.0, "flops_factor": 3.0, "latency_factor": None,
            "size_factor": 4.0},
           {"method": "ws", "test_acc": 10.0, "param_reduction": 99.0, "flops_factor": 50.0, "latency_factor": None,
            "size_factor": 9.0}]
    fig = VA.parallel_figure(pts)
    labels = [d.label for d in fig.data[0].dimensions]
    assert labels == ["method", "accuracy %", "params removed %", "FLOPs ÷", "size ÷"]
    assert list(fig.data[0].dimensions[2].values) == [80.0, 99.0]
    assert tuple(fig.data[0].dimensions[2].range) == (0.0, 100.0)  # a share: one run draws no -1..1 axis
    short = fig.layout.margin.l
    long = VA.parallel_figure([{**pts[0], "method": "unpruned"}]).layout.margin.l
    assert long > short >= 110  # room left of the method axis for "unpruned (primary only)"
