"""PCD Studio: Priority-Constrained Descent and its baselines.

Core (framework-free, on Gram matrices): :func:`solve_qp`, :class:`EMANormalizer`,
:func:`pcd_weights`. PyTorch front end: :class:`PCD` (imported lazily so that NumPy-only use does
not pay for importing torch).
"""
from __future__ import annotations

from typing import Any

from pcd._version import __version__
from pcd.direction import PCDWeights, pcd_weights
from pcd.normalize import EMANormalizer
from pcd.qp import QPResult, project, solve_nnqp, solve_qp

__all__ = ["solve_qp", "QPResult", "project", "solve_nnqp", "EMANormalizer", "pcd_weights",
           "PCDWeights", "PCD", "PCDInfo", "__version__"]


def __getattr__(name: str) -> Any:
    if name in ("PCD", "PCDInfo"):
        from pcd import frontend

        return getattr(frontend, name)
    raise AttributeError(f"module 'pcd' has no attribute {name!r}")
