"""K = 2 scalar fast paths (small batches, used by the toy engine) vs the vectorized code: Nash-MTL,
AuxiNash, GradDrop, FAMO.

* Nash-MTL / AuxiNash run one formula (:func:`pcd.methods._solvers.nash_k2`) compiled per row
  or on whole arrays: checked bit for bit. FAMO does the same IEEE operations in the same order
  (log/exp stay NumPy calls), so it must agree with the vectorized path to the last bit; we check
  1e-13 relative (bit equality holds on the dev machine). The vectorized path is reached with
  :func:`pcd._fast.vectorized` (the same batch, forced off the fast path).
* GradDrop: the random draw is the same single ``rng.random((B, n))`` call and the direction the
  same formula (``graddrop_k2``), so it must be bit-identical and the generator left in the same
  state; the least-squares weights replace
  ``pinv`` by 2x2 closed forms where those agree to ~1e-13 of ``||w||`` (checked at 2e-12), other
  rows fall back to ``pinv``.
"""
import os

import numpy as np
import pytest

import pcd.methods as methods
from pcd._fast import vectorized
from pcd.methods import _solvers, famo, graddrop, nash
from tests.methods._samplers import KINDS, gram, jacobian


def _close(fast, slow, rtol=1e-13):
    fast, slow = np.asarray(fast, dtype=float), np.asarray(slow, dtype=float)
    assert fast.shape == slow.shape
    np.testing.assert_allclose(fast, slow, rtol=rtol, atol=0.0, equal_nan=True)


def _jacobians(seed: int, n: int = 3):
    """B = 3 Jacobians [3, 2, n]: the samplers' kinds and hand-made edge cases."""
    rng = np.random.default_rng(seed)
    out = [jacobian(k, 3, 2, n=n, seed=seed) for k in KINDS]
    u, v = rng.standard_normal(n), rng.standard_normal(n)
    z = np.zeros(n)
    s = 10.0 ** rng.uniform(-8, 8)
    cases = [
        [u, -u], [u, u], [u, 2.5 * u], [u, -0.3 * u], [u, z], [z, u], [z, z],
        [u, u + 1e-9 * v], [u, -u + 1e-7 * v], [s * u, v], [u, s * v], [1e-150 * u, 1e150 * v],
    ]
    for i in range(0, len(cases), 3):
        rows = cases[i:i + 3]
        rows += [[u, v]] * (3 - len(rows))
        out.append(np.array(rows))
    # saddle-like: gradients almost along one axis (numerically rank one)
    J = jacobian("scaled", 3, 2, n=n, seed=seed)
    J[..., 1:] *= 10.0 ** rng.uniform(-80, -5, (3, 1, 1))
    out.append(J)
    # mixed: one row of each kind in the same batch
    out.append(np.stack([out[0][0], out[3][1], out[4][2]]))
    return out


# ----------------------------------------------------------------------------------- Nash-MTL
NASH_CONFIGS = [
    ("nashmtl", {}), ("nashmtl", {"max_norm": 0.0}), ("nashmtl", {"max_norm": 7.5}),
    ("auxinash", {}), ("auxinash", {"primary_share": 0.2, "max_norm": 0.0}), ("auxinash", {"primary_share": 0.5}),
]


@pytest.mark.parametrize("name,hp", NASH_CONFIGS)
@pytest.mark.parametrize("seed", range(12))
def test_nash_fast_equals_vectorized(name, hp, seed):
    for J in _jacobians(seed):
        G = gram(J)
        m = methods.make(name, **hp)
        fast = m.weights(G)
        with vectorized():
            slow = m.weights(G)
        _close(fast.weights, slow.weights[:3], 0.0)
        _close(fast.info["alpha"], slow.info["alpha"][:3], 0.0)
        _close(fast.info["residual"], slow.info["residual"][:3], 0.0)
        assert fast.state.step == slow.state.step == 1


