"""Krum / Multi-Krum: TorchJD oracle, ties, small K, bad hyper-parameters.

Tolerance: exact (the weights are 0 or ``1/m``): where TorchJD 0.18's ``KrumWeighting`` applies
(``K >= n_byzantine + 3``) and no two scores tie, our weights equal its weights bit for bit, on
every sampler. Where the m-th lowest score ties (always at ``K = n_byzantine + 3``: the closest
pair share it), TorchJD picks one by position and we split the place: TorchJD's choice is then
within our support.
"""
import numpy as np
import pytest

import pcd.methods as methods
from pcd.methods.krum import krum_weights
from tests.methods._samplers import KINDS, gram, jacobian


def _torchjd(G, f, m):
    torch = pytest.importorskip("torch")
    agg = pytest.importorskip("torchjd.aggregation")
    return np.stack([agg.KrumWeighting(n_byzantine=f, n_selected=m)(torch.tensor(g)).numpy() for g in G])


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("K,f,m", [(4, 0, 1), (5, 1, 1), (6, 0, 2), (7, 2, 3), (9, 1, 4)])
def test_oracle_torchjd(kind, K, f, m):
    G = gram(jacobian(kind, 6, K, seed=K + f))
    w = methods.make("krum", n_byzantine=f, n_selected=m)(G).weights
    np.testing.assert_array_equal(w, _torchjd(G, f, m))


@pytest.mark.parametrize("kind", ["random", "scaled"])
def test_oracle_torchjd_with_a_tie(kind):
    # K = f + 3: one neighbour each, so the closest pair's scores tie
    G = gram(jacobian(kind, 6, 4, seed=3))
    w = methods.make("krum", n_byzantine=1)(G).weights
    ref = _torchjd(G, 1, 1)
    assert np.all((w == 0) | (w == 0.5)) and np.all((w > 0).sum(-1) == 2)
    assert np.all(w[ref == 1] == 0.5)


def test_small_k_and_symmetry():
    G = gram(jacobian("random", 5, 2, seed=0))
    np.testing.assert_array_equal(methods.make("krum")(G).weights, 0.5)  # K = 2: the mean
    G3 = gram(jacobian("random", 5, 3, seed=0))
    w = methods.make("krum")(G3).weights  # K = 3, f = 0: the closest pair's mean
    diag = np.einsum("bii->bi", G3)
    D = diag[:, :, None] + diag[:, None, :] - 2 * G3
    D[:, [0, 1, 2], [0, 1, 2]] = np.inf
    for b in range(5):
        i, j = np.unravel_index(np.argmin(D[b]), (3, 3))
        np.testing.assert_array_equal(np.flatnonzero(w[b]), sorted([i, j]))
    # n_selected above K: every gradient, the mean
    np.testing.assert_allclose(methods.make("krum", n_selected=9)(G3).weights, 1 / 3)
    # permutation-equivariant, ties included
    p = [2, 0, 1]
    np.testing.assert_array_equal(krum_weights(G3[:, p][:, :, p], 0, 1), w[:, p])


def test_selects_the_inliers():
    rng = np.random.default_rng(1)
    J = rng.standard_normal((1, 7, 5)) * 0.1 + 1.0  # 7 similar gradients
    J[0, 3] = [-50.0, 20.0, 0.0, 0.0, 9.0]  # one adversarial
    w = methods.make("krum", n_byzantine=1, n_selected=3)(gram(J)).weights[0]
    assert w[3] == 0 and np.isclose(w.sum(), 1.0) and (w > 0).sum() == 3
