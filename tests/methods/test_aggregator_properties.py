"""The aggregator properties of Jacobian descent (arXiv 2406.16232, Sec. 2.2) and PCD's own, as
unit tests over the registry (checks in :mod:`pcd.experiments.jd`).

Known cases: Mean (``ws``) is linear under scaling and weighted but conflicts; MGDA is
non-conflicting but not linear under scaling; UPGrad has all three. Every method the paper's
Table 1 lists must get the paper's verdict. The checker itself must be able to fail: hand-made
aggregators that break one property at a time are caught.
"""
from __future__ import annotations

import numpy as np
import pytest

import pcd.methods as registry
from pcd.experiments.jd import PAPER_PROPERTIES, PAPER_TABLE, PROPERTIES, aggregate, check_properties, sample_jacobians
from pcd.methods.base import Method, MethodOutput

SAMPLES = 3


@pytest.fixture(scope="module")
def reports():
    cache: dict = {}

    def get(name: str):
        if name not in cache:
            hp = {"tau": 0.02} if registry.get(name).primary_knob == "tau" else None
            cache[name] = check_properties(name, samples=SAMPLES, hparams=hp)
        return cache[name]

    return get


@pytest.mark.parametrize("name", registry.available())
def test_every_method_has_exactly_the_properties_it_claims(name, reports):
    """``Method.claims`` is checked, not documentation: each property holds iff it is claimed."""
    cls = registry.get(name)
    r = reports(name)
    for p in PROPERTIES:
        assert r.holds[p] == (p in cls.claims), (name, p, r.worst[p])


def _swap01(J):
    return J[[1, 0, *range(2, J.shape[0])]]


@pytest.mark.parametrize("name", registry.available())
def test_hierarchical_claim_is_the_asymmetry_in_objective_0(name):
    """A symmetric method is permutation-equivariant (swapping objectives 0 and 1 leaves the update
    unchanged, up to rounding); a method claiming "hierarchical" is not (objective 0 is the primary).
    Stochastic methods whose draw is tied to the objectives' positions (RGW, PCGrad's random order)
    are symmetric only in distribution and skipped; GradDrop's draw is per coordinate, so it is checked."""
    cls = registry.get(name)
    if cls.stochastic and name != "graddrop":
        pytest.skip("symmetric only in distribution (the draw is tied to the objectives' positions)")
    moved = 0.0
    for fam in ("random", "scaled"):
        for K in (2, 3):
            for J in sample_jacobians(fam, K, 3, seed=1):
                d, _ = aggregate(name, J, losses=np.arange(1.0, K + 1.0), seed=3)
                ds, _ = aggregate(name, _swap01(J), losses=_swap01(np.arange(1.0, K + 1.0)), seed=3)
                moved = max(moved, float(np.linalg.norm(ds - d) / max(np.linalg.norm(J), 1e-300)))
    if "hierarchical" in cls.claims:
        assert moved > 1e-3, name
    else:
        assert moved < 1e-9, (name, moved)


def test_claims_use_the_one_vocabulary():
    for name in registry.available():
        assert set(registry.get(name).claims) <= set(registry.CLAIMS)
        assert registry.get(name).hierarchical == ("hierarchical" in registry.get(name).claims)
    with pytest.raises(TypeError, match="unknown claim"):
        type("Bad", (Method,), {"name": "bad", "claims": frozenset({"fast"})})
    with pytest.raises(TypeError, match="primary_knob"):
        type("Bad", (Method,), {"name": "bad", "primary_knob": "tau"})


def test_mean_is_linear_and_weighted_but_conflicts(reports):
    r = reports("ws")
    assert r.holds["linear_under_scaling"] and r.holds["weighted"]
    assert not r.holds["non_conflicting"]
    # the worst conflict is a full reversal: on cancelling rows the mean is 0 for J but not for
    # a perturbed J, and on random rows a gradient can be opposed outright
    assert r.worst["non_conflicting"]["value"] > 0.1


def test_mgda_is_non_conflicting_but_not_linear_under_scaling(reports):
    r = reports("mgda")
    assert r.holds["non_conflicting"] and r.holds["weighted"]
    assert not r.holds["linear_under_scaling"]
    assert r.worst["linear_under_scaling"]["value"] > 1e-2


def test_upgrad_has_all_three(reports):
    r = reports("upgrad")
    assert all(r.holds[p] for p in PAPER_PROPERTIES)
    assert max(r.worst[p]["value"] for p in PAPER_PROPERTIES) < 1e-6


@pytest.mark.parametrize("name", sorted(PAPER_TABLE))
def test_verdicts_match_the_papers_table(name, reports):
    if name not in registry.available():
        pytest.skip(f"{name} is not in the registry yet")
    r = reports(name)
    assert tuple(r.holds[p] for p in PAPER_PROPERTIES) == PAPER_TABLE[name], {p: r.worst[p] for p in PAPER_PROPERTIES}


