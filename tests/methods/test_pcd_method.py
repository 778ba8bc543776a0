"""The registry's PCD (batched NumPy) against TorchJD's PCDWeighting and the torch front end."""
import numpy as np
import pytest

from pcd._fast import vectorized
from pcd.methods import make

KINDS = ("random", "scaled", "rank_deficient", "cancelling")


def gram_sequence(rng, kind, K, steps, n=6):
    out = []
    for _ in range(steps):
        J = rng.standard_normal((K, n))
        if kind == "scaled":
            J *= 10.0 ** rng.uniform(-4, 4, size=(K, 1))
        elif kind == "rank_deficient":
            J = rng.standard_normal((K, 2)) @ rng.standard_normal((2, n))
        elif kind == "cancelling":
            J[1] = -J[0]
        out.append(J @ J.T)
    return np.array(out)


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("K", [2, 3, 5])
def test_matches_torchjd_pcdweighting(kind, K, torch, agg):
    rng = np.random.default_rng(K * 10 + KINDS.index(kind))
    grams = gram_sequence(rng, kind, K, steps=8)
    tau = 0.3
    ours = make("pcd", tau=tau, beta=0.9, eps=1e-8)
    state = ours.init_state(1, K)
    theirs = agg.PCDWeighting(tau=tau, beta=0.9, eps=1e-8)
    for G in grams:
        out = ours(G[None], state=state)
        state = out.state
        ref = theirs(torch.tensor(G, dtype=torch.float64)).numpy()
        # Both rescale d~ to ||g_1||; compare the deployed weights (1e-9 relative: both are exact
        # active-set solvers, differences are rounding).
        assert np.allclose(out.weights[0], ref, rtol=1e-9, atol=1e-12 * np.abs(ref).max(initial=1.0))
        # and with the ||g_1|| rescaling undone the primary's normalized coefficient is exactly 1
        if out.info["feasible"][0] and np.abs(out.weights[0]).sum() > 0:
            w_norm = out.weights[0] / out.info["scales"][0]
            assert w_norm[1:] / w_norm[0] == pytest.approx(out.info["mu"][0], rel=1e-9, abs=1e-12)


def test_batched_matches_independent_runs_and_torch_front_end():
    torch = pytest.importorskip("torch")
    from pcd import PCD
    rng = np.random.default_rng(0)
    B, K, n = 4, 3, 5
    Js = rng.standard_normal((5, B, K, n))
    m = make("pcd", tau=0.4, beta=0.9)
    st = m.init_state(B, K)
    outs = []
    for J in Js:
        o = m(np.einsum("bkn,bjn->bkj", J, J), state=st)
        st = o.state
        outs.append(np.einsum("bk,bkn->bn", o.weights, J))
    for b in range(B):
        x = torch.zeros(n, dtype=torch.float64, requires_grad=True)
        front = PCD([x], tau=0.4, beta=0.9)
        for t, J in enumerate(Js):
            front.apply_gradients([[torch.tensor(J[b, k])] for k in range(K)])
            assert np.allclose(x.grad.numpy(), outs[t][b], rtol=1e-12, atol=1e-14)


def test_exact_cancellation_keeps_moving_where_symmetric_methods_stop():
    # g1 = -g2: the weighted sum's update is 0 (a conflict equilibrium); PCD with tau > 0 still moves.
    G = np.array([[[1.0, -1.0], [-1.0, 1.0]]])
    out = make("pcd", tau=0.3)(G)
    J = np.array([[1.0, 0.0], [-1.0, 0.0]])
    d = out.weights[0] @ J
    assert np.linalg.norm(d) == pytest.approx(1.0)  # rescaled to ||g_1||
    # with tau = 0 the normalized direction is exactly zero and so is the update
    out0 = make("pcd", tau=0.0)(G)
    assert np.abs(out0.weights).max() == 0.0


def test_registry_metadata_and_validation():
    m = make("pcd")
    assert m.hparams["tau"] == 0.02 and m.primary_knob == "tau"
    with pytest.raises(ValueError, match="tau"):
        make("pcd", tau=2.0)
    with pytest.raises(ValueError, match="unknown hyper-parameter"):
        make("pcd", rho=1.0)


def test_small_batch_k2_hot_path_is_bit_identical_to_the_general_path():
    """The engine's K = 2 path (Python floats for a small batch) against the NumPy path (forced
    with ``vectorized()``), over a multi-step sequence with zero, cancelling and badly scaled
    gradients. The first step starts both from the zero EMA state (the fast path runs from it)."""
    rng = np.random.default_rng(11)
    B = 5
    small, big = make("pcd", tau=0.25, beta=0.9), make("pcd", tau=0.25, beta=0.9)
    s_state, b_state = small.init(B, 2), big.init(B, 2)
    for t in range(30):
        J = rng.standard_normal((B, 2, 3)) * 10.0 ** rng.uniform(-6, 6, size=(B, 2, 1))
        if t % 5 == 1:
            J[0, 1] = -J[0, 0]          # exact cancellation
        if t % 7 == 2:
            J[1, 0] = 0.0               # zero primary
        if t % 4 == 3:
            J[2, 1] = 0.0               # zero secondary
        G = np.einsum("bkn,bjn->bkj", J, J)
        o1 = small(G, state=s_state)
        with vectorized():
            o2 = big(G, state=b_state)
        s_state, b_state = o1.state, o2.state
        assert np.array_equal(o1.weights, o2.weights[:B])
        assert np.array_equal(o1.info["mu"], o2.info["mu"][:B])
        assert np.array_equal(o1.info["scales"], o2.info["scales"][:B])
        assert np.array_equal(s_state.v, b_state.v[:B])
