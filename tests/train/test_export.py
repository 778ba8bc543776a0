import pytest
import torch
from torch import nn

from pcd.train import export as ex
from pcd.train.models import ARCHS, build_model, penalized_convs

CIN = {"smallcnn": 1}


def _trained_like(arch, frac=0.4, seed=0):
    """A model with random BN statistics/affines and a fraction of penalized filters exactly zero."""
    g = torch.Generator().manual_seed(seed)
    cin = CIN.get(arch, 3)
    torch.manual_seed(seed)
    m = build_model(arch, 10, cin)
    with torch.no_grad():
        for mod in m.modules():
            if isinstance(mod, nn.BatchNorm2d):
                mod.weight.copy_(torch.rand(mod.num_features, generator=g) + 0.5)
                mod.bias.copy_(torch.rand(mod.num_features, generator=g) - 0.5)  # beta != 0: zero filters are not dead
                mod.running_mean.copy_(torch.rand(mod.num_features, generator=g) - 0.5)
                mod.running_var.copy_(torch.rand(mod.num_features, generator=g) + 0.5)
        for _, conv in penalized_convs(m):
            dead = torch.rand(conv.out_channels, generator=g) < frac
            conv.weight[dead] = 0.0
        # make whole residual streams / coupled groups dead too, so removal happens everywhere
        groups = ex._coupled(m, (cin, 8, 8))[1]
        for _, _, members, _, _, _ in groups:
            n = members[0][0].out_channels
            dead = set(torch.nonzero(torch.rand(n, generator=g) < frac).flatten().tolist())
            for mod, idxs, rr, out in members:
                if out and isinstance(mod, nn.Conv2d):
                    for i, r in zip(idxs, rr):
                        if r in dead:
                            mod.weight[i] = 0.0
    return m.eval(), (cin, 8, 8)


@pytest.mark.parametrize("arch", list(ARCHS))
def test_exported_network_equals_masked_network(arch, tmp_path):
    m, shape = _trained_like(arch)
    plan = ex.plan_pruning(m, shape, threshold=1e-4)
    assert plan.channels_removed > 0
    masked = ex.mask_model(m, shape, plan)
    pruned, history = ex.prune_model(masked, shape, plan)
    assert ex.count_params(pruned) < ex.count_params(m)
    x = torch.randn(3, *shape)
    with torch.no_grad():
        ref = masked(x)
        assert (pruned(x) - ref).abs().max() < 1e-5 * max(1.0, float(ref.abs().max()))
    # saved architecture + pruning history + state dict reloads (weights_only) to identical outputs
    path = tmp_path / "m.pt"
    ex.save_pruned(path, pruned, arch=arch, num_classes=10, in_channels=shape[0], input_shape=shape, history=history)
    loaded = ex.load_pruned(path)
    with torch.no_grad():
        assert torch.equal(loaded(x), pruned(x))
    assert ex.count_flops(pruned, shape) < ex.count_flops(m, shape)


def test_zero_filter_followed_by_bn_is_not_dead():
    """Masking must also zero BN gamma/beta: with beta != 0 a zero filter still emits a constant."""
    m, shape = _trained_like("smallcnn")
    plan = ex.plan_pruning(m, shape, threshold=1e-4)
    masked = ex.mask_model(m, shape, plan)
    x = torch.randn(4, *shape)
    with torch.no_grad():
        assert (m(x) - masked(x)).abs().max() > 1e-3  # the zero filters' BN beta mattered
        name, chans = plan.groups[0]
        bn = dict(masked.named_modules())[name.replace("conv", "bn")]
        assert torch.all(bn.weight[chans] == 0) and torch.all(bn.bias[chans] == 0)


def test_residual_channel_needs_all_producers_dead():
    m = build_model("resnet8").eval()
    with torch.no_grad():
        m.conv1.weight[0] = 0.0  # stem filter 0 is zero, but block conv2 of stage 1 still writes channel 0
    plan = ex.plan_pruning(m, (3, 8, 8), threshold=1e-4)
    assert plan.channels_removed == 0
    with torch.no_grad():
        m.layers[0][0].conv2.weight[0] = 0.0
    plan = ex.plan_pruning(m, (3, 8, 8), threshold=1e-4)
    assert plan.groups == [("conv1", [0])]


def test_target_reduction_reaches_target():
    m, shape = _trained_like("resnet8", frac=0.0)
    plan = ex.plan_pruning(m, shape, threshold=None, target_reduction=0.5)
    pruned, _ = ex.prune_model(ex.mask_model(m, shape, plan), shape, plan)
    red = 1 - ex.count_params(pruned) / ex.count_params(m)
    assert red >= 0.5
    with pytest.raises(ValueError, match="exactly one"):
        ex.plan_pruning(m, shape, threshold=1e-4, target_reduction=0.5)
    with pytest.raises(ValueError, match="target_reduction"):
        ex.plan_pruning(m, shape, threshold=None, target_reduction=1.5)


def test_load_rejects_other_files(tmp_path):
    torch.save({"format": "other"}, tmp_path / "x.pt")
    with pytest.raises(ValueError, match="pcd-pruned-v1"):
        ex.load_pruned(tmp_path / "x.pt")


def test_flops_units():
    m = build_model("smallcnn", in_channels=1)
    # conv1: 8*8 positions * 16 filters * 9 MACs * 2 FLOPs
    flops = ex.count_flops(m, (1, 8, 8))
    assert flops > 2 * 8 * 8 * 16 * 9


def test_tampered_model_file_is_refused_without_weights_only_advice(tmp_path):
    import os

    class Payload:
        def __reduce__(self):
            return (os.getcwd, ())

    torch.save({"format": ex.FORMAT, "x": Payload()}, tmp_path / "m.pt")
    with pytest.raises(ValueError, match="holds more than tensors") as info:
        ex.load_pruned(tmp_path / "m.pt", folder=tmp_path)
    assert "weights_only" not in str(info.value) and "getcwd" in str(info.value)
    (tmp_path / "g.pt").write_bytes(b"not a torch file at all")
    with pytest.raises(ValueError, match="not a file written by torch.save"):
        ex.load_pruned(tmp_path / "g.pt")
