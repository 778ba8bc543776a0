"""``custom``: objectives typed as formulas in ``x`` and ``y``, parsed safely, with exact gradients.

Safety. The text is checked character by character, then parsed by Python's ``ast`` module
(``ast.parse`` only builds a syntax tree; nothing is compiled or executed), then the tree is walked
accepting ONLY these node types::

    numbers (int/float literals)      names: x, y, pi, e
    binary + - * / **                 unary + -
    calls abs exp log sqrt sin cos tanh relu (1 argument), min max (2 arguments)

Anything else -- attribute access, subscripts, strings, keywords, lambdas, comparisons, other
names -- is rejected with a ``ValueError`` that names the offending token and its (0-based)
position. There is no ``eval``/``compile``/``exec`` of user text anywhere. Size is bounded
(<= 400 characters, <= 200 nodes, parentheses nested <= 30 deep, syntax tree <= 120 deep), exponents must be constants with
``|p| <= 16`` and literals ``|c| <= 1e12``.

Evaluation is vectorized NumPy over a batch of points, and gradients are exact: the tree is
evaluated in forward-mode automatic differentiation (dual numbers ``(value, gradient)``), not by
finite differences. At kinks the gradient is the min-norm element of the Clarke subdifferential of
the kinked function: ``abs'(0) = 0``, ``relu'(0) = 0``, and for ``max(a, b)`` / ``min(a, b)`` at a
tie the min-norm point of the segment ``[grad a, grad b]``. (For a composition this is one
valid subgradient, not necessarily the min-norm one of the whole expression.) Domain errors
(``log(-1)``, ``sqrt(-1)``, ``1/0``) give NaN/inf, which the engine reports as divergence.

Example::

    make("custom", primary="(x**2-4)**2/4 + y**2/2",
         secondaries=["relu(abs(x-2)-0.5) + relu(abs(y)-0.5)"])
"""
from __future__ import annotations

import ast
import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from pcd import _validate as V
from pcd.problems.base import Problem, check_float, check_points, register

MAX_CHARS = 400
MAX_NODES = 200
MAX_DEPTH = 30          # parentheses
MAX_TREE_DEPTH = 120    # syntax-tree depth (a flat sum of n terms is n deep)
MAX_EXPONENT = 16.0
MAX_LITERAL = 1e12
MAX_SECONDARIES = 7

VARIABLES = ("x", "y")
CONSTANTS = {"pi": math.pi, "e": math.e}
FUNCTIONS_1 = ("abs", "exp", "log", "sqrt", "sin", "cos", "tanh", "relu")
FUNCTIONS_2 = ("min", "max")
_ALLOWED_CHARS = set("0123456789.+-*/()," "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ_ \t")
_ALLOWED_HELP = ("allowed: numbers, x, y, pi, e, + - * / **, parentheses, "
                 "abs exp log sqrt sin cos tanh relu, min(a, b), max(a, b)")


def _err(text: str, pos: int, msg: str) -> ValueError:
    pos = max(0, min(int(pos), len(text)))
    snippet = text[pos:pos + 12]
    where = f"at position {pos}" + (f" ({snippet!r})" if snippet else " (end of text)")
    err = ValueError(f"{msg} {where}; {_ALLOWED_HELP}")
    err.formula, err.position = text, pos  # type: ignore[attr-defined]  # for a caret under the text
    return err


