"""STCH (smooth Tchebycheff): oracle against TorchJD 0.18's ``scalarization.STCH`` (weights =
gradient of the scalarized loss w.r.t. the losses), for uniform and given preferences and an
ideal point.

Tolerance 1e-12 relative, 1e-300 absolute (the same shifted log-sum-exp; tiny softmax entries
may differ in rounding). Hand-derived value: K = 2, lambda = (1/2, 1/2), z = 0, L = (1, 3),
mu = 1: p = softmax(0.5, 1.5) = (1, e) / (1 + e), weights lambda p; as mu -> 0 the weights tend
to (0, 1/2) (the Tchebycheff max).
"""
import numpy as np
import pytest

import pcd.methods as methods
from tests.methods._samplers import scalarization_weights


@pytest.mark.parametrize("K,mu,w,ref", [(2, 0.1, 1.0, 0.0), (3, 1.0, [1.0, 2.0, 0.5], 0.3),
                                       (5, 0.01, 0.25, [0.1, 0.0, -0.2, 0.5, 1.0]), (4, 50.0, 3.0, -1.0)])
def test_oracle_torchjd_stch(K, mu, w, ref):
    torch = pytest.importorskip("torch")
    sc = pytest.importorskip("torchjd.scalarization")
    rng = np.random.default_rng(K)
    B = 5
    L = rng.uniform(-1.0, 4.0, size=(B, K))
    m = methods.make("stch", mu=mu, weights=w, reference=ref)
    out = m(np.broadcast_to(np.eye(K), (B, K, K)), losses=L)
    lam = np.full(K, float(w)) if np.ndim(w) == 0 else np.asarray(w, dtype=float)
    if np.ndim(w) == 0:
        lam[0] = 1.0  # one number: every secondary, the primary 1
    lam = lam / lam.sum()
    z = np.broadcast_to(np.asarray(ref, dtype=float), (K,))
    ref_t = sc.STCH(mu, weights=torch.tensor(lam), reference=torch.tensor(z.copy()))
    for b in range(B):
        np.testing.assert_allclose(out.weights[b], scalarization_weights(ref_t, L[b]), rtol=1e-12, atol=1e-300)


def test_uniform_default_is_torchjds_default():
    pytest.importorskip("torch")
    sc = pytest.importorskip("torchjd.scalarization")
    L = np.array([0.3, 2.0, 1.1])
    ours = methods.make("stch")(np.eye(3), losses=L).weights[0]
    np.testing.assert_allclose(ours, scalarization_weights(sc.STCH(0.1), L), rtol=1e-12)


def test_hand_derived_value_and_the_max_limit():
    out = methods.make("stch", mu=1.0)(np.eye(2), losses=[1.0, 3.0])
    e = np.e
    np.testing.assert_allclose(out.weights, [[0.5 / (1 + e), 0.5 * e / (1 + e)]], rtol=1e-15)
    out = methods.make("stch", mu=1e-3)(np.eye(2), losses=[1.0, 3.0])
    np.testing.assert_allclose(out.weights, [[0.0, 0.5]], atol=1e-300)
    # huge losses and a tiny mu: the shifted exponent never overflows
    out = methods.make("stch", mu=1e-4)(np.eye(2), losses=[1e300, 2e300])
    np.testing.assert_array_equal(out.weights, [[0.0, 0.5]])


def test_bad_input_refused_in_one_line():
    with pytest.raises(ValueError, match="stch: mu must be in"):
        methods.make("stch", mu=0.0)
    with pytest.raises(ValueError, match="stch: weights must be in"):
        methods.make("stch", weights=-1.0)
    with pytest.raises(ValueError, match="positive sum"):
        methods.make("stch", weights=[0.0, 0.0])(np.eye(2), losses=[1.0, 2.0])
    with pytest.raises(ValueError, match=r"stch: reference needs one number or one value per objective \(2\)"):
        methods.make("stch", reference=[0.0, 0.0, 0.0])(np.eye(2), losses=[1.0, 2.0])
    with pytest.raises(ValueError, match="loss values"):
        methods.make("stch")(np.eye(2))
