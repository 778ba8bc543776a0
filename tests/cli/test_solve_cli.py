import json
import subprocess
import sys

import pytest


def run(*args, stdin=None):
    return subprocess.run([sys.executable, "-m", "pcd", *args], capture_output=True, text=True,
                          input=stdin, timeout=60)


def test_help_lists_solve():
    r = run("--help")
    assert r.returncode == 0 and "solve" in r.stdout


def test_solve_k2_closed_form_and_json_shape(tmp_path):
    out = tmp_path / "r.json"
    r = run("solve", "--gram", "[[1,-0.5],[-0.5,1]]", "--tau", "0.3", "--json", str(out))
    assert r.returncode == 0, r.stderr
    data = json.loads(out.read_text())
    assert data["weights"] == pytest.approx([1.0, 0.8])
    assert data["active"] == [1] and data["feasible"] is True


def test_solve_from_stdin_object_with_per_secondary_tau():
    payload = json.dumps({"gram": [[1, 0, 0], [0, 1, -1], [0, -1, 1]], "tau": [0.1, 0.1]})
    r = run("solve", "--gram", "-", stdin=payload)
    assert r.returncode == 0
    data = json.loads(r.stdout)
    assert data["feasible"] is False and data["weights"] == [1.0, 0.0, 0.0]


@pytest.mark.parametrize("args, needle", [
    (["solve", "--gram", "[[1,2],[3]]"], "K x K"),
    (["solve", "--gram", "[[1,0],[0,1]]", "--tau", "2"], "tau"),
    (["solve", "--gram", "[[1,NaN],[NaN,1]]"], "NaN"),
    (["solve", "--gram", "no_such_file.json"], "no such file"),
    (["solve", "--gram", "[[1, 0.5], [0, 1]]"], "symmetric"),
    (["solve"], "required"),
    (["nonsense"], "invalid choice"),
])
def test_bad_input_one_line_exit_2(args, needle):
    r = run(*args)
    assert r.returncode == 2
    lines = [ln for ln in r.stderr.strip().splitlines() if ln]
    assert len(lines) == 1 and lines[0].startswith("error:") and needle in lines[0]


@pytest.mark.parametrize("cmd", [["solve", "--gram", "[[1]]"], ["toy", "--steps", "10"], ["kdw", "--K", "2"]])
def test_unwritable_output_is_rejected_before_computing(cmd, tmp_path):
    r = run(*cmd, "--json", str(tmp_path / "missing" / "out.json"))
    assert r.returncode == 2 and "does not exist" in r.stderr and len(r.stderr.strip().splitlines()) == 1
