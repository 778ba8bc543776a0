"""Properties shared by every registered method (TorchJD style), on the shared matrix samplers.

What is claimed where (Jacobian Descent, arXiv 2406.16232, Table 1; PCD paper, arXiv 2606.29521):

* non-conflicting (``J d >= 0``): MGDA, UPGrad, DualProj, Nash-MTL, AuxiNash; PCGrad for K = 2.
  Tolerance ``-1e-9 * ||g_i|| * (||d|| + sum_k |w_k| ||g_k||)`` (the rounding scale of ``d``,
  which matters when ``d ~ 0`` on rank-deficient conflicts; the solvers' tiny ridge).
* linear under scaling (``c -> A(diag(c) J)`` linear): weighted sum, UPGrad, PCGrad (fixed order).
  Relative tolerance 1e-9. MGDA is shown *not* to be.
* g_1 = 0: MGDA (and CAGrad, whose dual then selects g_1; CR-MOGM around MGDA) return the zero
  direction -- the failure mode the PCD paper names; PCD's deployed update halts too (its documented limitation, ``d`` is
  rescaled to ``||g_1||``); every other deterministic method still moves the secondary.
* exact cancellation g_1 = -g_2: the symmetric methods' direction is 0 (a conflict equilibrium);
  PCD and DBGD are not (they keep following a tau/beta share of the secondary's progress).
* batched == unbatched (deterministic methods, 1e-12 relative), finite output for a zero Gram
  matrix, ValueError on NaN input, registry metadata complete.
"""

import numpy as np
import pytest

import pcd.methods as methods
from pcd.viz.theme import METHOD_COLORS as COLORS
from tests.methods._samplers import gram, jacobian

EXPECTED = ["pcd", "ws", "mgda", "pcgrad", "cagrad", "famo", "upgrad", "dualproj", "imtlg",
            "alignedmtl", "nashmtl", "graddrop", "rgw", "dbgd", "auxinash"]
ALL = methods.available()
DETERMINISTIC = [n for n in ALL if not methods.get(n).stochastic]
NON_CONFLICTING = ["mgda", "upgrad", "dualproj", "nashmtl", "auxinash"]
LINEAR = [("ws", {}), ("upgrad", {}), ("pcgrad", {"order": "fixed"})]


def run(name, J, losses=None, seed=0, **hp):
    m = methods.make(name, **hp)
    B, K = J.shape[:2]
    if losses is None:
        losses = np.broadcast_to(1.0 + np.arange(K), (B, K)).astype(float)
    out = m(gram(J), losses=losses, jacobian=J, state=m.init_state(B, K), rng=np.random.default_rng(seed))
    d = out.direction(J)
    return out, d


def test_registry_complete_and_metadata():
    assert set(EXPECTED) <= set(ALL)
    assert ALL[: len(EXPECTED)] == EXPECTED  # display order
    colors = [COLORS[n] for n in ALL]
    assert len(set(colors)) == len(colors)
    for n in ALL:
        cls = methods.get(n)
        assert cls.name == n and n in COLORS
        assert cls.display_name and cls.paper
        assert cls.description and "\n" not in cls.description and len(cls.description) <= 140
        for p in cls.params:
            assert p.help, f"{n}.{p.name} has no help text"
            v = p.validate(p.default, n)  # the default is valid and in range
            if p.kind in ("float", "int"):
                assert (p.low is None or v >= p.low) and (p.high is None or v <= p.high)
            if p.kind == "choice":
                assert p.default in p.choices
        with pytest.raises(ValueError, match="unknown hyper-parameter"):
            methods.make(n, not_a_parameter=1)


@pytest.mark.parametrize("name", ALL)
def test_shapes_dtype_and_bad_input(name):
    J = jacobian("random", 4, 3)
    out, d = run(name, J)
    assert out.weights.shape == (4, 3) and out.weights.dtype == np.float64
    assert d.shape == (4, J.shape[-1]) and np.isfinite(d).all()
    G = gram(J)
    G[1, 0, 0] = np.nan
    with pytest.raises(ValueError):
        methods.make(name)(G, losses=np.ones((4, 3)), jacobian=J, rng=np.random.default_rng(0))


