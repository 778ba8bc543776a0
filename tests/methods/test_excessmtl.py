"""ExcessMTL: step-by-step TorchJD oracle (with and without warm-up), the contract (needs J, pure
state), the direction of the update, bad hyper-parameters.

Tolerance: over 8 consecutive calls (state carried along) our weights equal TorchJD 0.18's
``ExcessMTLWeighting`` to 1e-12 (relative) and our squared-gradient sums its ``_sq_grad_sum``
exactly: the same float64 operations (softmax of ``log(w) + step * e``), summed per task in NumPy
rather than torch (last-bit differences, grown by the exponentials; measured <= 6e-14).
"""
import numpy as np
import pytest

import pcd.methods as methods
from tests.methods._samplers import KINDS, gram, jacobian


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("K", [2, 3, 5])
@pytest.mark.parametrize("warmup", [0, 3])
def test_oracle_torchjd_over_several_calls(kind, K, warmup, torch, agg):
    B, steps, step_size = 3, 8, 0.7
    m = methods.make("excessmtl", robust_step_size=step_size, n_warmup_steps=warmup)
    state = m.init(B, K)
    refs = [agg.ExcessMTLWeighting(robust_step_size=step_size, n_warmup_steps=warmup) for _ in range(B)]
    for t in range(steps):
        J = jacobian(kind, B, K, n=6, seed=100 * t + K) * (0.9 ** t)  # the gradients shrink over time
        out = m(gram(J), state=state, jacobian=J)
        state = out.state
        for b in range(B):
            ref = refs[b](torch.tensor(J[b])).numpy()
            np.testing.assert_allclose(out.weights[b], ref, rtol=1e-12, atol=1e-300)
            np.testing.assert_array_equal(state.sq_grad_sum[b], refs[b]._sq_grad_sum.numpy())
    assert state.steps == steps


def test_weights_move_to_the_task_with_the_larger_excess_risk():
    m = methods.make("excessmtl")
    state = m.init(1, 2)
    rng = np.random.default_rng(0)
    for t in range(20):  # task 0 converges (its gradient shrinks), task 1 does not
        J = rng.standard_normal((1, 2, 4)) * np.array([[[0.8**t], [1.0]]])
        out = m(gram(J), state=state, jacobian=J)
        state = out.state
        assert np.isclose(out.weights.sum(), 1.0) and np.all(out.weights > 0)
    assert out.weights[0, 1] > 0.9


def test_contract_needs_jacobian_and_state_is_pure():
    m = methods.make("excessmtl")
    assert m.needs() == {"jacobian"}
    with pytest.raises(ValueError, match="Jacobian"):
        m(np.eye(2))
    J = jacobian("random", 2, 3, seed=1)
    s0 = m.init(2, 3)
    out = m(gram(J), state=s0, jacobian=J)
    assert s0.sq_grad_sum is None and s0.steps == 0 and np.all(s0.weights == 1 / 3)
    with pytest.raises(ValueError, match="shape"):
        m(gram(J), state=out.state, jacobian=np.ones((2, 3, 7)))
    with pytest.raises(ValueError, match="shape"):
        m(np.eye(3), jacobian=np.ones((1, 2, 4)))


@pytest.mark.parametrize("name,value", [("robust_step_size", 0.0), ("n_warmup_steps", -1), ("n_warmup_steps", 1.5)])
def test_bad_hyper_parameters_refused(name, value):
    with pytest.raises(ValueError, match=name):
        methods.make("excessmtl", **{name: value})
