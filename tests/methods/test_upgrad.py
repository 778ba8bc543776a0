"""UPGrad and DualProj: TorchJD oracle, projection optimality, pinned K = 2 closed form.

Tolerances: with the same regularization as TorchJD's ``QuadprogProjector`` (``reg_eps=1e-4``,
``norm_eps=0``) our weights equal TorchJD's to 1e-9 on every sampler (both solve the same strictly
convex QP exactly). With ``reg_eps=0`` (our exact default) we compare with TorchJD at
``reg_eps=1e-11`` to 1e-6 on random / rank-deficient / cancelling matrices; on badly scaled ones
TorchJD's trace-relative regularization itself moves the small gradients' weights, so there we check
the projection's optimality conditions instead (dual feasibility ``G v >= -tol`` and complementary
slackness ``(v - u) . G v = 0``).
"""
import numpy as np
import pytest

import pcd.methods as methods
from pcd.methods._solvers import project_dual_cone
from tests.methods._samplers import KINDS, gram, jacobian


def _torchjd(name, G, reg):
    torch = pytest.importorskip("torch")
    agg = pytest.importorskip("torchjd.aggregation")
    pytest.importorskip("quadprog")  # TorchJD's default projector: torchjd[quadprog-projector]
    pytest.importorskip("qpsolvers")
    from torchjd._linalg._dual_cone import QuadprogProjector

    cls = agg.UPGradWeighting if name == "upgrad" else agg.DualProjWeighting
    wt = cls(projector=QuadprogProjector(norm_eps=0.0, reg_eps=reg))
    return np.stack([wt(torch.tensor(g)).numpy() for g in G])


@pytest.mark.parametrize("name", ["upgrad", "dualproj"])
@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("K", [2, 3, 5, 7])
def test_oracle_same_regularization(name, kind, K):
    G = gram(jacobian(kind, 4, K, seed=K))
    w = methods.make(name, reg_eps=1e-4)(G).weights
    np.testing.assert_allclose(w, _torchjd(name, G, 1e-4), rtol=0, atol=1e-9)


@pytest.mark.parametrize("name", ["upgrad", "dualproj"])
@pytest.mark.parametrize("kind", ["random", "rank_def", "cancel"])
@pytest.mark.parametrize("K", [2, 3, 6])
def test_oracle_exact(name, kind, K):
    G = gram(jacobian(kind, 4, K, seed=20 + K))
    w = methods.make(name)(G).weights
    np.testing.assert_allclose(w, _torchjd(name, G, 1e-11), rtol=0, atol=1e-6)


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("K", [2, 3, 4, 6])
def test_projection_optimality(kind, K):
    G = gram(jacobian(kind, 5, K, seed=30 + K))
    U = np.broadcast_to(np.eye(K), (5, K, K))
    V = project_dual_cone(G, U)
    GV = np.einsum("bij,bmj->bmi", G, V)
    scale = np.sqrt(np.einsum("bii->bi", G))  # ||g_i||
    tol = 1e-8 * scale[:, None, :] * np.sqrt(np.einsum("bii->b", G))[:, None, None]
    assert np.all(V >= U - 1e-12)  # primal feasibility v >= u
    assert np.all(GV >= -tol)  # the projection lies in the dual cone: J (J^T v) >= 0
    comp = np.einsum("bmi,bmi->bm", V - U, GV)
    assert np.all(np.abs(comp) <= 1e-8 * np.einsum("bii->b", G)[:, None] * (1 + np.abs(V).sum(-1)))


def test_k2_closed_form_pinned():
    # g1 = (1, 0), g2 = (-1, 1): g1.g2 = -1, |g1|^2 = 1, |g2|^2 = 2
    # v(e1) = (1, 1/2), v(e2) = (1, 1); UPGrad = mean = (1, 3/4)
    G = np.array([[1.0, -1.0], [-1.0, 2.0]])
    np.testing.assert_allclose(methods.make("upgrad")(G).weights[0], [1.0, 0.75], atol=1e-12)
    # DualProj: the mean (0, 1/2) conflicts with g1 (g1 . mean = 0 -> no: it is on the boundary)
    w = methods.make("dualproj")(G).weights[0]
    np.testing.assert_allclose(w, [0.5, 0.5], atol=1e-12)
    # with a conflicting mean: g1 = (1, 0), g2 = (-3, 1): mean = (-1, 1/2) conflicts with g1
    G = np.array([[1.0, -3.0], [-3.0, 10.0]])
    w = methods.make("dualproj")(G).weights[0]
    J = np.array([[1.0, 0.0], [-3.0, 1.0]])
    d = w @ J
    assert abs(d @ J[0]) < 1e-12 and d @ J[1] > 0  # projected onto the boundary of g1's half-space
