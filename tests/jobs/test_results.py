"""Results helpers: points, Pareto front, matched comparison, exact hypervolume, estimates."""
from __future__ import annotations

import itertools
import random

import pytest

from pcd.jobs import results as R


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
    cfg = dict(runs[0]["config"], epochs=10)
    est = R.estimate_seconds(runs, cfg)
    assert est["per_epoch"] == 5.0 and est["overhead"] == 4.0 and est["seconds"] == 54.0 and est["basis"] == 2
    assert R.estimate_seconds(runs, dict(cfg, arch="resnet18")) is None
    cal = R.calibration_config(cfg)
    assert cal["epochs"] == 1 and cal["export"] is False and cal["method"] == "pcd"
