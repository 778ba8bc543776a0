"""MGDA: exact min-norm point (KKT), the g_1 = 0 failure mode, TorchJD Frank-Wolfe oracle.

Tolerances: ``solver="frank-wolfe"`` reproduces TorchJD's ``MGDAWeighting`` arithmetic, so weights
agree to 1e-12. The exact solver is checked through its optimality conditions
(``(G a)_i >= a^T G a`` for all i, equality on the support) to 1e-9 relative, and against TorchJD's
Frank-Wolfe run to convergence (epsilon 1e-9, 2000 iterations; our vectorized copy) on the objective ``a^T G a``.
"""
import numpy as np
import pytest

import pcd.methods as methods
from pcd.methods.mgda import frank_wolfe
from tests.methods._samplers import KINDS, gram, jacobian


def test_k2_closed_form_pinned():
    # g1 = (1, 0), g2 = (0, 2): a = (G22 - G12) / (G11 + G22 - 2 G12) = 4/5
    G = np.array([[1.0, 0.0], [0.0, 4.0]])
    np.testing.assert_allclose(methods.make("mgda")(G).weights[0], [0.8, 0.2], atol=1e-15)


def test_conflict_equilibrium_1d():
    # CLAIMS: primary gradient 0.5, secondary -0.5 -> the symmetric method's direction is 0
    J = np.array([[[0.5], [-0.5]]])
    w = methods.make("mgda")(gram(J)).weights
    assert np.abs(np.einsum("bk,bkn->bn", w, J)).max() == 0.0


@pytest.mark.parametrize("K", [2, 3, 5, 7])
def test_zero_primary_gives_zero_direction(K):
    # the failure mode named by the PCD paper: g_1 = 0 => MGDA direction 0, secondaries ignored
    J = jacobian("random", 4, K)
    J[:, 0] = 0.0
    w = methods.make("mgda")(gram(J)).weights
    d = np.einsum("bk,bkn->bn", w, J)
    assert np.abs(d).max() <= 1e-6 * np.abs(J).max()
    if K == 2:
        np.testing.assert_array_equal(w, np.tile([1.0, 0.0], (4, 1)))


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("K", [2, 3, 4, 7, 17])
def test_exact_kkt(kind, K):
    J = jacobian(kind, 6, K, seed=K)
    G = gram(J)
    a = methods.make("mgda")(G).weights
    assert np.all(a >= 0) and np.allclose(a.sum(-1), 1.0)
    Ga = np.einsum("bij,bj->bi", G, a)
    val = np.einsum("bi,bi->b", a, Ga)
    scale = np.einsum("bii->b", G)
    assert np.all(Ga >= val[:, None] - 1e-9 * scale[:, None])  # optimal: no vertex does better
    # non-conflicting: J d = G a >= |d|^2 >= 0
    assert np.all(Ga >= -1e-9 * scale[:, None])


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("K", [2, 3, 5])
def test_oracle_torchjd_frank_wolfe(kind, K, torch, agg):
    J = jacobian(kind, 5, K, seed=10 + K)
    G = gram(J)
    w = methods.make("mgda", solver="frank-wolfe")(G).weights
    ref = np.stack([agg.MGDAWeighting()(torch.tensor(g)).numpy() for g in G])
    np.testing.assert_allclose(w, ref, rtol=0, atol=1e-12)
    # the exact solver is at least as good as Frank-Wolfe run to convergence (our vectorized copy
    # of TorchJD's loop, checked equal to it just above; TorchJD's own is too slow for that)
    ref = frank_wolfe(G, epsilon=1e-9, max_iters=2000)
    ex = methods.make("mgda")(G).weights
    f = lambda a: np.einsum("bi,bij,bj->b", a, G, a)  # noqa: E731
    scale = np.einsum("bii->b", G)
    assert np.all(f(ex) <= f(ref) + 1e-10 * scale)
