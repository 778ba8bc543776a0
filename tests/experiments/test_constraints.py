"""Constraints vs fixed penalties (seed 003, arXiv 2505.20628): properties and published shapes."""
from __future__ import annotations

import json
import math

import numpy as np
import pytest
import torch

from pcd.experiments import constraints as C

torch.set_num_threads(1)
HALF_PI = math.pi / 2


@pytest.fixture(scope="module")
def toy_runs():
    # Default settings: x0 = 0.6, 500 projected-SGD steps, lr 0.05; AL rho = 20; nuPI Kp = 20, Ki = 0.5.
    return C.run_toy(C.PAPER_EPS, C.DEFAULT_TOY_C)


@pytest.fixture(scope="module")
def blobs():
    return C.make_blobs()


# ---- 1-D example ----------------------------------------------------------------------------------

def test_toy_solution_is_kkt_point():
    eps = np.array(C.PAPER_EPS)
    x, lam = C.toy_solution(eps)
    np.testing.assert_allclose(np.sin(x), eps, rtol=1e-14)
    # stationarity of L = cos x + lam (sin x - eps): -sin x + lam cos x = 0
    np.testing.assert_allclose(-np.sin(x) + lam * np.cos(x), 0.0, atol=1e-14)
    assert (lam > 0).all()


@pytest.mark.parametrize("c", [0.0, 0.3, 1.0, 1 / math.sqrt(3), 5.0])
def test_penalty_objective_is_concave(c):
    x = np.linspace(0.0, HALF_PI, 401)
    p = C.penalty_objective(x, c)
    second = p[2:] - 2 * p[1:-1] + p[:-2]
    assert (second <= 1e-12).all()
    # hence its minimum over [0, pi/2] is an endpoint
    assert p.min() == pytest.approx(min(p[0], p[-1]))


def test_al_and_nupi_reach_arcsin_eps_and_lambda_star(toy_runs):
    x_star, lam_star = C.toy_solution(C.PAPER_EPS)
    for run in toy_runs:
        if run.family in ("auglag", "nupi"):
            rel = np.abs(run.x_final - x_star) / x_star
            assert rel.max() < 1e-3, (run.method, rel)
            np.testing.assert_allclose(run.lam_final, lam_star, rtol=1e-3)


def test_every_fixed_penalty_ends_at_an_endpoint(toy_runs):
    pens = [r for r in toy_runs if r.family == "penalty"]
    assert {r.param for r in pens} == set(C.DEFAULT_TOY_C)
    for run in pens:
        x = run.x_final
        at_end = (np.abs(x) <= 1e-3) | (np.abs(x - HALF_PI) <= 1e-3)
        assert at_end.all(), (run.method, x)
        # ... the one predicted by the sign of x0 - arctan c (the penalty's maximum)
        np.testing.assert_allclose(x, C.penalty_endpoint(run.param, 0.6), atol=1e-3)


@pytest.mark.parametrize("x0", [0.3, 1.0])
def test_penalty_endpoint_from_other_starts(x0):
    runs = C.run_toy([0.2, 0.7], [0.1, 0.5, 2.0, 10.0], ("penalty",), x0=x0)
    for run in runs:
        np.testing.assert_allclose(run.x_final, C.penalty_endpoint(run.param, x0), atol=1e-3)


def test_oracle_penalty_c_equal_lambda_star_still_misses():
    # Even c = lambda* (the optimal multiplier) ends at an endpoint unless started exactly at x*.
    eps = 0.3
    _, lam = C.toy_solution(eps)
    run = C.run_toy(eps, float(lam[0]), ("penalty",), x0=0.6)[0]
    assert C.epsilon_table([run])[0]["endpoint"] in ("0", "pi/2")


def test_gda_is_absorbed_at_an_endpoint(toy_runs):
    gda = next(r for r in toy_runs if r.family == "gda")
    rows = C.epsilon_table([gda])
    assert all(r["endpoint"] in ("0", "pi/2") for r in rows)
    assert min(r["rel_error"] for r in rows) > 0.5
    # at pi/2 the constraint's gradient cos x vanishes: lambda keeps growing, x cannot come back
    top = gda.x_final > 1.5
    assert top.any() and (gda.lam_final[top] > 10 * C.toy_solution(gda.eps[top])[1]).all()