@pytest.mark.parametrize("name,hp", NASH_CONFIGS)
def test_nash_fast_equals_vectorized_multistep(name, hp):
    """State across calls (update_weights_every > 1 reuses alpha; shape changes reset it)."""
    rng = np.random.default_rng(5)
    m = methods.make(name, update_weights_every=3, **hp)
    sf = sv = None
    for step in range(25):
        J = _jacobians(step)[step % 9]
        G = gram(J) * 10.0 ** rng.uniform(-3, 3)
        of = m.weights(G, state=sf)
        with vectorized():
            ov = m.weights(G, state=sv)
        sf, sv = of.state, ov.state
        _close(of.weights, ov.weights[:3], 0.0)
        _close(sf.alpha, sv.alpha[:3], 0.0)
        _close(of.info["residual"], ov.info["residual"][:3], 0.0)
        assert sf.step == sv.step


def test_nash_compiled_rows_bitwise():
    """``nash_k2`` compiled row by row (small batches, numba) == the same function on the whole
    batch's arrays (:func:`nash`), plain solves and ridged re-solves (cancellations, parallel
    gradients, zero G) alike."""
    rng = np.random.default_rng(0)
    Gs = np.concatenate([gram(J) for seed in range(40) for J in _jacobians(seed)])
    seen = set()
    for p in ([1.0, 1.0], [1.5, 0.5], list(rng.uniform(0.1, 3.0, 2))):
        with np.errstate(all="ignore"):
            alpha, res = _solvers.nash(Gs, np.tile(p, (len(Gs), 1)))
        A, W, R = np.empty((len(Gs), 2)), np.empty((len(Gs), 2)), np.empty(len(Gs))
        _solvers.nash_k2_rows(Gs, np.array(p), 0.0, A, W, R)
        np.testing.assert_array_equal(A, alpha)
        np.testing.assert_array_equal(W, alpha)
        np.testing.assert_array_equal(R, res)
        # the clipping, as the general code's einsum (norms on both sides of max_norm)
        for max_norm in (1e-3, 1.0, 1e3):
            _solvers.nash_k2_rows(Gs, np.array(p), max_norm, A, W, R)
            norm = np.sqrt(np.maximum(np.einsum("bi,bij,bj->b", alpha, Gs, alpha), 0.0))
            clip = norm > max_norm
            ref = np.where(clip[:, None], alpha / np.where(clip, norm, 1.0)[:, None] * max_norm, alpha)
            np.testing.assert_array_equal(W, ref)
            seen.update(clip.tolist())
        assert (res > 0).any() and np.isfinite(res).all()
    assert seen == {True, False}


def test_nash_small_batch_runs_the_compiled_formula(monkeypatch):
    """K = 2: a small batch runs nash()'s formula compiled (nash() itself is not called); the
    comparisons above are not vacuous."""
    from pcd._kernels import AVAILABLE
    if not AVAILABLE and not os.environ.get("CI"):
        pytest.skip("numba not installed (CI runs this)")

    def boom(*a, **k):
        raise AssertionError("vectorized path used")
    monkeypatch.setattr(nash, "nash", boom)
    for kind in ("random", "scaled", "cancel"):
        G = gram(jacobian(kind, 3, 2, seed=1))
        methods.make("nashmtl").weights(G)
        methods.make("auxinash").weights(G)
    with pytest.raises(AssertionError), vectorized():
        methods.make("nashmtl").weights(np.tile(np.eye(2), (3, 1, 1)))
    monkeypatch.undo()
    out = methods.make("nashmtl").weights(np.tile(np.eye(2), (3, 1, 1)))  # the true solution alpha = 1
    _close(out.info["alpha"], np.ones((3, 2)))


