"""FAMO: step-by-step oracle against TorchJD's ``scalarization.FAMO`` (weights = gradient of its
scalarized loss w.r.t. the losses; logits updated by ``update(new_losses)``), batched.

Tolerance 1e-12: same arithmetic (float64), including the Adam step on the logits.
"""
import numpy as np
import pytest

import pcd.methods as methods
from tests.methods._samplers import loss_weighting_steps, scalarization_weights


def _trajectory(K, steps, seed):
    rng = np.random.default_rng(seed)
    L = [rng.uniform(0.5, 2.0, K)]
    for _ in range(steps - 1):
        L.append(L[-1] * rng.uniform(0.7, 1.05, K))
    return np.array(L)


@pytest.mark.parametrize("K", [2, 3, 5])
def test_oracle_torchjd_famo(K):
    torch = pytest.importorskip("torch")
    sc = pytest.importorskip("torchjd.scalarization")
    torch.set_num_threads(1)
    B, steps = 3, 25
    Ls = np.stack([_trajectory(K, steps, s) for s in range(B)], axis=1)  # [T, B, K]
    refs = [sc.FAMO(K).double() for _ in range(B)]
    m = methods.make("famo")
    for t, out in loss_weighting_steps(m, Ls, m.init_state(B, K)):
        for b in range(B):
            np.testing.assert_allclose(out.weights[b], scalarization_weights(refs[b], Ls[t, b]), rtol=1e-12, atol=1e-14)
            if t + 1 < steps:
                refs[b].update(torch.tensor(Ls[t + 1, b]))


def test_weights_convex_and_favour_slow_objective():
    m = methods.make("famo", lr=0.1)
    state = m.init_state(1, 2)
    L = np.array([[1.0, 1.0]])
    for _ in range(30):  # objective 0 decreases fast, objective 1 barely moves
        out = m(np.eye(2), losses=L, state=state)
        state = out.state
        assert np.all(out.weights > 0) and np.isclose(out.weights.sum(), 1.0)
        L = L * np.array([[0.8, 0.999]])
    z = out.info["task_weights"][0]
    assert z[1] > z[0]  # the logits move weight to the slowly improving objective


def test_needs_losses_and_shapes():
    m = methods.make("famo")
    with pytest.raises(ValueError, match="loss"):
        m(np.eye(2))
    with pytest.raises(ValueError, match="shape"):
        m(np.eye(2), losses=np.ones(3))
