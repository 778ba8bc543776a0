"""Formula grammar fuzz (tests/fuzz/formula_cases.py) + hypothesis on random text."""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import pcd.problems as P
from pcd.problems.custom import parse
from tests.fuzz import formula_cases as F


def test_grammar_fuzz_thousands_of_inputs():
    tried, failures = F.sweep(n=4000, seed=1)
    assert tried >= 4000
    assert not failures, f"{len(failures)}/{tried}:\n" + "\n".join(failures[:20])


@settings(max_examples=600, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.text(alphabet=st.sampled_from(list("xy0123456789.+-*/(), eipaxmnlogsqrtbcdhru_^!'\"[]")), max_size=80))
def test_random_text_is_parsed_or_refused_with_value_error(text):
    assert F.check(text) is None


@pytest.mark.parametrize("expr,value", [("min(2, 3)", 2), ("max(1, 2)", 2), ("1+1", 2), ("sqrt(4)", 2),
                                        ("abs(-3)", 3), ("relu(-1) + 1", 1), ("min(2,3) + max(1,0)", 3),
                                        ("-(2)", -2), ("2**3", 8), ("log(e)", 1)])
def test_constant_exponents_are_folded_exactly(expr, value):
    assert F.constant_exponent_is_exact(expr, value)


@pytest.mark.parametrize("text", ["9" * 400, "1" + "0" * 398, "x*" + "9" * 398, "x**(2**100)", "x**(0/0)",
                                  "x**log(-1)", "x**min(0/0, 2)"])
def test_huge_literals_and_bad_exponents_are_refused_in_one_line(text):
    with pytest.raises(ValueError) as e:
        parse(text)
    assert "\n" not in str(e.value) and "position" in str(e.value)


@pytest.mark.parametrize("text", ["max(0/0, x)", "min(x, 0/0)", "max(log(-1), y)", "min(sqrt(-1), x)"])
def test_nan_inside_min_max_is_kept(text):
    v, g = parse(text).evaluate(np.array([[1.0, 2.0], [-1.0, 0.5]]))
    assert np.isnan(v).all() and np.isnan(g).all()


def test_domain_errors_are_reported_as_such():
    p = P.make("custom", primary="log(x) + y**2", secondaries=["sqrt(y) + x**2", "x**2 + y**2"])
    rep = p.domain_report()
    assert len(rep) == 2
    assert rep[0].startswith("primary: log of a number <= 0 on ") and "% of the map" in rep[0]
    assert rep[1].startswith("secondary 1: sqrt of a negative number")
    assert P.make("custom").domain_report() == []
    assert "division by zero" in parse("1/x").domain_errors(np.array([[0.0, 1.0], [1.0, 1.0]]))
    assert "exp overflow" in parse("exp(x)").domain_errors(np.array([[1000.0, 0.0]]))
    assert parse("x**2").domain_errors(np.array([[1.0, 2.0]])) is None
