"""GradVac: step-by-step TorchJD oracle with the same visiting orders, the first call is PCGrad,
EMA targets, reproducible draws, bad hyper-parameters.

Tolerance: over 6 consecutive calls (state carried along), our weights equal TorchJD 0.18's
``GradVacWeighting`` to 1e-7 of their largest entry and our targets equal its ``_phi_t`` to 1e-7,
with ``torch.randperm`` patched to return our draws. Same arithmetic in float64 (measured ~3e-16);
on exactly cancelling rows a cosine is -1 up to round-off and ``sqrt(1 - cos^2)`` turns an
``eps``-sized difference into ~``sqrt(eps)`` (measured 3e-10).
"""
from unittest import mock

import numpy as np
import pytest

import pcd.methods as methods
from pcd.methods.gradvac import visiting_order
from tests.methods._samplers import KINDS, gram, jacobian


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("K", [2, 3, 5, 7])
def test_oracle_torchjd_over_several_calls(kind, K, torch, agg):
    B, steps, beta = 3, 6, 0.3
    m = methods.make("gradvac", beta=beta)
    state = m.init(B, K)
    refs = [agg.GradVacWeighting(beta=beta) for _ in range(B)]
    for t in range(steps):
        G = gram(jacobian(kind, B, K, seed=1000 * t + K))
        out = m(G, state=state, rng=np.random.default_rng(t))
        state = out.state
        order = visiting_order(B, K, np.random.default_rng(t))  # the same draw
        for b in range(B):
            perms = iter([torch.tensor(order[b, i] - (order[b, i] > i)) for i in range(K)])
            with mock.patch("torch.randperm", lambda n, *a, _p=perms, **k: next(_p)):
                ref = refs[b](torch.tensor(G[b])).numpy()
            np.testing.assert_allclose(out.weights[b], ref, rtol=0, atol=1e-7 * np.abs(ref).max())
            np.testing.assert_allclose(state.phi[b], refs[b]._phi_t.numpy(), rtol=0, atol=1e-7)


def test_first_call_is_pcgrad_and_state_is_pure():
    G = gram(jacobian("random", 4, 4, seed=5))
    m = methods.make("gradvac", eps=0.0)
    s0 = m.init(4, 4)
    out = m(G, state=s0, rng=np.random.default_rng(1))
    order = visiting_order(4, 4, np.random.default_rng(1))
    # PCGrad with the same order (targets 0: a correction exactly when the cosine is negative)
    from pcd.methods.pcgrad import pcgrad_weights

    perms = np.concatenate([np.broadcast_to(np.arange(4)[None, :, None], (4, 4, 1)), order], axis=-1)  # i: no-op
    np.testing.assert_allclose(out.weights, pcgrad_weights(G, perms), rtol=1e-12)
    assert np.all(s0.phi == 0) and out.state.phi.shape == (4, 4, 4)
    # the targets moved by beta times the observed cosines
    assert np.all(np.diagonal(out.state.phi, axis1=1, axis2=2) == 0)
    assert np.abs(out.state.phi).max() > 0


def test_k2_needs_no_draw_and_draws_are_reproducible():
    G = gram(jacobian("random", 3, 2, seed=2))
    m = methods.make("gradvac")
    a = m(G, state=m.init(3, 2)).weights
    b = m(G, state=m.init(3, 2), rng=np.random.default_rng(9)).weights
    np.testing.assert_array_equal(a, b)
    G5 = gram(jacobian("random", 3, 5, seed=2))
    w1 = m(G5, state=m.init(3, 5), rng=np.random.default_rng(4)).weights
    w2 = m(G5, state=m.init(3, 5), rng=np.random.default_rng(4)).weights
    np.testing.assert_array_equal(w1, w2)


def test_target_above_cosine_pulls_towards_it():
    # g1 = (1, 0), g2 = (0, 1): cosine 0 < target 0.5, so g1^PC = g1 + g2 / sqrt(3) (and the same for
    # g2^PC): its cosine with g2 is then exactly the target
    G = np.eye(2)[None]
    m = methods.make("gradvac", eps=0.0)
    out = m(G, state=m.init(1, 2)._replace(phi=np.array([[[0.0, 0.5], [0.5, 0.0]]])))
    np.testing.assert_allclose(out.weights[0], [1 + 1 / np.sqrt(3), 1 + 1 / np.sqrt(3)], rtol=1e-14)
    g1pc = np.array([1.0, 1 / np.sqrt(3)])
    assert g1pc[1] / np.linalg.norm(g1pc) == pytest.approx(0.5)
    # the targets move by beta (0.5) towards the observed cosine 0
    np.testing.assert_allclose(out.state.phi[0], [[0.0, 0.25], [0.25, 0.0]])


def test_bad_hyper_parameters_and_state_refused():
    with pytest.raises(ValueError, match="beta"):
        methods.make("gradvac", beta=1.5)
    with pytest.raises(ValueError, match="eps"):
        methods.make("gradvac", eps=-1e-8)
    with pytest.raises(ValueError, match="state"):
        methods.make("gradvac")(np.eye(3), state=methods.make("gradvac").init(1, 2))
