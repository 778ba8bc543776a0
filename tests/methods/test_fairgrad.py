"""FairGrad: the alpha-fair equation solved exactly, TorchJD oracle, special values of alpha, bad
hyper-parameters.

Tolerances: we solve ``G x = x^(-1/alpha)`` to a backward error (residual relative to the size of
its terms) <= 1e-12 (1 + max(alpha, 1/alpha)) on every sampler that has a solution (the powers
amplify round-off; measured <= 5e-14 for alpha in [0.5, 5], 5e-12 at alpha = 20 on badly scaled G). TorchJD 0.18 solves it
with ``scipy.optimize.least_squares`` (tolerances 1e-8) from the uniform start: where that converges
(its backward error <= 1e-8) our weights equal TorchJD's to 1e-7 relative (measured <= 1e-8);
on badly scaled matrices it often stops far from the solution (backward error up to ~1), and there
we only require ours to be at least as good. Where G has a positive null vector (``g_2 = -g_1``,
no solution, x -> infinity), both directions approach the same limit: with K >= 3 they agree to
1e-3 of their norm (measured <= 1e-4); with K = 2 both are ~0.
"""
import numpy as np
import pytest

import pcd.methods as methods
from pcd.methods._solvers import nash
from pcd.methods.fairgrad import _backward_error, fairgrad_weights
from tests.methods._samplers import KINDS, gram, jacobian


def _torchjd(G, alpha):
    torch = pytest.importorskip("torch")
    agg = pytest.importorskip("torchjd.aggregation")
    pytest.importorskip("scipy")  # torchjd[fairgrad]
    return np.stack([agg.FairGradWeighting(alpha)(torch.tensor(g)).numpy() for g in G])


@pytest.mark.parametrize("alpha", [0.1, 0.5, 2.0, 5.0, 20.0])
@pytest.mark.parametrize("kind", ["random", "scaled", "rank_def"])
@pytest.mark.parametrize("K", [2, 3, 5, 8])
def test_equation_solved_exactly(alpha, kind, K):
    G = gram(jacobian(kind, 6, K, seed=K))
    x = methods.make("fairgrad", alpha=alpha)(G).weights
    solvable = np.einsum("bii->b", G) > 0
    if kind == "rank_def":  # rank K - 1: solvable unless the null vector is positive
        null = np.linalg.eigh(G)[1][:, :, 0]
        solvable = ~(np.all(null > 0, axis=1) | np.all(null < 0, axis=1))
    assert np.all(x > 0) and np.isfinite(x).all()
    assert _backward_error(G[solvable], x[solvable], 1.0 / alpha).max() <= 1e-12 * (1 + max(alpha, 1 / alpha))


@pytest.mark.parametrize("alpha", [0.5, 1.0, 2.0, 5.0])
@pytest.mark.parametrize("kind", ["random", "scaled", "rank_def"])
@pytest.mark.parametrize("K", [2, 3, 5, 7])
def test_oracle_torchjd(alpha, kind, K):
    G = gram(jacobian(kind, 4, K, seed=K))
    w = methods.make("fairgrad", alpha=alpha)(G).weights
    ref = _torchjd(G, alpha)
    theirs = _backward_error(G, ref, 1.0 / alpha)
    ours = _backward_error(G, w, 1.0 / alpha)
    conv = theirs <= 1e-8
    np.testing.assert_allclose(w[conv], ref[conv], rtol=1e-7)
    assert np.all(ours <= np.maximum(theirs, 1e-12))


@pytest.mark.parametrize("alpha", [0.5, 2.0, 5.0])
@pytest.mark.parametrize("K", [2, 3, 5, 7])
def test_oracle_torchjd_without_solution_same_limit(alpha, K):
    J = jacobian("cancel", 4, K, seed=K)
    G = gram(J)
    d = np.einsum("bk,bkn->bn", methods.make("fairgrad", alpha=alpha)(G).weights, J)
    ref = np.einsum("bk,bkn->bn", _torchjd(G, alpha), J)
    scale = np.linalg.norm(J, axis=(1, 2))
    if K == 2:  # d -> 0
        assert np.all(np.linalg.norm(d, axis=-1) <= 1e-2 * scale)
        return
    np.testing.assert_array_less(np.linalg.norm(d - ref, axis=-1), 1e-3 * np.linalg.norm(ref, axis=-1))


def test_special_alphas_and_scaling():
    G = gram(jacobian("scaled", 5, 4, seed=9))
    # alpha = 0: the mean; alpha = 1: the Nash-MTL equation G x = 1 / x
    np.testing.assert_array_equal(methods.make("fairgrad", alpha=0.0)(G).weights, np.full((5, 4), 0.25))
    np.testing.assert_allclose(methods.make("fairgrad", alpha=1.0)(G).weights, nash(G, np.ones((5, 4)))[0])
    # x(c G) = c^(-alpha / (1 + alpha)) x(G), applied around the solve (to round-off), at any scale
    for alpha in (0.3, 2.0, 7.0):
        m = methods.make("fairgrad", alpha=alpha)
        p = -alpha / (1 + alpha)
        for c in (2.0**40, 1e-250, 1e250):
            np.testing.assert_allclose(m(G * c).weights, m(G).weights * c**p, rtol=1e-10)
    # non-conflicting: g_i . d = x_i^(-1/alpha) > 0
    x = fairgrad_weights(G, 2.0)
    np.testing.assert_allclose(np.einsum("bij,bj->bi", G, x), x ** -0.5, rtol=1e-12)


def test_pinned_orthogonal():
    # orthogonal gradients: G = diag(a, b) -> x_i = G_ii^(-alpha / (1 + alpha))
    G = np.diag([4.0, 0.25])
    np.testing.assert_allclose(methods.make("fairgrad", alpha=2.0)(G).weights[0], [4.0 ** (-2 / 3), 0.25 ** (-2 / 3)],
                               rtol=1e-14)


@pytest.mark.parametrize("kind", KINDS)
def test_finite_on_every_sampler(kind):
    G = gram(jacobian(kind, 8, 4, seed=2))
    for alpha in (0.05, 0.5, 3.0, 20.0):
        assert np.isfinite(methods.make("fairgrad", alpha=alpha)(G).weights).all()