def test_pcd_chatters_in_a_band_around_the_boundary(toy_runs):
    pcd = next(r for r in toy_runs if r.family == "pcd")
    x_star, _ = C.toy_solution(C.PAPER_EPS)
    lr = pcd.settings["lr"]
    # deployed step length is lr * |g_1| = lr sin x <= lr: PCD stays within about one step of x*
    assert (np.abs(pcd.x_final - x_star) <= lr).all()
    assert (np.abs(pcd.x[-100:] - x_star) <= lr).all()
    # it is not converging with a constant step: it keeps crossing the boundary
    sides = np.sign(np.sin(pcd.x[-100:]) - np.asarray(C.PAPER_EPS))
    assert ((sides > 0).any(axis=0) & (sides <= 0).any(axis=0)).all()
    assert np.isnan(pcd.lam).all()


def test_epsilon_table_schema(toy_runs):
    rows = C.epsilon_table(toy_runs)
    n_methods = len(C.DEFAULT_TOY_C) + 4
    assert len(rows) == n_methods * len(C.PAPER_EPS)
    for key in ("eps", "method", "x", "lambda", "rel_error", "x_star", "endpoint"):
        assert key in rows[0]
    names = {r["method"] for r in rows}
    assert {"gda", "auglag", "nupi", "pcd", "penalty(c=0.3)"} <= names
    json.dumps(rows)  # plain data


@pytest.mark.parametrize("bad", [0.0, 1.0, 1.2, -0.1, [0.5, 1.0]])
def test_eps_outside_open_interval_is_rejected(bad):
    with pytest.raises(ValueError, match="strictly between 0 and 1"):
        C.check_eps(bad)
    with pytest.raises(ValueError, match="strictly between 0 and 1"):
        C.run_toy(bad, 0.5, ("penalty",))


def test_negative_c_and_other_bad_inputs_are_rejected():
    with pytest.raises(ValueError, match="c must be >= 0"):
        C.run_toy(0.5, -1.0)
    with pytest.raises(ValueError, match="c must be >= 0"):
        C.train_penalty(C.make_blobs(), [1.0, -0.5], steps=5)
    with pytest.raises(ValueError, match=r"\[0, pi/2\]"):
        C.run_toy(0.5, 1.0, x0=2.0)
    with pytest.raises(ValueError, match="allowed"):
        C.run_toy(0.5, 1.0, ("mgda",))
    with pytest.raises(ValueError, match="tau must lie in"):
        C.run_toy(0.5, 1.0, ("pcd",), tau=1.5)
    with pytest.raises(ValueError, match="target rate"):
        C.train_penalty(C.make_blobs(), 1.0, target=70)
    with pytest.raises(ValueError, match="eta must be >= 0"):
        C.train_lagrangian(C.make_blobs(), -1.0, steps=5)


# ---- rate-constrained classifier -------------------------------------------------------------------

def test_blobs_are_seeded_and_balanced():
    a, b = C.make_blobs(seed=3), C.make_blobs(seed=3)
    np.testing.assert_array_equal(a.X, b.X)
    assert a.X.shape == (400, 2) and a.y.sum() == 200
    assert not np.array_equal(a.X, C.make_blobs(seed=4).X)


def test_penalty_has_a_narrow_window_matching_the_paper(blobs):
    runs = C.train_penalty(blobs, C.PAPER_C)
    rates = np.array([r.rate for r in runs])
    acc = np.array([r.accuracy for r in runs])
    assert (np.diff(rates) >= 0).all()  # more weight, more class-0 predictions
    np.testing.assert_allclose(rates, C.PAPER_PENALTY_RATE, atol=2.5)
    np.testing.assert_allclose(acc, C.PAPER_PENALTY_ACC, atol=2.5)
    # no c in the paper's grid lands within 70 +- 2 %: the usable window falls between grid points
    assert not (np.abs(rates - 70) <= 2).any()


def test_lagrangian_holds_the_target_across_eta(blobs):
    etas = [1e-2, 0.1, 1.0, 10.0]
    runs = C.train_lagrangian(blobs, etas)
    for r in runs:
        assert abs(r.rate - 70.0) <= 2.0, (r.param, r.rate)
        assert abs(r.accuracy - 80.0) <= 2.5
        assert 1.0 < r.lam < 3.0  # the learned weight lands inside the penalty's narrow window


def test_eta_zero_is_the_unconstrained_model(blobs):
    run = C.train_lagrangian(blobs, 0.0, steps=400)[0]
    free = C.train_penalty(blobs, 0.0, steps=400)[0]
    assert run.lam == 0.0 and run.rate == free.rate
    np.testing.assert_allclose(run.w, free.w, atol=1e-12)


