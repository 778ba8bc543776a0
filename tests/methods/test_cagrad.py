"""CAGrad: exact dual solution vs TorchJD (cvxpy/Clarabel), closed forms, pinned special cases.

Tolerances: TorchJD solves the dual SOCP with an interior-point method (accuracy ~1e-6 on ``w``),
and the weights amplify ``w`` by ``phi / ||g_w||``. So we recover TorchJD's ``w`` from its weights
(``w = (weights - 1/K) / sum(weights - 1/K)``) and require (a) our dual objective to be at least as
low as TorchJD's (+1e-9) and within 1e-6 of it, (b) ``|w - w_torchjd| <= 2e-3`` (the dual is flat
near its optimum: Clarabel's ``w`` is off by up to ~3e-4 on a 4x4 random case while its objective
is higher than ours). K > 5 uses SLSQP (as the official code).
"""
import numpy as np
import pytest

import pcd.methods as methods
from pcd.methods._solvers import ridge
from pcd.methods.cagrad import _solve_enum, cagrad_k2, cagrad_weights
from tests.methods._samplers import KINDS, gram, jacobian


def _dual(G, c):
    K = G.shape[-1]
    Gn = G / np.einsum("bii->b", G)[:, None, None]
    b = Gn.sum(-1) / K
    phi = c * np.sqrt(Gn.sum((-1, -2))) / K
    return Gn, b, phi


def _objective(w, Gn, b, phi):
    return np.einsum("bi,bi->b", b, w) + phi * np.sqrt(np.maximum(np.einsum("bi,bij,bj->b", w, Gn, w), 0))


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("K", [2, 3, 4, 7])
@pytest.mark.parametrize("c", [0.0, 0.5, 2.0])
def test_oracle_torchjd(kind, K, c, torch, agg):
    pytest.importorskip("cvxpy")  # torchjd[cagrad]
    pytest.importorskip("clarabel")
    G = gram(jacobian(kind, 4, K, seed=K))
    w = methods.make("cagrad", c=c)(G).weights
    ref = np.stack([agg.CAGradWeighting(c=c)(torch.tensor(g)).numpy() for g in G])
    if c == 0.0:  # the mean, or 0 when the mean gradient vanishes
        np.testing.assert_allclose(w, ref, atol=1e-12)
        return
    zero_ref = np.all(ref == 0, axis=1)
    Gn, b, phi = _dual(G, c)
    ours = w - 1.0 / K
    theirs = ref - 1.0 / K
    for i in range(len(G)):
        if zero_ref[i]:  # TorchJD: ||g_w|| < norm_eps, "on the Pareto front"
            assert np.all(w[i] == 0) or np.linalg.norm(w[i] @ J_from(G[i])) < 1e-3
            continue
        wo = ours[i] / ours[i].sum()
        wt = theirs[i] / theirs[i].sum()
        fo = _objective(wo[None], Gn[i:i + 1], b[i:i + 1], phi[i:i + 1])[0]
        ft = _objective(wt[None], Gn[i:i + 1], b[i:i + 1], phi[i:i + 1])[0]
        assert ft - 1e-6 <= fo <= ft + 1e-9  # as good as TorchJD, and the same optimum
        np.testing.assert_allclose(wo, wt, atol=2e-3)


def J_from(G):
    lam, V = np.linalg.eigh(G)
    return V * np.sqrt(np.maximum(lam, 0))  # rows with the same Gram matrix


def test_k2_closed_form_equals_enumeration():
    J = jacobian("random", 300, 2, seed=3)
    J[:50] *= np.array([1e-3, 1e3])[:, None]
    G = gram(J)
    for c in (0.1, 0.5, 1.0, 3.0):  # the K = 2 closed form the method runs vs the enumerated dual
        Gn, b, phi = _dual(G, c)
        w = _solve_enum(ridge(Gn), b, phi)
        gw = np.sqrt(np.maximum(np.einsum("bi,bij,bj->b", w, Gn, w), 0.0))
        big = gw >= 1e-4  # below norm_eps the method's weights are 0, as in TorchJD
        expected = np.where(big[:, None], 0.5 + (phi / np.where(big, gw, 1.0))[:, None] * w, 0.0)
        np.testing.assert_allclose(np.stack(cagrad_k2(G[:, 0, 0], G[:, 0, 1], G[:, 1, 1], (c, 1e-4)), -1), expected,
                                   atol=1e-7)


def test_mean_when_c_zero_and_conflict_aversion():
    G = gram(jacobian("random", 5, 3, seed=1))
    np.testing.assert_allclose(methods.make("cagrad", c=0.0)(G).weights, np.full((5, 3), 1 / 3))
    # larger c: the worst objective's first-order progress g_i . d / |d| improves (CAGrad's purpose)
    J = np.array([[[1.0, 0.0], [-0.9, 0.3]]])
    G = gram(J)
    worst = []
    for c in (0.0, 0.3, 0.6, 0.9):
        d = cagrad_weights(G, c)[0] @ J[0]
        worst.append(min(J[0] @ d) / np.linalg.norm(d))
    assert all(b >= a - 1e-12 for a, b in zip(worst, worst[1:])) and worst[1] > worst[0] + 0.1
    # here, beyond a small c, both objectives progress equally (the min-norm-like balance point)
    assert np.allclose(J[0] @ (cagrad_weights(G, 0.9)[0] @ J[0]), 0.15596257 * np.linalg.norm(
        cagrad_weights(G, 0.9)[0] @ J[0]), atol=1e-7)


def test_cancellation_is_zero_update():
    J = jacobian("cancel", 3, 2)
    np.testing.assert_array_equal(methods.make("cagrad", c=0.5)(gram(J)).weights, np.zeros((3, 2)))


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("K", [7, 12])
@pytest.mark.parametrize("c", [0.3, 2.0])
def test_large_k_pivoting_matches_slsqp(kind, K, c):
    # K > 5: support pivoting with the closed form (exact) is at least as good as SLSQP (official
    # solver), and warm-starting from the previous support gives the same answer
    from pcd.methods.cagrad import _solve_slsqp

    G = gram(jacobian(kind, 3, K, seed=K))
    m = methods.make("cagrad", c=c)
    out = m(G)
    again = m(G, state=out.state)
    np.testing.assert_allclose(again.weights, out.weights, rtol=1e-9, atol=1e-12)
    Gn, b, phi = _dual(G, c)
    w = out.weights - 1.0 / K
    for i in range(3):
        if phi[i] <= 1e-15:
            continue
        ws = _solve_slsqp(Gn[i], b[i], float(phi[i]))
        if np.all(out.weights[i] == 0):  # ||g_w|| < norm_eps: SLSQP's optimum is (almost) there too
            assert np.sqrt(ws @ Gn[i] @ ws) < 1e-3
            continue
        wo = w[i] / w[i].sum()
        fo = _objective(wo[None], Gn[i:i + 1], b[i:i + 1], phi[i:i + 1])[0]
        fs = _objective(ws[None], Gn[i:i + 1], b[i:i + 1], phi[i:i + 1])[0]
        assert fo <= fs + 1e-9
