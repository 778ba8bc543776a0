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

# pcd.train.config.SPECIAL_METHODS holds their parameters; their display names are the figures'
# (pcd.viz.theme.BASELINE_LABELS), next to their colours
SPECIAL_METHOD_NAMES = ("unpruned", "prox", "lagrangian")

# The numeric fields of a run config with their types and bounds (inclusive; "lr" excludes tiny
# values). One table for pcd.train.run.validate_config (submit time) and
# pcd.jobs.check_stored (a stored row read back, without importing torch).
# key: (kind, low, high, allow_none); kind "int" or "float". Bounds from pcd._validate.LIMITS.
MIN_LR = 1e-8  # smaller learning rates are a typo (1e-300 would train for nothing)


def config_numbers() -> dict[str, tuple[str, float, float, bool]]:
    from pcd._validate import LIMITS as L

    return {
        "tau": ("float", 0.0, 1.0, False),
        "epochs": ("int", 1, L["epochs"], False),
        "batch_size": ("int", 1, L["batch_size"], False),
        "seed": ("int", 0, L["seed"], False),
        "max_train_samples": ("int", 1, L["samples"], True),
        "max_test_samples": ("int", 1, L["samples"], True),
        "latency_repeats": ("int", 1, L["repeats"], False),
        "progress_every": ("int", 1, L["progress_every"], False),
        "threads": ("int", 1, L["threads"], True),
        "lr": ("float", MIN_LR, 10.0, False),
        "momentum": ("float", 0.0, 1.0, False),
        "weight_decay": ("float", 0.0, 1.0, False),
    }


def check_numbers(cfg: dict, keys=None) -> dict:
    """Check (and normalize: ints to int, floats to float) the numeric fields present in ``cfg``;
    ``ValueError`` naming the first bad one ("epochs must be in [1, 10000], got ...")."""
    from pcd import _validate as V

    out = dict(cfg)
    for key, (kind, lo, hi, none) in config_numbers().items():
        if (keys is not None and key not in keys) or key not in out:
            continue
        if kind == "int":
            out[key] = V.integer(out[key], key, low=int(lo), high=int(hi), allow_none=none)
        else:
            out[key] = V.number(out[key], key, low=lo, high=hi, allow_none=none)
    return out
