"""Pruning runs on real networks: data, models, objectives, metrics, export, the run itself.

``from pcd.train import train, validate_config, Cancelled`` (loaded lazily: importing
``pcd.train`` does not import Torch-Pruning or scikit-learn).
"""
from __future__ import annotations

from typing import Any

__all__ = ["train", "validate_config", "Cancelled", "method_names"]


def __getattr__(name: str) -> Any:
    if name in __all__:
        from pcd.train import run

        return getattr(run, name)
    raise AttributeError(f"module 'pcd.train' has no attribute {name!r}")
