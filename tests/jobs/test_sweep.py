"""Queue-form helpers: number lists and the methods x tau x seeds product."""
from __future__ import annotations

import pytest

from pcd.jobs.sweep import build_sweep, describe, parse_numbers


def test_parse_numbers():
    assert parse_numbers("0, 0.01 0.02;0.01", name="τ", low=0, high=1) == [0.0, 0.01, 0.02]
    assert parse_numbers("0,1,2", name="seeds", integer=True) == [0, 1, 2]
    for bad, msg in (("", "at least one"), ("0.5, x", "'x' is not a number"), ("1.5", "outside"),
                     ("nan", "not finite"), ("1.5", "whole number")):
        with pytest.raises(ValueError, match=msg):
            parse_numbers(bad, name="v", low=0 if msg != "whole number" else None,
                          high=1 if msg == "outside" else None, integer=(msg == "whole number"))


def test_build_sweep_product_and_tau_free_methods():
    cfgs = build_sweep({"dataset": "digits", "epochs": 2}, ["pcd", "mgda"], [0.0, 0.1, 0.2], [0, 1],
                       {"pcd": {"beta": 0.99, "tau": 0.5}, "mgda": {"solver": "exact"}})
    pcd = [c for c in cfgs if c["method"] == "pcd"]
    mgda = [c for c in cfgs if c["method"] == "mgda"]
    assert len(pcd) == 6 and len(mgda) == 2  # tau does not change MGDA: one run per seed
    assert {(c["tau"], c["seed"]) for c in pcd} == {(t, s) for t in (0.0, 0.1, 0.2) for s in (0, 1)}
    assert all(c["method_params"] == {"beta": 0.99} for c in pcd)  # the sweep's tau wins over a form tau
    assert all(c["dataset"] == "digits" and c["epochs"] == 2 for c in cfgs)
    assert "pcd τ=0.1 seed 1" in describe(pcd[-1] if pcd[-1]["tau"] == 0.1 else {**pcd[0], "tau": 0.1, "seed": 1})
    with pytest.raises(ValueError, match="at least one method"):
        build_sweep({}, [], [0.0], [0])
    with pytest.raises(ValueError, match="at most 5"):
        build_sweep({}, ["pcd"], [0.0, 0.1, 0.2], [0, 1], max_runs=5)
