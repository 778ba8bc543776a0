"""MoDo: step-by-step TorchJD oracle (on Gram matrices and on double-sampled ``J_1 J_2^T``), the
simplex projection, bad hyper-parameters.

Tolerance: over 10 consecutive calls (state carried along) our weights equal TorchJD 0.18's
``MoDoWeighting`` to 1e-13 absolute (weights are in [0, 1]): the same float64 update and the same
sort-based projection; only the order of the sums differs (measured <= 1.4e-14 on badly scaled A).
"""
import numpy as np
import pytest

import pcd.methods as methods
from pcd.methods.modo import project_onto_simplex
from tests.methods._samplers import KINDS, jacobian


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("K", [2, 3, 5, 8])
@pytest.mark.parametrize("double", [False, True])
def test_oracle_torchjd_over_several_calls(kind, K, double, torch, agg):
    B, steps, gamma, rho = 3, 10, 0.05, 0.1
    m = methods.make("modo", gamma=gamma, rho=rho)
    state = m.init(B, K)
    refs = [agg.MoDoWeighting(gamma=gamma, rho=rho) for _ in range(B)]
    for t in range(steps):
        J1 = jacobian(kind, B, K, seed=10 * t + K)
        J2 = jacobian(kind, B, K, seed=10 * t + K + 500) if double else J1
        A = np.einsum("bkn,bln->bkl", J1, J2)  # J_1 J_2^T: not symmetric with two draws
        out = m(A, state=state)
        state = out.state
        ref = np.stack([refs[b](torch.tensor(A[b])).numpy() for b in range(B)])
        np.testing.assert_allclose(out.weights, ref, rtol=0, atol=1e-13)
        assert np.all(out.weights >= 0) and np.allclose(out.weights.sum(-1), 1.0)


def test_projection_onto_simplex():
    torch = pytest.importorskip("torch")
    from torchjd.aggregation._utils.simplex import project_onto_simplex as ref

    rng = np.random.default_rng(0)
    Y = np.concatenate([rng.standard_normal((50, 5)) * 3, rng.uniform(0, 0.1, (10, 5)), np.full((1, 5), 0.2)])
    P = project_onto_simplex(Y)
    np.testing.assert_allclose(P, np.stack([ref(torch.tensor(y)).numpy() for y in Y]), rtol=0, atol=1e-15)
    np.testing.assert_allclose(P.sum(-1), 1.0, rtol=1e-14)
    # optimality: y - p is constant on the support and larger off it (KKT of the projection)
    for y, p in zip(Y, P):
        on = p > 0
        d = y - p
        assert np.ptp(d[on]) < 1e-12 and np.all(d[~on] <= d[on].max() + 1e-12)


def test_first_step_pinned():
    # G = diag(1, 3), lambda = (1/2, 1/2), gamma = 0.1, rho = 0: step (0.05, 0.15) -> (0.55, 0.45)
    out = methods.make("modo", rho=0.0)(np.diag([1.0, 3.0]))
    np.testing.assert_allclose(out.weights[0], [0.55, 0.45], atol=1e-15)
    np.testing.assert_allclose(out.state.lam[0], [0.55, 0.45], atol=1e-15)


def test_bad_hyper_parameters_and_state_refused():
    with pytest.raises(ValueError, match="gamma"):
        methods.make("modo", gamma=0.0)
    with pytest.raises(ValueError, match="rho"):
        methods.make("modo", rho=-0.1)
    m = methods.make("modo")
    with pytest.raises(ValueError, match="state"):
        m(np.eye(3), state=m.init(1, 2))