@pytest.mark.parametrize("name", ALL)
@pytest.mark.parametrize("K", [2, 3])
def test_zero_gram_is_finite(name, K):
    J = np.zeros((3, K, 4))
    out, d = run(name, J)
    assert np.isfinite(out.weights).all()
    assert np.all(d == 0)


@pytest.mark.parametrize("name", DETERMINISTIC)
@pytest.mark.parametrize("K", [2, 3, 7])
def test_batched_equals_unbatched(name, K):
    J = jacobian("scaled", 4, K, seed=K)
    L = 1.0 + np.random.default_rng(K).random((4, K))
    out, _ = run(name, J, losses=L)
    for b in range(4):
        one, _ = run(name, J[b:b + 1], losses=L[b:b + 1])
        np.testing.assert_allclose(out.weights[b], one.weights[0], rtol=1e-12, atol=1e-300)


NC_CASES = [(n, kind, K) for n in NON_CONFLICTING + ["pcgrad"] for kind in ("random", "scaled", "rank_def")
            for K in (2, 3, 5)
            if not (n == "pcgrad" and K > 2)  # PCGrad is non-conflicting only for K = 2
            # the bargaining problem has no solution for some singular G (alpha -> infinity)
            and not (n in ("nashmtl", "auxinash") and kind == "rank_def")]


@pytest.mark.parametrize("name,kind,K", NC_CASES)
def test_non_conflicting(name, kind, K):
    J = jacobian(kind, 8, K, seed=K)
    out, d = run(name, J, max_norm=0.0) if name in ("nashmtl", "auxinash") else run(name, J)
    prog = np.einsum("bkn,bn->bk", J, d)
    gn = np.linalg.norm(J, axis=-1)
    # rounding scale of d = sum_k w_k g_k (matters when d ~ 0, e.g. rank-deficient conflicts)
    dscale = np.linalg.norm(d, axis=-1) + np.einsum("bk,bk->b", np.abs(out.weights), gn)
    tol = 1e-9 * gn * dscale[:, None]
    assert np.all(prog >= -tol)


def test_weighted_sum_conflicts():
    # the Mean is not non-conflicting: a dominant gradient drags the other objective uphill
    J = np.array([[[1.0, 0.0], [-3.0, 1.0]]])
    _, d = run("ws", J)
    assert (J[0] @ d[0])[0] < 0


@pytest.mark.parametrize("name,hp", LINEAR)
@pytest.mark.parametrize("K", [2, 3, 5])
def test_linear_under_scaling(name, hp, K):
    rng = np.random.default_rng(K)
    J = jacobian("random", 6, K, seed=K)
    c1, c2 = rng.uniform(0.1, 10, (2, 6, K))
    _, d1 = run(name, J * c1[..., None], **hp)
    _, d2 = run(name, J * c2[..., None], **hp)
    _, d12 = run(name, J * (c1 + c2)[..., None], **hp)
    np.testing.assert_allclose(d12, d1 + d2, rtol=1e-9, atol=1e-9 * np.abs(d12).max())


def test_mgda_not_linear_under_scaling():
    J = np.array([[[1.0, 0.0], [0.0, 1.0]]])
    c1, c2 = np.array([1.0, 2.0]), np.array([3.0, 1.0])
    d = lambda c: run("mgda", J * c[None, :, None])[1][0]  # noqa: E731
    assert not np.allclose(d(c1 + c2), d(c1) + d(c2))


@pytest.mark.parametrize("name", DETERMINISTIC)
@pytest.mark.parametrize("K", [2, 3])
def test_zero_primary_gradient(name, K):
    """``Method.zero_where_primary_vanishes`` is declared exactly when the update is 0 at g_1 = 0."""
    J = jacobian("random", 3, K, seed=5)
    J[:, 0] = 0.0
    _, d = run(name, J)
    norm = np.linalg.norm(d, axis=-1)
    scale = np.linalg.norm(J, axis=-1).max()
    if methods.get(name).zero_where_primary_vanishes:
        assert np.all(norm <= 1e-9 * scale)
    else:
        assert np.all(norm > 1e-6 * scale)


