"""Drop-in compatibility of ``pcd.PCD`` with the PCD paper's reference package (issue 12, item 6)."""
from __future__ import annotations

import numpy as np
import pytest
import torch

from pcd import PCD


def _model():
    torch.manual_seed(0)
    return torch.nn.Linear(3, 1), torch.nn.Linear(3, 1)


def test_tau_is_settable_validated_and_round_tripped():
    a, _ = _model()
    opt = PCD(a.parameters(), tau=0.3)
    assert opt.tau == 0.3
    opt.tau = 0.05
    assert opt.tau == 0.05
    opt.tau = [0.1, 0.2]
    assert opt.tau == [0.1, 0.2]
    for bad in (-0.1, 1.5, float("nan"), "0.1", [0.1, "x"]):
        with pytest.raises(ValueError):
            opt.tau = bad
    assert opt.tau == [0.1, 0.2]
    sd = opt.state_dict()
    other = PCD(a.parameters(), tau=0.9)
    other.load_state_dict(sd)
    assert other.tau == [0.1, 0.2]
    with pytest.raises(ValueError):
        other.load_state_dict({"tau": 0.1})


def test_tau_set_between_steps_changes_the_step():
    w = torch.zeros(2, requires_grad=True)
    opt = PCD([w], tau=0.0, beta=0.0)
    g1, g2 = torch.tensor([1.0, 0.0]), torch.tensor([-1.0, 1.0])  # conflicting
    opt.apply_gradients([[g1], [g2]])
    d0 = w.grad.clone()
    opt.tau = 0.9
    info = opt.apply_gradients([[g1], [g2]])
    assert info.mu[0] > 0 and not torch.allclose(d0, w.grad)
    assert float(torch.dot(w.grad, g2)) > float(torch.dot(d0, g2))  # more progress on the secondary


def test_parameters_no_loss_depends_on_get_grad_none():
    a, b = _model()
    params = list(a.parameters()) + list(b.parameters())
    for p in params:
        p.grad = torch.ones_like(p)  # stale gradients from an earlier step
    opt = PCD(params, tau=0.1)
    x = torch.randn(4, 3)
    opt.backward([(a(x) ** 2).mean(), a(x).abs().mean()])
    assert all(p.grad is not None for p in a.parameters())
    assert all(p.grad is None for p in b.parameters())
    sgd = torch.optim.SGD(params, lr=0.1)
    before = [p.detach().clone() for p in b.parameters()]
    sgd.step()
    assert all(torch.equal(p, q) for p, q in zip(b.parameters(), before))  # no silent wrong step


def test_zero_primary_gradient_gives_zero_step_and_zero_mu():
    a, _ = _model()
    x = torch.randn(4, 3)
    opt = PCD(a.parameters(), tau=0.5)
    primary = 0.0 * a(x).sum()  # g1 = 0
    secondary = a(x).pow(2).mean()
    info = opt.backward([primary, secondary])
    assert all(torch.count_nonzero(p.grad) == 0 for p in a.parameters())
    assert np.all(info.mu == 0) and info.active == () and info.update_norm == 0.0
