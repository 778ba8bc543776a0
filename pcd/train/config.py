"""A pruning run's configuration: defaults, the specialised baselines' parameters, validation.

``validate_config(config)`` fills :data:`DEFAULTS` and checks every field (``ValueError`` with a
one-line message otherwise); :data:`SPECIAL_METHODS` are the PCD paper's baselines that are not
registry methods (``unpruned``, ``prox``, ``lagrangian``); ``method_names()`` lists everything a
run accepts. Used by :func:`pcd.train.run.train`, the CLI, the run queue and the Pruning lab.
"""
from __future__ import annotations

from typing import Any

import numpy as np
import torch

from pcd import _validate as V
from pcd.train.catalog import check_numbers, config_numbers
from pcd.train.data import DATASETS, cifar_source, missing_data_message
from pcd.train.models import ARCHS
from pcd.train.objectives import GROUPINGS, SECONDARIES

SPECIAL_METHODS = {
    "unpruned": {},  # primary only: plain cross-entropy training, the reference every method is compared with
    "prox": {"lam": (1.0, 0.0, 1e6, "group soft-threshold strength lambda (step lr*lambda)")},
    "lagrangian": {
        "target_density": (0.5, 0.0, 1.0, "fraction of groups allowed to stay non-zero"),
        "dual_lr": (1e-2, 0.0, 1e3, "learning rate of the Lagrange multiplier (gradient ascent)"),
    },
}

DEFAULTS: dict[str, Any] = {
    "dataset": "digits",
    "arch": None,  # smallcnn for digits, resnet18 for CIFAR
    "method": "pcd",
    "method_params": {},
    "tau": 0.02,
    "secondary": "group_lasso",
    "grouping": "filter",
    "epochs": 2,
    "batch_size": 128,
    "optimizer": "adam",
    "lr": 1e-3,
    "momentum": 0.9,
    "weight_decay": 0.0,
    "schedule": "cosine",
    "seed": 0,
    "device": "auto",
    "data_dir": None,
    "download": False,
    "max_train_samples": None,
    "max_test_samples": None,
    "export": True,
    "export_threshold": 1e-4,
    "target_reduction": None,
    "latency_repeats": 10,
    "progress_every": 10,
    "threads": None,
}

# keys that may change between an interrupted run and its resumption
_RESUME_FREE = {"device", "progress_every", "latency_repeats", "threads", "data_dir", "download", "export"}


def method_names() -> list[str]:
    """Registry methods plus the specialised baselines ``prox`` and ``lagrangian``."""
    import pcd.methods as M

    return M.available() + list(SPECIAL_METHODS)


def _float(cfg: dict, key: str, low: float, high: float, allow_none: bool = False, open_low: bool = False) -> None:
    """Typed (``"0.1"`` is not a number), finite, in ``[low, high]`` (``(low, high]`` with ``open_low``)."""
    cfg[key] = V.number(cfg[key], key, low=low, high=high, allow_none=allow_none, open_low=open_low)


def resolve_device(device: str) -> torch.device:
    """``auto`` -> cuda if available else cpu; ``cpu``; ``cuda``; ``cuda:N``."""
    d = str(device).strip().lower()
    if d == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    if d == "cpu":
        return torch.device("cpu")
    if d == "cuda" or (d.startswith("cuda:") and d[5:].isdigit()):
        if not torch.cuda.is_available():
            raise ValueError(f"device {device!r} requested but CUDA is not available here; use cpu or auto")
        if ":" in d and int(d[5:]) >= torch.cuda.device_count():
            raise ValueError(f"device {device!r}: only {torch.cuda.device_count()} CUDA device(s)")
        return torch.device(d)
    raise ValueError(f"device must be auto, cpu, cuda or cuda:N, got {device!r}")


