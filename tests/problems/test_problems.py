"""Problems: registry, shapes, exact gradients (vs finite differences), known optima / fronts."""
import math

import numpy as np
import pytest

import pcd.problems as P
from pcd.engine import pareto_residual
from pcd.problems.double_well import residual_law
from pcd.problems.scale import Scale

RNG = np.random.default_rng(0)


def fd_jacobian(problem, X, h=1e-6):
    """Central finite differences (test oracle only)."""
    B, n = X.shape
    J = np.empty((B, problem.K, n))
    for i in range(n):
        e = np.zeros(n)
        e[i] = h
        J[:, :, i] = (problem.losses(X + e) - problem.losses(X - e)) / (2 * h)
    return J


def random_points(problem, B=64):
    lo = np.array([b[0] for b in problem.bounds])
    hi = np.array([b[1] for b in problem.bounds])
    return lo + (hi - lo) * RNG.random((B, problem.dim))


def test_registry_lists_every_problem_and_rejects_unknown():
    names = P.available()
    assert names[:len(P.ORDER)] == P.ORDER  # the display order first, any newer problem after it
    assert len(set(names)) == len(names) and all(P.get(n).name == n for n in names)
    with pytest.raises(ValueError, match="unknown problem 'nope'; available: saddle2d"):
        P.make("nope")
    with pytest.raises(ValueError, match="allowed: K, dim, start"):
        P.make("double_well", L=3)


def test_the_pages_problem_list_builds_each_with_its_own_label():
    """pcd.problems.NAMED is the one list the pages offer: each key builds a registered problem, and
    each shows a display name of its own (a variant says so: the K = 2 double well, TorchJD's quadratic)."""
    labels = {key: P.named(key).display_name for key in P.NAMED}
    assert all(labels.values()) and len(set(labels.values())) == len(labels), labels
    assert labels["double_well"] == "Double well, K = 2" and labels["quadratic_torchjd"] != labels["quadratic"]
    with pytest.raises(ValueError, match="unknown problem 'nope'; allowed: saddle2d"):
        P.named("nope")


@pytest.mark.parametrize("name,params", [("saddle2d", {}), ("double_well", {"K": 4}), ("double_well", {"K": 2, "dim": 2}),
                                         ("scale", {"k": 2}), ("two_task", {}), ("quadratic", {}), ("custom", {})])
def test_shapes_float64_batch_consistency_and_exact_gradients(name, params):
    p = P.make(name, **params)
    X = random_points(p)
    L, J = p.losses_and_jacobian(X)
    assert L.shape == (64, p.K) and J.shape == (64, p.K, p.dim)
    assert L.dtype == np.float64 and J.dtype == np.float64
    # a single point gives the same row as the batch
    L1, J1 = p.losses_and_jacobian(X[5])
    np.testing.assert_array_equal(L1[0], L[5])
    np.testing.assert_array_equal(J1[0], J[5])
    # analytic gradients equal central differences away from kinks (generic random points)
    Jfd = fd_jacobian(p, X)
    np.testing.assert_allclose(J, Jfd, rtol=1e-5, atol=1e-5 * max(1.0, np.abs(J).max()))
    assert p.default_starts().shape[1] == p.dim
    with pytest.raises(ValueError, match=rf"shape \[B, {p.dim}\]"):
        p.losses_and_jacobian(np.zeros((3, p.dim + 1)))


def test_saddle2d_values_optimum_and_min_norm_subgradients():
    p = P.make("saddle2d")
    L, J = p.losses_and_jacobian([[2.0, 0.0], [-2.0, 0.0], [0.0, 0.0], [2.5, 0.5], [-2.55, 0.4]])
    np.testing.assert_allclose(L[:, 0], [0, 0, 4, (6.25 - 4) ** 2 / 4 + 0.125, (2.55**2 - 4) ** 2 / 4 + 0.08])
    np.testing.assert_allclose(L[:, 1], [0, 3.5, 1.5, 0, 4.05])
    # on the box corner the secondary's subdifferential contains 0: min-norm subgradient is 0
    np.testing.assert_array_equal(J[3, 1], [0.0, 0.0])
    # left of the box: unit pull to the right only
    np.testing.assert_array_equal(J[4, 1], [-1.0, 0.0])
    np.testing.assert_array_equal(p.optima(), [[2.0, 0.0]])
    np.testing.assert_allclose(p.default_starts(), [[-2.55, 0.40], [-2.90, 0.12], [-1.65, -0.55]])
    # the weighted-sum conflict equilibrium of the left valley: t(t^2 - 4) = 1
    t = np.roots([1, 0, -4, -1]).real
    t = t[(t > -2) & (t < -1)][0]
    _, Je = p.losses_and_jacobian([[t, 0.0]])
    np.testing.assert_allclose(Je[0, 0] + Je[0, 1], 0.0, atol=1e-12)