@pytest.mark.parametrize("name", DETERMINISTIC + ["pcgrad"])
def test_exact_cancellation(name):
    """``Method.moves_at_cancellation`` is declared exactly when the update survives g_1 = -g_2."""
    J = jacobian("cancel", 3, 2, seed=2)
    _, d = run(name, J, losses=np.ones((3, 2)))
    norm = np.linalg.norm(d, axis=-1)
    g = np.linalg.norm(J[:, 0], axis=-1)
    if not methods.get(name).moves_at_cancellation:
        assert np.all(norm <= 1e-6 * g), f"{name}: the symmetric update should vanish at g1 = -g2"
    else:
        assert np.all(norm >= 1e-3 * g) and np.all(np.isfinite(d))
        # it moves against g_1 by a share of the secondary's progress: g_2 . d > 0
        assert np.all(np.einsum("bn,bn->b", J[:, 1], d) > 0)


def test_the_declared_exceptions_are_the_papers():
    """The two declarations above single out the methods the papers name (a new method inherits
    the symmetric default and touches neither)."""
    ALLM = [methods.get(n) for n in ALL]
    assert sorted(c.name for c in ALLM if c.moves_at_cancellation) == ["dbgd", "pcd"]
    assert sorted(c.name for c in ALLM if c.zero_where_primary_vanishes) == ["cagrad", "crmogm", "mgda", "pcd"]


try:
    from hypothesis import given, settings
    from hypothesis import strategies as st
    from hypothesis.extra.numpy import arrays
except ImportError:  # pragma: no cover
    given = None

if given is not None:
    # entries 0 or of magnitude 1e-6 ... 1e3: a gradient whose squared norm underflows (|g| < 1e-154)
    # makes G inconsistent (G_jj = 0 but G_ij != 0), which no Gram-based method can see through
    _ENTRY = st.one_of(st.just(0.0), st.floats(1e-6, 1e3), st.floats(-1e3, -1e-6))

    @settings(max_examples=60, deadline=None)
    @given(st.tuples(st.just(1), st.integers(2, 4), st.integers(1, 4)).flatmap(
        lambda shape: arrays(np.float64, shape, elements=_ENTRY)))
    def test_hypothesis_finite_and_non_conflicting(J):
        # arbitrary small Jacobians (zeros, duplicates, cancellations included by the strategy)
        for name in DETERMINISTIC + ["pcgrad"]:
            out, d = run(name, J, max_norm=0.0) if name in ("nashmtl", "auxinash") else run(name, J)
            assert np.isfinite(out.weights).all() and np.isfinite(d).all(), name
            if name in ("mgda", "upgrad", "dualproj"):
                prog = J[0] @ d[0]
                gn = np.linalg.norm(J[0], axis=-1)
                dscale = np.linalg.norm(d[0]) + np.abs(out.weights[0]) @ gn
                # plus rounding relative to the largest gradient (d ~ 1e-14 |g|max where 0 is in the hull)
                assert np.all(prog >= -1e-9 * gn * dscale - 1e-12 * gn * gn.max()), name


def test_a_subclass_with_its_own_update_has_no_inherited_compiled_step():
    """Method.kernel is the compiled twin of update: a subclass that changes update does not inherit
    its parent's (the engine then runs its NumPy loop), one that keeps update does."""
    from pcd.methods.pcd import PCDMethod

    class Changed(PCDMethod):
        def update(self, *a, **k):
            return super().update(*a, **k)

    class Same(PCDMethod):
        pass

    assert Changed().kernel() is None and Same().kernel() is not None


@pytest.mark.parametrize("name", ALL)
def test_hyper_parameters_outside_their_range_are_refused(name):
    """Every method refuses, with a one-line ValueError naming the parameter, a value below or above
    its ``Param`` range, a non-integer for an integer parameter, and an unknown hyper-parameter."""
    for p in methods.get(name).params:
        bad = []
        if p.kind in ("float", "int"):
            bad += [p.low - 1.0] if p.low is not None else []
            bad += [p.high + 1.0] if p.high is not None else []
        if p.kind == "int":
            bad.append((p.default if p.low is None else p.low) + 0.5)
        for v in bad:
            with pytest.raises(ValueError, match=p.name):
                methods.make(name, **{p.name: v})
    with pytest.raises(ValueError, match="unknown hyper-parameter"):
        methods.make(name, no_such_parameter=1)
