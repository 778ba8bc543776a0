"""Trimmed mean: TorchJD oracle, the clipped trimming at small K, the contract (needs J, direction in
``Step.exact``, least-squares weights), bad hyper-parameters.

Tolerance: the direction equals TorchJD 0.18's ``TrimmedMean(trim_number)(J)`` to 1e-15 of the
largest entry of J, on every sampler (the same sort and mean; the order of the mean's sum may
differ in the last bit; measured <= 6e-17 of max |J|).
"""
import numpy as np
import pytest

import pcd.methods as methods
from tests.methods._samplers import KINDS, gram, jacobian


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("K,b", [(3, 1), (5, 1), (5, 2), (8, 3), (9, 0)])
def test_oracle_torchjd(kind, K, b, torch, agg):
    J = jacobian(kind, 4, K, n=11, seed=K + b)
    out = methods.make("trimmedmean", trim_number=b)(gram(J), jacobian=J)
    ref = np.stack([agg.TrimmedMean(trim_number=b)(torch.tensor(j)).numpy() for j in J])
    np.testing.assert_allclose(out.exact, ref, rtol=0, atol=1e-15 * np.abs(J).max())
    np.testing.assert_array_equal(out.direction(J), out.exact)


def test_small_k_clips_the_trimming_and_median():
    J = jacobian("random", 3, 2, n=5, seed=0)
    out = methods.make("trimmedmean", trim_number=3)(gram(J), jacobian=J)
    np.testing.assert_allclose(out.exact, J.mean(axis=1), rtol=1e-15)  # K = 2: the mean
    np.testing.assert_allclose(out.weights, 0.5, rtol=1e-9)
    J5 = jacobian("random", 3, 5, n=6, seed=1)
    out = methods.make("trimmedmean", trim_number=7)(gram(J5), jacobian=J5)
    np.testing.assert_array_equal(out.exact, np.median(J5, axis=1))  # at most 2 per side: the median


def test_robust_to_one_outlier_and_least_squares_weights():
    J = np.ones((1, 5, 8)) + 0.3 * np.random.default_rng(0).standard_normal((1, 5, 8))
    J[0, 2] = 100.0 * np.array([1.0, -1.0] * 4)
    out = methods.make("trimmedmean")(gram(J), jacobian=J)
    assert np.abs(out.exact).max() < 2  # the outlier never survives the trimming
    # weights @ J is the projection of the direction onto the gradients' span: the residual is orthogonal
    proj = np.einsum("bk,bkn->bn", out.weights, J)
    cos = np.einsum("bkn,bn->bk", J, out.exact - proj) / np.linalg.norm(J, axis=-1) / np.linalg.norm(out.exact)
    np.testing.assert_allclose(cos, 0.0, atol=1e-9)


def test_contract_and_bad_hyper_parameters():
    m = methods.make("trimmedmean")
    assert m.needs() == {"jacobian"}
    with pytest.raises(ValueError, match="Jacobian"):
        m(np.eye(3))
    with pytest.raises(ValueError, match="shape"):
        m(np.eye(3)[None], jacobian=np.ones((1, 2, 4)))
    with pytest.raises(ValueError, match="trim_number"):
        methods.make("trimmedmean", trim_number=-1)
    with pytest.raises(ValueError, match="trim_number"):
        methods.make("trimmedmean", trim_number=0.5)
