"""Issue 27: every registered method runs through every CLI command that takes methods (geometry,
toy, kdw, scale, basin; prune: tests/train/test_run.py runs each method for two epochs), at tiny
sizes; a method refusing a problem says why in its record instead of stopping the command."""
from __future__ import annotations

import json
import math

import numpy as np
import pytest

import pcd.methods as registry
from pcd.cli import main

ALL = registry.available()
REFUSE_NEGATIVE = ("uw", "gls")  # two_task has negative losses


def _json(tmp_path, argv):
    out = tmp_path / "out.json"
    assert main(argv + ["--json", str(out)]) == 0
    return json.loads(out.read_text())


def test_geometry_every_method(tmp_path):
    d = _json(tmp_path, ["geometry", "--methods", ",".join(ALL), "--angle", "150"])
    assert [r["method"] for r in d["methods"]] == ALL
    assert all(r["error"] is None and math.isfinite(r["norm"]) for r in d["methods"])


def test_toy_every_method_with_the_refusals_in_the_records(tmp_path):
    recs = _json(tmp_path, ["toy", "--problem", "two_task", "--methods", ",".join(ALL), "--steps", "20"])
    assert sorted({r["method"] for r in recs}) == sorted(ALL)
    for r in recs:
        if r["method"] in REFUSE_NEGATIVE:
            assert r["diagnosis"] == "error" and "losses must be >= 0" in r["error"]
        else:
            assert r["diagnosis"] != "error" and np.all(np.isfinite(r["end"])), r


def test_kdw_every_method(tmp_path):
    recs = _json(tmp_path, ["kdw", "--K", "2,3", "--methods", ",".join(ALL), "--steps", "20"])
    assert [(r["K"], r["method"]) for r in recs] == [(k, m) for k in (2, 3) for m in ALL]
    assert all(math.isfinite(r["ratio"]) and r["diagnosis"] != "error" for r in recs)


def test_scale_every_method(tmp_path):
    d = _json(tmp_path, ["scale", "--methods", ",".join(ALL), "--steps", "20"])
    assert list(d["methods"]) == ALL
    assert all(np.all(np.isfinite(v["endpoints"])) for v in d["methods"].values())


@pytest.mark.parametrize("problem", ["saddle2d", "two_task"])
def test_basin_every_method(tmp_path, problem):
    d = _json(tmp_path, ["basin", "--problem", problem, "--grid", "3", "--steps", "20", "--methods", ",".join(ALL)])
    assert list(d["methods"]) == ALL
    for m, v in d["methods"].items():
        assert len(v["outcome"]) == 9
        refused = problem == "two_task" and m in REFUSE_NEGATIVE
        assert ("losses must be >= 0" in v.get("error", "")) == refused, (m, v.get("error"))
        assert refused or "error" not in v


def test_the_tau_dials_comparison_points_are_the_toy_commands_mean_end_losses(tmp_path):
    """The τ dial page's markers (synthetic.tau_references) = `python -m pcd toy` averaged over the starts."""
    from pcd.experiments.synthetic import tau_references

    methods = ["ws", "fairgrad", "krum"]
    refs = tau_references("quadratic", methods, steps=50, lr=0.02)
    recs = _json(tmp_path, ["toy", "--problem", "quadratic", "--methods", ",".join(methods), "--steps", "50",
                            "--lr", "0.02"])
    for m in methods:
        mean = np.mean([r["losses"] for r in recs if r["method"] == m], axis=0)
        assert refs[m]["losses"] == pytest.approx(mean.tolist(), rel=1e-12)
