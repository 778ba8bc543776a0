"""Every registry method at extreme scales: finite weights (and direction) or a ``ValueError``.

:func:`sweep` calls each method on Jacobians ``J * sqrt(c)`` for Gram scales ``c`` from 1e-300
to 1e300, on subnormal Gram matrices and on tiny gradients (GradDrop's 1e-160 case), and
returns ``(tried, failures)``; a failure is NaN/inf in the output or an exception other than
``ValueError``. Used by ``tests/fuzz/test_numerics_fuzz.py`` and ``python -m tests.fuzz.measure``.
"""
from __future__ import annotations

import numpy as np

import pcd.methods as M

SCALES = (1e-300, 1e-250, 1e-200, 1e-160, 1e-100, 1.0, 1e100, 1e160, 1e200, 1e250, 1e300)


def _jacobians(K: int, rng: np.random.Generator, n: int = 6) -> list[np.ndarray]:
    a = rng.standard_normal((K, n))
    b = a.copy()
    b[1] = -b[0]  # exact conflict
    c = a.copy()
    c[1:] = c[0] + 1e-3 * c[1:]  # nearly parallel
    return [a, b, c]


def _call(method, J: np.ndarray, rng, B: int = 1) -> tuple[np.ndarray, np.ndarray | None]:
    """One call on a batch of ``B`` copies (B = 1: the scalar fast paths; B = 32: vectorized)."""
    Jb = np.repeat(J[None], B, axis=0)
    G = np.einsum("bkn,bln->bkl", Jb, Jb)
    kw = {}
    if method.needs_jacobian:
        kw["jacobian"] = Jb
    if method.needs_losses:
        kw["losses"] = np.ones((B, J.shape[0]))
    state = method.init_state(B, J.shape[0])
    out = method(G, state=state, rng=rng, **kw)
    d = getattr(out, "exact", None)
    if d is None and isinstance(out.info, dict):
        d = out.info.get("direction")
    return np.asarray(out.weights), None if d is None else np.asarray(d)


def sweep(Ks=(2, 3, 5, 8), seed: int = 0, methods=None, refused: list | None = None) -> tuple[int, list[str]]:
    """``(tried, failures)``; the calls answered with a ``ValueError`` are appended to ``refused``."""
    rng = np.random.default_rng(seed)
    tried, failures = 0, []
    names = methods or M.available()
    cases = []
    for K in Ks:
        for J in _jacobians(K, rng):
            for c in SCALES:
                with np.errstate(all="ignore"):
                    cases.append((K, f"scale {c:g}", J * np.sqrt(c)))
            # subnormal Gram entries: gradients ~1e-158 give G ~1e-316
            cases.append((K, "subnormal", J * 1e-158))
            cases.append((K, "tiny 1e-160", J * 1e-160))
        z = np.zeros((K, 6))
        z[0, 0] = 5e-324
        cases.append((K, "denormal primary", z))
    for name in names:
        for (K, what0, J), B in ((c, b) for c in cases for b in (1, 32)):
            what = f"{what0} B={B}"
            if not np.isfinite(J).all():
                continue
            try:
                method = M.get(name)()
            except ValueError:
                continue
            tried += 1
            try:
                with np.errstate(all="ignore"):
                    w, d = _call(method, J, np.random.default_rng(0), B)
            except ValueError as exc:
                if refused is not None:
                    refused.append(f"{name} K={K} {what}: {exc}"[:200])
                continue
            except Exception as exc:
                failures.append(f"{name} K={K} {what}: {type(exc).__name__}: {exc}"[:200])
                continue
            if not np.isfinite(w).all() or (d is not None and not np.isfinite(d).all()):
                failures.append(f"{name} K={K} {what}: non-finite output {w.ravel()[:4]}")
    return tried, failures
