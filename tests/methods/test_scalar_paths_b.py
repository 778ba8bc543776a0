"""K = 2 scalar fast paths (small batches, used by the toy engine) vs the vectorized code they shortcut.

CAGrad, DBGD, MGDA and PCGrad: the compiled small-batch path runs the same formula (same IEEE operations), so
it must agree to the last bit. Aligned-MTL: one formula after the same ``eigh`` (``balance_k2``),
compiled per row or on arrays, bit-identical to the general einsum code too. IMTL-G's closed form
(``imtlg_k2_inverse``: explicit 2x2 inverse, compiled per row; used only when lambda_min > ~1e-3
lambda_max and |sum v| is not at its 1e-12 threshold) agrees with the pseudo-inverse to 1e-12
relative; any other small batch runs the vectorized code itself.
"""
import os

import numpy as np
import pytest

import pcd.methods as methods
from pcd._fast import SMALL_BATCH, vectorized
from pcd._kernels import AVAILABLE
from pcd.methods import alignedmtl, cagrad, imtlg
from pcd.methods._solvers import simplex_min_norm
from pcd.methods.pcgrad import pcgrad_weights
from tests.methods._samplers import KINDS, gram, jacobian


def _adversarial(rng) -> np.ndarray:
    """Hand-made 2x2 Gram matrices at the edges: zero gradients, exact cancellation, parallel,
    orthogonal, equal, extreme scales, near-singular, near CAGrad's norm_eps."""
    out = []
    u = rng.standard_normal(3)
    v = rng.standard_normal(3)
    for s1 in (0.0, 1e-300, 1e-160, 1e-30, 1e-8, 1e-4, 1.0, 3.7, 1e8, 1e30, 1e150):
        for J in (
            [u, -u], [u, u], [u, 2.5 * u], [u, -0.3 * u], [u, 0 * u], [0 * u, u], [0 * u, 0 * u],
            [u, v], [u, u + 1e-9 * v], [u, -u + 1e-7 * v], [u, u + 1e-3 * v],
            [np.array([1.0, 0, 0]), np.array([0, 1.0, 0])], [np.array([1.0, 0, 0]), np.array([0, 1e-5, 0])],
            [np.array([1.0, 0, 0]), np.array([-1.0, 1e-12, 0])],
        ):
            J = np.array(J) * s1
            with np.errstate(all="ignore"):
                out.append(J @ J.T)
    # very different scales (a secondary below pcd.qp's 1e-24 zero threshold), subnormal entries
    for r in (1e-13, 1e-11, 1e-6):
        for J in ([u, r * v], [r * u, v], [u, -r * u + r * r * v]):
            J = np.array(J)
            out.append(J @ J.T)
    for x in (1e-310, -1e-310, 5e-324, -5e-324, 0.0, -0.0):
        out.append(np.array([[1.0, x], [x, 1.0]]))
        out.append(np.array([[1e-300, x], [x, 2e-300]]))
    # IMTL-G's |sum v| around its 1e-12 zero threshold (sum v scales as 1 / sqrt(scale of G))
    J = np.array([u, v])
    G0 = J @ J.T
    s0 = np.linalg.solve(G0, np.sqrt(np.diag(G0))).sum()
    for f in (0.3, 0.9, 1 - 1e-7, 1 - 1e-9, 1.0, 1 + 1e-9, 1 + 1e-7, 1.1, 3.0):
        out.append(G0 * (s0 / (1e-12 * f)) ** 2)
    # traces right at CAGrad's norm_eps, and G = diag with exact ties
    for tr in (1e-4, 1e-4 * (1 + 1e-15), 1e-4 * (1 - 1e-15), 2e-4):
        out.append(np.diag([tr / 2, tr / 2]))
        out.append(np.array([[tr / 2, -tr / 2], [-tr / 2, tr / 2]]))
        out.append(np.array([[tr, 0.0], [0.0, 0.0]]))
    G = np.array(out)
    G = 0.5 * (G + np.swapaxes(G, 1, 2))
    return G[np.isfinite(G).all(axis=(1, 2))]


