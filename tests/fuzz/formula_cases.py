"""Formula grammar fuzz: random expressions from the custom-formula grammar (and beyond it).

:func:`check` parses one text and evaluates it on a few points: a failure is any exception
other than ``ValueError`` from ``parse``, any exception from ``evaluate``, or a NaN argument of
``min``/``max`` that does not come out as NaN. :func:`sweep` runs ``n`` grammar-generated
inputs plus hand-written hostile ones and random text; returns ``(tried, failures)``.
"""
from __future__ import annotations

import math
import string

import numpy as np

from pcd.problems.custom import parse

PTS = np.array([[0.3, -1.2], [1.7, 0.4], [-2.1, 2.5], [0.0, 0.0], [1e-300, -1e300], [5e-324, 1e308]])

HAND = [
    "x**min(2,3)", "x**max(1,2)", "x**(1+1)", "x**sqrt(4)", "x**abs(-2)", "x**relu(3)", "x**-(2)",
    "x**(2**100)", "x**(1/0)", "x**(0/0)", "x**log(-1)", "9" * 400, "1" + "0" * 398, "x*" + "9" * 398,
    "1e400*x", "1e308*x*1e308", "max(0/0, x)", "min(x, 0/0)", "max(log(-1), y)", "min(sqrt(-1), x)",
    "x**(min(2,3)+max(1,0))", "(-8)**(1/3)+x", "exp(1000*x)", "log(x)", "sqrt(y)+1/x", "x**0.5",
    "0**-1+x", "x^2", "__import__('os')", "x.real", "x[0]", "lambda: 1", "x if y else 1", "x < y",
    "()", "(((((((((((((((((((((((((((((((x)))))))))))))))))))))))))))))))", "x" + "+x" * 300,
    "-" * 390 + "x", "sin(" * 40 + "x" + ")" * 40, "max(x)", "max(x, y, 1)", "f(x)", "exp", "",
    "   ", "\x00", "x\ny", "1_000*x", "0x10*x", "1j*x", "True*x", "None", "'a'", "x ** y", "2 ** x",
    "x**16", "x**17", "x**-16.5", "min(x, y)**2", "max(x, y)**min(2, 3)", "(x**2)**8**0.5",
]

_ATOMS = ["x", "y", "pi", "e", "0", "1", "2", "0.5", "1e-300", "1e12", "1e13", "9" * 30, "3.25", "1e308"]
_F1 = ["abs", "exp", "log", "sqrt", "sin", "cos", "tanh", "relu"]


def formula(rng: np.random.Generator, depth: int = 0) -> str:
    """A random expression of the grammar (with constants, exponents and min/max inside)."""
    r = rng.random()
    if depth > 4 or r < 0.25:
        return str(rng.choice(_ATOMS))
    if r < 0.45:
        op = str(rng.choice(["+", "-", "*", "/"]))
        return f"({formula(rng, depth + 1)} {op} {formula(rng, depth + 1)})"
    if r < 0.6:
        # exponent: a constant sub-expression (sometimes not constant, sometimes out of range)
        ex = str(rng.choice(["2", "3", "0.5", "-1", "min(2, 3)", "max(1, 2)", "(1+1)", "sqrt(4)", "abs(-2)",
                             "(2**5)", "x", "(0/0)", "log(2)", "min(0/0, 2)", "99"]))
        return f"({formula(rng, depth + 1)})**{ex}"
    if r < 0.8:
        return f"{rng.choice(_F1)}({formula(rng, depth + 1)})"
    if r < 0.92:
        return f"{rng.choice(['min', 'max'])}({formula(rng, depth + 1)}, {formula(rng, depth + 1)})"
    return f"-{formula(rng, depth + 1)}"


def random_text(rng: np.random.Generator) -> str:
    alphabet = string.printable + "π∞é\u202e"
    return "".join(rng.choice(list(alphabet), size=int(rng.integers(0, 60))))


def check(text: str) -> str | None:
    """None when ``text`` is handled correctly, else a one-line description of the failure."""
    try:
        e = parse(text)
    except ValueError as exc:
        if "\n" in str(exc):
            return f"{text[:40]!r}: multi-line message"
        return None
    except Exception as exc:
        return f"{text[:40]!r}: parse raised {type(exc).__name__}: {exc}"[:160]
    try:
        v, g = e.evaluate(PTS)
        if hasattr(e, "domain_errors"):  # (absent before issue 12; lets the script measure old code)
            e.domain_errors(PTS)
    except Exception as exc:
        return f"{text[:40]!r}: evaluate raised {type(exc).__name__}: {exc}"[:160]
    if v.shape != (len(PTS),) or g.shape != (len(PTS), 2):
        return f"{text[:40]!r}: wrong shapes {v.shape} {g.shape}"
    # NaN inside min/max must come out as NaN (never silently dropped)
    for fn in ("min", "max"):
        if text.startswith(f"{fn}(0/0"):
            if not np.isnan(v).all():
                return f"{text[:40]!r}: NaN dropped by {fn}"
    return None


def sweep(n: int = 5000, seed: int = 0) -> tuple[int, list[str]]:
    rng = np.random.default_rng(seed)
    texts = list(HAND)
    texts += [formula(rng) for _ in range(n)]
    texts += [random_text(rng) for _ in range(max(1, n // 5))]
    texts += [f"{fn}(0/0, {formula(rng)})" for fn in ("min", "max") for _ in range(50)]
    failures = [f for f in (check(t) for t in texts) if f]
    return len(texts), failures


def constant_exponent_is_exact(text: str, value: float) -> bool:
    """``x**(<text>)`` at x = 2 equals ``2**value`` (constant sub-expressions folded exactly)."""
    v, _ = parse(f"x**({text})").evaluate(np.array([[2.0, 0.0]]))
    return math.isclose(float(v[0]), 2.0**value, rel_tol=1e-12)
