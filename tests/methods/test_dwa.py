"""DWA (dynamic weight average): step-by-step oracle against TorchJD 0.18's ``scalarization.DWA``
(weights = gradient of its scalarized loss w.r.t. the losses; its ``step()`` called at the end of
each epoch of ``epoch_length`` calls).

Tolerance 1e-12 relative (float64 both; TorchJD's softmax vs ours differ in rounding only).
Hand-derived value (Liu et al. 2019, eq. (7)): K = 2, T = 2, epoch averages (1, 1) then
(0.5, 1): rates (0.5, 1), weights 2 softmax(0.25, 0.5) = (2 / (1 + e^0.25), 2 e^0.25 / (1 + e^0.25)).
"""
import numpy as np
import pytest

import pcd.methods as methods
from tests.methods._samplers import loss_trajectory, loss_weighting_steps, scalarization_weights


@pytest.mark.parametrize("K,T_,E", [(2, 2.0, 1), (3, 0.5, 3), (5, 10.0, 2)])
def test_oracle_torchjd_dwa(K, T_, E):
    pytest.importorskip("torch")
    sc = pytest.importorskip("torchjd.scalarization")
    B, steps = 3, 24
    Ls = loss_trajectory(steps, B, K, seed=K, start=(0.5, 3.0), factor=(0.6, 1.1))
    refs = [sc.DWA(temperature=T_) for _ in range(B)]
    m = methods.make("dwa", temperature=T_, epoch_length=E)
    moved = 0.0
    for t, out in loss_weighting_steps(m, Ls, m.init(B, K)):
        for b in range(B):
            np.testing.assert_allclose(out.weights[b], scalarization_weights(refs[b], Ls[t, b]), rtol=1e-12, atol=0)
            if (t + 1) % E == 0:
                refs[b].step()
        moved = max(moved, float(np.abs(out.weights - 1.0).max()))
    assert moved > 1e-2  # the weights did leave 1 (the oracle compared something)


def test_hand_derived_value_and_first_two_epochs():
    m = methods.make("dwa")
    state = m.init(1, 2)
    for L in ([1.0, 1.0], [0.5, 1.0]):
        out = m(np.eye(2), losses=L, state=state)
        np.testing.assert_array_equal(out.weights, [[1.0, 1.0]])  # no two averages yet
        state = out.state
    out = m(np.eye(2), losses=[0.1, 0.1], state=state)
    e = np.exp(0.25)
    np.testing.assert_allclose(out.weights, [[2 / (1 + e), 2 * e / (1 + e)]], rtol=1e-15)
    assert out.weights.sum() == pytest.approx(2.0)


def test_epoch_length_averages_the_losses():
    # epoch_length 2: averages (1, 2) and (0.5, 3) -> rates (0.5, 1.5), T = 1
    m = methods.make("dwa", temperature=1.0, epoch_length=2)
    state = m.init(1, 2)
    for L in ([0.5, 1.0], [1.5, 3.0], [0.25, 2.0], [0.75, 4.0]):
        state = m(np.eye(2), losses=L, state=state).state
    out = m(np.eye(2), losses=[9.0, 9.0], state=state)
    np.testing.assert_allclose(out.weights, [[2 / (1 + np.e), 2 * np.e / (1 + np.e)]], rtol=1e-15)


def test_zero_older_average_is_rate_one_as_documented():
    m = methods.make("dwa")
    state = m.init(1, 2)
    for L in ([0.0, 1.0], [0.0, 2.0]):
        state = m(np.eye(2), losses=L, state=state).state
    out = m(np.eye(2), losses=[0.0, 2.0], state=state)
    assert np.isfinite(out.weights).all()
    e = np.exp(0.5)  # rates (1 by convention, 2), T = 2
    np.testing.assert_allclose(out.weights, [[2 / (1 + e), 2 * e / (1 + e)]], rtol=1e-15)


def test_bad_input_refused_in_one_line():
    with pytest.raises(ValueError, match="dwa: temperature must be in"):
        methods.make("dwa", temperature=0.0)
    with pytest.raises(ValueError, match="dwa: epoch_length"):
        methods.make("dwa", epoch_length=0)
    with pytest.raises(ValueError, match="loss values"):
        methods.make("dwa")(np.eye(2))
    with pytest.raises(ValueError, match=r"dwa: losses must have shape"):
        methods.make("dwa")(np.eye(3), losses=np.ones(2))
