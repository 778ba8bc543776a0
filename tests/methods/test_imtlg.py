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


def test_oracle_torchjd_small_batch_with_ill_conditioned_rows(torch, agg):
    """K = 2, a small batch mixing well-conditioned rows (the closed form) with rank-deficient,
    cancelling and nearly parallel ones (the pseudo-inverse, on those rows only): TorchJD per row."""
    from pcd.methods import imtlg

    rng = np.random.default_rng(3)
    u = rng.standard_normal((4, 5))
    J = np.concatenate([jacobian("random", 4, 2, seed=1), jacobian("rank_def", 2, 2, seed=2),
                        jacobian("cancel", 2, 2, seed=3),
                        np.stack([np.stack([x, x + 1e-3 * rng.standard_normal(5)]) for x in u[:2]])])
    G = gram(J)
    ok = imtlg._imtlg_k2_inverse_ok(G)[1]
    assert ok.any() and not ok.all()  # a mixed batch
    w = methods.make("imtlg")(G).weights
    ref = np.stack([agg.IMTLGWeighting()(torch.tensor(g)).numpy() for g in G])
    np.testing.assert_allclose(w, ref, rtol=1e-9, atol=1e-9 * np.abs(ref).max())


def test_toy_engine_each_start_as_if_alone():
    """saddle2d's default starts (one on the axis where the gradients cancel: a singular Gram at every
    step) plus a few more, in one small batch: every trajectory is bit for bit the one that start has
    when run alone (a singular row no longer sends the other rows to the pseudo-inverse)."""
    from pcd.engine import run
    from pcd.problems import make

    prob = make("saddle2d")
    starts = np.concatenate([prob.default_starts(), [[0.5, 1.0], [-1.0, -0.7], [2.5, 0.3]]])
    res = run(prob, ["imtlg"], starts=starts, steps=300, record=30)
    for s, x0 in enumerate(starts):
        one = run(prob, ["imtlg"], starts=x0[None], steps=300, record=30)
        np.testing.assert_array_equal(res.positions[0, s], one.positions[0, 0], err_msg=str(x0))
        np.testing.assert_array_equal(res.weights[0, s], one.weights[0, 0], err_msg=str(x0))