# A compiled expression is a nested tuple:
#   ("c", value) | ("v", index) | ("+"|"-"|"*"|"/", a, b) | ("neg", a) | ("pow", a, p)
#   | ("f", name, a) | ("min"|"max", a, b)
class Expression:
    """A parsed, validated formula in ``x``, ``y``; call :meth:`evaluate` for values + gradients."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.tree, self.n_nodes = _parse(text)

    def evaluate(self, points: Any) -> tuple[np.ndarray, np.ndarray]:
        """Values ``[B]`` and exact gradients ``[B, 2]`` at ``points [B, 2]`` (no exceptions on
        domain errors: NaN/inf propagate)."""
        X = check_points(points, 2, "custom")
        with np.errstate(all="ignore"):
            v, g = _eval(self.tree, X)
        B = X.shape[0]
        v = np.broadcast_to(np.asarray(v, dtype=np.float64), (B,)).copy()
        g = np.zeros((B, 2)) if g is None else np.broadcast_to(g, (B, 2)).copy()
        return v, g

    def domain_errors(self, points: Any) -> str | None:
        """One line naming the domain errors at ``points`` (log of a number <= 0, sqrt of a
        negative, division by zero, ..., or a value that overflows), with their share of the
        points and the first such point; ``None`` where the formula is defined everywhere."""
        X = check_points(points, 2, "custom")
        notes: dict[str, np.ndarray] = {}
        with np.errstate(all="ignore"):
            v, g = _eval(self.tree, X, notes)
        B = X.shape[0]
        v = np.broadcast_to(np.asarray(v, dtype=np.float64), (B,))
        bad_v = ~np.isfinite(v)
        if g is not None:
            bad_v = bad_v | ~np.isfinite(np.broadcast_to(g, (B, 2))).all(axis=1)
        parts = []
        seen = np.zeros(B, dtype=bool)
        for kind, mask in notes.items():
            seen |= mask
            parts.append((kind, mask))
        rest = bad_v & ~seen
        if rest.any():
            parts.append(("value or gradient not finite", rest))
        if not parts:
            return None
        out = []
        for kind, mask in parts:
            i = int(np.argmax(mask))
            out.append(f"{kind} on {100.0 * mask.mean():.3g}% of the points "
                       f"(first at x={X[i, 0]:.4g}, y={X[i, 1]:.4g})")
        return "; ".join(out)

    def __repr__(self) -> str:
        return f"Expression({self.text!r})"


def parse(text: Any) -> Expression:
    """Parse ``text`` into an :class:`Expression` or raise ``ValueError`` pointing at the problem."""
    return Expression(text)


def _parse(text: Any) -> tuple[tuple, int]:
    if not isinstance(text, str):
        raise ValueError(f"formula must be a string, got {type(text).__name__}")
    if not text.strip():
        raise ValueError("formula is empty; type an expression in x and y, e.g. (x**2-4)**2/4 + y**2/2")
    if len(text) > MAX_CHARS:
        raise ValueError(f"formula is too long ({len(text)} characters; at most {MAX_CHARS})")
    depth = 0
    for i, ch in enumerate(text):
        if ch == "^":
            raise _err(text, i, "'^' is not a power here (write x**2 instead of x^2)")
        if ch not in _ALLOWED_CHARS:
            raise _err(text, i, f"character {ch!r} is not allowed")
        if ch == "(":
            depth += 1
            if depth > MAX_DEPTH:
                raise _err(text, i, f"parentheses nested deeper than {MAX_DEPTH}")
        elif ch == ")":
            depth -= 1
            if depth < 0:
                raise _err(text, i, "unbalanced ')'")
    if depth > 0:
        raise _err(text, len(text), "missing ')'")
    try:
        node = ast.parse(text.strip(), mode="eval")
    except SyntaxError as exc:
        off = (exc.offset or 1) - 1 + (len(text) - len(text.lstrip()))
        raise _err(text, off, f"syntax error ({exc.msg})") from None
    except (ValueError, RecursionError, MemoryError):
        raise ValueError("formula could not be parsed (too complex)") from None
    counter = [0]
    offset = len(text) - len(text.lstrip())
    tree = _convert(node.body, text, counter, 0, offset)
    return tree, counter[0]


def _pos(node: ast.AST, offset: int) -> int:
    return getattr(node, "col_offset", 0) + offset


def _has_var(tree: tuple) -> bool:
    kind = tree[0]
    if kind == "v":
        return True
    if kind == "c":
        return False
    return any(_has_var(t) for t in tree[1:] if isinstance(t, tuple))


def _convert(node: ast.AST, text: str, counter: list[int], depth: int, offset: int) -> tuple:
    counter[0] += 1
    if counter[0] > MAX_NODES:
        raise _err(text, _pos(node, offset), f"formula has more than {MAX_NODES} elements")
    if depth > MAX_TREE_DEPTH:
        raise _err(text, _pos(node, offset), f"formula nested deeper than {MAX_TREE_DEPTH}")
    d = depth + 1
    if isinstance(node, ast.Constant):
        val = node.value
        if isinstance(val, bool) or not isinstance(val, (int, float)):
            raise _err(text, _pos(node, offset), f"literal {V.show(val, 30)} is not a number")
        # compare before converting: a 400-digit integer is refused, never an OverflowError
        if (isinstance(val, int) and abs(val) > MAX_LITERAL) or not math.isfinite(float(val)) \
                or abs(float(val)) > MAX_LITERAL:
            raise _err(text, _pos(node, offset), f"number out of range (|c| <= {MAX_LITERAL:g})")
        return ("c", float(val))
    if isinstance(node, ast.Name):
        if node.id in VARIABLES:
            return ("v", VARIABLES.index(node.id))
        if node.id in CONSTANTS:
            return ("c", CONSTANTS[node.id])
        if node.id in FUNCTIONS_1 + FUNCTIONS_2:
            raise _err(text, _pos(node, offset), f"function {node.id!r} must be called with parentheses")
        raise _err(text, _pos(node, offset), f"unknown name {node.id!r}")
    if isinstance(node, ast.UnaryOp):
        if isinstance(node.op, ast.USub):
            a = _convert(node.operand, text, counter, d, offset)
            return ("c", -a[1]) if a[0] == "c" else ("neg", a)
        if isinstance(node.op, ast.UAdd):
            return _convert(node.operand, text, counter, d, offset)
        raise _err(text, _pos(node, offset), "operator not allowed")
    if isinstance(node, ast.BinOp):
        ops = {ast.Add: "+", ast.Sub: "-", ast.Mult: "*", ast.Div: "/"}
        if isinstance(node.op, ast.Pow):
            a = _convert(node.left, text, counter, d, offset)
            p = _convert(node.right, text, counter, d, offset)
            if _has_var(p):
                raise _err(text, _pos(node.right, offset), "the exponent must be a constant number")
            pv = _constant(p)  # constant sub-expressions (min(2, 3), 1+1, sqrt(4)) are folded exactly
            if not math.isfinite(pv) or abs(pv) > MAX_EXPONENT:
                raise _err(text, _pos(node.right, offset), f"exponent out of range (|p| <= {MAX_EXPONENT:g})")
            return ("pow", a, pv)
        for cls, sym in ops.items():
            if isinstance(node.op, cls):
                return (sym, _convert(node.left, text, counter, d, offset),
                        _convert(node.right, text, counter, d, offset))
        raise _err(text, _pos(node, offset), f"operator {type(node.op).__name__} is not allowed")
    if isinstance(node, ast.Call):
        if not isinstance(node.func, ast.Name):
            raise _err(text, _pos(node, offset), "only plain function calls like sin(x) are allowed")
        fname = node.func.id
        if node.keywords:
            raise _err(text, _pos(node, offset), f"{fname}() takes no keyword arguments")
        if any(isinstance(a, ast.Starred) for a in node.args):
            raise _err(text, _pos(node, offset), "'*' arguments are not allowed")
        if fname in FUNCTIONS_1:
            if len(node.args) != 1:
                raise _err(text, _pos(node, offset), f"{fname}() takes exactly 1 argument, got {len(node.args)}")
            return ("f", fname, _convert(node.args[0], text, counter, d, offset))
        if fname in FUNCTIONS_2:
            if len(node.args) != 2:
                raise _err(text, _pos(node, offset), f"{fname}() takes exactly 2 arguments, got {len(node.args)}")
            return (fname, _convert(node.args[0], text, counter, d, offset),
                    _convert(node.args[1], text, counter, d, offset))
        raise _err(text, _pos(node, offset), f"unknown function {fname!r}")
    raise _err(text, _pos(node, offset), f"{type(node).__name__} is not allowed")


def _constant(tree: tuple) -> float:
    """The value of a variable-free tree (NaN/inf where it has none: ``0/0``, ``log(-1)``)."""
    if tree[0] == "c":
        return float(tree[1])
    with np.errstate(all="ignore"):
        v = _eval(tree, np.zeros((1, 2)))[0]
    return float(np.asarray(v, dtype=np.float64).reshape(-1)[0])


def _mul_g(g: np.ndarray | None, s: Any) -> np.ndarray | None:
    if g is None:
        return None
    return g * np.asarray(s)[..., None] if np.ndim(s) else g * s


def _add_g(a: np.ndarray | None, b: np.ndarray | None) -> np.ndarray | None:
    if a is None:
        return b
    if b is None:
        return a
    return a + b


def _note(notes: dict, kind: str, mask: Any, X: np.ndarray) -> None:
    m = np.broadcast_to(np.asarray(mask, dtype=bool), (X.shape[0],))
    if m.any():
        notes[kind] = notes[kind] | m if kind in notes else m.copy()


def _eval(t: tuple, X: np.ndarray, notes: dict | None = None) -> tuple[Any, np.ndarray | None]:
    """Forward-mode AD: returns (value, gradient [B, 2] or None for a constant).

    ``notes``, when given, collects domain errors: ``{kind: boolean mask [B]}``."""
    k = t[0]
    if k == "c":
        return np.float64(t[1]), None  # NumPy scalars: 1/0 -> inf (reported), never ZeroDivisionError
    if k == "v":
        gv = np.zeros((X.shape[0], 2))
        gv[:, t[1]] = 1.0
        return X[:, t[1]], gv
    if k == "neg":
        v, g = _eval(t[1], X, notes)
        return -v, (None if g is None else -g)
    if k in ("+", "-", "*", "/"):
        a, ga = _eval(t[1], X, notes)
        b, gb = _eval(t[2], X, notes)
        if k == "+":
            return a + b, _add_g(ga, gb)
        if k == "-":
            return a - b, _add_g(ga, None if gb is None else -gb)
        if k == "*":
            return a * b, _add_g(_mul_g(ga, b), _mul_g(gb, a))
        if notes is not None:
            _note(notes, "division by zero", np.asarray(b) == 0, X)
        v = a / b
        return v, _add_g(_mul_g(ga, 1.0 / b), _mul_g(gb, -v / b))
    if k == "pow":
        a, ga = _eval(t[1], X, notes)
        p = t[2]
        if p == 0:
            return np.ones_like(np.asarray(a, dtype=float)), None
        if notes is not None:
            aa = np.asarray(a)
            if not float(p).is_integer():
                _note(notes, f"negative number to the power {p:g}", aa < 0, X)
            if p < 0:
                _note(notes, f"zero to the negative power {p:g}", aa == 0, X)
        v = np.power(a, p)
        if p == 1:
            return v, ga
        if ga is None:
            return v, None
        if p == 2:
            d = 2.0 * a
        elif float(p).is_integer():
            d = p * np.power(a, p - 1)
        else:
            d = p * np.power(a, p - 1)
        return v, _mul_g(ga, d)
    if k == "f":
        name = t[1]
        a, ga = _eval(t[2], X, notes)
        if name == "abs":
            return np.abs(a), _mul_g(ga, np.sign(a))
        if name == "exp":
            v = np.exp(a)
            if notes is not None:
                _note(notes, "exp overflow", np.isinf(v) & np.isfinite(a), X)
            return v, _mul_g(ga, v)
        if notes is not None and name in ("log", "sqrt"):
            aa = np.asarray(a)
            _note(notes, "log of a number <= 0" if name == "log" else "sqrt of a negative number",
                  aa <= 0 if name == "log" else aa < 0, X)
        if name == "log":
            return np.log(a), _mul_g(ga, 1.0 / np.asarray(a, dtype=float))
        if name == "sqrt":
            v = np.sqrt(a)
            return v, _mul_g(ga, 0.5 / v)
        if name == "sin":
            return np.sin(a), _mul_g(ga, np.cos(a))
        if name == "cos":
            return np.cos(a), _mul_g(ga, -np.sin(a))
        if name == "tanh":
            v = np.tanh(a)
            return v, _mul_g(ga, 1.0 - v * v)
        if name == "relu":
            return np.maximum(a, 0.0), _mul_g(ga, (np.asarray(a) > 0).astype(float))
        raise AssertionError(name)  # pragma: no cover - the parser only emits known names
    if k in ("min", "max"):
        a, ga = _eval(t[1], X, notes)
        b, gb = _eval(t[2], X, notes)
        B = X.shape[0]
        a_arr = np.broadcast_to(np.asarray(a, dtype=float), (B,))
        b_arr = np.broadcast_to(np.asarray(b, dtype=float), (B,))
        ga_arr = np.zeros((B, 2)) if ga is None else np.broadcast_to(ga, (B, 2))
        gb_arr = np.zeros((B, 2)) if gb is None else np.broadcast_to(gb, (B, 2))
        pick_a = a_arr > b_arr if k == "max" else a_arr < b_arr
        v = np.where(pick_a | (a_arr == b_arr), a_arr, b_arr)
        nan = np.isnan(a_arr) | np.isnan(b_arr)
        if nan.any():  # NaN is never silently dropped: min/max of NaN is NaN
            v = np.where(nan, np.nan, v)
        g = np.where(pick_a[:, None], ga_arr, gb_arr)
        if nan.any():
            g = np.where(nan[:, None], np.nan, g)
        tie = a_arr == b_arr
        if tie.any():  # min-norm point of the segment [ga, gb]
            diff = ga_arr[tie] - gb_arr[tie]
            den = np.einsum("bn,bn->b", diff, diff)
            lam = np.where(den > 0, np.einsum("bn,bn->b", gb_arr[tie], -diff) / np.where(den > 0, den, 1.0), 1.0)
            lam = np.clip(lam, 0.0, 1.0)
            g = g.copy()
            g[tie] = lam[:, None] * ga_arr[tie] + (1 - lam[:, None]) * gb_arr[tie]
        return v, g
    raise AssertionError(k)  # pragma: no cover


@register
class CustomProblem(Problem):
    """Primary and secondaries typed as formulas in x, y (see the module docstring)."""

    name = "custom"
    display_name = "Custom formulas"
    description = "Type the primary and the secondaries as formulas in x and y."
    paper = ""

    def __init__(self, primary: str = "(x**2-4)**2/4 + y**2/2",
                 secondaries: str | Sequence[str] = ("relu(abs(x-2)-0.5) + relu(abs(y)-0.5)",),
                 bounds: Sequence[Sequence[float]] = ((-3.5, 3.5), (-2.0, 2.0)),
                 starts: Sequence[Sequence[float]] | None = None,
                 secondary: str | None = None) -> None:
        if secondary is not None:
            secondaries = [secondary]
        if isinstance(secondaries, str):
            secondaries = [secondaries]
        secondaries = list(secondaries)
        if not 1 <= len(secondaries) <= MAX_SECONDARIES:
            raise ValueError(f"custom: give 1 to {MAX_SECONDARIES} secondary formulas, got {len(secondaries)}")
        exprs = []
        for label, text in [("primary", primary)] + [(f"secondary {i + 1}", s) for i, s in enumerate(secondaries)]:
            try:
                exprs.append(parse(text))
            except ValueError as exc:
                err = ValueError(f"custom {label}: {exc}")
                err.formula = getattr(exc, "formula", None)  # type: ignore[attr-defined]
                err.position = getattr(exc, "position", None)  # type: ignore[attr-defined]
                err.which = label  # type: ignore[attr-defined]
                raise err from None
        self.exprs = exprs
        self.texts = [primary] + secondaries
        self.K = len(exprs)
        self.dim = 2
        self.bounds = _check_bounds(bounds)
        self._starts = None
        if starts is not None:
            arr = np.asarray(starts, dtype=float)
            if arr.ndim == 1:
                arr = arr[None]
            if arr.ndim != 2 or arr.shape[1] != 2 or arr.shape[0] < 1 or not np.isfinite(arr).all():
                raise ValueError(f"custom: starts must be finite points [[x, y], ...], got {starts!r}")
            self._starts = arr
        self.objective_names = tuple(["primary"] + [f"secondary {i + 1}" for i in range(self.K - 1)])

    def losses_and_jacobian(self, x):
        X = check_points(x, 2, self.name)
        L = np.empty((X.shape[0], self.K))
        J = np.empty((X.shape[0], self.K, 2))
        for k, e in enumerate(self.exprs):
            L[:, k], J[:, k] = e.evaluate(X)
        return L, J

    def domain_report(self, n: int = 61) -> list[str]:
        """Domain errors of each formula on an ``n x n`` grid over the plotting bounds, one line
        per objective that has any (e.g. ``"primary: log of a number <= 0 on 50% of the map ..."``);
        empty when every formula is defined on the whole map. The engine reports the trajectories
        that enter such a region as diverged; the page shows these lines next to the map."""
        n = V.integer(n, "n", low=2, high=V.LIMITS["grid"], strict=False)
        (x0, x1), (y0, y1) = self.bounds
        gx, gy = np.meshgrid(np.linspace(x0, x1, n), np.linspace(y0, y1, n))
        pts = np.stack([gx.ravel(), gy.ravel()], axis=1)
        out = []
        for name, e in zip(self.objective_names, self.exprs):
            msg = e.domain_errors(pts)
            if msg:
                out.append(f"{name}: {msg.replace('of the points', 'of the map')}")
        return out

    def default_starts(self) -> np.ndarray:
        if self._starts is not None:
            return self._starts.copy()
        (x0, x1), (y0, y1) = self.bounds
        return np.array([[x0 + 0.15 * (x1 - x0), y0 + 0.6 * (y1 - y0)],
                         [x0 + 0.1 * (x1 - x0), y0 + 0.5 * (y1 - y0)],
                         [x0 + 0.3 * (x1 - x0), y0 + 0.35 * (y1 - y0)]])

    def params(self) -> dict[str, Any]:
        out: dict[str, Any] = {"primary": self.texts[0], "secondaries": self.texts[1:],
                               "bounds": [list(b) for b in self.bounds]}
        if self._starts is not None:
            out["starts"] = self._starts.tolist()
        return out


def _check_bounds(bounds: Any) -> tuple[tuple[float, float], tuple[float, float]]:
    try:
        b = [(float(lo), float(hi)) for lo, hi in bounds]
    except (TypeError, ValueError):
        raise ValueError(f"bounds must be [[xmin, xmax], [ymin, ymax]], got {bounds!r}") from None
    if len(b) != 2:
        raise ValueError(f"bounds must be [[xmin, xmax], [ymin, ymax]], got {bounds!r}")
    for lo, hi in b:
        check_float(lo, "bound", who="custom")
        check_float(hi, "bound", who="custom")
        if not lo < hi:
            raise ValueError(f"custom: each bound needs min < max, got [{lo}, {hi}]")
    return (b[0], b[1])
