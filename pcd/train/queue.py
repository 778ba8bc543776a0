"""What training hands the run queue (:mod:`pcd.jobs`, which never imports training): the config
checks and the runner.

- :func:`validate_for_queue`: the submit-time check (``RunStore.submit_many(..., check=...)``, or
  called before submitting): :func:`pcd.train.config.validate_config` (defaults filled in, every
  field checked) when the pruning runs are installed, else the torch-free basics.
- :func:`check_stored`: the read-back check of a stored row (``RunStore(check=check_stored)``), torch
  free: the numbers' types and bounds (:func:`pcd.train.catalog.check_numbers`) and the data folder.
- :data:`RUNNER`: the function that executes a run (``python -m pcd worker --runner``'s default).

Whoever sets up the queue hands these over: the CLI (``runs``, ``worker``), the Pruning lab.
"""
from __future__ import annotations

import importlib.util
from typing import Any

from pcd import _validate as V
from pcd.train.catalog import check_numbers

RUNNER = "pcd.train.run:train"
DATASETS = ("digits", "cifar10", "cifar100")  # pcd.train.data.DATASETS, without importing torch


def train_available() -> bool:
    """True once the pruning runs (``pcd.train.run``: torch and its friends) are installed."""
    try:
        return importlib.util.find_spec("pcd.train.run") is not None
    except (ImportError, ValueError):  # pragma: no cover
        return False


def validate_for_queue(config: Any) -> dict:
    """Validate a run config before it is queued, so a bad config fails at submit time.

    Uses :func:`pcd.train.config.validate_config` (defaults filled in, clear ``ValueError``) when the
    pruning runs are installed; otherwise checks the basics (a dict; its numbers; the dataset)."""
    if not isinstance(config, dict):
        raise ValueError(f"a run config must be a JSON object (dict), got {type(config).__name__}")
    if train_available():
        from pcd.train.config import validate_config
        return dict(validate_config(dict(config)))
    cfg = check_numbers(dict(config))
    ds = cfg.get("dataset", "digits")
    if ds not in DATASETS:
        raise ValueError(f"dataset must be one of {', '.join(DATASETS)}, got {ds!r}")
    return cfg


def check_stored(config: dict) -> dict:
    """The read-back check of a stored config (no torch import): the types and bounds of its numbers
    and its data folder; ``ValueError`` naming the first problem."""
    cfg = check_numbers(config)
    if config.get("data_dir") is not None:
        V.data_folder(config["data_dir"], "data_dir")
    return cfg
