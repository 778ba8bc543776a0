"""Nash-MTL and AuxiNash: exact bargaining equations, TorchJD Nash-MTL oracle, AuxiNash powers.

Tolerances: we solve ``alpha_i (G alpha)_i = p_i`` to a relative residual <= 1e-10 (checked on every
sampler). TorchJD/the official code stop their convex-concave iterations at
``||G alpha - 1/alpha|| < 1e-3`` (ECOS), so on well-conditioned random matrices we agree with them
to 1e-6 relative, while on badly scaled ones their residual can be large (we only check ours).
"""
import warnings

import numpy as np
import pytest

import pcd.methods as methods
from pcd.methods._solvers import nash
from tests.methods._samplers import gram, jacobian


def _residual(G, a, p):
    return np.abs(a * np.einsum("bij,bj->bi", G, a) / p - 1.0).max(-1)


@pytest.mark.parametrize("kind", ["random", "scaled"])
@pytest.mark.parametrize("K", [2, 3, 4, 8])
def test_bargaining_equation_exact(kind, K):
    G = gram(jacobian(kind, 6, K, seed=K))
    p = np.random.default_rng(K).uniform(0.2, 3.0, (6, K))
    a, res = nash(G, p)
    assert np.all(a > 0)
    assert _residual(G, a, p).max() <= 1e-9 and res.max() <= 1e-9


def test_k2_closed_form_equals_newton():
    # a block-diagonal K = 3 problem (third objective orthogonal) contains the K = 2 one
    G2 = gram(jacobian("random", 5, 2, seed=1))
    G3 = np.zeros((5, 3, 3))
    G3[:, :2, :2] = G2
    G3[:, 2, 2] = 1.7
    p = np.array([[1.5, 0.5, 1.0]] * 5)
    a2, _ = nash(G2, p[:, :2])
    a3, _ = nash(G3, p)
    np.testing.assert_allclose(a3[:, :2], a2, rtol=1e-10)


@pytest.mark.parametrize("K", [2, 3, 5])
@pytest.mark.parametrize("max_norm", [0.0, 1.0])
def test_oracle_torchjd_nashmtl(K, max_norm, torch, agg):
    pytest.importorskip("cvxpy")
    pytest.importorskip("ecos")
    J = jacobian("random", 3, K, n=K + 5, seed=40 + K)
    w = methods.make("nashmtl", max_norm=max_norm)(gram(J)).weights
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ref = np.stack([agg.NashMTL(n_tasks=K, max_norm=max_norm).weighting(torch.tensor(j)).numpy() for j in J])
    np.testing.assert_allclose(w, ref, rtol=1e-6)


def test_nashmtl_non_conflicting_and_clipped():
    J = jacobian("scaled", 5, 3, seed=2)
    G = gram(J)
    out = methods.make("nashmtl", max_norm=0.0)(G)
    d = np.einsum("bk,bkn->bn", out.weights, J)
    np.testing.assert_allclose(np.einsum("bkn,bn->bk", J, d) * out.weights, 1.0, rtol=1e-9)  # g_i.d = 1/a_i
    clipped = methods.make("nashmtl", max_norm=0.5)(G).weights
    norms = np.linalg.norm(np.einsum("bk,bkn->bn", clipped, J), axis=-1)
    assert np.all(norms <= 0.5 + 1e-12)


def test_auxinash_powers():
    aux = methods.make("auxinash", primary_share=0.75)
    np.testing.assert_allclose(aux.powers(2), [1.5, 0.5])
    np.testing.assert_allclose(aux.powers(4), [3.0, 1 / 3, 1 / 3, 1 / 3])
    J = jacobian("random", 4, 3, seed=5)
    G = gram(J)
    # primary_share = 1/K is Nash-MTL exactly
    np.testing.assert_allclose(methods.make("auxinash", primary_share=1 / 3)(G).weights,
                               methods.make("nashmtl")(G).weights, rtol=1e-12)
    # asymmetric bargaining: alpha_i (g_i . d) = p_i
    out = methods.make("auxinash", primary_share=0.6, max_norm=0.0)(G)
    prog = np.einsum("bkn,bn->bk", J, np.einsum("bk,bkn->bn", out.weights, J))
    np.testing.assert_allclose(out.weights * prog, np.broadcast_to([1.8, 0.6, 0.6], (4, 3)), rtol=1e-9)


def test_auxinash_primary_share_raises_primary_progress():
    # a conflicting pair: the primary's normalized progress grows with its bargaining power
    J = np.array([[[1.0, 0.0], [-0.6, 0.8]]])
    G = gram(J)
    prog = []
    for s in (0.5, 0.65, 0.8, 0.95):
        d = methods.make("auxinash", primary_share=s, max_norm=0.0)(G).weights[0] @ J[0]
        prog.append((J[0] @ d / np.linalg.norm(d))[0])
    assert all(b > a for a, b in zip(prog, prog[1:]))


def test_warm_start_and_update_every():
    m = methods.make("nashmtl", update_weights_every=3)
    G = gram(jacobian("random", 2, 4, seed=3))
    st = m.init_state(2, 4)
    outs = []
    for t in range(4):
        o = m(G * (1 + t), state=st)
        st = o.state
        outs.append(o.info["alpha"])
    np.testing.assert_array_equal(outs[0], outs[1])  # reused for 3 calls
    np.testing.assert_array_equal(outs[0], outs[2])
    assert not np.allclose(outs[3], outs[0])  # recomputed on the 4th (G scaled by 4: alpha / 2)
    np.testing.assert_allclose(outs[3], outs[0] / 2, rtol=1e-9)
