"""Custom formulas: safe whitelist parser, vectorized values, exact forward-mode gradients."""
import inspect
import math
import re

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import pcd.problems.custom as custom
from pcd.problems import make
from pcd.problems.custom import parse

PTS = np.array([[0.3, -1.2], [1.7, 0.4], [-2.1, 2.5], [0.9, 0.11]])


@pytest.mark.parametrize("text,fn", [
    ("(x**2-4)**2/4 + y**2/2", lambda x, y: (x**2 - 4) ** 2 / 4 + y**2 / 2),
    ("exp(-x) * sin(y) + cos(x*y)", lambda x, y: np.exp(-x) * np.sin(y) + np.cos(x * y)),
    ("tanh(x - y) / (1 + x**2)", lambda x, y: np.tanh(x - y) / (1 + x**2)),
    ("sqrt(x**2 + y**2 + 1) + log(2 + y**2)", lambda x, y: np.sqrt(x**2 + y**2 + 1) + np.log(2 + y**2)),
    ("relu(abs(x-2)-0.5) + max(x, y) - min(x, -y) + pi - e", lambda x, y: np.maximum(np.abs(x - 2) - 0.5, 0)
     + np.maximum(x, y) - np.minimum(x, -y) + math.pi - math.e),
    ("-x**2 + 2**-1 * y", lambda x, y: -(x**2) + 0.5 * y),
    ("3", lambda x, y: 3 + 0 * x),
    ("x**0.5 + y**-2", lambda x, y: np.abs(x) ** 0.5 * 0 + x**0.5 + y**-2.0),
])
def test_values_and_exact_gradients(text, fn):
    e = parse(text)
    X = np.abs(PTS) if "x**0.5" in text else PTS
    v, g = e.evaluate(X)
    np.testing.assert_allclose(v, fn(X[:, 0], X[:, 1]), rtol=1e-13)
    h = 1e-6
    fd = np.stack([(fn(X[:, 0] + h, X[:, 1]) - fn(X[:, 0] - h, X[:, 1])) / (2 * h),
                   (fn(X[:, 0], X[:, 1] + h) - fn(X[:, 0], X[:, 1] - h)) / (2 * h)], axis=1)
    np.testing.assert_allclose(g, fd, rtol=1e-6, atol=1e-6)


def test_gradient_is_exact_not_finite_differences():
    # d/dx x**3 at x = 1e-3 is 3e-6 exactly; a finite difference with any practical step is off
    _, g = parse("x**3").evaluate([[1e-3, 0.0]])
    assert g[0, 0] == pytest.approx(3e-6, rel=1e-15) and g[0, 1] == 0.0


def test_min_norm_subgradients_at_kinks():
    assert parse("abs(x)").evaluate([[0.0, 0.0]])[1].tolist() == [[0.0, 0.0]]
    assert parse("relu(x)").evaluate([[0.0, 0.0]])[1].tolist() == [[0.0, 0.0]]
    # tie of max(x, -x) at 0: the segment [e1, -e1] contains 0
    assert parse("max(x, -x)").evaluate([[0.0, 1.0]])[1].tolist() == [[0.0, 0.0]]
    # tie of max(x, y) at x = y: min-norm point of [e1, e2] is (0.5, 0.5)
    np.testing.assert_allclose(parse("max(x, y)").evaluate([[1.0, 1.0]])[1], [[0.5, 0.5]])


def test_domain_errors_give_nan_not_exceptions():
    v, g = parse("log(x) + sqrt(y) + 1/x").evaluate([[-1.0, -1.0], [0.0, 1.0]])
    assert np.isnan(v[0]) and not np.isfinite(v[1])


@pytest.mark.parametrize("text,pos,word", [
    ("x + foo(y)", 4, "unknown function 'foo'"),
    ("x + z", 4, "unknown name 'z'"),
    ("x.real", 0, "Attribute is not allowed"),
    ("__import__('os')", 11, "character \"'\" is not allowed"),
    ("x^2", 1, "write x**2"),
    ("x**y", 3, "exponent must be a constant"),
    ("x**100", 3, "exponent out of range"),
    ("sin(x, y)", 0, "exactly 1 argument"),
    ("max(x)", 0, "exactly 2 arguments"),
    ("x +* 2", 3, "syntax error"),
    ("(x + 1", 6, "missing ')'"),
    ("x)", 1, "unbalanced ')'"),
    ("x if y else 1", 0, "IfExp is not allowed"),
    ("x == y", 2, "character '=' is not allowed"),
    ("True + x", 0, "not a number"),
    ("1e300 * x", 0, "number out of range"),
    ("sin + 1", 0, "must be called"),
    ("x; y", 1, "character ';' is not allowed"),
    ("[x]", 0, "character '[' is not allowed"),
])
def test_rejections_point_at_the_offending_token(text, pos, word):
    with pytest.raises(ValueError) as info:
        parse(text)
    msg = str(info.value)
    assert word in msg
    assert f"at position {pos}" in msg
    assert "allowed:" in msg


