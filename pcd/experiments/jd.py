"""Jacobian descent (seed 002; Quinton & Rey, "Jacobian Descent for Multi-Objective
Optimization", arXiv 2406.16232, the TorchJD library) next to PCD, as plain data.

Three experiments, each a function returning JSON-able dictionaries (used by ``python -m pcd jd``,
``views/06_Jacobian_descent.py`` and the tests), each in its own module and gathered here under
one name:

1. :func:`property_table` (:mod:`pcd.methods.properties`) -- every registry method as an
   aggregator ``A: J -> d``, checked on sampled Jacobians for the paper's three properties and
   PCD's own two (the checker behind ``Method.claims``);
2. :func:`run_iwrm` (:mod:`pcd.experiments.iwrm`) -- instance-wise risk minimization (Sec. 5);
3. :func:`measure_gramian_memory` (:mod:`pcd.experiments.gramian_memory`) -- peak memory and time
   of a step with and without the per-sample Jacobian (Sec. 6), measured in a child process.
"""
from __future__ import annotations

from pcd.experiments.gramian_memory import MEMORY_MODES, measure_gramian_memory, memory_rows, torchjd_available
from pcd.experiments.iwrm import IWRM_DEFAULT_METHODS, IWRMConfig, TinyCNN, _per_sample_jacobian, iwrm_rows, run_iwrm
from pcd.methods.properties import (
    FAMILIES,
    PAPER_PROPERTIES,
    PAPER_TABLE,
    PROPERTIES,
    PropertyReport,
    aggregate,
    check_properties,
    property_rows,
    property_table,
    sample_jacobians,
)

__all__ = [
    "PROPERTIES", "PAPER_PROPERTIES", "FAMILIES", "PAPER_TABLE", "sample_jacobians", "aggregate", "PropertyReport",
    "check_properties", "property_table", "property_rows",
    "TinyCNN", "IWRMConfig", "run_iwrm", "IWRM_DEFAULT_METHODS", "iwrm_rows", "_per_sample_jacobian",
    "measure_gramian_memory", "torchjd_available", "MEMORY_MODES", "memory_rows",
]
