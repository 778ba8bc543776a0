"""CR-MOGM: step-by-step TorchJD oracle (``CRMOGMWeighting`` around IMTL-G and UPGrad), the EMA
itself, per-instance claims, bad hyper-parameters.

Tolerances: the EMA is the same float64 arithmetic as TorchJD 0.18's (``alpha * prev + (1 - alpha)
* new``, first call ``prev = new``), so the smoothed weights inherit the wrapped method's oracle
tolerance: IMTL-G (the same pseudo-inverse cut-off) 1e-9 relative on every sampler; UPGrad (ours:
the exact projection, TorchJD's projector at ``reg_eps = 1e-11``) 1e-6 absolute on random,
rank-deficient and cancelling matrices, as in tests/methods/test_upgrad.py. Over 6 calls.
"""
import numpy as np
import pytest

import pcd.methods as methods
from pcd.methods.crmogm import WRAPPABLE
from tests.methods._samplers import KINDS, gram, jacobian


def _torchjd_inner(name):
    agg = pytest.importorskip("torchjd.aggregation")
    if name == "imtlg":
        return agg.IMTLGWeighting()
    pytest.importorskip("quadprog")
    pytest.importorskip("qpsolvers")
    from torchjd._linalg._dual_cone import QuadprogProjector

    return agg.UPGradWeighting(projector=QuadprogProjector(norm_eps=0.0, reg_eps=1e-11))


@pytest.mark.parametrize("inner,kinds,tol", [("imtlg", KINDS, 1e-9),
                                             ("upgrad", ("random", "rank_def", "cancel"), 1e-6)])
@pytest.mark.parametrize("K", [2, 3, 5])
def test_oracle_torchjd_over_several_calls(inner, kinds, tol, K, torch, agg):
    B, steps, alpha = 3, 6, 0.7
    for kind in kinds:
        m = methods.make("crmogm", weighting=inner, alpha=alpha)
        state = m.init(B, K)
        refs = [agg.CRMOGMWeighting(_torchjd_inner(inner), alpha=alpha) for _ in range(B)]
        for t in range(steps):
            G = gram(jacobian(kind, B, K, seed=50 * t + K))
            out = m(G, state=state)
            state = out.state
            ref = np.stack([refs[b](torch.tensor(G[b])).numpy() for b in range(B)])
            if inner == "imtlg":
                np.testing.assert_allclose(out.weights, ref, rtol=tol, atol=1e-300)
            else:
                np.testing.assert_allclose(out.weights, ref, rtol=0, atol=tol)


def test_ema_of_the_wrapped_weights():
    m = methods.make("crmogm", alpha=0.25)  # MGDA inside
    mgda = methods.make("mgda")
    Gs = [gram(jacobian("random", 2, 3, seed=s)) for s in range(4)]
    state = m.init(2, 3)
    lam = None
    for G in Gs:
        out = m(G, state=state)
        state = out.state
        new = mgda(G).weights
        lam = new if lam is None else 0.25 * lam + 0.75 * new
        np.testing.assert_allclose(out.weights, lam, rtol=1e-14)
        np.testing.assert_array_equal(out.info["inner_weights"], new)
    # alpha = 0: the wrapped method itself; alpha = 1: the first weights forever
    w0 = methods.make("crmogm", alpha=0.0)
    np.testing.assert_array_equal(w0(Gs[1], state=w0(Gs[0]).state).weights, mgda(Gs[1]).weights)
    w1 = methods.make("crmogm", alpha=1.0)
    np.testing.assert_array_equal(w1(Gs[1], state=w1(Gs[0]).state).weights, mgda(Gs[0]).weights)


def test_wrapped_methods_and_their_claims():
    assert methods.get("crmogm").claims == methods.get("mgda").claims  # the default
    G = gram(jacobian("random", 2, 4, seed=0))
    for name in WRAPPABLE:
        m = methods.make("crmogm", weighting=name)
        assert not methods.get(name).stochastic and not m.inner.needs()
        out = m(G, state=m.init(2, 4))
        np.testing.assert_allclose(out.weights, methods.make(name)(G).weights, rtol=1e-15)  # first call
        out = m(gram(jacobian("random", 2, 4, seed=1)), state=out.state)
        assert np.isfinite(out.weights).all()


def test_bad_hyper_parameters_and_state_refused():
    with pytest.raises(ValueError, match="alpha"):
        methods.make("crmogm", alpha=1.2)
    with pytest.raises(ValueError, match="weighting"):
        methods.make("crmogm", weighting="famo")
    m = methods.make("crmogm")
    with pytest.raises(ValueError, match="state"):
        m(np.eye(3), state=m(np.eye(2)).state)
