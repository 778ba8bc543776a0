"""The PyTorch front end: the update it writes into p.grad, invariances, resume, edge cases."""
import numpy as np
import pytest
import torch

import pcd
from pcd import PCD

torch.set_num_threads(1)


def make_problem(seed=0):
    g = torch.Generator().manual_seed(seed)
    w = torch.nn.Parameter(torch.randn(6, generator=g, dtype=torch.float64))
    u = torch.nn.Parameter(torch.randn(3, generator=g, dtype=torch.float64))
    A = torch.randn(6, 6, generator=g, dtype=torch.float64)
    return w, u, A


def losses(w, u, A, c=(1.0, 1.0, 1.0)):
    primary = c[0] * ((((A @ w) - 1.0) ** 2).sum() + (u ** 2).sum())
    sec1 = c[1] * (w + 2.0).abs().sum()        # pulls w towards -2: conflicts with the primary
    sec2 = c[2] * (w[:3] ** 2).sum()
    return [primary, sec1, sec2]


def test_update_matches_manual_computation():
    w, u, A = make_problem()
    opt = PCD([w, u], tau=0.3, beta=0.9, eps=0.0)
    info = opt.backward(losses(w, u, A))
    J = []
    for loss in losses(w, u, A):
        gw, gu = torch.autograd.grad(loss, [w, u], allow_unused=True)
        gu = torch.zeros(3, dtype=torch.float64) if gu is None else gu
        J.append(torch.cat([gw, gu]).numpy())
    J = np.array(J)
    s = 1 / np.linalg.norm(J, axis=1)
    Jn = J * s[:, None]
    res = pcd.solve_qp(Jn @ Jn.T, 0.3)
    dt = res.weights @ Jn
    d = dt * np.linalg.norm(J[0]) / np.linalg.norm(dt)
    got = torch.cat([w.grad, u.grad]).numpy()
    assert np.allclose(got, d, rtol=1e-12, atol=1e-12)
    assert np.linalg.norm(got) == pytest.approx(np.linalg.norm(J[0]))
    assert info.feasible and np.allclose(info.mu, res.mu)
    assert info.grad_norm == pytest.approx(np.linalg.norm(J, axis=1))


@pytest.mark.parametrize("which", [1, 2])
@pytest.mark.parametrize("c", [1e-6, 1e6])
def test_scaling_a_secondary_leaves_the_update_unchanged(which, c):
    # Over several steps (the EMA accumulates), with eps = 0 ("up to eps").
    ref, scaled = make_problem(), make_problem()
    o1 = PCD([ref[0], ref[1]], tau=0.2, beta=0.9, eps=0.0)
    o2 = PCD([scaled[0], scaled[1]], tau=0.2, beta=0.9, eps=0.0)
    cs = [1.0, 1.0, 1.0]
    cs[which] = c
    for _ in range(5):
        o1.backward(losses(*ref))
        o2.backward(losses(*scaled, c=cs))
        for (p1, p2) in zip(ref[:2], scaled[:2]):
            assert torch.allclose(p1.grad, p2.grad, rtol=1e-9, atol=1e-12)
        with torch.no_grad():
            for p1, p2 in zip(ref[:2], scaled[:2]):
                p1 -= 0.01 * p1.grad
                p2 -= 0.01 * p2.grad


def test_scaling_the_primary_scales_the_update_only():
    ref, scaled = make_problem(), make_problem()
    o1 = PCD(ref[:2], tau=0.2, eps=0.0)
    o2 = PCD(scaled[:2], tau=0.2, eps=0.0)
    o1.backward(losses(*ref))
    o2.backward(losses(*scaled, c=(1e6, 1.0, 1.0)))
    # same direction, magnitude ||g_1|| (deployed rescaling), so x1e6 for the primary-only part
    g1 = torch.cat([p.grad for p in ref[:2]])
    g2 = torch.cat([p.grad for p in scaled[:2]])
    cos = torch.dot(g1, g2) / (g1.norm() * g2.norm())
    assert cos.item() == pytest.approx(1.0, abs=1e-9)


def test_zero_primary_gradient_gives_zero_update():
    w = torch.nn.Parameter(torch.tensor([1.0, -1.0], dtype=torch.float64))
    opt = PCD([w], tau=0.5)
    primary = ((w ** 2).sum() - 2.0) ** 2  # gradient 0 at |w|^2 = 2
    info = opt.backward([primary, (w - 3).pow(2).sum()])
    assert torch.count_nonzero(w.grad) == 0
    assert info.update_norm == 0.0


def test_unused_parameters_keep_grad_none_and_apply_gradients_matches():
    w, u, A = make_problem()
    unused = torch.nn.Parameter(torch.ones(2))
    opt = PCD([w, unused], tau=0.1)
    opt.backward([((A @ w) ** 2).sum(), (w - 1).pow(2).sum()])
    assert unused.grad is None
    d1 = w.grad.clone()
    w2 = torch.nn.Parameter(w.detach().clone())
    opt2 = PCD([w2, unused], tau=0.1)
    gs = [[torch.autograd.grad(loss, w2)[0], None] for loss in (((A @ w2) ** 2).sum(), (w2 - 1).pow(2).sum())]
    opt2.apply_gradients(gs)
    assert torch.allclose(w2.grad, d1)


def test_state_dict_resume_gives_identical_steps():
    def run(steps, split=None):
        w, u, A = make_problem(3)
        opt = PCD([w, u], tau=0.25, beta=0.99)
        sgd = torch.optim.SGD([w, u], lr=0.01, momentum=0.9)
        for t in range(steps):
            if split is not None and t == split:
                state = (opt.state_dict(), sgd.state_dict(), w.detach().clone(), u.detach().clone())
                w, u, A2 = make_problem(3)
                with torch.no_grad():
                    w.copy_(state[2])
                    u.copy_(state[3])
                opt = PCD([w, u], tau=0.25, beta=0.99)
                opt.load_state_dict(state[0])
                sgd = torch.optim.SGD([w, u], lr=0.01, momentum=0.9)
                sgd.load_state_dict(state[1])
            opt.backward(losses(w, u, A))
            sgd.step()
        return torch.cat([w.detach(), u.detach()])

    assert torch.equal(run(10), run(10, split=4))


def test_bad_inputs():
    w, u, A = make_problem()
    with pytest.raises(ValueError, match="tau"):
        PCD([w], tau=1.5)
    with pytest.raises(ValueError, match="empty"):
        PCD([], tau=0.1)
    opt = PCD([w], tau=0.1)
    with pytest.raises(ValueError, match="diverged"):
        opt.backward([w.sum() * float("nan"), w.sum()])
    with pytest.raises(ValueError, match="scalar"):
        opt.backward([w * 2])
    with pytest.raises(ValueError, match="tau"):
        PCD([w], tau=[0.1, 0.2]).backward([w.sum(), w.sum()])  # two taus, one secondary
