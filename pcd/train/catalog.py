"""Names and one-line descriptions that the CLI and pages need without importing torch."""

ARCH_HELP = {
    "smallcnn": "3-conv CNN for 8x8 digits (~25k params)",
    "resnet8": "CIFAR ResNet-8 (16/32/64, ~78k params): CPU runs",
    "resnet20": "CIFAR ResNet-20 (16/32/64, ~0.27M params): CPU runs",
    "resnet18": "ResNet-18 (64..512, ~11M params)",
    "resnet34": "ResNet-34 (64..512, ~21M params)",
    "densenet121": "DenseNet-121 BC, growth 32 (~7M params)",
    "mobilenetv2": "MobileNetV2 for CIFAR (~2.2M params)",
    "googlenet": "GoogLeNet / Inception-v1 for CIFAR (~6.2M params)",
}

SPECIAL_METHOD_NAMES = ("unpruned", "prox", "lagrangian")  # pcd.train.run.SPECIAL_METHODS holds their parameters
SPECIAL_METHOD_LABELS = {"unpruned": "Unpruned (primary only)", "prox": "Proximal group lasso",
                         "lagrangian": "Lagrangian (Cooper)"}