@pytest.mark.parametrize("K", [2, 3, 5, 17, 65])
def test_double_well_start_is_pareto_stationary_with_the_residual_law(K):
    p = P.make("double_well", K=K)
    assert p.dim == K - 1
    x0 = p.default_starts()
    np.testing.assert_array_equal(x0, np.full((1, K - 1), -0.6))
    L, J = p.losses_and_jacobian(x0)
    law = 1.536 * math.sqrt(K - 1)
    assert residual_law(K) == pytest.approx(law, rel=1e-14)
    assert np.linalg.norm(J[0, 0]) == pytest.approx(law, rel=1e-14)
    # 0 lies in the convex hull of the gradients: the start is Pareto-stationary
    assert pareto_residual(J)[0] < 1e-12
    # the CMS point x = 1: every gradient vanishes, every loss is 0
    L1, J1 = p.losses_and_jacobian(p.optima())
    assert np.abs(L1).max() == 0 and np.abs(J1).max() == 0


def test_double_well_validation_and_2d_slices():
    with pytest.raises(ValueError, match=r"K must be in \[2, 257\]"):
        P.make("double_well", K=1)
    with pytest.raises(ValueError, match="dim must be K - 1"):
        P.make("double_well", K=4, dim=2)
    p = P.make("double_well", K=2, dim=2)  # merged secondary, same law with sqrt(dim)
    _, J = p.losses_and_jacobian(p.default_starts())
    assert np.linalg.norm(J[0, 0]) == pytest.approx(1.536 * math.sqrt(2))
    assert pareto_residual(J)[0] < 1e-12
    xs, ys, Z = P.make("double_well", K=3).grid(5, 4)
    assert Z.shape == (3, 4, 5)


def test_grid_layout_matches_losses():
    p = P.make("saddle2d")
    xs, ys, Z = p.grid(7, 5)
    assert xs.shape == (7,) and ys.shape == (5,) and Z.shape == (2, 5, 7)
    np.testing.assert_allclose(Z[:, 3, 4], p.losses([[xs[4], ys[3]]])[0])
    with pytest.raises(ValueError, match="needs a 2-D problem"):
        P.make("double_well", K=5).grid()
    with pytest.raises(ValueError, match="nx must be"):
        p.grid(1, 5)


def test_scale_front_and_weighted_sum_endpoints():
    # the secondary's Jacobian scales exactly with 10^k
    X = random_points(P.make("scale"))
    _, J0 = P.make("scale", k=0).losses_and_jacobian(X)
    _, J3 = P.make("scale", k=3).losses_and_jacobian(X)
    np.testing.assert_allclose(J3[:, 1], 1e3 * J0[:, 1], rtol=1e-15)
    np.testing.assert_array_equal(J3[:, 0], J0[:, 0])
    front = Scale().pareto_set(50)
    np.testing.assert_allclose(front[0], [-1.0, -0.5])
    np.testing.assert_allclose(front[-1], [0.5, 0.0])
    # ws_endpoint(s) minimizes f1 + s f2: no random nearby point is better (convex problem)
    p = P.make("scale", k=0)
    for s in [1e-5, 0.3, 0.5, 1.0, 1.5, 7.0, 1e5]:
        x = Scale.ws_endpoint(s)
        pts = x + 1e-3 * RNG.standard_normal((200, 2))
        def obj(Y, s=s):
            return p.losses(Y)[:, 0] + s * p.losses(Y)[:, 1]

        assert obj(pts).min() >= obj(x[None])[0] - 1e-12
    with pytest.raises(ValueError, match="k must be"):
        P.make("scale", k=100)


def test_quadratic_pareto_set_is_weighted_stationary():
    p = P.make("quadratic")
    for w in [0.0, 0.1, 1.0, 10.0]:
        x = p.pareto_point(w)
        _, J = p.losses_and_jacobian(x)
        np.testing.assert_allclose(J[0, 0] + w * J[0, 1], 0.0, atol=1e-12)
    ps = p.pareto_set(20)
    np.testing.assert_allclose(ps[0], p.C1)
    np.testing.assert_allclose(ps[-1], p.C2)


