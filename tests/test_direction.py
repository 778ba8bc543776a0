"""pcd.direction.pcd_weights: every K through solve_qp; the K = 2 bits; trusted only skips checks."""
from __future__ import annotations

import numpy as np
import pytest

import pcd.direction as direction
from pcd.direction import pcd_weights
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


def test_k2_vectorized_is_bit_identical_to_the_compiled_closed_form():
    """K = 2 goes through solve_qp (k2_mu) and rescale_k2 on arrays; PCD's compiled K = 2 step runs the
    same formulas row by row (pcd.methods.pcd.pcd_k2): identical, not close."""
    from pcd._fast import vectorized
    from pcd.methods.pcd import PCDMethod, PCDState
    rng = np.random.default_rng(31)
    G, _ = _batch(rng, 1024, 2)
    v = rng.uniform(0.0, 2.0, (1024, 2))
    for tau in (0.0, 0.02, 0.3, 1.0):
        m = PCDMethod(tau=tau, beta=0.9)
        with vectorized():
            vec = m.update(G, PCDState(v, 3))
        for i in range(0, 1024, 16):
            small = m.update(G[i:i + 16], PCDState(v[i:i + 16], 3))
            np.testing.assert_array_equal(small.weights, vec.weights[i:i + 16])
            np.testing.assert_array_equal(small.state.v, vec.state.v[i:i + 16])
            for k in ("mu", "feasible", "active", "scales"):
                np.testing.assert_array_equal(small.info[k], np.asarray(vec.info[k])[i:i + 16], err_msg=k)


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
