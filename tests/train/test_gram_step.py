"""The one code path: per-objective gradients -> Gram -> weights -> p.grad."""
import numpy as np
import torch
import torch.nn.functional as F

import pcd.methods as M
from pcd.methods.base import Method, MethodOutput
from pcd.train.models import build_model
from pcd.train.objectives import build_groups, build_secondaries
from pcd.train.run import GramStep


def _setup(secondary="group_lasso", seed=0):
    torch.manual_seed(seed)
    m = build_model("resnet8")
    params = list(m.parameters())
    groups = build_groups(m, "filter") if secondary == "group_lasso" else None
    secs = build_secondaries(m, secondary, groups)
    x, y = torch.randn(8, 3, 8, 8), torch.randint(0, 10, (8,))
    loss = F.cross_entropy(m(x), y)
    loss.backward()
    return m, params, secs, loss


def _explicit_jacobian(params, secs):
    rows = [torch.cat([p.grad.reshape(-1) for p in params])]
    for s in secs:
        _, gs = s.value_and_grads()
        gmap = {id(p): g for p, g in zip(s.params, gs)}
        rows.append(torch.cat([gmap.get(id(p), torch.zeros_like(p)).reshape(-1) for p in params]))
    return torch.stack(rows).double()


def test_gram_equals_explicit_jacobian_product_k3():
    m, params, secs, loss = _setup("l1+nuclear")
    J = _explicit_jacobian(params, secs)
    step = GramStep(params, secs, M.make("ws"), 3)
    g1 = [p.grad for p in params]
    G = step.gram(g1, [s.value_and_grads()[1] for s in secs])
    np.testing.assert_allclose(G, (J @ J.T).numpy(), rtol=2e-5)
    np.testing.assert_allclose(step.jacobian(g1, [s.value_and_grads()[1] for s in secs])[0], J.numpy(), rtol=1e-6)


def test_grad_is_weights_times_jacobian():
    m, params, secs, loss = _setup()
    J = _explicit_jacobian(params, secs)
    step = GramStep(params, secs, M.make("pcd", tau=0.3), 2)
    diag = step(loss, np.random.default_rng(0))
    w = torch.as_tensor(diag["weights"])
    d = torch.cat([p.grad.reshape(-1) for p in params]).double()
    torch.testing.assert_close(d, w @ J, rtol=1e-4, atol=1e-6)
    # PCD's constraint holds in normalized space only, but its primary coefficient is positive
    assert diag["weights"][0] > 0 and diag["info"]["mu"].shape[-1] == 1


class _DirectionMethod(Method):
    """A stand-in for GradDrop: needs J and returns a ready direction."""

    name = "testdirection"
    needs_jacobian = True

    def weights(self, gram, *, losses=None, jacobian=None, state=None, rng=None):
        assert jacobian.shape[:2] == (1, gram.shape[-1])
        return MethodOutput(weights=np.zeros((1, gram.shape[-1])), state=state,
                            info={"direction": jacobian[:, 1] * 2.0})


def test_method_direction_is_used_when_given():
    m, params, secs, loss = _setup()
    J = _explicit_jacobian(params, secs)
    step = GramStep(params, secs, _DirectionMethod(), 2)
    step(loss, np.random.default_rng(0))
    d = torch.cat([p.grad.reshape(-1) for p in params]).double()
    torch.testing.assert_close(d, 2.0 * J[1], rtol=1e-5, atol=1e-7)


def test_no_second_backward_through_network():
    """The secondary gradient comes from the weights alone: the forward graph is never revisited."""
    m, params, secs, loss = _setup()
    calls = []
    hook = m.conv1.register_full_backward_hook(lambda *a: calls.append(1))
    step = GramStep(params, secs, M.make("pcd"), 2)
    step(loss, np.random.default_rng(0))
    hook.remove()
    assert calls == []


import io  # noqa: E402

import pytest  # noqa: E402


@pytest.mark.parametrize("method", M.available())
def test_every_method_state_survives_a_weights_only_checkpoint(method):
    """State saved after 2 steps and reloaded (weights_only) gives the same 3rd-step weights."""
    torch.manual_seed(0)
    m = build_model("smallcnn", in_channels=1)
    params = list(m.parameters())
    secs = build_secondaries(m, "group_lasso", build_groups(m, "filter"))
    step = GramStep(params, secs, M.make(method), 2)
    x, y = torch.randn(16, 1, 8, 8), torch.randint(0, 10, (16,))

    def one(st, seed):
        for p in params:
            p.grad = None
        loss = F.cross_entropy(m(x), y)
        loss.backward()
        st_ = step.state
        step.state = st
        d = step(loss, np.random.default_rng(seed))
        out = (d["weights"].copy(), step.state)
        step.state = st_
        return out

    for k in range(2):
        _, step.state = one(step.state, k)
    buf = io.BytesIO()
    torch.save({"s": step.state_dict()}, buf)
    buf.seek(0)
    saved = step.state
    step.load_state_dict(torch.load(buf, weights_only=True)["s"])
    restored = step.state
    w_a, _ = one(saved, 7)
    w_b, _ = one(restored, 7)
    np.testing.assert_array_equal(w_a, w_b)


def test_gram_matrix_precision_and_sparse_objectives():
    """G_ij sums <g_ik, g_jk> over the parameters both objectives use; dtype=float64 (pcd.PCD) is
    float64 end to end, dtype=None (the loop) takes each dot in float32 and sums in float64."""
    from pcd.train.step import gram_matrix

    g = torch.Generator().manual_seed(1)
    shapes = [(300, 7), (64,), (5, 5, 3)]
    grads = [[(k, torch.randn(s, generator=g)) for k, s in enumerate(shapes)],
             [(0, torch.randn(shapes[0], generator=g)), (2, torch.randn(shapes[2], generator=g))],
             [(1, torch.randn(shapes[1], generator=g) * 1e3)]]
    rows = []
    for obj in grads:
        d = dict(obj)
        rows.append(torch.cat([(d[k] if k in d else torch.zeros(s)).double().reshape(-1) for k, s in enumerate(shapes)]))
    J = torch.stack(rows)
    exact = (J @ J.T).numpy()
    np.testing.assert_allclose(gram_matrix(grads, torch.float64), exact, rtol=1e-14, atol=1e-10)
    G32 = gram_matrix(grads)
    np.testing.assert_allclose(G32, exact, rtol=1e-5, atol=1e-3)
    assert G32.dtype == np.float64 and G32[1, 2] == 0.0 and G32[2, 1] == 0.0  # no shared parameter
    np.testing.assert_array_equal(G32, G32.T)
