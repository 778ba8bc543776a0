"""CIFAR-style networks (3x3 stem, 1x1-conv projection shortcuts) and a small CNN for digits.

Every model declares its *penalized* convolutions: every ``Conv2d`` except 1x1 projection
shortcuts, DenseNet's stem and MobileNetV2's depthwise convs (such convs carry
``pcd_penalized = False``); never BatchNorm or Linear. Groups are one per output filter (see
:mod:`pcd.train.objectives` for the BN-including and dependency-coupled variants).

Architectures follow the common CIFAR adaptations (He et al. 2016 "Deep Residual Learning",
arXiv 1512.03385, option-B shortcuts; Huang et al. 2017 DenseNet-BC; Sandler et al. 2018
MobileNetV2 with stride-1 stem; Szegedy et al. 2015 GoogLeNet with a 3x3 stem). They end with an
adaptive average pool, so small inputs (tests use 8x8 or 16x16) work as well as 32x32.
"""
from __future__ import annotations

from collections.abc import Callable

import torch
import torch.nn.functional as F
from torch import nn


def _exempt(conv: nn.Conv2d) -> nn.Conv2d:
    conv.pcd_penalized = False  # type: ignore[assignment]  # a plain attribute, read by penalized_convs
    return conv


# --------------------------------------------------------------------------- small CNN (digits)


class SmallCNN(nn.Module):
    """conv(16)-BN-ReLU, conv(32)-BN-ReLU, maxpool, conv(64)-BN-ReLU, global pool, linear."""

    def __init__(self, num_classes: int = 10, in_channels: int = 1, width: int = 16) -> None:
        super().__init__()
        w = width
        self.conv1, self.bn1 = nn.Conv2d(in_channels, w, 3, padding=1, bias=False), nn.BatchNorm2d(w)
        self.conv2, self.bn2 = nn.Conv2d(w, 2 * w, 3, padding=1, bias=False), nn.BatchNorm2d(2 * w)
        self.conv3, self.bn3 = nn.Conv2d(2 * w, 4 * w, 3, padding=1, bias=False), nn.BatchNorm2d(4 * w)
        self.fc = nn.Linear(4 * w, num_classes)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = F.relu(self.bn1(self.conv1(x)))
        x = F.max_pool2d(F.relu(self.bn2(self.conv2(x))), 2)
        x = F.relu(self.bn3(self.conv3(x)))
        return self.fc(torch.flatten(F.adaptive_avg_pool2d(x, 1), 1))


# --------------------------------------------------------------------------- ResNets


class BasicBlock(nn.Module):
    def __init__(self, cin: int, cout: int, stride: int = 1) -> None:
        super().__init__()
        self.conv1, self.bn1 = nn.Conv2d(cin, cout, 3, stride, 1, bias=False), nn.BatchNorm2d(cout)
        self.conv2, self.bn2 = nn.Conv2d(cout, cout, 3, 1, 1, bias=False), nn.BatchNorm2d(cout)
        self.shortcut = nn.Sequential()
        if stride != 1 or cin != cout:
            self.shortcut = nn.Sequential(_exempt(nn.Conv2d(cin, cout, 1, stride, bias=False)), nn.BatchNorm2d(cout))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        out = F.relu(self.bn1(self.conv1(x)))
        out = self.bn2(self.conv2(out))
        return F.relu(out + self.shortcut(x))


class ResNet(nn.Module):
    """CIFAR ResNet: 3x3 stem, stages of BasicBlocks, 1x1 projection shortcuts, global pool."""

    def __init__(self, blocks: list[int], widths: list[int], num_classes: int = 10, in_channels: int = 3) -> None:
        super().__init__()
        self.conv1, self.bn1 = nn.Conv2d(in_channels, widths[0], 3, 1, 1, bias=False), nn.BatchNorm2d(widths[0])
        layers, cin = [], widths[0]
        for i, (n, w) in enumerate(zip(blocks, widths)):
            stage = []
            for j in range(n):
                stage.append(BasicBlock(cin, w, 2 if (j == 0 and i > 0) else 1))
                cin = w
            layers.append(nn.Sequential(*stage))
        self.layers = nn.Sequential(*layers)
        self.fc = nn.Linear(cin, num_classes)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = F.relu(self.bn1(self.conv1(x)))
        x = self.layers(x)
        return self.fc(torch.flatten(F.adaptive_avg_pool2d(x, 1), 1))


# --------------------------------------------------------------------------- DenseNet-BC


