"""pcd._fast: the small-batch dispatch rule and the small-array finiteness check."""
from __future__ import annotations

import warnings

import numpy as np
import pytest

from pcd._fast import all_finite, small_batch, vectorized


def test_all_finite_is_np_isfinite_all():
    """Every size on both sides of the Python-sum threshold, every dtype the methods hand back, and
    the traps of a sum: a lone inf or NaN, inf - inf, and finite entries whose sum overflows."""
    rng = np.random.default_rng(5)
    specials = (np.inf, -np.inf, np.nan, 1e308, -1e308, 0.0, -0.0, 5e-324)
    for size in (0, 1, 2, 6, 31, 32, 33, 64, 90, 1000):
        for _ in range(40):
            a = rng.standard_normal(size) * 10.0 ** rng.uniform(-300, 300, size)
            if size:
                k = rng.integers(0, 3)
                a[rng.integers(0, size, k)] = rng.choice(specials, k)
            with np.errstate(over="ignore"):
                f32 = a.astype(np.float32)  # huge entries become inf: also checked
            for arr in (a, a.reshape(-1, 1), f32, a[::-1], np.repeat(a, 2)[::2]):  # incl. non-contiguous
                with warnings.catch_warnings():
                    warnings.simplefilter("error")  # an overflowing sum of squares is silent
                    assert all_finite(arr) == bool(np.isfinite(arr).all()), (size, arr)
    assert all_finite(np.array([1e308, 1e308, -1e308]))        # the sum overflows, every entry is finite
    assert not all_finite(np.array([np.inf, -np.inf]))          # inf - inf is NaN, not a finite sum
    assert all_finite(np.zeros((3, 2), dtype=bool)) and all_finite(np.arange(6).reshape(3, 2))


def test_small_batch_and_vectorized():
    assert small_batch(1)
    with vectorized():
        assert not small_batch(1)
        with vectorized():
            assert not small_batch(1)
        assert not small_batch(1)
    assert small_batch(1)
    with pytest.raises(RuntimeError), vectorized():
        raise RuntimeError("the flag is restored on the way out")
    assert small_batch(1)
