import pytest
import torch
from torch import nn

from pcd.train.models import ARCHS, build_model, penalized_convs

CIN = {"smallcnn": 1}


@pytest.mark.parametrize("arch", list(ARCHS))
def test_forward_shape_on_small_inputs(arch):
    cin = CIN.get(arch, 3)
    m = build_model(arch, num_classes=7, in_channels=cin).eval()
    with torch.no_grad():
        for hw in (8, 16):
            assert m(torch.randn(2, cin, hw, hw)).shape == (2, 7)


@pytest.mark.parametrize("arch", list(ARCHS))
def test_penalized_set(arch):
    """Every conv except 1x1 projection shortcuts, DenseNet's stem and depthwise convs; never BN/Linear."""
    m = build_model(arch, in_channels=CIN.get(arch, 3))
    pen = dict(penalized_convs(m))
    assert pen, "no penalized conv"
    for name, mod in m.named_modules():
        if not isinstance(mod, nn.Conv2d):
            assert name not in pen
            continue
        shortcut = "shortcut" in name and mod.kernel_size == (1, 1)
        depthwise = mod.groups > 1 and mod.groups == mod.in_channels
        dense_stem = arch == "densenet121" and name == "conv1"
        assert (name in pen) == (not (shortcut or depthwise or dense_stem)), name


def test_expected_sizes_and_counts():
    counts = {a: sum(p.numel() for p in build_model(a, 10, CIN.get(a, 3)).parameters()) for a in ARCHS}
    assert 11.1e6 < counts["resnet18"] < 11.2e6  # the usual CIFAR ResNet-18 size
    assert 21.2e6 < counts["resnet34"] < 21.4e6
    assert 0.26e6 < counts["resnet20"] < 0.28e6
    assert 6.9e6 < counts["densenet121"] < 7.1e6
    # number of penalized convs: ResNet-20 = 19 (3 stem/blocks*6 + stem), two shortcuts exempt
    assert len(penalized_convs(build_model("resnet20"))) == 19
    assert len(penalized_convs(build_model("mobilenetv2"))) == 17 * 2 + 2


def test_unknown_arch_rejected():
    with pytest.raises(ValueError, match="unknown arch"):
        build_model("vgg16")
    with pytest.raises(ValueError, match="num_classes"):
        build_model("resnet8", num_classes=1)
