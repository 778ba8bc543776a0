"""Weighted sum / Mean: pinned weights, TorchJD Mean/Sum oracle (exact), input validation."""
import numpy as np
import pytest

import pcd.methods as methods
from tests.methods._samplers import KINDS, gram, jacobian


def test_default_is_mean_and_user_weights():
    G = gram(jacobian("random", 4, 3))
    np.testing.assert_array_equal(methods.make("ws")(G).weights, np.full((4, 3), 1 / 3))
    np.testing.assert_array_equal(methods.make("ws", normalize=False)(G).weights, np.ones((4, 3)))
    # one number = weight of every secondary, primary 1
    np.testing.assert_allclose(methods.make("ws", w=3.0, normalize=False)(G).weights[0], [1, 3, 3])
    # K - 1 values = secondaries; K values = all objectives
    np.testing.assert_allclose(methods.make("ws", w=[2, 4], normalize=False)(G).weights[0], [1, 2, 4])
    np.testing.assert_allclose(methods.make("ws", w=[1, 1, 2])(G).weights[0], [0.25, 0.25, 0.5])


def test_bad_weights():
    G = gram(jacobian("random", 1, 3))
    with pytest.raises(ValueError, match="one per secondary"):
        methods.make("ws", w=[1, 2, 3, 4])(G)
    with pytest.raises(ValueError, match=r"must be in \[0"):
        methods.make("ws", w=-1.0)
    with pytest.raises(ValueError, match="sum to 0"):
        methods.make("ws", w=[0, 0, 0])(G)


@pytest.mark.parametrize("kind", KINDS)
def test_oracle_torchjd_mean_sum(kind, torch, agg):
    J = jacobian(kind, 3, 3)
    for mine, ref in ((methods.make("ws"), agg.MeanWeighting()),
                      (methods.make("ws", normalize=False), agg.SumWeighting())):
        w = mine(gram(J)).weights
        r = np.stack([ref(torch.tensor(j)).numpy() for j in J])
        np.testing.assert_allclose(w, r, rtol=0, atol=1e-15)
