"""RGW: softmax of Gaussian draws from the caller's generator (reproducible), positive, sum 1."""
import numpy as np

import pcd.methods as methods


def test_softmax_of_normal_draws():
    G = np.broadcast_to(np.eye(3), (5, 3, 3))
    w = methods.make("rgw")(G, rng=np.random.default_rng(3)).weights
    z = np.random.default_rng(3).standard_normal((5, 3))
    ref = np.exp(z) / np.exp(z).sum(-1, keepdims=True)
    np.testing.assert_allclose(w, ref, rtol=1e-14)
    assert np.all(w > 0) and np.allclose(w.sum(-1), 1.0)
    assert len({tuple(r) for r in np.round(w, 12)}) == 5  # a fresh draw per problem


def test_mean_weight_is_uniform():
    rng = np.random.default_rng(0)
    G = np.broadcast_to(np.eye(4), (20000, 4, 4))
    w = methods.make("rgw")(G, rng=rng).weights
    np.testing.assert_allclose(w.mean(0), 0.25, atol=0.005)  # exchangeable: E[w_i] = 1/K
