"""Aligned-MTL: TorchJD oracle for every scale mode, and the alignment property:
the aligned gradients ``B J`` have a Gram matrix ``B G B`` with all non-zero eigenvalues equal to
the chosen scale (condition number 1).

Tolerance: 1e-10 relative, except on the diag-scaled sampler (gradient norms over 1e-3 ... 1e3, so
eigenvalues spread over ~1e12) where both libraries' eigen-decompositions resolve the smallest
eigenpairs only to ~eps * lambda_max: 1e-4 relative there.
"""
import numpy as np
import pytest

import pcd.methods as methods
from pcd.methods.alignedmtl import balance_weights
from tests.methods._samplers import KINDS, gram, jacobian


@pytest.mark.parametrize("kind", KINDS + ("zero",))
@pytest.mark.parametrize("K", [2, 3, 5])
@pytest.mark.parametrize("mode", ["min", "median", "rmse"])
def test_oracle_torchjd(kind, K, mode, torch, agg):
    J = np.zeros((2, K, 4)) if kind == "zero" else jacobian(kind, 5, K, seed=K)
    G = gram(J)
    w = methods.make("alignedmtl", scale_mode=mode)(G).weights
    ref = np.stack([agg.AlignedMTLWeighting(scale_mode=mode)(torch.tensor(g)).numpy() for g in G])
    rtol = 1e-4 if kind == "scaled" else 1e-10
    np.testing.assert_allclose(w, ref, rtol=rtol, atol=1e-12 * max(1.0, np.abs(ref).max()))


@pytest.mark.parametrize("K", [2, 3, 4])
def test_aligned_gram_is_isotropic(K):
    G = gram(jacobian("random", 4, K, seed=K))
    Bm = np.stack([balance_weights(G, np.broadcast_to(e, (4, K)).copy()) for e in np.eye(K)], axis=-1)
    A = np.einsum("bij,bjk,bkl->bil", Bm, G, Bm)
    lam = np.linalg.eigvalsh(A)
    lmin = np.linalg.eigvalsh(G)[:, 0]
    np.testing.assert_allclose(lam, lmin[:, None].repeat(K, 1), rtol=1e-8)
