import json
import subprocess
import sys

import numpy as np
import pytest


def run(*args):
    return subprocess.run([sys.executable, "-m", "pcd", "geometry", *args], capture_output=True, text=True, timeout=60)


def test_equal_norms_ws_mgda_coincide_and_pcd_primary_pinned(tmp_path):
    out = tmp_path / "g.json"
    r = run("--angle", "120", "--norm2", "1", "--tau", "0.3", "--methods", "pcd,ws,mgda", "--json", str(out))
    assert r.returncode == 0, r.stderr
    rows = {m["method"]: m for m in json.loads(out.read_text())["methods"]}
    # equal norms: WS's and MGDA's directions are parallel (MGDA = WS / 2 by symmetry)
    ws, mg = np.array(rows["ws"]["direction"]), np.array(rows["mgda"]["direction"])
    assert abs(ws[0] * mg[1] - ws[1] * mg[0]) < 1e-12
    # PCD: g2's progress is at least tau ||g2||^2 ||g1|| / ||d~|| > 0 and mu = (0.3 - cos 120) / 1
    assert rows["pcd"]["mu"][0] == pytest.approx(0.8)
    assert rows["pcd"]["progress"][1] > 0


@pytest.mark.parametrize("args", [["--angle", "200"], ["--methods", "nope"], ["--g3", "x"], ["--tau", "-1"]])
def test_bad_input(args):
    r = run(*args)
    assert r.returncode == 2 and r.stderr.startswith("error:") and len(r.stderr.strip().splitlines()) == 1
