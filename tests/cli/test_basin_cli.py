"""``python -m pcd basin``: the JSON shape of issue 14 and one-line errors (exit 2)."""
import json
import subprocess
import sys

import numpy as np
import pytest

from pcd.cli import main
from pcd.engine import OUTCOMES


def test_json_shape(tmp_path):
    out = tmp_path / "b.json"
    r = subprocess.run([sys.executable, "-m", "pcd", "basin", "--grid", "6", "--methods", "pcd,ws,mgda",
                        "--steps", "300", "--lr", "0.01", "--tau", "0.3", "--optimizer", "adam", "--json", str(out)],
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    d = json.loads(out.read_text())
    assert set(d) == {"elapsed_s", "grid", "methods"} and d["elapsed_s"] > 0
    g = d["grid"]
    assert g["n"] == 6 and len(g["x"]) == len(g["y"]) == 6 and g["problem"] == "saddle2d"
    assert list(d["methods"]) == ["pcd", "ws", "mgda"]
    for entry in d["methods"].values():
        assert set(entry) == {"fractions", "ends", "outcome"}
        assert list(entry["fractions"]) == list(OUTCOMES)
        assert abs(sum(entry["fractions"].values()) - 1) < 1e-12
        assert np.shape(entry["ends"]) == (36, 2) and len(entry["outcome"]) == 36
        counts = {k: entry["outcome"].count(k) / 36 for k in OUTCOMES}
        assert counts == entry["fractions"]


def test_custom_formula(tmp_path, capsys):
    rc = main(["basin", "--problem", "custom", "--f1", "(x-1)**2 + y**2", "--f2", "(x+1)**2 + y**2", "--grid", "4",
               "--methods", "ws", "--steps", "200", "--lr", "0.05", "--json", "-"])
    assert rc == 0
    d = json.loads(capsys.readouterr().out)
    assert d["grid"]["problem"] == "custom" and d["grid"]["problem_params"]["primary"] == "(x-1)**2 + y**2"
    # WS on two bowls: every start ends at the midpoint (0, 0), Pareto-stationary, neither objective at its minimum
    assert np.allclose(d["methods"]["ws"]["ends"], 0.0, atol=1e-3)


@pytest.mark.parametrize("args", [["--grid", "201"], ["--grid", "1"], ["--grid", "x"], ["--steps", "0"],
                                  ["--lr", "-1"], ["--lr", "nan"], ["--tau", "2"], ["--optimizer", "rmsprop"],
                                  ["--methods", "pcd,nope"], ["--problem", "nope"], ["--f1", "x"],
                                  ["--problem", "custom", "--f1", "x+++"], ["--seed", "-1"], ["--bogus"]])
def test_bad_arguments_one_line_exit_2(args, capsys):
    with pytest.raises(SystemExit) as exc:
        raise SystemExit(main(["basin", "--grid", "4", "--steps", "5", *args]))
    assert exc.value.code == 2
    err = capsys.readouterr().err
    assert err.startswith("error:") and len(err.strip().splitlines()) == 1
