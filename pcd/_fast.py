"""The one dispatch rule for the exact small-batch fast paths.

A method may have a scalar (Python-float) path for ``K = 2`` and a few problems -- the toy engine's
workload (a handful of start points), where tiny-array NumPy overhead dominates. Each such path
performs the same IEEE operations in the same order as the vectorized code, so it is bit-identical
(or within 1e-12 where a documented fallback intervenes); the tests check that against the
vectorized path, which they reach with :func:`vectorized` -- no test knows the threshold.

    from pcd._fast import small_batch
    if K == 2 and small_batch(B):
        ...  # scalar path

The threshold is :data:`SMALL_BATCH`; it switches the algorithm only, never the validation.
"""
from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

SMALL_BATCH = 16  # at most this many problems take a scalar fast path (measured: ~2.7x on the toys)

_forced = [False]  # True inside vectorized(): every batch takes the vectorized path


def small_batch(B: int) -> bool:
    """True when a batch of ``B`` problems should take a method's scalar fast path."""
    return B <= SMALL_BATCH and not _forced[0]


@contextmanager
def vectorized() -> Iterator[None]:
    """Force the vectorized path in every method inside the block (tests compare the two)."""
    old = _forced[0]
    _forced[0] = True
    try:
        yield
    finally:
        _forced[0] = old
