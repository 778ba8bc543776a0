"""The one dispatch rule for the exact small-batch fast paths, and the hot paths' finiteness check.

A method may have a small-batch path for ``K = 2`` and a few problems -- the toy engine's
workload (a handful of start points), where tiny-array NumPy overhead dominates: its formula,
written once as a :func:`pcd._kernels.formula`, compiled row by row (:func:`pcd._kernels.k2_batch`
or the method's own row loop; PCD, MGDA, PCGrad, CAGrad, DBGD, FAMO, Nash-MTL, Aligned-MTL, IMTL-G,
GradDrop). It performs the same IEEE operations in the same order as the vectorized code, so it is
bit-identical (or within 1e-12 where a documented closed form replaces a pseudo-inverse: IMTL-G's
and GradDrop's weights); the tests check that against the vectorized path, which
they reach with :func:`vectorized` -- no test knows the threshold.

    from pcd._fast import small_batch
    if K == 2 and small_batch(B):
        ...  # small-batch path

The threshold is :data:`SMALL_BATCH`; it switches the algorithm only, never the validation.

:func:`all_finite` is ``np.isfinite(a).all()`` at a fraction of its cost on the small arrays every
method call and engine step checks (weights, Gram matrices, the toys' Jacobians).
"""
from __future__ import annotations

import math
from collections.abc import Iterator
from contextlib import contextmanager

import numpy as np

SMALL_BATCH = 16  # at most this many problems take a scalar fast path (measured: ~2.7x on the toys)

_forced = [False]  # True inside vectorized(): every batch takes the vectorized path


def small_batch(B: int) -> bool:
    """True when a batch of ``B`` problems should take a method's scalar fast path."""
    return B <= SMALL_BATCH and not _forced[0]


_SMALL_ARRAY = 32  # up to this many entries a Python sum beats np.isfinite(a).all() (~0.5 vs ~1.4 us at 6)
# Above this many the sum of squares is left alone: OpenBLAS runs a long dot product on its thread
# pool, whose busy-waiting threads then slow the caller's next BLAS calls (the K = 256 QP: 3 -> 8 ms).
_BLAS_SUM_MAX = 4096


def all_finite(a: np.ndarray) -> bool:
    """``bool(np.isfinite(a).all())`` for a real (or integer/bool) array, at a fraction of its cost:
    every method call and engine step checks its weights and Gram matrices.

    A sum of floats is finite only if every term is (an inf or a NaN propagates), and so is a sum
    of squares ``a . a`` (no cancellation: inf - inf cannot occur); so a finite sum settles it. Up
    to :data:`_SMALL_ARRAY` entries the sum is a Python ``sum`` over ``tolist()``; beyond, the dot
    product of the contiguous array with itself (one BLAS call, no temporary array: ~0.8 vs ~1.5 us
    at 90 entries, ~1 vs ~2 us at 2000), up to :data:`_BLAS_SUM_MAX` entries. A sum that overflows (entries beyond ~1e154) falls back
    to the full check, so the answer is always exact."""
    kind = a.dtype.kind
    if kind in "iub":
        return True
    if kind == "f":
        if a.size <= _SMALL_ARRAY:
            if math.isfinite(sum(a.ravel().tolist())):
                return True
        elif a.size <= _BLAS_SUM_MAX and a.flags.c_contiguous:
            v = a.reshape(-1)
            # np.vdot: the BLAS dot without NumPy's floating-point error check (an overflowing sum
            # of squares must not warn: it only sends the answer to the full check below)
            if math.isfinite(float(np.vdot(v, v))):
                return True
    return bool(np.isfinite(a).all())


@contextmanager
def vectorized() -> Iterator[None]:
    """Force the vectorized path in every method inside the block (tests compare the two)."""
    old = _forced[0]
    _forced[0] = True
    try:
        yield
    finally:
        _forced[0] = old
