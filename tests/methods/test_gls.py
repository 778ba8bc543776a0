"""GLS (geometric loss strategy): oracle against TorchJD 0.18's ``scalarization.GeometricMean``
(weights = gradient of the geometric mean w.r.t. the losses) and the hand-derived gradient
``d/dtheta (prod L_i)^(1/K) = sum_i L_geo / (K L_i) grad L_i``.

Tolerance 1e-12 relative (exp/log in float64 both). Hand-derived value: L = (1, 4), K = 2:
L_geo = 2, weights (2 / 2, 2 / 8) = (1, 1/4).
"""
import numpy as np
import pytest

import pcd.methods as methods
from pcd.experiments.jd import aggregate
from tests.methods._samplers import scalarization_weights


@pytest.mark.parametrize("K", [2, 3, 5, 8])
def test_oracle_torchjd_geometric_mean(K):
    pytest.importorskip("torch")
    sc = pytest.importorskip("torchjd.scalarization")
    rng = np.random.default_rng(K)
    B = 6
    L = np.exp(rng.uniform(-8.0, 8.0, size=(B, K)))  # 7 orders of magnitude
    out = methods.make("gls")(np.broadcast_to(np.eye(K), (B, K, K)), losses=L)
    for b in range(B):
        np.testing.assert_allclose(out.weights[b], scalarization_weights(sc.GeometricMean(), L[b]), rtol=1e-12, atol=0)


def test_hand_derived_value_and_direction():
    out = methods.make("gls")(np.eye(2), losses=[1.0, 4.0])
    np.testing.assert_allclose(out.weights, [[1.0, 0.25]], rtol=1e-15)
    # the direction is the gradient of the geometric mean of L_i(theta) = ||theta - c_i||^2 / 2
    theta, c = np.array([0.3, -0.7]), np.array([[1.0, 0.0], [-1.0, 2.0]])
    J = theta - c
    L = 0.5 * (J ** 2).sum(axis=1)
    d, _ = aggregate("gls", J, losses=L)
    geo = lambda th: np.sqrt(np.prod(0.5 * ((th - c) ** 2).sum(axis=1)))  # noqa: E731
    h = 1e-6
    fd = [(geo(theta + h * e) - geo(theta - h * e)) / (2 * h) for e in np.eye(2)]
    np.testing.assert_allclose(d, fd, rtol=1e-8)


def test_zero_loss_gives_zero_weights_as_documented():
    out = methods.make("gls")(np.broadcast_to(np.eye(2), (2, 2, 2)), losses=[[0.0, 3.0], [2.0, 8.0]])
    np.testing.assert_array_equal(out.weights[0], [0.0, 0.0])
    np.testing.assert_allclose(out.weights[1], [1.0, 0.25], rtol=1e-15)


def test_bad_input_refused_in_one_line():
    m = methods.make("gls")
    with pytest.raises(ValueError, match=r"gls: losses must be >= 0 .* got -0.5 for objective 1$"):
        m(np.eye(2), losses=[1.0, -0.5])
    with pytest.raises(ValueError, match="loss values"):
        m(np.eye(2))
    with pytest.raises(ValueError, match="unknown hyper-parameter"):
        methods.make("gls", mu=1.0)
