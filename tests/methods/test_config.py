"""ConFIG: TorchJD oracle on every sampler, the equal-angle property, the Gram form, bad hyper-parameters.

Tolerance: the update ``weights @ J`` equals TorchJD 0.18's ``ConFIG()(J)`` to ``1e-12 ||J||_F`` on
every sampler (random, badly scaled, rank-deficient, cancelling; measured worst ~3e-14): the Gram
form is the same pseudo-inverse. The one exception is ``w`` orthogonal to the span of the unit
gradients (anti-parallel rows, ``w = 1``), where the exact update is 0: TorchJD's ``F.normalize``
floor amplifies round-off to ~1e-8 of the gradients, we return 0; both are below ``1e-6 ||J||_F``.
"""
import numpy as np
import pytest

import pcd.methods as methods
from tests.methods._samplers import KINDS, gram, jacobian


def _torchjd(J, pref=None):
    torch = pytest.importorskip("torch")
    agg = pytest.importorskip("torchjd.aggregation")
    p = None if pref is None else torch.tensor(pref, dtype=torch.float64)
    return np.stack([agg.ConFIG(pref_vector=p)(torch.tensor(j)).numpy() for j in J])


def _check(d, ref, J):
    scale = np.linalg.norm(J, axis=(1, 2))
    for i in range(len(J)):
        if np.linalg.norm(ref[i]) <= 1e-6 * scale[i]:  # TorchJD's round-off where the exact update is 0
            assert np.linalg.norm(d[i]) <= 1e-6 * scale[i]
        else:
            assert np.linalg.norm(d[i] - ref[i]) <= 1e-12 * scale[i], (i, d[i], ref[i])


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("K", [2, 3, 5, 7])
def test_oracle_torchjd(kind, K):
    J = jacobian(kind, 4, K, seed=K)
    w = methods.make("config")(gram(J)).weights
    _check(np.einsum("bk,bkn->bn", w, J), _torchjd(J), J)


@pytest.mark.parametrize("kind", KINDS)
def test_oracle_torchjd_preference_vector(kind):
    K = 4
    J = jacobian(kind, 4, K, seed=11)
    pref = [1.0, 0.5, 2.0, 0.25]
    w = methods.make("config", pref_vector=pref)(gram(J)).weights
    _check(np.einsum("bk,bkn->bn", w, J), _torchjd(J, pref), J)


def test_equal_angles_and_length_for_independent_gradients():
    J = jacobian("scaled", 5, 4, seed=3)
    w = methods.make("config")(gram(J)).weights
    d = np.einsum("bk,bkn->bn", w, J)
    cos = np.einsum("bkn,bn->bk", J, d) / (np.linalg.norm(J, axis=-1) * np.linalg.norm(d, axis=-1)[:, None])
    np.testing.assert_allclose(cos, cos[:, :1] * np.ones((1, 4)), rtol=1e-10)
    assert np.all(cos > 0)
    # the length is the sum of the gradients' projections onto the unit direction
    u = d / np.linalg.norm(d, axis=-1, keepdims=True)
    np.testing.assert_allclose(np.linalg.norm(d, axis=-1), np.einsum("bkn,bn->b", J, u), rtol=1e-10)


def test_pinned_k2():
    # g1 = (1, 0), g2 = (0, 2): u = (1, 1)/sqrt 2, length = (1 + 2)/sqrt 2, d = (1.5, 1.5)
    G = np.array([[1.0, 0.0], [0.0, 4.0]])
    np.testing.assert_allclose(methods.make("config")(G).weights[0], [1.5, 0.75], atol=1e-14)
    # anti-parallel: the exact update is 0
    np.testing.assert_array_equal(methods.make("config")(np.array([[1.0, -2.0], [-2.0, 4.0]])).weights, 0.0)
    # one zero gradient: its unit row is 0 (TorchJD's nan_to_num), the update is the other gradient
    np.testing.assert_allclose(methods.make("config")(np.array([[0.0, 0.0], [0.0, 9.0]])).weights[0], [0.0, 1.0])


def test_bad_hyper_parameters_refused():
    with pytest.raises(ValueError, match="pref_vector"):
        methods.make("config", pref_vector=-1.0)
    with pytest.raises(ValueError, match="pref_vector"):
        methods.make("config", pref_vector=[1.0, 2.0])(np.eye(3))
    with pytest.raises(ValueError, match="unknown hyper-parameter"):
        methods.make("config", alpha=1.0)
