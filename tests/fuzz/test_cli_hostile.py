"""The CLI hostile-argument table (tests/fuzz/cli_cases.py): one ``error:`` line and exit 2 each."""
from __future__ import annotations

import json
import subprocess
import sys

import pytest

from tests.fuzz.cli_cases import cases, run_case


@pytest.fixture(scope="module")
def table(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("hostile")
    return tmp, cases(tmp)


def test_every_hostile_call_is_one_line_exit_2(table):
    tmp, cs = table
    assert len(cs) >= 200
    failures = []
    for argv in cs:
        outcome, rc, msg = run_case(argv, timeout_s=30)
        if outcome != "ok":
            failures.append(f"{outcome} rc={rc} {[a[:30] for a in argv]}: {msg[-160:]}")
    assert not failures, f"{len(failures)} of {len(cs)} hostile calls:\n" + "\n".join(failures)


def test_nothing_was_written_by_refused_calls(table):
    tmp, _ = table
    assert not (tmp / "out").exists()  # prune refused before creating its run folder


def test_extreme_but_valid_gram_is_solved_finite(tmp_path):
    """G = [[a, -a], [-a, a]] with a = 1.7e308 (g2 = -g1) is a valid Gram matrix: the answer is
    the one at a = 1 (weights [1, 1 + tau]), never inf."""
    out = tmp_path / "o.json"
    rc = subprocess.run([sys.executable, "-m", "pcd", "solve", "--gram", "[[1.7e308,-1.7e308],[-1.7e308,1.7e308]]",
                         "--json", str(out)], capture_output=True, text=True, timeout=60).returncode
    assert rc == 0
    w = json.loads(out.read_text())["weights"]
    assert w == pytest.approx([1.0, 1.02])
