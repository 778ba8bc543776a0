import pytest
import torch
from torch import nn

from pcd.train.models import build_model, penalized_convs
from pcd.train.objectives import (
    GROUPINGS,
    L1,
    GroupLasso,
    Nuclear,
    build_groups,
    build_secondaries,
    nuclear_value_and_grad,
)


def _randomize_bn(m):
    g = torch.Generator().manual_seed(0)
    for mod in m.modules():
        if isinstance(mod, nn.BatchNorm2d):
            mod.weight.data = torch.rand(mod.num_features, generator=g) + 0.5
            mod.bias.data = torch.rand(mod.num_features, generator=g) - 0.5


@pytest.mark.parametrize("arch", ["resnet8", "mobilenetv2", "densenet121"])
@pytest.mark.parametrize("grouping", GROUPINGS)
def test_group_lasso_gradient_equals_autograd(arch, grouping):
    torch.manual_seed(0)
    m = build_model(arch)
    _randomize_bn(m)
    gl = GroupLasso(build_groups(m, grouping, (3, 8, 8)))
    value, grads = gl.value_and_grads()
    auto = gl.value()
    auto_grads = torch.autograd.grad(auto, gl.params)
    assert float(value) == pytest.approx(float(auto.detach()), rel=1e-5)
    for g, a in zip(grads, auto_grads):
        torch.testing.assert_close(g, a, rtol=1e-4, atol=1e-6)


def test_group_lasso_zero_group_has_zero_subgradient():
    m = build_model("smallcnn", in_channels=1)
    with torch.no_grad():
        m.conv2.weight[3].zero_()
    gl = GroupLasso(build_groups(m, "filter"))
    _, grads = gl.value_and_grads()
    g = grads[[id(p) for p in gl.params].index(id(m.conv2.weight))]
    assert torch.all(g[3] == 0) and torch.all(torch.isfinite(g))


def test_groupings_membership():
    m = build_model("resnet8")
    filt = build_groups(m, "filter")
    assert filt.n_groups == sum(c.out_channels for _, c in penalized_convs(m))
    fb = build_groups(m, "filter+bn", (3, 8, 8))
    ids = {id(p) for p in fb.params}
    assert id(m.bn1.weight) in ids and id(m.bn1.bias) in ids  # the stem's BN joins its filters
    assert id(m.fc.weight) not in ids
    co = build_groups(m, "coupled", (3, 8, 8))
    ids = {id(p) for p in co.params}
    sc = m.layers[1][0].shortcut[0]
    assert id(sc.weight) in ids  # projection shortcut is coupled with the residual stream
    # residual stream of stage 1 (stem + block conv2) is ONE group per channel: fewer groups than filters
    assert co.n_groups < filt.n_groups
    with pytest.raises(ValueError, match="grouping"):
        build_groups(m, "layer")


def test_l1_gradient_and_value():
    torch.manual_seed(1)
    m = build_model("resnet8")
    l1 = L1(m)
    v, grads = l1.value_and_grads()
    auto = torch.autograd.grad(l1.value(), l1.params)
    assert float(v) == pytest.approx(float(l1.value().detach()), rel=1e-6)
    for g, a in zip(grads, auto):
        torch.testing.assert_close(g, a)


@pytest.mark.parametrize("shape", [(8, 3, 3, 3), (64, 4, 1, 1), (5, 20, 3, 3)])
def test_nuclear_gradient_equals_svd_autograd(shape):
    torch.manual_seed(2)
    w = torch.randn(*shape, dtype=torch.float64, requires_grad=True)
    v, g = nuclear_value_and_grad(w)
    auto_v = torch.linalg.svdvals(w.reshape(shape[0], -1)).sum()
    (auto_g,) = torch.autograd.grad(auto_v, w)
    assert float(v) == pytest.approx(float(auto_v.detach()), rel=1e-9)
    torch.testing.assert_close(g, auto_g, rtol=1e-6, atol=1e-8)


def test_nuclear_rank_deficient_uses_zero_subgradient():
    u = torch.randn(6, 1, dtype=torch.float64)
    v = torch.randn(1, 10, dtype=torch.float64)
    w = (u @ v).reshape(6, 10, 1, 1)
    val, g = nuclear_value_and_grad(w)
    assert float(val) == pytest.approx(float(u.norm() * v.norm()), rel=1e-8)
    # gradient = u v^T / (|u||v|): rank one, unit spectral norm
    torch.testing.assert_close(g.reshape(6, 10), (u @ v) / (u.norm() * v.norm()))


def test_build_secondaries():
    m = build_model("resnet8")
    s = build_secondaries(m, "l1+nuclear")
    assert [x.name for x in s] == ["l1", "nuclear"]
    nv, _ = Nuclear(m).value_and_grads()
    assert float(nv) == pytest.approx(float(Nuclear(m).value().detach()), rel=1e-4)
    with pytest.raises(ValueError, match="secondary"):
        build_secondaries(m, "l2")
