"""IMTL-G: TorchJD oracle (pinv with the same cut-off; 1e-9 relative) and the impartiality property."""
import numpy as np
import pytest

import pcd.methods as methods
from tests.methods._samplers import KINDS, gram, jacobian


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("K", [2, 3, 5])
def test_oracle_torchjd(kind, K, torch, agg):
    G = gram(jacobian(kind, 5, K, seed=K))
    w = methods.make("imtlg")(G).weights
    ref = np.stack([agg.IMTLGWeighting()(torch.tensor(g)).numpy() for g in G])
    np.testing.assert_allclose(w, ref, rtol=1e-9, atol=1e-9 * np.abs(ref).max())


@pytest.mark.parametrize("K", [2, 3, 4])
def test_equal_projections_on_unit_gradients(K):
    J = jacobian("scaled", 6, K, seed=K)
    w = methods.make("imtlg")(gram(J)).weights
    d = np.einsum("bk,bkn->bn", w, J)
    proj = np.einsum("bkn,bn->bk", J, d) / np.linalg.norm(J, axis=-1)
    np.testing.assert_allclose(proj, proj[:, :1].repeat(K, 1), rtol=1e-7)
    np.testing.assert_allclose(w.sum(-1), 1.0)


def test_cancellation_gives_zero():
    J = jacobian("cancel", 3, 2)
    np.testing.assert_array_equal(methods.make("imtlg")(gram(J)).weights, np.zeros((3, 2)))
