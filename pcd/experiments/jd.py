"""Jacobian descent (seed 002; Quinton & Rey, "Jacobian Descent for Multi-Objective
Optimization", arXiv 2406.16232, the TorchJD library) next to PCD, as plain data.

Three experiments, each a function returning JSON-able dictionaries (used by ``python -m pcd jd``,
``pages/06_Jacobian_descent.py`` and the tests). Each lives in its own module; this one gathers
them under one name: :mod:`pcd.methods.properties` (1), :mod:`pcd.experiments.iwrm` (2) and
:mod:`pcd.experiments.gramian_memory` (3).

1. :func:`property_table` -- every registry method viewed as an *aggregator* ``A: J -> d`` and
   checked on sampled Jacobians (random, rows scaled by ``diag(c)``, rank-deficient, exactly
   cancelling) for the paper's three properties (Sec. 2.2, Definitions 1-3):

   * **non-conflicting**: ``J . A(J) >= 0`` componentwise;
   * **linear under scaling**: ``c -> A(diag(c) J)`` is linear on ``c > 0``;
   * **weighted**: ``A(J) = J^T w`` for some ``w``;

   and PCD's own two (PCD paper, arXiv 2606.29521, eq. (3)), stated for any aggregator:

   * **primary-anchored**: written in normalized gradients ``g~_i = g_i / ||g_i||`` the direction is
     ``omega_1 (g~_1 + sum_j mu_j g~_j)`` with the primary's coefficient pinned (``omega_1 > 0``)
     and the secondaries' coefficients independent of their scale. Checked as (a) *pass-through*:
     when ``g_1`` already gives every secondary its share (``cos(g_1, g_j) >= tau``) the update is
     ``g_1`` itself, and (b) *secondary-scale invariance*: ``A(diag(1, c_2..c_K) J) = A(J)``;
   * **per-secondary progress**: with the primary's coefficient pinned to 1 (``d~ = d / omega_1``),
     ``g~_j . d~ >= tau ||g~_j||^2`` for every secondary, on every sample where these constraints
     are compatible (PCD reports ``feasible = False`` otherwise; those samples are skipped).

   A violation is a scale-free number (0 = holds exactly); a property "holds" when the worst
   violation over all samples is below ``tol``. Stateful methods (PCD's EMA, FAMO, Nash-MTL) start
   from a fresh state for every evaluation; stochastic ones (PCGrad's order, RGW) reuse the same
   seed for every evaluation within one check, i.e. the property is checked for a fixed draw.

2. :func:`run_iwrm` -- instance-wise risk minimization (paper Sec. 5): every sample's loss in a
   batch of ``B`` is its own objective (``K = B``), a tiny CNN on scikit-learn's digits is trained
   with an aggregator at a fixed learning rate, and training loss, test accuracy and the cosine
   between each update and the SGD gradient (the mean of the rows) are recorded.
   ``ws`` (Mean) is plain SGD / ERM. PCD's variant: primary = the batch's mean loss, secondaries =
   the ``B`` per-sample losses (``K = B + 1``), so PCD follows SGD and bends it only where a sample
   would not get its ``tau`` share of progress.

3. :func:`measure_gramian_memory` -- peak memory and time of one step that (a) materializes the
   per-sample Jacobian (ours: ``torch.func.vmap(grad)``) and forms ``G = J J^T``, versus (b)
   TorchJD's ``torchjd.autogram.Engine`` computing ``G`` without the Jacobian (the paper's
   Gramian reverse accumulation, Sec. 6), plus (c) a plain ERM backward for reference.
"""
from __future__ import annotations

from pcd.experiments.gramian_memory import MEMORY_MODES, measure_gramian_memory, memory_rows, torchjd_available
from pcd.experiments.iwrm import (
    IWRM_DEFAULT_METHODS,
    IWRMConfig,
    TinyCNN,
    _per_sample_jacobian,
    iwrm_rows,
    run_iwrm,
)
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