# ----------------------------------------------------------------------------------- GradDrop
def _graddrop_reference(J, leak, seed):
    """The vectorized code path (graddrop_direction + pinv least squares) with the same draws."""
    rng = np.random.default_rng(seed)
    U = rng.random((J.shape[0], J.shape[-1]))
    lk = np.full(2, float(leak)) if np.ndim(leak) == 0 else np.asarray(leak, dtype=float)
    d = graddrop.graddrop_direction(J, U, lk)
    return d, graddrop.least_squares_weights(J, d), rng


@pytest.mark.parametrize("leak", [0.0, 0.35, 1.0, [0.1, 0.8]])
@pytest.mark.parametrize("n", [1, 2, 3, 5, 8])
def test_graddrop_fast_equals_vectorized(leak, n):
    m = methods.make("graddrop", leak=leak)
    for seed in range(25):
        for J in _jacobians(seed, n=n):
            rng = np.random.default_rng(seed)
            out = m.weights(gram(J), jacobian=J, rng=rng)
            d, w, rng_ref = _graddrop_reference(J, leak, seed)
            assert np.array_equal(out.exact, d)  # same draws, same masks, same bits
            scale = np.abs(w).max(axis=-1, keepdims=True)
            assert np.all(np.abs(out.weights - w) <= 2e-12 * scale), (seed, np.abs(out.weights - w).max())
            assert rng.random() == rng_ref.random()  # the generator advanced identically


def test_graddrop_fast_path_is_taken(monkeypatch):
    """Well-conditioned and rank-one rows use the closed forms; only rows in between use pinv."""
    calls = []
    orig = graddrop.least_squares_weights
    monkeypatch.setattr(graddrop, "least_squares_weights", lambda J, d: calls.append(J.shape[0]) or orig(J, d))
    m = methods.make("graddrop")
    u, v = np.array([1.0, -0.3, 2.0]), np.array([0.4, 1.5, -0.7])
    for J in ([[u, v], [3 * u, v], [u, 10 * v]], [[u, -u], [u, 0 * u], [0 * u, 0 * u]]):
        J = np.array(J)
        m.weights(gram(J), jacobian=J, rng=np.random.default_rng(0))
    assert calls == []
    u = np.array([1.0, 2.0])
    J = np.array([[u, np.array([2.0, 1.0])], [u, u + np.array([1e-5, -1e-5])], [u, -u]])  # middle row: ill-conditioned
    m.weights(gram(J), jacobian=J, rng=np.random.default_rng(0))
    assert calls == [1]  # only that row
    J = jacobian("random", 3, 2, n=9, seed=3)  # n > 8: vectorized
    m.weights(gram(J), jacobian=J, rng=np.random.default_rng(0))
    assert calls == [1, 3]


@pytest.mark.parametrize("n", [1, 3, 4, 5, 8])
def test_graddrop_compiled_rows_equal_arrays(monkeypatch, n):
    """The K = 2 formulas compiled row by row (numba) == the same formulas on the batch's arrays."""
    for seed in range(10):
        for J in _jacobians(seed, n=n):
            U = np.random.default_rng(seed).random((3, n))
            with np.errstate(all="ignore"):
                d, w = graddrop._graddrop_k2(J, U, 0.2, 0.0)
                with monkeypatch.context() as mp:
                    mp.setattr(graddrop, "AVAILABLE", False)
                    d2, w2 = graddrop._graddrop_k2(J, U, 0.2, 0.0)
            np.testing.assert_array_equal(d, d2)
            np.testing.assert_array_equal(w, w2)


def test_graddrop_errors_unchanged():
    m = methods.make("graddrop")
    J = jacobian("random", 3, 2, n=2)
    J[1, 0, 0] = np.nan
    with pytest.raises(ValueError, match="NaN or inf"):
        m.weights(gram(np.nan_to_num(J)), jacobian=J, rng=np.random.default_rng(0))
    with pytest.raises(ValueError, match="leak needs"):
        methods.make("graddrop", leak=[0.1, 0.2, 0.3]).weights(gram(np.nan_to_num(J)), jacobian=np.nan_to_num(J),
                                                                 rng=np.random.default_rng(0))


