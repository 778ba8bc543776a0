"""SDMGrad: step-by-step TorchJD oracle (Gram and double-sampled ``J_1 J_2^T``, default and given
preference), the limits of ``lambda_``, bad hyper-parameters.

Tolerance: over 8 consecutive calls (state carried along) our weights equal TorchJD 0.18's
``SDMGradWeighting`` to 1e-11 absolute (weights are O(1); measured <= 1e-12): the same float64 inner
SGD and the same projection, with the products summed in another order. That holds where the inner
SGD is stable (lr <= 1 here, and K = 2 at the defaults). At the default lr = 10 and K >= 3,
``lr x`` the eigenvalues of the normalized A is far above 2: the iterates bounce between faces of
the simplex and amplify the last-bit differences of ``A w`` (measured: 2 to 4 of 20 trajectories
part from TorchJD's within 8 calls on random and rank-deficient K = 3, 5; both stay valid iterates),
so there we check the invariants instead.
"""
import numpy as np
import pytest

import pcd.methods as methods
from tests.methods._samplers import KINDS, gram, jacobian


def _oracle(kind, K, double, pref, hp, steps=8, B=3, atol=1e-11):
    torch = pytest.importorskip("torch")
    agg = pytest.importorskip("torchjd.aggregation")
    if pref is not None:
        hp = dict(hp, pref_vector=pref[:K])
    m = methods.make("sdmgrad", **hp)
    state = m.init(B, K)
    tp = None if pref is None else torch.tensor(pref[:K], dtype=torch.float64)
    thp = {k: v for k, v in hp.items() if k != "pref_vector"}
    refs = [agg.SDMGradWeighting(pref_vector=tp, **thp) for _ in range(B)]
    for t in range(steps):
        J1 = jacobian(kind, B, K, seed=10 * t + K)
        J2 = jacobian(kind, B, K, seed=10 * t + K + 500) if double else J1
        A = np.einsum("bkn,bln->bkl", J1, J2)
        out = m(A, state=state)
        state = out.state
        ref = np.stack([refs[b](torch.tensor(A[b])).numpy() for b in range(B)])
        np.testing.assert_allclose(out.weights, ref, rtol=0, atol=atol)


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("K", [3, 5])
@pytest.mark.parametrize("lr", [0.3, 1.0])
@pytest.mark.parametrize("double,pref", [(False, None), (True, None), (False, [0.5, 0.2, 0.1, 0.1, 0.1])])
def test_oracle_torchjd_over_several_calls(kind, K, lr, double, pref):
    _oracle(kind, K, double, pref, {"lr": lr})


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("double,pref", [(False, None), (True, None), (False, [0.7, 0.3])])
def test_oracle_torchjd_default_hyper_parameters_k2(kind, double, pref):
    _oracle(kind, 2, double, pref, {})


def test_default_lr_stays_on_the_simplex():
    """At lr = 10 the inner SGD bounces between faces of the simplex (chaotic: see the tolerance note);
    its iterates stay on the simplex and the weights are ``(w + lambda w~) / (1 + lambda)``."""
    m = methods.make("sdmgrad")
    state = m.init(6, 5)
    for t in range(8):
        out = m(gram(jacobian("random", 6, 5, seed=t)), state=state)
        state = out.state
        assert np.all(state.w >= 0) and np.allclose(state.w.sum(-1), 1.0)
        np.testing.assert_allclose(out.weights, (state.w + 0.3 / 5) / 1.3, rtol=1e-15)


def test_lambda_limits_and_preference():
    G = gram(jacobian("random", 4, 3, seed=1))
    # lambda_ = 0 and many steps: MGDA's min-norm weights
    m = methods.make("sdmgrad", lambda_=0.0, n_iter=5000, lr=0.1, momentum=0.0)
    state = m.init(4, 3)
    for _ in range(5):
        out = m(G, state=state)
        state = out.state
    np.testing.assert_allclose(out.weights, methods.make("mgda")(G).weights, atol=1e-6)
    # a huge lambda_: the preference itself (the mean by default)
    np.testing.assert_allclose(methods.make("sdmgrad", lambda_=1e3)(G).weights, 1 / 3, atol=2e-3)
    # one number v is v / K each
    a = methods.make("sdmgrad", pref_vector=2.0)(G).weights
    b = methods.make("sdmgrad", pref_vector=[2 / 3] * 3)(G).weights
    np.testing.assert_array_equal(a, b)


def test_bad_hyper_parameters_refused():
    for bad in ({"lr": 0.0}, {"momentum": 1.0}, {"n_iter": 0}, {"lambda_": -0.1}, {"pref_vector": -1.0}):
        with pytest.raises(ValueError, match=next(iter(bad))):
            methods.make("sdmgrad", **bad)
    with pytest.raises(ValueError, match="pref_vector"):
        methods.make("sdmgrad", pref_vector=[1.0, 2.0])(np.eye(3))
    m = methods.make("sdmgrad")
    with pytest.raises(ValueError, match="state"):
        m(np.eye(3), state=m.init(1, 2))
