"""DBGD: PCD's QP on raw gradients (pinned K = 2 closed form), the barrier holds, no normalization."""
import numpy as np
import pytest

import pcd.methods as methods
from tests.methods._samplers import gram, jacobian


def test_k2_closed_form_pinned():
    # g1 = (1, 0), g2 = (-1, 1): mu = max(0, (beta |g2|^2 - g1.g2) / |g2|^2) = (0.3 * 2 + 1) / 2 = 0.8
    G = np.array([[1.0, -1.0], [-1.0, 2.0]])
    out = methods.make("dbgd", beta=0.3)(G)
    np.testing.assert_allclose(out.weights[0], [1.0, 0.8], atol=1e-14)
    # no conflict beyond the barrier: mu = 0, the primary gradient itself
    np.testing.assert_allclose(methods.make("dbgd", beta=0.1)(np.array([[1.0, 0.5], [0.5, 1.0]])).weights[0], [1, 0])


@pytest.mark.parametrize("K", [2, 3, 4])
def test_barrier_holds_and_primary_pinned(K):
    J = jacobian("random", 6, K, seed=K)
    out = methods.make("dbgd", beta=0.2)(gram(J))
    d = np.einsum("bk,bkn->bn", out.weights, J)
    prog = np.einsum("bkn,bn->bk", J, d)
    sq = np.einsum("bkn,bkn->bk", J, J)
    feas = out.info["feasible"]
    assert np.all(out.weights[:, 0] == 1.0)
    assert np.all(prog[feas, 1:] >= 0.2 * sq[feas, 1:] - 1e-9 * sq[feas, 1:].max())


def test_not_scale_invariant_unlike_pcd():
    # scaling the secondary changes DBGD's direction (the PCD paper's point about the raw beta)
    J = np.array([[[1.0, 0.0], [-1.0, 1.0]]])
    d1 = methods.make("dbgd", beta=0.3)(gram(J)).weights[0] @ J[0]
    J2 = J * np.array([1.0, 10.0])[None, :, None]
    d2 = methods.make("dbgd", beta=0.3)(gram(J2)).weights[0] @ J2[0]
    assert not np.allclose(d1, d2)


def test_cancellation_moves_against_primary():
    # g2 = -g1: mu = beta + 1, d = g1 - (1 + beta) g1 = -beta g1 (not zero, unlike the symmetric methods)
    J = np.array([[[1.0, 2.0], [-1.0, -2.0]]])
    d = methods.make("dbgd", beta=0.3)(gram(J)).weights[0] @ J[0]
    np.testing.assert_allclose(d, -0.3 * J[0, 0], atol=1e-14)
