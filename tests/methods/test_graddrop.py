"""GradDrop: TorchJD oracle with the same uniform draws (exact, 1e-12), least-squares weights,
leak = 1 is the sum, and the interface contract (needs J; direction in ``Step.exact``, returned by ``Step.direction``)."""
from unittest import mock

import numpy as np
import pytest

import pcd.methods as methods
from tests.methods._samplers import KINDS, gram, jacobian


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("K", [2, 3, 5])
@pytest.mark.parametrize("leak", [0.0, 0.3])
def test_oracle_torchjd(kind, K, leak, torch, agg):
    J = jacobian(kind, 1, K, n=9, seed=K)
    J[0, :, 4] = 0.0  # an all-zero column: P = 0/0 -> nothing kept there, in both
    out = methods.make("graddrop", leak=leak)(gram(J), jacobian=J, rng=np.random.default_rng(7))
    U = np.random.default_rng(7).random((1, 9))[0]
    ref_agg = agg.GradDrop(leak=torch.full((K,), leak, dtype=torch.float64))
    with mock.patch("torch.rand", lambda *a, **k: torch.tensor(U)):
        ref = ref_agg(torch.tensor(J[0])).numpy()
    np.testing.assert_allclose(out.exact[0], ref, rtol=1e-12, atol=1e-12)


def test_weights_are_least_squares_and_leak_one_is_sum():
    J = jacobian("random", 4, 3, n=6, seed=1)
    out = methods.make("graddrop")(gram(J), jacobian=J, rng=np.random.default_rng(0))
    d = out.exact
    proj = np.einsum("bk,bkn->bn", out.weights, J)
    # residual of the projection is orthogonal to every gradient
    np.testing.assert_allclose(np.einsum("bkn,bn->bk", J, d - proj), 0.0, atol=1e-10)
    full = methods.make("graddrop", leak=1.0)(gram(J), jacobian=J, rng=np.random.default_rng(0))
    np.testing.assert_allclose(full.exact, J.sum(1), atol=1e-12)
    np.testing.assert_allclose(full.weights, np.ones((4, 3)), atol=1e-9)


def test_needs_jacobian():
    m = methods.make("graddrop")
    assert m.needs_jacobian and m.stochastic
    with pytest.raises(ValueError, match="Jacobian"):
        m(np.eye(2))
    with pytest.raises(ValueError, match="shape"):
        m(np.eye(2)[None], jacobian=np.ones((1, 3, 4)))
