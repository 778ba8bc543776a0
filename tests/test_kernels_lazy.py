"""numba is imported lazily (pcd._kernels): importing the library does not import it; the first
compiled call does, and every compiled path then gives the bits it gave before (the method and
fast-path tests prove those); without numba everything runs on NumPy. Each case runs in a fresh
interpreter (this one has numba imported already)."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
HAS_NUMBA = __import__("importlib.util").util.find_spec("numba") is not None


def _py(code: str, tmp_path: Path) -> dict:
    script = tmp_path / "case.py"  # a file: numba's on-disk cache needs one
    script.write_text(textwrap.dedent(code))
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    out = subprocess.run([sys.executable, str(script)], cwd=ROOT, capture_output=True, text=True, timeout=300, env=env)
    assert out.returncode == 0, out.stderr[-3000:]
    return json.loads(out.stdout.strip().splitlines()[-1])


@pytest.mark.skipif(not HAS_NUMBA, reason="numba not installed")
def test_import_does_not_import_numba_and_the_first_compiled_call_does(tmp_path):
    r = _py("""
        import json, sys
        import numpy as np
        import pcd, pcd.qp, pcd.engine, pcd.methods, pcd.direction, pcd.normalize
        from pcd import _kernels as k
        before = "numba" in sys.modules
        lazy = type(k.gram_rows).__name__
        # a module outside pcd with its own compiled functions, defined before numba is imported
        @k.jit(inline=True)
        def half(a):
            return 0.5 * a
        @k.jit
        def halves(x, out):
            for i in range(x.shape[0]):
                out[i] = half(x[i])
        from pcd.engine import run
        res = run("saddle2d", ["pcd", "ws", "mgda", "pcgrad", "cagrad", "famo"], steps=200, record=[200])
        slow = run("saddle2d", ["pcd", "ws", "mgda", "pcgrad", "cagrad", "famo"], steps=200, record=[200], fast=False)
        # after numba is in: a new compiled function and a new formula (its overload) work at once
        @k.formula
        def twice(a):
            return 2.0 * k.where(a > 0, a, -a)
        @k.jit
        def rows(x, out):
            for i in range(x.shape[0]):
                out[i] = twice(x[i])
        out = np.empty(3)
        rows(np.array([1.0, -2.0, 3.0]), out)
        out2 = np.empty(2)
        halves(np.array([1.0, 3.0]), out2)
        from pcd.methods import imtlg
        print(json.dumps({"before": before, "lazy": lazy, "after": "numba" in sys.modules,
                          "real": type(k.gram_rows).__name__, "inline": type(imtlg._imtlg_k2_inverse_c).__name__,
                          "same": bool(np.array_equal(res.end, slow.end)), "new": out.tolist(), "halves": out2.tolist()}))
    """, tmp_path)
    assert r["before"] is False and r["lazy"] == "_LazyJit"
    assert r["after"] is True and r["real"] == "CPUDispatcher" and r["inline"] == "CPUDispatcher"
    assert r["same"] and r["new"] == [2.0, 4.0, 6.0] and r["halves"] == [0.5, 1.5]


def test_without_numba_every_path_is_numpy(tmp_path):
    r = _py("""
        import json, sys
        sys.modules["numba"] = None  # as if not installed
        import numpy as np
        import pcd.methods as methods
        from pcd import _kernels as k
        from pcd.engine import run
        res = run("saddle2d", ["pcd", "ws", "mgda", "imtlg"], steps=100, record=[100])
        G = np.array([[[1.0, 0.2], [0.2, 2.0]], [[1.0, -1.0], [-1.0, 1.0]]])
        w = methods.make("imtlg")(G).weights
        print(json.dumps({"available": k.AVAILABLE, "plain": type(k.gram_rows).__name__,
                          "finite": bool(np.isfinite(res.end).all()), "w": w.tolist()}))
    """, tmp_path)
    assert r["available"] is False and r["plain"] == "function" and r["finite"]
    assert r["w"][1] == [0.0, 0.0]