def test_upgrad_is_the_only_one_of_the_papers_list_with_all_three(reports):
    listed = [n for n in PAPER_TABLE if n in registry.available()]
    full = [n for n in listed if all(reports(n).holds[p] for p in PAPER_PROPERTIES)]
    assert full == ["upgrad"]


def test_pcd_is_primary_anchored_with_per_secondary_progress_but_not_non_conflicting(reports):
    r = reports("pcd")
    assert r.holds["primary_anchored"] and r.holds["per_secondary_progress"]
    assert r.holds["weighted"] and r.holds["linear_under_scaling"]
    assert not r.holds["non_conflicting"]
    # the symmetric aggregators are neither anchored nor guarantee the tau share
    for name in ("ws", "mgda", "upgrad"):
        assert not reports(name).holds["primary_anchored"]
        assert not reports(name).holds["per_secondary_progress"]


def test_pcd_counterexample_to_non_conflicting_is_exact():
    # g2 = -g1: the secondary's tau share can only come from going against g1; the deployed update
    # is rescaled to ||g1||, so it is exactly -g1.
    J = np.array([[1.0, 0.0, 0.0], [-2.0, 0.0, 0.0]])
    d, w = aggregate("pcd", J)
    np.testing.assert_allclose(d, [-1.0, 0.0, 0.0], atol=1e-12)
    # pass-through: g1 already gives g2 its share, so PCD's update is g1 itself (Mean's is not)
    J = np.array([[1.0, 0.0, 0.0], [1.0, 1.0, 0.0]])
    np.testing.assert_allclose(aggregate("pcd", J)[0], J[0], atol=1e-12)
    assert np.linalg.norm(aggregate("ws", J)[0] - J[0]) > 0.4


# ---------------------------------------------------------------------- the checker can fail


class _Normalized(Method):
    """Mean direction normalized to unit length: non-linear under scaling (still weighted)."""

    name = "test_normalized"

    def weights(self, gram, *, losses=None, jacobian=None, state=None, rng=None):
        K = gram.shape[-1]
        w = np.full(gram.shape[:-1], 1.0 / K)
        norm = np.sqrt(np.maximum(np.einsum("bi,bij,bj->b", w, gram, w), 0.0))
        return MethodOutput(weights=w / np.where(norm > 0, norm, 1.0)[:, None], state=state)


class _OffSpan(Method):
    """Mean plus a fixed vector outside the rows' span: not weighted."""

    name = "test_offspan"
    needs_jacobian = True

    def weights(self, gram, *, losses=None, jacobian=None, state=None, rng=None):
        K = gram.shape[-1]
        w = np.full(gram.shape[:-1], 1.0 / K)
        d = np.einsum("bk,bkn->bn", w, jacobian) + 0.5 * np.linalg.norm(jacobian, axis=(1, 2))[:, None]
        return MethodOutput(weights=w, state=state, info={"direction": d})


def test_checker_catches_a_non_linear_aggregator():
    r = check_properties(_Normalized(), samples=2)
    assert r.holds["weighted"]
    assert not r.holds["linear_under_scaling"] and r.worst["linear_under_scaling"]["value"] > 0.1


def test_checker_catches_a_non_weighted_aggregator():
    r = check_properties(_OffSpan(), samples=2)
    assert not r.holds["weighted"] and r.worst["weighted"]["value"] > 0.1
    assert any("direction directly" in n for n in r.notes)


def test_worst_violation_points_at_a_real_counterexample(reports):
    r = reports("mgda")
    w = r.worst["linear_under_scaling"]
    assert w["family"] in ("random", "scaled", "rank_deficient", "cancelling") and w["K"] in (2, 3, 5)
    J = sample_jacobians(w["family"], w["K"], SAMPLES)[w["sample"]]
    assert J.shape == (w["K"], 12)


def test_bad_arguments_raise_value_error():
    with pytest.raises(ValueError, match="samples"):
        check_properties("ws", samples=0)
    with pytest.raises(ValueError, match="tau"):
        check_properties("ws", tau=2.0)
    with pytest.raises(ValueError, match="unknown method"):
        check_properties("nope")
    with pytest.raises(ValueError, match="K"):
        check_properties("ws", K_values=(1,))


def test_pcd_properties_hold_for_a_large_tau_too():
    r = check_properties("pcd", samples=2, tau=0.6, hparams={"tau": 0.6})
    assert r.holds["primary_anchored"] and r.holds["per_secondary_progress"]
    # UPGrad makes no such promise (it stops on exactly cancelling rows)
    assert not check_properties("upgrad", samples=2, tau=0.6).holds["per_secondary_progress"]