def _grams(seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    parts = [gram(jacobian(kind, 300, 2, n=n, seed=seed + i)) for i, kind in enumerate(KINDS) for n in (2, 5)]
    J = jacobian("random", 200, 2, seed=seed + 9)
    J[:100, 0] = 0.0  # zero primary
    J[100:, 1] = 0.0  # zero secondary
    parts.append(gram(J))
    J = jacobian("random", 400, 2, n=2, seed=seed + 10)  # nearly parallel: ill-conditioned
    J[:, 1] = J[:, 0] * rng.uniform(-2, 2, (400, 1)) + 10.0 ** rng.uniform(-17, -1, (400, 1)) * J[:, 1]
    parts.append(gram(J))
    parts.append(_adversarial(rng))
    return np.concatenate(parts)


GRAMS = _grams()


def _chunks(G: np.ndarray, size: int = 3):
    for i in range(0, len(G), size):
        yield G[i:i + size]


def _close(fast, vec, rtol, what):
    fast, vec = np.asarray(fast), np.asarray(vec)
    assert fast.shape == vec.shape and fast.dtype == vec.dtype, what
    if fast.dtype == bool or rtol == 0:  # bit-identical (NaN where NumPy gives NaN)
        np.testing.assert_array_equal(fast, vec, err_msg=what)
    else:  # relative to each problem's largest weight
        scale = np.abs(vec).max(axis=-1, keepdims=True) if vec.ndim > 1 else np.abs(vec)
        assert_rel(fast, vec, rtol * np.maximum(scale, 1e-300), what)


def assert_rel(a, b, tol, what):
    a, b = np.asarray(a), np.asarray(b)
    ok = (a == b) | (np.abs(a - b) <= tol) | (np.isnan(a) & np.isnan(b))
    if not ok.all():
        i = np.argwhere(~ok)[0]
        raise AssertionError(f"{what}: first mismatch at {i}: {a[tuple(i)]!r} vs {b[tuple(i)]!r}")


def _compare_method(name, rtol, **hp):
    """The method on batches of 3: fast path vs the vectorized path (forced)."""
    m = methods.make(name, **hp)
    for G in _chunks(GRAMS, 3):
        fast = m.weights(G, state=None)
        with vectorized():
            vec = m.weights(G, state=None)
        _close(fast.weights, vec.weights[:len(G)], rtol, f"{name} weights")
        assert (fast.state is None) == (vec.state is None)
        assert set(fast.info) == set(vec.info), name
        for k in fast.info:
            _close(fast.info[k], np.asarray(vec.info[k])[:len(G)], rtol, f"{name} info[{k}]")


# ---------------------------------------------------------------------------------------------
# CAGrad


@pytest.mark.parametrize("c", [0.0, 1e-9, 0.3, 0.5, 2.0, 10.0])
@pytest.mark.parametrize("norm_eps", [0.0, 1e-4, 1e-1])
def test_cagrad_compiled_rows_bitwise(c, norm_eps):
    """``cagrad_k2`` compiled row by row (small batches, numba) == the same function on the whole
    batch's arrays, on every adversarial Gram matrix (NaN/inf where NumPy gives them included)."""
    with np.errstate(all="ignore"), vectorized():
        vec = cagrad.cagrad_weights(GRAMS, c, norm_eps)
    for size in (1, 3, SMALL_BATCH):
        with np.errstate(all="ignore"):
            fast = np.concatenate([cagrad.cagrad_weights(G, c, norm_eps) for G in _chunks(GRAMS, size)])
        np.testing.assert_array_equal(fast, vec)


@pytest.mark.parametrize("c", [0.0, 0.5, 2.0])
def test_cagrad_method_fast_vs_vectorized(c):
    with np.errstate(all="ignore"):
        _compare_method("cagrad", 0.0, c=c)


# ---------------------------------------------------------------------------------------------
# IMTL-G


def _well_conditioned(G: np.ndarray, rel: float = 1e-3) -> np.ndarray:
    tr = G[:, 0, 0] + G[:, 1, 1]
    with np.errstate(all="ignore"):
        return (tr > 0) & (G[:, 0, 0] * G[:, 1, 1] - G[:, 0, 1] ** 2 > rel * tr * tr)


def test_imtlg_scalar_vs_pinv():
    with np.errstate(all="ignore"):  # pinv of the overflowing adversarial cases
        vec = imtlg._imtlg(GRAMS)
    ok = _well_conditioned(GRAMS)
    assert ok[:600].mean() > 0.9 and ok.mean() > 0.25  # random ones are mostly well conditioned
    used = 0
    for i in range(len(GRAMS)):
        G = GRAMS[i:i + 1]
        fast = imtlg._imtlg_k2_inverse(G)
        if not ok[i]:
            assert fast is None  # ill-conditioned: left to the pseudo-inverse
            continue
        if fast is None:  # only next to the |sum v| < 1e-12 threshold
            continue
        used += 1
        assert_rel(fast, vec[i:i + 1], 1e-12 * np.abs(vec[i]).max() + 1e-300, f"imtlg {i}")
    assert used >= 0.99 * ok.sum()


def test_imtlg_inverse_compiled_rows_bitwise():
    """``imtlg_k2_inverse`` compiled row by row (small batches, numba) == the same function on the
    whole batch's arrays, weights and ``ok`` flags, on every adversarial Gram matrix."""
    a, b, c = GRAMS[:, 0, 0], GRAMS[:, 0, 1], GRAMS[:, 1, 1]
    with np.errstate(all="ignore"):
        vec = np.stack(imtlg.imtlg_k2_inverse(a, b, c, imtlg.NO_PARAMS))
    W, OK = np.empty((len(GRAMS), 2)), np.empty(len(GRAMS))
    assert imtlg._imtlg_k2_inverse_rows(GRAMS, imtlg.NO_PARAMS, W, OK) == (vec[2] != 1.0).sum()
    np.testing.assert_array_equal(W, vec[:2].T)
    np.testing.assert_array_equal(OK, vec[2])
    assert 0.1 < vec[2].mean() < 0.9  # both sides of the conditioning test


def _imtlg_before(G: np.ndarray) -> np.ndarray:
    """The small-batch path as it was before: one row that is not ``ok`` sent the whole batch to the
    pseudo-inverse (:func:`imtlg._imtlg`)."""
    w = imtlg._imtlg_k2_inverse(G)
    return imtlg._imtlg(G) if w is None else w


def test_imtlg_small_batch_rows_not_ok_run_the_pinv_alone_bitwise():
    """A small batch with ill-conditioned problems: the rows that are not ``ok`` run :func:`_imtlg` on
    those rows only, the others the closed form. Every row gets the bits it got before as a batch of
    one; a batch of only such rows (or none) gets exactly what it got before as a whole; in a mixed
    batch the other rows are the closed form's, within 1e-12 of the pseudo-inverse they had before."""
    m = methods.make("imtlg")
    assert (~_well_conditioned(GRAMS)).sum() > 1000  # ill-conditioned and singular ones included
    bad = ~imtlg._imtlg_k2_inverse_ok(GRAMS)[1]  # those, and the ones at the 1e-12 threshold
    mixed = 0
    with np.errstate(all="ignore"):
        alone = np.concatenate([_imtlg_before(GRAMS[i:i + 1]) for i in range(len(GRAMS))])
        for size in (1, 3, 7, SMALL_BATCH):
            for i in range(0, len(GRAMS), size):
                G = GRAMS[i:i + size]
                w = m.weights(G).weights
                np.testing.assert_array_equal(w, alone[i:i + size], err_msg=f"imtlg {i}")
                before = _imtlg_before(G)
                if bad[i:i + size].all() or not bad[i:i + size].any():
                    np.testing.assert_array_equal(w, before, err_msg=f"imtlg {i}")
                else:
                    mixed += 1
                    for r in range(len(G)):
                        assert_rel(w[r], before[r], 1e-12 * np.abs(before[r]).max() + 1e-300, f"imtlg mixed {i + r}")
    assert mixed > 50


def test_imtlg_zero_threshold_band():
    """|sum v| within 1e-6 relative of the 1e-12 cut-off: the fast path defers to the pseudo-inverse."""
    rng = np.random.default_rng(5)
    J = rng.standard_normal((50, 2, 3))
    G0 = J @ np.swapaxes(J, 1, 2)
    s0 = np.linalg.solve(G0, np.sqrt(np.diagonal(G0, axis1=1, axis2=2))[..., None])[..., 0].sum(-1)
    for f in (1 - 1e-8, 1.0, 1 + 1e-8, 1 + 5e-7):
        G = G0 * ((s0 / (1e-12 * f)) ** 2)[:, None, None]
        for i in range(len(G)):
            if _well_conditioned(G[i:i + 1])[0]:
                assert imtlg._imtlg_k2_inverse(G[i:i + 1]) is None, (f, i)
    for f in (0.5, 2.0):  # clearly on one side: fast path, zero weights below the threshold
        G = G0 * ((s0 / (1e-12 * f)) ** 2)[:, None, None]
        for i in range(len(G)):
            if _well_conditioned(G[i:i + 1])[0]:
                fast = imtlg._imtlg_k2_inverse(G[i:i + 1])
                assert fast is not None
                assert np.all(fast == 0) == (f < 1), (f, i)
                assert_rel(fast, imtlg._imtlg(G[i:i + 1]), 1e-12, "imtlg near threshold")


def test_imtlg_method_fast_vs_vectorized():
    with np.errstate(all="ignore"):
        _compare_method("imtlg", 1e-12)
    m = methods.make("imtlg")
    # a singular G in the batch: that row alone goes to the pseudo-inverse (zero weights at the cancellation)
    G = np.concatenate([GRAMS[:2], np.array([[[1.0, -1.0], [-1.0, 1.0]]])])
    w = m.weights(G).weights
    np.testing.assert_array_equal(w[2:], imtlg._imtlg(G[2:]))
    np.testing.assert_array_equal(w[:2], imtlg._imtlg_k2_inverse(G[:2]))
    assert_rel(w, imtlg._imtlg(G), 1e-12, "imtlg with a singular row")
    assert np.all(w[2] == 0.0)


# ---------------------------------------------------------------------------------------------
# Aligned-MTL


@pytest.mark.parametrize("mode", ["min", "median", "rmse"])
def test_alignedmtl_k2_bitwise(mode):
    """``balance_k2`` on the batch's arrays == the general (any K) einsum code, and compiled row by
    row (small batches, numba) == on the arrays, to the last bit."""
    rng = np.random.default_rng(3)
    n = len(GRAMS)
    W = np.concatenate([np.full((n // 2, 2), 0.5), rng.standard_normal((n - n // 2, 2))])
    with np.errstate(all="ignore"):
        vec = alignedmtl._balance(GRAMS, W, mode)
        with vectorized():
            k2 = alignedmtl.balance_weights(GRAMS, W, mode)
    np.testing.assert_array_equal(k2, vec, err_msg=mode)
    assert (~_well_conditioned(GRAMS)).sum() > 1000  # ill-conditioned and singular ones included
    for size in (1, 3, SMALL_BATCH):
        for i in range(0, n, size):
            with np.errstate(all="ignore"):
                fast = alignedmtl.balance_weights(GRAMS[i:i + size], W[i:i + size], mode)
            np.testing.assert_array_equal(fast, vec[i:i + size], err_msg=f"{mode} {i}")
    # unit vectors give the balancing matrix itself
    for e in np.eye(2):
        E = np.broadcast_to(e, (3, 2)).copy()
        for G in _chunks(GRAMS[:600], 3):
            fast = alignedmtl.balance_weights(G, E, mode)
            np.testing.assert_array_equal(fast, alignedmtl._balance(G, E, mode))


@pytest.mark.parametrize("mode", ["min", "median", "rmse"])
def test_alignedmtl_method_fast_vs_vectorized(mode):
    with np.errstate(all="ignore"):
        _compare_method("alignedmtl", 0.0, scale_mode=mode)
    m = methods.make("alignedmtl", scale_mode=mode)
    G = np.concatenate([GRAMS[:2], np.zeros((1, 2, 2))])  # G = 0 in the batch: B = I, all vectorized
    np.testing.assert_array_equal(m.weights(G).weights, alignedmtl._balance(G, np.full((3, 2), 0.5), mode))
    np.testing.assert_array_equal(m.weights(G).weights[2], [0.5, 0.5])


# ---------------------------------------------------------------------------------------------
# DBGD, MGDA, PCGrad: the same closed forms compiled row by row (same bits)


@pytest.mark.parametrize("beta", [0.0, 0.3, 1.0, [0.7]])
def test_dbgd_method_fast_vs_vectorized(beta):
    _compare_method("dbgd", 0.0, beta=beta)
    # and against the K >= 3 QP solver's conventions on a few problems
    m = methods.make("dbgd", beta=beta)
    out = m.weights(GRAMS[:3])
    assert out.info["mu"].shape == (3, 1) and out.info["active"].dtype == bool
    assert out.info["feasible"].dtype == bool and out.info["feasible"].shape == (3,)


@pytest.mark.parametrize("solver", ["exact", "frank-wolfe"])
def test_mgda_method_fast_vs_vectorized(solver):
    _compare_method("mgda", 0.0, solver=solver)


def test_simplex_min_norm_scalar_bitwise():
    with vectorized():
        vec = simplex_min_norm(GRAMS)
    for size in (1, 3, SMALL_BATCH):
        for i, G in enumerate(_chunks(GRAMS, size)):
            np.testing.assert_array_equal(simplex_min_norm(G), vec[size * i:size * i + len(G)])
    assert AVAILABLE or not os.environ.get("CI"), "numba is in requirements.txt: CI compiles"


@pytest.mark.parametrize("order", ["random", "fixed"])
def test_pcgrad_method_fast_vs_vectorized(order):
    _compare_method("pcgrad", 0.0, order=order)
    with vectorized():
        vec = pcgrad_weights(GRAMS, np.broadcast_to(np.arange(2), (len(GRAMS), 2, 2)))
    for i, G in enumerate(_chunks(GRAMS, SMALL_BATCH)):
        small = pcgrad_weights(G, np.broadcast_to(np.arange(2), (len(G), 2, 2)))
        np.testing.assert_array_equal(small, vec[SMALL_BATCH * i:SMALL_BATCH * i + len(G)])
