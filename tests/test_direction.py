"""pcd.direction.pcd_weights: every K through solve_qp; the K = 2 bits; trusted only skips checks."""
from __future__ import annotations

import numpy as np
import pytest

import pcd.direction as direction
from pcd.direction import _pcd_weights_k2_scalar, pcd_weights
from pcd.normalize import ema_scales


def _batch(rng, B, K, spread=6.0):
    """Raw Gram matrices with badly scaled rows, exact cancellations, zero primaries / secondaries,
    and the EMA scales of one step on them."""
    J = rng.standard_normal((B, K, K + 2)) * 10.0 ** rng.uniform(-spread, spread, (B, K, 1))
    if K > 1:
        J[1::5, 1] = -J[1::5, 0]
    J[2::7, 0] = 0.0
    J[3::4, -1] = 0.0
    G = J @ np.swapaxes(J, -1, -2)
    s = ema_scales(0.1 * np.diagonal(G, axis1=-2, axis2=-1) * rng.uniform(0.5, 2.0, (B, K)), 1, 0.9, 1e-8)
    return G, s


def test_k2_vectorized_is_bit_identical_to_the_python_float_closed_form():
    """K = 2 goes through solve_qp (no closed form of its own here); its bits equal the Python-float
    path's (k2_mu_scalar on the unscaled entries, then the written-out norm): identical, not close."""
    rng = np.random.default_rng(31)
    G, s = _batch(rng, 1024, 2)
    for tau in (0.0, 0.02, 0.3, 1.0):
        vec = pcd_weights(G, s, tau)
        ref = _pcd_weights_k2_scalar(G, s, tau)
        for a, b in ((vec.weights, ref.weights), (vec.qp.weights, ref.qp.weights), (vec.qp.mu, ref.qp.mu),
                     (vec.qp.active_mask, ref.qp.active_mask), (vec.scale_to_primary, ref.scale_to_primary)):
            assert np.array_equal(a, b), tau
        assert vec.qp.feasible.all()


def test_every_K_goes_through_solve_qp(monkeypatch):
    calls = []
    real = direction.solve_qp
    monkeypatch.setattr(direction, "solve_qp", lambda g, tau, trusted=False: calls.append(g.shape) or real(g, tau, trusted=trusted))
    rng = np.random.default_rng(32)
    for K in (1, 2, 3, 6):
        G, s = _batch(rng, 4, K, spread=1.0)
        pcd_weights(G, s, 0.2)
    assert calls == [(4, 1, 1), (4, 2, 2), (4, 3, 3), (4, 6, 6)]


@pytest.mark.parametrize("K", [2, 3, 5, 16])
def test_trusted_only_skips_the_checks(K):
    rng = np.random.default_rng(33 + K)
    G, s = _batch(rng, 64, K, spread=3.0)
    tau = np.linspace(0.05, 0.5, K - 1)
    a, b = pcd_weights(G, s, tau), pcd_weights(G, s, tau, trusted=True)
    assert np.array_equal(a.weights, b.weights) and np.array_equal(a.scale_to_primary, b.scale_to_primary)
    assert np.array_equal(a.qp.mu, b.qp.mu) and np.array_equal(a.qp.feasible, b.qp.feasible)
    single = pcd_weights(G[7], s[7], tau)
    assert np.allclose(single.weights, a.weights[7], rtol=1e-12, atol=0)
    with pytest.raises(ValueError, match="tau"):
        pcd_weights(G, s, 1.5)
    bad = G.copy()
    bad[3, 0, 0] = np.nan
    with pytest.raises(ValueError, match="NaN"):
        pcd_weights(bad, s, tau)


def test_zero_primary_or_cancelled_direction_gives_zero_weights():
    G = np.array([[[0.0, 0.0], [0.0, 1.0]], [[1.0, -1.0], [-1.0, 1.0]]])
    out = pcd_weights(G, np.ones((2, 2)), 0.0)
    assert np.array_equal(out.weights, np.zeros((2, 2)))  # g_1 = 0; d~ = g_1 + 1 g_2 = 0
    assert out.qp.mu[1, 0] == 1.0


def test_scales_broadcast_over_the_batch():
    rng = np.random.default_rng(34)
    G, s = _batch(rng, 300, 2, spread=1.0)
    one = s[0]
    out = pcd_weights(G, one, 0.2)
    assert np.array_equal(out.weights, pcd_weights(G, np.broadcast_to(one, s.shape).copy(), 0.2).weights)
