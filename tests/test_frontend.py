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


# --- one torch integration: PCD is a thin wrapper over pcd.train.step (issue 11) ------------------

def _grads3(t):
    f = torch.float64
    return [[torch.tensor([1.0 + t, -0.5, 0.25], dtype=f)], [torch.tensor([-1.0, 1.0 + 0.5 * t, 0.0], dtype=f)],
            [torch.tensor([0.0, -2.0, 1.0 * t], dtype=f)]]


# Written by the previous implementation (its own normalizer object, float64 J J^T), after three
# apply_gradients(_grads3(t)) steps; the fourth step it then took is pinned below.
OLD_STATE_K3 = {"tau": [0.2, 0.4], "normalizer": {"beta": 0.9, "eps": 1e-08, "t": 3,
                "v": np.array([1.4256874999999998, 0.9544999999999998, 1.5739999999999998])}}
OLD_STEP4_GRAD = [2.304576318223119, 1.6827474622494598, 2.8582842706382747]
OLD_STEP4_MU = [1.1923461798808521, 0.8705937506867891]


def test_a_state_dict_saved_by_the_previous_version_loads_and_gives_its_next_step():
    w = torch.nn.Parameter(torch.tensor([0.5, -1.0, 2.0], dtype=torch.float64))
    opt = PCD([w], tau=0.0, beta=0.5, eps=1.0)  # everything below comes from the loaded dict
    opt.load_state_dict({"tau": [0.2, 0.4], "normalizer": dict(OLD_STATE_K3["normalizer"])})
    info = opt.apply_gradients(_grads3(3))
    np.testing.assert_allclose(w.grad.numpy(), OLD_STEP4_GRAD, rtol=1e-13)
    np.testing.assert_allclose(info.mu, OLD_STEP4_MU, rtol=1e-13)
    assert info.active == (1, 2) and info.feasible and info.update_norm == pytest.approx(4.038873605350878, rel=1e-14)
    # JSON-style (v as a list, t as 3.0) loads too
    opt2 = PCD([w], tau=0.1)
    opt2.load_state_dict({"tau": [0.2, 0.4], "normalizer": {"beta": 0.9, "eps": 1e-8, "t": 3.0,
                                                             "v": OLD_STATE_K3["normalizer"]["v"].tolist()}})
    opt2.apply_gradients(_grads3(3))
    np.testing.assert_allclose(w.grad.numpy(), OLD_STEP4_GRAD, rtol=1e-13)


def test_state_dict_keeps_the_published_format_and_matches_the_ema_by_hand():
    w = torch.nn.Parameter(torch.tensor([0.5, -1.0, 2.0], dtype=torch.float64))
    opt = PCD([w], tau=[0.2, 0.4], beta=0.9, eps=1e-8)
    assert opt.state_dict() == {"tau": [0.2, 0.4], "normalizer": {"beta": 0.9, "eps": 1e-8, "t": 0, "v": None}}
    v = np.zeros(3)
    for t in range(3):
        opt.apply_gradients(_grads3(t))
        v = 0.9 * v + 0.1 * np.array([float(g[0].pow(2).sum()) for g in _grads3(t)])
    sd = opt.state_dict()
    assert set(sd) == {"tau", "normalizer"} and set(sd["normalizer"]) == {"beta", "eps", "t", "v"}
    assert type(sd["normalizer"]["t"]) is int and sd["normalizer"]["t"] == 3
    assert isinstance(sd["normalizer"]["v"], np.ndarray) and sd["normalizer"]["v"].dtype == np.float64
    np.testing.assert_allclose(sd["normalizer"]["v"], v, rtol=1e-15)
    np.testing.assert_allclose(sd["normalizer"]["v"], OLD_STATE_K3["normalizer"]["v"], rtol=1e-15)
    sd["normalizer"]["v"][:] = -1.0  # a copy: the optimizer's state is not aliased
    assert opt.state_dict()["normalizer"]["t"] == 3 and (opt.state_dict()["normalizer"]["v"] > 0).all()


def test_float32_parameters_keep_the_float64_gram_numbers_of_the_previous_version():
    torch.manual_seed(0)
    w, u = torch.nn.Parameter(torch.randn(5)), torch.nn.Parameter(torch.randn(2))
    opt = PCD([w, u], tau=0.0)
    opt.load_state_dict({"tau": 0.3, "normalizer": {"beta": 0.5, "eps": 1e-8, "t": 2,
                                                    "v": np.array([48.2671122581809, 3.75])}})
    info = opt.backward([((w - 2) ** 2).sum() + (u ** 2).sum(), (w + 1).abs().sum()])
    # pinned from the previous version (float64 J J^T of the float32 gradients)
    np.testing.assert_allclose(w.grad.numpy(), [-0.7284721732139587, -4.367273807525635, -8.471146583557129,
                                                -2.6576709747314453, -6.300536632537842], rtol=1e-6)
    np.testing.assert_allclose(u.grad.numpy(), [-2.7742817401885986, 0.8000867962837219], rtol=1e-6)
    np.testing.assert_allclose(info.weights, [0.99180988, 0.18201711], rtol=1e-7)
    assert info.mu[0] == pytest.approx(0.03890216, rel=1e-6) and w.grad.dtype == torch.float32


