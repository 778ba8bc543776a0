"""Basin maps (issue 14, part 1): grid layout, outcome classes, JSON shape."""
from __future__ import annotations

import numpy as np
import pytest

from pcd.engine import OUTCOMES, outcomes, run
from pcd.experiments.basin import basin, grid_starts


def test_grid_is_row_major_cell_centres():
    xs, ys, starts = grid_starts(((-1.0, 1.0), (0.0, 4.0)), 4)
    np.testing.assert_allclose(xs, [-0.75, -0.25, 0.25, 0.75])
    np.testing.assert_allclose(ys, [0.5, 1.5, 2.5, 3.5])
    assert starts.shape == (16, 2)
    np.testing.assert_array_equal(starts[4 * 2 + 1], [xs[1], ys[2]])  # s = j * n + i


def test_basin_matches_the_engine_and_json_shape():
    res = basin("saddle2d", ["pcd", "ws"], grid=6, steps=300, lr=0.01, tau=0.3)
    ref = run("saddle2d", ["ws"], starts=res.starts, steps=300, lr=0.01)
    np.testing.assert_array_equal(res.ends[1], ref.end[0])
    np.testing.assert_array_equal(res.outcome[1], outcomes(ref.diagnosis[0], ref.end_grad_norms[0]))
    for m in res.methods:
        fr = res.fractions(m)
        assert list(fr) == list(OUTCOMES) and abs(sum(fr.values()) - 1.0) < 1e-12
    js = res.to_json()
    assert set(js) == {"elapsed_s", "grid", "methods"}
    assert js["grid"]["n"] == 6 and len(js["grid"]["x"]) == 6
    for m in ("pcd", "ws"):
        entry = js["methods"][m]
        assert set(entry) == {"fractions", "ends", "outcome"}
        assert len(entry["ends"]) == 36 and len(entry["ends"][0]) == 2 and len(entry["outcome"]) == 36
        assert set(entry["outcome"]) <= set(OUTCOMES)


def test_outcome_classes():
    d = np.array(["cms", "conflict_equilibrium", "conflict_equilibrium", "primary_stationary", "moving",
                  "diverged", "error"], dtype=object)
    g = np.array([[0, 0], [1.0, 2.0], [1.0, 0.0], [0.0, 1.0], [1.0, 1.0], [np.nan, np.nan], [np.nan, np.nan]])
    assert list(outcomes(d, g)) == ["cms", "conflict_equilibrium", "single_objective_minimum",
                                    "single_objective_minimum", "moving", "diverged", "diverged"]


@pytest.mark.parametrize("kw, msg", [({"grid": 201}, "grid"), ({"grid": 1}, "grid"), ({"steps": 0}, "steps"),
                                     ({"problem": "double_well", "problem_params": {"K": 4}}, "2-D"),
                                     ({"methods": "pcd,nope"}, "nope"), ({"tau": 2}, "tau")])
def test_bad_input_is_rejected(kw, msg):
    with pytest.raises(ValueError, match=msg):
        basin(**{"grid": 4, "steps": 10, **kw})