class DenseLayer(nn.Module):
    def __init__(self, cin: int, growth: int) -> None:
        super().__init__()
        self.bn1, self.conv1 = nn.BatchNorm2d(cin), nn.Conv2d(cin, 4 * growth, 1, bias=False)
        self.bn2, self.conv2 = nn.BatchNorm2d(4 * growth), nn.Conv2d(4 * growth, growth, 3, padding=1, bias=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        out = self.conv1(F.relu(self.bn1(x)))
        out = self.conv2(F.relu(self.bn2(out)))
        return torch.cat([out, x], 1)


class Transition(nn.Module):
    def __init__(self, cin: int, cout: int) -> None:
        super().__init__()
        self.bn, self.conv = nn.BatchNorm2d(cin), nn.Conv2d(cin, cout, 1, bias=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return F.avg_pool2d(self.conv(F.relu(self.bn(x))), 2)


class DenseNet(nn.Module):
    """DenseNet-BC (bottleneck + compression 0.5) for CIFAR; the 3x3 stem is not penalized."""

    def __init__(self, blocks: list[int], growth: int = 32, num_classes: int = 10, in_channels: int = 3) -> None:
        super().__init__()
        c = 2 * growth
        self.conv1 = _exempt(nn.Conv2d(in_channels, c, 3, padding=1, bias=False))
        stages: list[nn.Module] = []
        for i, n in enumerate(blocks):
            layers = []
            for _ in range(n):
                layers.append(DenseLayer(c, growth))
                c += growth
            stages.append(nn.Sequential(*layers))
            if i != len(blocks) - 1:
                stages.append(Transition(c, c // 2))
                c //= 2
        self.features = nn.Sequential(*stages)
        self.bn = nn.BatchNorm2d(c)
        self.fc = nn.Linear(c, num_classes)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.features(self.conv1(x))
        x = F.relu(self.bn(x))
        return self.fc(torch.flatten(F.adaptive_avg_pool2d(x, 1), 1))


# --------------------------------------------------------------------------- MobileNetV2


class InvertedResidual(nn.Module):
    def __init__(self, cin: int, cout: int, expansion: int, stride: int) -> None:
        super().__init__()
        self.stride = stride
        hidden = expansion * cin
        self.conv1, self.bn1 = nn.Conv2d(cin, hidden, 1, bias=False), nn.BatchNorm2d(hidden)
        self.conv2 = _exempt(nn.Conv2d(hidden, hidden, 3, stride, 1, groups=hidden, bias=False))  # depthwise
        self.bn2 = nn.BatchNorm2d(hidden)
        self.conv3, self.bn3 = nn.Conv2d(hidden, cout, 1, bias=False), nn.BatchNorm2d(cout)
        self.shortcut = nn.Sequential()
        if stride == 1 and cin != cout:
            self.shortcut = nn.Sequential(_exempt(nn.Conv2d(cin, cout, 1, bias=False)), nn.BatchNorm2d(cout))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        out = F.relu(self.bn1(self.conv1(x)))
        out = F.relu(self.bn2(self.conv2(out)))
        out = self.bn3(self.conv3(out))
        return out + self.shortcut(x) if self.stride == 1 else out


class MobileNetV2(nn.Module):
    """MobileNetV2 for CIFAR (stride-1 3x3 stem, first two down-samplings removed)."""

    CFG = [(1, 16, 1, 1), (6, 24, 2, 1), (6, 32, 3, 2), (6, 64, 4, 2), (6, 96, 3, 1), (6, 160, 3, 2), (6, 320, 1, 1)]

    def __init__(self, num_classes: int = 10, in_channels: int = 3) -> None:
        super().__init__()
        self.conv1, self.bn1 = nn.Conv2d(in_channels, 32, 3, 1, 1, bias=False), nn.BatchNorm2d(32)
        layers, c = [], 32
        for expansion, cout, n, stride in self.CFG:
            for j in range(n):
                layers.append(InvertedResidual(c, cout, expansion, stride if j == 0 else 1))
                c = cout
        self.layers = nn.Sequential(*layers)
        self.conv2, self.bn2 = nn.Conv2d(c, 1280, 1, bias=False), nn.BatchNorm2d(1280)
        self.fc = nn.Linear(1280, num_classes)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = F.relu(self.bn1(self.conv1(x)))
        x = self.layers(x)
        x = F.relu(self.bn2(self.conv2(x)))
        return self.fc(torch.flatten(F.adaptive_avg_pool2d(x, 1), 1))


# --------------------------------------------------------------------------- GoogLeNet (Inception)


def _cbr(cin: int, cout: int, k: int) -> nn.Sequential:
    return nn.Sequential(nn.Conv2d(cin, cout, k, padding=k // 2, bias=False), nn.BatchNorm2d(cout), nn.ReLU(True))


class Inception(nn.Module):
    def __init__(self, cin: int, n1: int, n3r: int, n3: int, n5r: int, n5: int, pool: int) -> None:
        super().__init__()
        self.b1 = _cbr(cin, n1, 1)
        self.b2 = nn.Sequential(_cbr(cin, n3r, 1), _cbr(n3r, n3, 3))
        self.b3 = nn.Sequential(_cbr(cin, n5r, 1), _cbr(n5r, n5, 3), _cbr(n5, n5, 3))  # 5x5 as two 3x3
        self.b4 = nn.Sequential(nn.MaxPool2d(3, 1, 1), _cbr(cin, pool, 1))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.cat([self.b1(x), self.b2(x), self.b3(x), self.b4(x)], 1)


class GoogLeNet(nn.Module):
    """GoogLeNet / Inception-v1 for CIFAR: 3x3 stem with 192 channels, 9 Inception modules."""

    def __init__(self, num_classes: int = 10, in_channels: int = 3) -> None:
        super().__init__()
        self.pre = _cbr(in_channels, 192, 3)
        self.a3, self.b3 = Inception(192, 64, 96, 128, 16, 32, 32), Inception(256, 128, 128, 192, 32, 96, 64)
        self.a4 = Inception(480, 192, 96, 208, 16, 48, 64)
        self.b4 = Inception(512, 160, 112, 224, 24, 64, 64)
        self.c4 = Inception(512, 128, 128, 256, 24, 64, 64)
        self.d4 = Inception(512, 112, 144, 288, 32, 64, 64)
        self.e4 = Inception(528, 256, 160, 320, 32, 128, 128)
        self.a5 = Inception(832, 256, 160, 320, 32, 128, 128)
        self.b5 = Inception(832, 384, 192, 384, 48, 128, 128)
        self.fc = nn.Linear(1024, num_classes)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.b3(self.a3(self.pre(x)))
        x = F.max_pool2d(x, 3, 2, 1)
        x = self.e4(self.d4(self.c4(self.b4(self.a4(x)))))
        x = F.max_pool2d(x, 3, 2, 1)
        x = self.b5(self.a5(x))
        return self.fc(torch.flatten(F.adaptive_avg_pool2d(x, 1), 1))


# --------------------------------------------------------------------------- registry

ARCHS: dict[str, Callable[..., nn.Module]] = {
    "smallcnn": lambda num_classes=10, in_channels=1: SmallCNN(num_classes, in_channels),
    "resnet8": lambda num_classes=10, in_channels=3: ResNet([1, 1, 1], [16, 32, 64], num_classes, in_channels),
    "resnet20": lambda num_classes=10, in_channels=3: ResNet([3, 3, 3], [16, 32, 64], num_classes, in_channels),
    "resnet18": lambda num_classes=10, in_channels=3: ResNet([2, 2, 2, 2], [64, 128, 256, 512], num_classes, in_channels),
    "resnet34": lambda num_classes=10, in_channels=3: ResNet([3, 4, 6, 3], [64, 128, 256, 512], num_classes, in_channels),
    "densenet121": lambda num_classes=10, in_channels=3: DenseNet([6, 12, 24, 16], 32, num_classes, in_channels),
    "mobilenetv2": lambda num_classes=10, in_channels=3: MobileNetV2(num_classes, in_channels),
    "googlenet": lambda num_classes=10, in_channels=3: GoogLeNet(num_classes, in_channels),
}



def build_model(arch: str, num_classes: int = 10, in_channels: int = 3) -> nn.Module:
    """Construct ``arch`` (one of :data:`ARCHS`) for ``num_classes`` classes."""
    key = str(arch).strip().lower().replace("-", "").replace("_", "")
    if key not in ARCHS:
        raise ValueError(f"unknown arch {arch!r}; allowed: {', '.join(ARCHS)}")
    if not isinstance(num_classes, int) or num_classes < 2:
        raise ValueError(f"num_classes must be an integer >= 2, got {num_classes!r}")
    if not isinstance(in_channels, int) or in_channels < 1:
        raise ValueError(f"in_channels must be a positive integer, got {in_channels!r}")
    return ARCHS[key](num_classes=num_classes, in_channels=in_channels)


def penalized_convs(model: nn.Module) -> list[tuple[str, nn.Conv2d]]:
    """``(name, conv)`` for every penalized conv: all ``Conv2d`` not marked ``pcd_penalized=False``."""
    return [(n, m) for n, m in model.named_modules() if isinstance(m, nn.Conv2d) and getattr(m, "pcd_penalized", True)]


def classifier_layers(model: nn.Module) -> list[nn.Module]:
    """The output ``Linear`` layer(s): never pruned on their output side."""
    return [m for m in model.modules() if isinstance(m, nn.Linear)]
