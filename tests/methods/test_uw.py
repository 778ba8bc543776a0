"""UW (uncertainty weighting): step-by-step oracle against TorchJD 0.18's ``scalarization.UW``
trained as its docstring shows (the log-variances in a ``torch.optim.SGD`` with the same ``lr``):
the weights are the gradient of the scalarized loss w.r.t. the losses, the state is ``log_var``.

Tolerances: weights and log-variances 1e-12 relative (the same float64 arithmetic).
Hand-derived values: one step from ``s = 0`` with ``L = 4``, ``lr = 0.1``: ``w = 1/2``,
``s' = 0 - 0.1 (1/2 - 2) = 0.15``; with the losses held fixed ``s -> log L`` and
``w -> 1 / (2 L)`` (the minimizer of ``1/2 e^-s L + 1/2 s``).
"""
import numpy as np
import pytest

import pcd.methods as methods
from pcd.methods.base import state_fields, state_from_fields
from tests.methods._samplers import loss_trajectory, loss_weighting_steps, scalarization_weights


@pytest.mark.parametrize("K,lr,init", [(2, 0.1, 0.0), (3, 0.5, -0.5), (5, 0.02, 0.3)])
def test_oracle_torchjd_uw(K, lr, init):
    torch = pytest.importorskip("torch")
    sc = pytest.importorskip("torchjd.scalarization")
    B, T = 3, 20
    Ls = loss_trajectory(T, B, K, seed=K, factor=(0.8, 1.1))
    refs = [sc.UW(K).double() for _ in range(B)]
    opts = []
    for r in refs:
        with torch.no_grad():
            r.log_var.fill_(init)
        opts.append(torch.optim.SGD(r.parameters(), lr=lr))
    m = methods.make("uw", lr=lr, init=init)
    for t, out in loss_weighting_steps(m, Ls, m.init(B, K)):
        for b in range(B):
            opts[b].zero_grad()
            w = scalarization_weights(refs[b], Ls[t, b])
            opts[b].step()
            np.testing.assert_allclose(out.weights[b], w, rtol=1e-12, atol=0)
            np.testing.assert_allclose(out.state.log_var[b], refs[b].log_var.detach().numpy(), rtol=1e-12, atol=1e-15)


def test_hand_derived_step_and_fixed_point():
    m = methods.make("uw", lr=0.1)
    out = m(np.eye(2), losses=[4.0, 0.25], state=m.init(1, 2))
    np.testing.assert_array_equal(out.weights, [[0.5, 0.5]])
    np.testing.assert_allclose(out.state.log_var, [[0.15, -0.1 * (0.5 - 0.125)]], rtol=1e-15)
    state = out.state
    for _ in range(600):
        out = m(np.eye(2), losses=[4.0, 0.25], state=state)
        state = out.state
    np.testing.assert_allclose(state.log_var, [[np.log(4.0), np.log(0.25)]], rtol=1e-10)
    np.testing.assert_allclose(out.weights, [[1 / 8, 2.0]], rtol=1e-9)


def test_state_is_pure_and_checkpointable():
    m = methods.make("uw")
    s0 = m.init(2, 3)
    before = s0.log_var.copy()
    out = m(np.broadcast_to(np.eye(3), (2, 3, 3)), losses=np.ones((2, 3)) * 2.0, state=s0)
    np.testing.assert_array_equal(s0.log_var, before)  # never mutated
    back = state_from_fields(m, 2, 3, state_fields(out.state))
    np.testing.assert_array_equal(back.log_var, out.state.log_var)


def test_bad_input_refused_in_one_line():
    with pytest.raises(ValueError, match=r"uw: lr must be in \[0.0, 10.0\]"):
        methods.make("uw", lr=-1.0)
    with pytest.raises(ValueError, match="uw: init"):
        methods.make("uw", init=float("nan"))
    m = methods.make("uw")
    with pytest.raises(ValueError, match="loss values"):
        m(np.eye(2))
    with pytest.raises(ValueError, match=r"uw: losses must have shape \[B, K\] = \[1, 2\]"):
        m(np.eye(2), losses=np.ones(3))
    with pytest.raises(ValueError, match=r"^uw: losses must be >= 0 \(.*no minimum\), got -0.5 for objective 1$"):
        m(np.eye(2), losses=[1.0, -0.5])
    with pytest.raises(ValueError, match="state is for shape"):
        m(np.eye(2), losses=np.ones(2), state=m.init(2, 2))


def test_zero_loss_grows_its_weight_as_documented():
    # a loss that stays at 0 lowers s by lr/2 per call: weight 1/2 e^{lr t / 2}
    m = methods.make("uw", lr=0.2)
    state = m.init(1, 2)
    for _ in range(10):
        out = m(np.eye(2), losses=[0.0, 1.0], state=state)
        state = out.state
    np.testing.assert_allclose(out.weights[0, 0], 0.5 * np.exp(0.1 * 9), rtol=1e-12)