def test_two_task_matches_an_independent_transcription_of_the_cagrad_toy():
    p = P.make("two_task")
    X = random_points(p, 200)
    x, y = X[:, 0], X[:, 1]
    low = 5e-6
    c1 = np.maximum(np.tanh(0.5 * y), 0)
    c2 = np.maximum(np.tanh(-0.5 * y), 0)
    f1 = np.log(np.maximum(np.abs(0.5 * (-x - 7) - np.tanh(-y)), low)) + 6
    f2 = np.log(np.maximum(np.abs(0.5 * (-x + 3) + np.tanh(-y) + 2), low)) + 6
    f1sq = ((-x + 7) ** 2 + 0.1 * (-y - 8) ** 2) / 10 - 20
    f2sq = ((-x - 7) ** 2 + 0.1 * (-y - 8) ** 2) / 10 - 20
    expect = np.stack([f1 * c1 + f1sq * c2, f2 * c1 + f2sq * c2], axis=1)
    np.testing.assert_allclose(p.losses(X), expect, rtol=1e-13, atol=1e-13)
    assert p.default_starts().shape == (5, 2)


def test_describe_is_plain_data():
    import json
    for name in P.available():
        d = P.make(name).describe()
        json.dumps(d)
        assert d["name"] == name and d["K"] >= 2


def test_two_task_pareto_set_is_pareto_stationary_and_not_dominated():
    p = P.make("two_task")
    ps = p.pareto_set(101)
    assert ps.shape == (101, 2)
    assert np.allclose(ps[[0, -1], 0], [-7.0, 7.0]) and np.all(np.diff(ps[:, 0]) > 0)
    L, J = p.losses_and_jacobian(ps)
    g1, g2 = J[:, 0], J[:, 1]
    d = g1 - g2
    t = np.clip(-np.einsum("bi,bi->b", g2, d) / np.einsum("bi,bi->b", d, d), 0.0, 1.0)
    # Pareto-stationary: a convex combination of the two gradients vanishes (||g|| is O(1) here)
    assert np.linalg.norm(g2 + t[:, None] * d, axis=1).max() < 1e-6
    # no point of a dense grid over the plotted box dominates a point of the set
    gx, gy = np.meshgrid(np.linspace(-10, 10, 201), np.linspace(-10, 10, 201))
    G = p.losses(np.stack([gx.ravel(), gy.ravel()], axis=-1))
    dominated = (G[None, :, 0] < L[:, None, 0] - 1e-9) & (G[None, :, 1] < L[:, None, 1] - 1e-9)
    assert not dominated.any()


def test_quadratic_torchjd_variant_is_the_convex_quadratic_form():
    """f_i(x) = (x - u_i)^T B_i B_i^T (x - u_i), written independently here, and its Pareto set."""
    p = P.make("quadratic", variant="torchjd")
    B1 = 0.1 * np.array([[1.0, -1.0], [-1.0, 4.0]])
    B2 = np.array([[1.0, -2.0], [1.0, -1.0]])
    u1, u2 = np.array([1.0, -1.0]), np.array([-1.0, -3.0])
    X = np.random.default_rng(0).uniform(-5, 5, size=(20, 2))
    L, J = p.losses_and_jacobian(X)
    for i, (B, u) in enumerate(((B1, u1), (B2, u2))):
        d = X - u
        assert np.allclose(L[:, i], np.einsum("bi,ij,bj->b", d, B @ B.T, d), rtol=1e-12)
        assert np.allclose(J[:, i], 2 * d @ (B @ B.T), rtol=1e-12)
    ps = p.pareto_set(30)
    assert np.allclose(ps[0], u1) and np.allclose(ps[-1], u2)
    _, Jp = p.losses_and_jacobian(ps[1:-1])
    g1, g2 = Jp[:, 0], Jp[:, 1]
    cross = g1[:, 0] * g2[:, 1] - g1[:, 1] * g2[:, 0]   # anti-parallel gradients on the set
    assert np.abs(cross).max() < 1e-9 and (np.einsum("bi,bi->b", g1, g2) < 0).all()
    assert P.make(p.name, **p.params()).variant == "torchjd"
    with pytest.raises(ValueError, match="variant"):
        P.make("quadratic", variant="nope")