def test_size_bounds():
    with pytest.raises(ValueError, match="too long"):
        parse("x+" * 300 + "x")
    with pytest.raises(ValueError, match="nested deeper"):
        parse("(" * 40 + "x" + ")" * 40)
    with pytest.raises(ValueError, match="more than 200 elements"):
        parse("+".join(["x*y"] * 120)[:399])
    with pytest.raises(ValueError, match="empty"):
        parse("   ")
    with pytest.raises(ValueError, match="must be a string"):
        parse(3)


def test_no_eval_exec_or_compile_of_user_text():
    src = inspect.getsource(custom)
    code = "\n".join(line.split("#")[0] for line in src.splitlines())
    assert not re.search(r"(?<![_\w])(eval|exec|compile)\s*\(", code)


def test_custom_problem_equals_saddle2d_and_validates():
    p = make("custom")
    s = make("saddle2d")
    X = np.random.default_rng(1).normal(size=(50, 2)) * 2
    np.testing.assert_array_equal(p.losses_and_jacobian(X)[0], s.losses_and_jacobian(X)[0])
    np.testing.assert_array_equal(p.losses_and_jacobian(X)[1], s.losses_and_jacobian(X)[1])
    q = make("custom", primary="x**2 + y**2", secondaries=["(x-1)**2", "(y-1)**2"], starts=[[0.5, 0.5]])
    assert q.K == 3 and q.default_starts().tolist() == [[0.5, 0.5]]
    with pytest.raises(ValueError, match="custom secondary 2: unknown name 'z'"):
        make("custom", primary="x", secondaries=["y", "z"])
    with pytest.raises(ValueError, match="min < max"):
        make("custom", bounds=[[1, 0], [0, 1]])
    with pytest.raises(ValueError, match="1 to 7 secondary"):
        make("custom", secondaries=[])


# ---- fuzzing -----------------------------------------------------------------------------------
ALPHABET = "xyzabcdeilmnoprstw0123456789.+-*/(),^_ =[]'\"!@;:\n"


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.text(alphabet=ALPHABET, max_size=60))
def test_fuzz_arbitrary_text_parses_or_raises_valueerror(text):
    try:
        e = parse(text)
    except ValueError as exc:
        assert str(exc)
        return
    v, g = e.evaluate(PTS)  # whatever parsed must evaluate without raising
    assert v.shape == (4,) and g.shape == (4, 2)


SMOOTH_1 = {"exp": lambda a: np.exp(a), "sin": np.sin, "cos": np.cos, "tanh": np.tanh}


def smooth_exprs():
    leaf = st.one_of(st.sampled_from(["x", "y"]), st.floats(-3, 3, allow_nan=False).map(lambda c: f"({c!r})"))

    def extend(children):
        return st.one_of(
            st.tuples(children, st.sampled_from(["+", "-", "*"]), children).map(lambda t: f"({t[0]} {t[1]} {t[2]})"),
            st.tuples(st.sampled_from(sorted(SMOOTH_1)), children).map(lambda t: f"{t[0]}({t[1]})"),
            st.tuples(children, st.integers(0, 3)).map(lambda t: f"({t[0]})**{t[1]}"),
        )
    return st.recursive(leaf, extend, max_leaves=8)


def py_value(text, x, y):
    """Reference evaluation for the test only: the generated text uses only these names."""
    env = {"x": x, "y": y, "exp": math.exp, "sin": math.sin, "cos": math.cos, "tanh": math.tanh}
    return eval(text, {"__builtins__": {}}, env)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(smooth_exprs(), st.floats(-1.5, 1.5), st.floats(-1.5, 1.5))
def test_fuzz_random_smooth_expressions_value_and_gradient(text, x0, y0):
    try:
        e = parse(text)
    except ValueError:
        return  # e.g. more than 200 nodes
    v, g = e.evaluate([[x0, y0]])
    try:
        ref = py_value(text, x0, y0)
    except (OverflowError, ZeroDivisionError):
        return
    if not math.isfinite(ref) or abs(ref) > 1e8:
        return
    assert v[0] == pytest.approx(ref, rel=1e-9, abs=1e-9)
    h = 1e-6
    fx = (py_value(text, x0 + h, y0) - py_value(text, x0 - h, y0)) / (2 * h)
    fy = (py_value(text, x0, y0 + h) - py_value(text, x0, y0 - h)) / (2 * h)
    scale = max(1.0, abs(fx), abs(fy), abs(ref))
    np.testing.assert_allclose(g[0], [fx, fy], rtol=1e-4, atol=1e-4 * scale)
