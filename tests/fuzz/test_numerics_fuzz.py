"""Numerics at the ends of the float range: QP invariance, every method finite or ValueError."""
from __future__ import annotations

import numpy as np
import pytest

import pcd.methods as M
from pcd.engine import run
from pcd.qp import project, rescale_gram, solve_nnqp, solve_qp
from tests.fuzz import method_cases, qp_cases


def test_qp_answer_invariant_to_scale_for_K_3_to_64():
    tried, failures = qp_cases.sweep()
    assert tried >= 200
    assert not failures, f"{len(failures)}/{tried}:\n" + "\n".join(failures[:20])


@pytest.mark.parametrize("K", [2, 3, 5, 9])
def test_qp_bit_identical_under_powers_of_two(K):
    rng = np.random.default_rng(K)
    J = rng.standard_normal((K, K + 2))
    G = J @ J.T
    ref = solve_qp(G, 0.2)
    for k in (-1000, -600, -3, 5, 900):
        r = solve_qp(np.ldexp(G, k), 0.2)
        np.testing.assert_array_equal(r.weights, ref.weights)


def test_qp_issue_examples():
    # anti-parallel g2 = -g1 at the top of the float range: [1, 1 + tau], not [1, inf]
    a = 1.7e308
    r = solve_qp([[a, -a], [-a, a]], 0.02)
    assert np.allclose(r.weights, [1.0, 1.02]) and r.feasible
    # K = 3 with entries above 1e154: [1, .8, .8], not [1, 0, 0]
    J = np.array([[1.0, 0.0], [-0.5, 0.5], [-0.5, -0.5]])
    for c in (1.0, 1e160, 1e300, 1e-160, 1e-300):
        r = solve_qp(J @ J.T * c, 0.1)
        ref = solve_qp(J @ J.T, 0.1)
        assert np.allclose(r.weights, ref.weights) and r.feasible == ref.feasible


def test_project_and_nnqp_rescale_with_their_bounds():
    rng = np.random.default_rng(3)
    J = rng.standard_normal((4, 6))
    G = J @ J.T
    lower = np.array([0.1, -0.2, 0.3, 0.0])
    w, ok = project(G, [1, 1, 1, 1], lower=lower)
    for c in (1e-250, 1e250):
        w2, ok2 = project(G * c, [1, 1, 1, 1], lower=lower * c)
        assert ok2 == ok and np.allclose(w2, w, rtol=1e-7, atol=1e-9)
    mu = solve_nnqp(G, -np.ones(4))
    assert np.allclose(solve_nnqp(G * 1e-280, -np.ones(4) * 1e-280), mu, rtol=1e-7, atol=1e-9)


def test_rescale_refuses_a_non_gram_matrix():
    with pytest.raises(ValueError, match="positive semi-definite"):
        rescale_gram(np.array([[1e-300, 1e300], [1e300, 1e-300]]))
    with pytest.raises(ValueError):
        solve_qp([[1e-300, 1e300], [1e300, 1e-300]], 0.1)


def test_every_method_finite_or_value_error_at_extreme_scales_and_denormals():
    refused: list[str] = []
    tried, failures = method_cases.sweep(refused=refused)
    assert tried >= 4000
    assert not failures, f"{len(failures)}/{tried}:\n" + "\n".join(failures[:20])
    # a ValueError is the exception: almost every call gets a finite answer
    assert len(refused) <= tried // 100, refused[:10]


@pytest.mark.parametrize("scale", [1e-160, 1e-200, 1e-300])
def test_graddrop_with_tiny_gradients_gives_the_unit_scale_direction(scale):
    rng = np.random.default_rng(0)
    J = rng.standard_normal((1, 3, 5))
    m = M.get("graddrop")()
    ref = m(J @ J.transpose(0, 2, 1), jacobian=J, rng=np.random.default_rng(1))
    Js = J * scale
    out = m(Js @ Js.transpose(0, 2, 1), jacobian=Js, rng=np.random.default_rng(1))
    assert np.isfinite(out.weights).all() and np.isfinite(out.exact).all()
    np.testing.assert_allclose(out.exact / scale, ref.exact, rtol=1e-6)


def test_declared_gram_scaling_holds_for_every_method():
    """``weights(c G) = c**gram_scaling weights(G)`` at ordinary scales (what the retry relies on)."""
    rng = np.random.default_rng(5)
    J = rng.standard_normal((3, 6))
    for name in M.available():
        cls = M.get(name)
        if cls.gram_scaling is None:
            continue
        w1, _ = method_cases._call(cls(), J, np.random.default_rng(0))
        for c in (4.0, 1 / 64):
            w2, _ = method_cases._call(cls(), J * np.sqrt(c), np.random.default_rng(0))
            np.testing.assert_allclose(w2, w1 * c ** cls.gram_scaling, rtol=1e-6, atol=1e-12, err_msg=name)


def test_engine_reports_non_finite_method_output_as_error():
    """A method whose answer cannot be made finite ends its trajectories with diagnosis 'error'."""
    from pcd.methods.base import Method, Step

    class Broken(Method):
        name = "broken-test"
        gram_scaling = None

        def update(self, gram, state=None, **kw):
            return Step(weights=np.full(gram.shape[:-1], np.nan))

    res = run("saddle2d", [Broken()], steps=5, lr=0.01)
    assert "broken-test" in res.errors and "no finite direction" in res.errors["broken-test"]
    assert set(res.diagnosis.ravel()) == {"error"} if hasattr(res, "diagnosis") else True