def test_penalty_is_a_lagrangian_with_a_frozen_multiplier(blobs):
    # Cooper (torch autograd) with eta = 0 and lambda0 = c reproduces the NumPy penalty loop.
    cs = [0.46, 2.15]
    lag = C.train_lagrangian(blobs, [0.0, 0.0], lambda0=cs, steps=300)
    pen = C.train_penalty(blobs, cs, steps=300)
    for a, b in zip(lag, pen):
        np.testing.assert_allclose(a.w, b.w, atol=1e-10)
        assert a.b == pytest.approx(b.b, abs=1e-10) and a.lam == b.param
    W = C.train_penalty_torch(blobs, cs, steps=300)
    np.testing.assert_allclose(W[:, :2], np.array([r.w for r in pen]), atol=1e-10)


def test_pcd_meets_the_surrogate_not_necessarily_the_true_rate(blobs):
    runs = C.train_pcd(blobs, [0.0, 0.5])
    zero, half = runs
    # tau = 0 only forbids making the secondary worse: from w = 0 it never pushes the rate up
    assert zero.rate <= 52.0
    # tau > 0: it pushes the *surrogate* to the target and chatters there ...
    assert abs(half.surrogate - 70.0) <= 2.0
    assert half.rate > 60.0
    # ... and the true rate is whatever the surrogate implies (here below the target)
    assert half.rate < 70.0


def test_batched_tau_equals_separate_runs(blobs):
    both = C.train_pcd(blobs, [0.1, 1.0], steps=200)
    for r in both:
        one = C.train_pcd(blobs, r.param, steps=200)[0]
        np.testing.assert_allclose(r.w, one.w, atol=1e-12)


def test_bisection_spends_several_trainings(blobs):
    out = C.penalty_bisection(tol=1.0)
    assert out["hit"] and abs(out["runs"][-1]["rate"] - 70.0) <= 1.0
    assert out["n_runs"] >= 5  # vs one constrained run
    cs = [r["c"] for r in out["runs"]]
    assert cs[:2] == [1e-3, 100.0]
    assert cs[2] == pytest.approx(math.sqrt(1e-3 * 100.0))  # geometric bisection


def test_rate_cost_reports_both_loops():
    out = C.rate_cost(steps=20, repeats=2)
    assert len(out["penalty_s"]) == len(out["constrained_s"]) == 2
    assert min(out["penalty_s"]) > 0 and min(out["constrained_s"]) > 0
    assert math.isfinite(out["overhead_pct"])
    assert out["paper_overhead_pct"] == {"rate": 5.2, "sparsity": 1.6}


# ---- CLI --------------------------------------------------------------------------------------------

def test_cli_writes_the_documented_json(tmp_path, capsys):
    from pcd.cli import main

    path = tmp_path / "out.json"
    rc = main(["constrained", "--eps", "0.3", "0.6", "--c", "0", "2", "--rate-steps", "200",
               "--no-cost", "--no-bisection", "--json", str(path)])
    assert rc == 0
    data = json.loads(path.read_text())
    eps_rows = data["epsilon_table"]
    assert {"eps", "method", "x", "lambda", "rel_error"} <= set(eps_rows[0])
    assert {r["method"] for r in eps_rows} == {"penalty(c=0)", "penalty(c=2)", "gda", "auglag", "nupi", "pcd"}
    al = [r for r in eps_rows if r["method"] in ("auglag", "nupi")]
    assert max(r["rel_error"] for r in al) < 1e-3
    rate_rows = data["rate_sweep"]
    assert {"method", "param", "rate", "accuracy"} <= set(rate_rows[0])
    assert {r["method"] for r in rate_rows} >= {"gda", "pcd", "penalty(c=0.46)"}


@pytest.mark.parametrize("args, msg", [(["--eps", "1.5"], "strictly between 0 and 1"),
                                       (["--c", "-1"], "c must be >= 0"),
                                       (["--x0", "3"], "pi/2")])
def test_cli_bad_input_is_one_line_and_exit_2(args, msg, capsys):
    from pcd.cli import main

    rc = main(["constrained", *args, "--no-cost", "--no-bisection"])
    err = capsys.readouterr().err.strip().splitlines()
    assert rc == 2 and len(err) == 1 and err[0].startswith("error:") and msg in err[0]