def validate_config(config: dict) -> dict:
    """Fill defaults and check every field; ``ValueError`` with a clear message otherwise.

    Checks: known keys only; dataset in digits|cifar10|cifar100 and its data present (or
    ``download``); arch known; method a registry name or prox|lagrangian with valid
    ``method_params``; tau in [0, 1]; secondary, grouping, optimizer, schedule known; positive
    epochs / batch size / lr; device available; export threshold >= 0 or target reduction in [0, 1).
    """
    if not isinstance(config, dict):
        raise ValueError(f"config must be a dict, got {type(config).__name__}")
    unknown = sorted(set(config) - set(DEFAULTS))
    if unknown:
        raise ValueError(f"unknown config key(s) {unknown}; allowed: {', '.join(DEFAULTS)}")
    cfg = {**DEFAULTS, **{k: v for k, v in config.items()}}
    if cfg["dataset"] not in DATASETS:
        raise ValueError(f"unknown dataset {cfg['dataset']!r}; allowed: {', '.join(DATASETS)}")
    if cfg["arch"] is None:
        cfg["arch"] = "smallcnn" if cfg["dataset"] == "digits" else "resnet18"
    arch = str(cfg["arch"]).strip().lower().replace("-", "").replace("_", "")
    if arch not in ARCHS:
        raise ValueError(f"unknown arch {cfg['arch']!r}; allowed: {', '.join(ARCHS)}")
    cfg["arch"] = arch
    if cfg["secondary"] not in SECONDARIES:
        raise ValueError(f"unknown secondary {cfg['secondary']!r}; allowed: {', '.join(SECONDARIES)}")
    if cfg["grouping"] not in GROUPINGS:
        raise ValueError(f"unknown grouping {cfg['grouping']!r}; allowed: {', '.join(GROUPINGS)}")
    _float(cfg, "tau", 0.0, 1.0)
    method = str(cfg["method"]).strip().lower()
    names = method_names()
    if method not in names:
        raise ValueError(f"unknown method {cfg['method']!r}; allowed: {', '.join(names)}")
    cfg["method"] = method
    mp = cfg["method_params"] or {}
    if not isinstance(mp, dict):
        raise ValueError(f"method_params must be a dict, got {mp!r}")
    mp = dict(mp)
    if method in SPECIAL_METHODS:
        spec = SPECIAL_METHODS[method]
        bad = sorted(set(mp) - set(spec))
        if bad:
            raise ValueError(f"{method}: unknown hyper-parameter(s) {bad}; allowed: {', '.join(spec)}")
        for k, (default, lo, hi, _) in spec.items():
            sub = {k: mp.get(k, default)}
            _float(sub, k, lo, hi, open_low=(k != "lam"))
            mp[k] = sub[k]
        if cfg["secondary"] != "group_lasso" and method != "unpruned":
            raise ValueError(f"method {method} works with secondary group_lasso only")
    else:
        import pcd.methods as M

        cls = M.get(method)
        if "tau" in {p.name for p in cls.params}:
            if "tau" not in mp:
                mp["tau"] = cfg["tau"]
            elif isinstance(mp["tau"], (int, float)) and not isinstance(mp["tau"], bool):
                cfg["tau"] = float(mp["tau"])  # one source of truth in the recorded config
                _float(cfg, "tau", 0.0, 1.0)
        inst = cls(**mp)  # raises ValueError for bad hyper-parameters
        mp = {k: (v.tolist() if isinstance(v, np.ndarray) else v) for k, v in inst.hparams.items()}
    cfg["method_params"] = mp
    cfg.update(check_numbers(cfg, set(config_numbers()) - {"tau"}))  # typed, bounded (catalog table)
    if cfg["optimizer"] not in ("adam", "sgd"):
        raise ValueError(f"optimizer must be adam or sgd, got {cfg['optimizer']!r}")
    if cfg["schedule"] not in ("cosine", "none"):
        raise ValueError(f"schedule must be cosine or none, got {cfg['schedule']!r}")
    for k in ("download", "export"):
        if not isinstance(cfg[k], bool):
            raise ValueError(f"{k} must be true or false, got {cfg[k]!r}")
    if cfg["target_reduction"] is not None:
        _float(cfg, "target_reduction", 0.0, 0.999)
        cfg["export_threshold"] = None
    else:
        _float(cfg, "export_threshold", 0.0, 1e6)
    resolve_device(cfg["device"])
    if cfg["data_dir"] is not None:
        cfg["data_dir"] = V.data_folder(cfg["data_dir"], "data_dir")
    if cfg["dataset"] != "digits" and not cfg["download"] and cifar_source(cfg["dataset"], cfg["data_dir"]) is None:
        raise ValueError(missing_data_message(cfg["dataset"], cfg["data_dir"]))
    return cfg
