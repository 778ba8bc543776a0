"""benchmarks/gpu_check.py skips cleanly without a GPU (one JSON line set, exit 0) and refuses bad input."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

SCRIPT = Path(__file__).resolve().parents[2] / "benchmarks" / "gpu_check.py"


def _run(*args, env=None):
    return subprocess.run([sys.executable, str(SCRIPT), *args], capture_output=True, text=True, timeout=120,
                          env=env)


def test_skips_cleanly_without_a_gpu(tmp_path):
    env = dict(os.environ, CUDA_VISIBLE_DEVICES="")  # no device even on a GPU machine
    out = tmp_path / "s.json"
    r = _run("--json", str(out), env=env)
    assert r.returncode == 0, r.stderr
    res = json.loads(r.stdout)
    assert res == {"skipped": True, "reason": "no CUDA device (torch.cuda.is_available() is False)"}
    assert json.loads(out.read_text()) == res


def test_refuses_out_of_range_image_count():
    r = _run("--train-images", "10")
    assert r.returncode == 2 and r.stderr.strip() == "error: --train-images must be in [1024, 50000], got 10"