def test_bad_state_dicts_raise_and_change_nothing():
    w = torch.nn.Parameter(torch.tensor([0.5, -1.0, 2.0], dtype=torch.float64))
    opt = PCD([w], tau=[0.2, 0.4], beta=0.9, eps=1e-8)
    for t in range(3):
        opt.apply_gradients(_grads3(t))
    before = opt.state_dict()
    good = OLD_STATE_K3["normalizer"]
    bad = [None, {"tau": 0.1}, {"tau": 0.1, "normalizer": 3},
           {"tau": 0.1, "normalizer": {"beta": 0.9, "eps": 1e-8, "t": 3}},
           {"tau": 2.0, "normalizer": dict(good)},
           {"tau": 0.1, "normalizer": {**good, "beta": 1.0}},
           {"tau": 0.1, "normalizer": {**good, "t": -1}},
           {"tau": 0.1, "normalizer": {**good, "t": 0}},
           {"tau": 0.1, "normalizer": {**good, "v": None}},
           {"tau": 0.1, "normalizer": {**good, "v": [1.0, float("nan"), 1.0]}},
           {"tau": 0.1, "normalizer": {**good, "v": [[1.0, 2.0]]}},
           {"tau": 0.1, "normalizer": {**good, "v": "abc"}}]
    for sd in bad:
        with pytest.raises(ValueError) as e:
            opt.load_state_dict(sd)
        assert "\n" not in str(e.value)
        after = opt.state_dict()
        assert after["tau"] == before["tau"] and after["normalizer"]["t"] == 3
        np.testing.assert_array_equal(after["normalizer"]["v"], before["normalizer"]["v"])


def test_bad_gradient_lists_raise_one_line_messages():
    w = torch.nn.Parameter(torch.zeros(3, dtype=torch.float64))
    opt = PCD([w], tau=0.1)
    with pytest.raises(ValueError, match="must be a tensor or None"):
        opt.apply_gradients([[np.ones(3)], [None]])
    with pytest.raises(ValueError, match="expected"):
        opt.apply_gradients([[torch.ones(2, dtype=torch.float64)], [None]])
    with pytest.raises(ValueError, match="NaN or inf"):
        opt.apply_gradients([[torch.tensor([1.0, float("inf"), 0.0], dtype=torch.float64)], [None]])
    opt.apply_gradients([[torch.ones(3, dtype=torch.float64)], [torch.ones(3, dtype=torch.float64)]])
    with pytest.raises(ValueError, match="stepped with 2 losses, got 3"):
        opt.apply_gradients([[torch.ones(3, dtype=torch.float64)]] * 3)


def test_frontend_and_the_training_loops_gram_step_write_the_same_update():
    """One integration: the same gradients through pcd.PCD and through GramStep(make("pcd"))."""
    import pcd.methods as M
    from pcd.train.step import GramStep

    class Secondary:  # the training loop's interface: value and analytic gradients on its params
        def __init__(self, params, scale):
            self.params, self.scale = params, scale

        def loss(self):
            return sum((p ** 2).sum() for p in self.params) * self.scale

        def value_and_grads(self):
            return self.loss().detach(), [2.0 * self.scale * p.detach() for p in self.params]

    g = torch.Generator().manual_seed(5)
    a = torch.nn.Parameter(torch.randn(4, 3, generator=g, dtype=torch.float64))
    b = torch.nn.Parameter(torch.randn(4, generator=g, dtype=torch.float64))
    c = torch.nn.Parameter(torch.randn(2, generator=g, dtype=torch.float64))
    x = torch.randn(3, generator=g, dtype=torch.float64)
    secs = [Secondary([a], 0.5), Secondary([b, c], 3.0)]
    front = PCD([a, b, c], tau=[0.3, 0.1], beta=0.9)
    step = GramStep([a, b, c], secs, M.make("pcd", tau=[0.3, 0.1], beta=0.9), 3)
    for _ in range(4):
        primary = ((a @ x + b).pow(2).sum() + c.sum()) ** 2
        info = front.backward([primary] + [s.loss() for s in secs])
        want = [p.grad.clone() for p in (a, b, c)]
        for p in (a, b, c):
            p.grad = None
        primary = ((a @ x + b).pow(2).sum() + c.sum()) ** 2
        primary.backward()
        diag = step(primary, np.random.default_rng(0))
        for p, q in zip((a, b, c), want):
            torch.testing.assert_close(p.grad, q, rtol=1e-12, atol=1e-14)
        np.testing.assert_allclose(diag["weights"], info.weights, rtol=1e-12)
        np.testing.assert_allclose(diag["info"]["mu"][0], info.mu, rtol=1e-12, atol=1e-15)
        with torch.no_grad():
            for p in (a, b, c):
                p -= 0.01 * p.grad
