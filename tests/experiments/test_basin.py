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


# ---- against an independent loop ----------------------------------------------------------------
def _independent(grads, method, x0, steps, lr=0.01, tau=0.3):
    """A from-scratch NumPy loop (DESIGN.md's formulas, not the engine's code): PCD (EMA-normalized
    K = 2 closed form, rescaled to ||g1||) or WS (mean), with Adam. Returns (end, end - W steps)."""
    x = x0.astype(float).copy()
    m, v, ema = np.zeros_like(x), np.zeros_like(x), np.zeros_like(x)
    W = max(1, steps // 10)
    xw = x
    for t in range(1, steps + 2):
        if t - 1 == steps - W:
            xw = x.copy()
        g1, g2 = grads(x)
        if t == steps + 1:
            return x, xw
        if method == "ws":
            d = (g1 + g2) / 2
        else:
            n1, n2, c = (g1 ** 2).sum(1), (g2 ** 2).sum(1), (g1 * g2).sum(1)
            ema = 0.999 * ema + 0.001 * np.column_stack([n1, n2])
            s = 1 / np.sqrt(ema / (1 - 0.999 ** t) + 1e-8)
            a, cc, e = n1 * s[:, 0] ** 2, c * s[:, 0] * s[:, 1], n2 * s[:, 1] ** 2
            mu = np.where(e > 0, np.maximum(0, (tau * e - cc) / np.where(e > 0, e, 1)), 0)
            dt = s[:, :1] * g1 + (mu * s[:, 1])[:, None] * g2            # d~ in raw coordinates
            nd = np.linalg.norm(dt, axis=1)
            scale = np.where(nd > 1e-12 * (np.sqrt(a) + mu * np.sqrt(e)), np.sqrt(n1) / np.where(nd > 0, nd, 1), 0)
            d = dt * scale[:, None]
        m = 0.9 * m + 0.1 * d
        v = 0.999 * v + 0.001 * d * d
        x = x - lr / (1 - 0.9 ** t) * m / (np.sqrt(v / (1 - 0.999 ** t)) + 1e-8)
    return x, xw


def _classify(grads, x, xw, steps, lr=0.01):
    from pcd.engine import diagnose

    g1, g2 = grads(x)
    gn = np.column_stack([np.linalg.norm(g1, axis=1), np.linalg.norm(g2, axis=1)])
    speed = np.linalg.norm(x - xw, axis=1) / (lr * max(1, steps // 10))
    ok = np.ones(len(x), dtype=bool)
    return outcomes(diagnose(gn, speed, ok, ~ok, "adam")[3], gn)


def _relu_box(x, c, h):
    dev = x - c
    return np.sign(dev) * (np.abs(dev) > h)


def _saddle_grads(x):
    g1 = np.column_stack([x[:, 0] * (x[:, 0] ** 2 - 4), x[:, 1]])
    return g1, _relu_box(x, np.array([2.0, 0.0]), 0.5)


def _custom_grads(x):
    g1 = np.column_stack([4 * x[:, 0] * (x[:, 0] ** 2 - 1), x[:, 1]])
    return g1, _relu_box(x, np.array([1.0, 0.0]), 0.25)


@pytest.mark.parametrize("case", ["saddle2d", "custom"])
def test_fractions_equal_an_independent_loop(case):
    from pcd.problems import make

    if case == "saddle2d":
        prob, grads = make("saddle2d"), _saddle_grads
    else:
        prob = make("custom", primary="(x**2-1)**2 + 0.5*y**2",
                    secondaries=["relu(abs(x-1)-0.25) + relu(abs(y)-0.25)"], bounds=((-2.0, 2.0), (-1.5, 1.5)))
        grads = _custom_grads
    steps = 600
    res = basin(prob, ["pcd", "ws"], grid=12, steps=steps, lr=0.01, tau=0.3)
    for name in ("pcd", "ws"):
        x, xw = _independent(grads, name, res.starts, steps)
        ref = _classify(grads, x, xw, steps)
        m = res.index(name)
        np.testing.assert_allclose(res.ends[m], x, atol=1e-8)
        assert res.outcome[m].tolist() == ref.tolist()
        assert res.fractions(name) == {k: float(np.mean(ref == k)) for k in OUTCOMES}
    # the picture the paper draws (Fig. 1): symmetric WS stalls from the left half, PCD does not
    if case == "saddle2d":
        assert res.fractions("ws")["conflict_equilibrium"] > 0.3
        assert res.fractions("pcd")["cms"] > res.fractions("ws")["cms"]


def test_merge_basins_equals_one_run():
    from pcd.experiments.basin import merge_basins

    whole = basin("saddle2d", ["pcd", "ws", "mgda"], grid=5, steps=100)
    parts = merge_basins([basin("saddle2d", ["pcd", "ws"], grid=5, steps=100),
                          basin("saddle2d", ["mgda"], grid=5, steps=100)])
    assert parts.methods == whole.methods
    np.testing.assert_array_equal(parts.ends, whole.ends)
    assert parts.outcome.tolist() == whole.outcome.tolist()
    with pytest.raises(ValueError, match="twice"):
        merge_basins([whole, whole])
    with pytest.raises(ValueError, match="share"):
        merge_basins([whole, basin("saddle2d", ["famo"], grid=4, steps=100)])


def test_every_outcome_and_diagnosis_has_its_words_in_one_home():
    """The wording lives in pcd.engine (OUTCOME_WORDS, DIAGNOSIS_WORDS); the basin tables, the figures and
    the pages read it from there."""
    from pcd.engine import DIAGNOSIS_WORDS, OUTCOME_WORDS, diagnose
    from pcd.experiments.basin import OUTCOME_LABELS
    from pcd.viz.basin import OUTCOME_NAMES, OUTCOME_SHORT
    from pcd.viz.theme import OUTCOME_COLORS, outcome_label

    assert list(OUTCOME_WORDS) == list(OUTCOMES) == list(OUTCOME_COLORS)
    assert OUTCOME_LABELS == OUTCOME_NAMES == {k: OUTCOME_WORDS[k][1] for k in OUTCOMES}
    assert OUTCOME_SHORT == {k: OUTCOME_WORDS[k][0] for k in OUTCOMES}
    g = np.array([[0.0, 0.0], [1.0, 1.0], [0.0, 1.0], [1.0, 1.0], [1.0, 1.0], [1.0, 1.0]])
    speed = np.array([0.0, 0.0, 0.0, 1.0, 0.0, 0.0])
    alive = np.array([True, True, True, True, False, False])
    errored = np.array([False, False, False, False, False, True])
    labels = set(diagnose(g, speed, alive, errored, "sgd")[3])
    assert labels == {"cms", "conflict_equilibrium", "primary_stationary", "moving", "diverged", "error"}
    for d in labels:
        for m in ("pcd", "mgda"):
            for short in (True, False):
                words = outcome_label(d, m, short=short)
                assert words in {w[0 if short else 1] for w in DIAGNOSIS_WORDS.values()}, (d, m, words)
    assert outcome_label("primary_stationary", "pcd", short=True) == DIAGNOSIS_WORDS["halted"][0]
    assert outcome_label("primary_stationary", "famo", short=True) == DIAGNOSIS_WORDS["pareto_at_primary"][0]