# ----------------------------------------------------------------------------------- FAMO
FAMO_CONFIGS = [{}, {"lr": 0.3, "weight_decay": 0.0}, {"min_loss": [0.5, -1.0]}, {"min_loss": 0.2},
                {"lr": 1.0, "weight_decay": 1.0}]


def _loss_path(rng, steps):
    """Loss sequences [steps, 3, 2]: smooth decrease, changes at the rounding level, repeats,
    jumps, a loss below min_loss (NaN log), zero shifted loss, huge and tiny losses."""
    L = 1.0 + 10.0 * rng.random((3, 2))
    out = []
    for t in range(steps):
        mode = rng.integers(5)
        if mode == 0:
            L = L * (1.0 - 1e-3 * rng.random((3, 2)))
        elif mode == 1:
            L = L * (1.0 + 1e-15 * rng.standard_normal((3, 2)))
        elif mode == 2:
            pass
        elif mode == 3:
            L = np.abs(L + rng.standard_normal((3, 2)))
        else:
            L = np.clip(L * 10.0 ** rng.uniform(-6, 6, (3, 2)), 1e-200, 1e200)
        L = L.copy()
        if t == 17:
            L[0, 0] = -5.0  # below every min_loss: log of a negative
        if t == 23:
            L[1, 1] = -1e-8  # shifted loss exactly 0 with min_loss 0
        if t == 31:
            L[2] = [1e300, 1e-300]
        out.append(L)
    return out


@pytest.mark.parametrize("hp", FAMO_CONFIGS)
@pytest.mark.parametrize("seed", range(6))
def test_famo_fast_equals_vectorized_multistep(hp, seed):
    rng = np.random.default_rng(seed)
    m = methods.make("famo", **hp)
    G = np.tile(np.eye(2), (3, 1, 1))
    sf, sv = m.init_state(3, 2), m.init_state(3, 2)
    for L in _loss_path(rng, 120):
        with np.errstate(all="ignore"):
            of = m.weights(G, losses=L, state=sf)
            with vectorized():
                ov = m.weights(G, losses=L, state=sv)
        sf, sv = of.state, ov.state
        _close(of.weights, ov.weights[:3])
        _close(of.info["task_weights"], ov.info["task_weights"][:3])
        for a, b in [(sf.xi, sv.xi[:3]), (sf.m, sv.m[:3]), (sf.v, sv.v[:3]), (sf.prev, sv.prev[:3])]:
            _close(a, b)
        assert sf.t == sv.t


def test_famo_small_batch_runs_the_compiled_formula(monkeypatch):
    """K = 2: a small batch runs FAMO's formulas compiled (their Python functions are not called), a
    large one calls the same functions on the batch's arrays."""
    from pcd._kernels import AVAILABLE
    if not AVAILABLE and not os.environ.get("CI"):
        pytest.skip("numba not installed (CI runs this)")
    calls = []
    orig = famo.famo_weights_k2
    monkeypatch.setattr(famo, "famo_weights_k2", lambda *a: calls.append(1) or orig(*a))
    m = methods.make("famo")
    G = np.tile(np.eye(2), (3, 1, 1))
    s = m.init_state(3, 2)
    for L in ([[1.0, 2.0]] * 3, [[0.9, 1.9]] * 3, [[0.9, 1.9]] * 3):
        s = m.weights(G, losses=np.array(L), state=s).state
    assert s.t == 2 and calls == []
    m.weights(np.tile(np.eye(2), (64, 1, 1)), losses=np.ones((64, 2)), state=None)
    assert calls


def test_famo_errors_unchanged():
    m = methods.make("famo", min_loss=[0.0, 0.0, 0.0])
    with pytest.raises(ValueError, match="min_loss needs"):
        m.weights(np.tile(np.eye(2), (3, 1, 1)), losses=np.ones((3, 2)), state=None)
