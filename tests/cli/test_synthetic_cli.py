"""CLI: toy / kdw / scale / tau write the documented JSON; bad input -> one line, exit code 2."""
import json
import subprocess
import sys

import pytest

from pcd.cli import main


def _run_json(tmp_path, argv):
    out = tmp_path / "out.json"
    assert main(argv + ["--json", str(out)]) == 0
    return json.loads(out.read_text())


def test_toy_json_records(tmp_path):
    recs = _run_json(tmp_path, ["toy", "--problem", "saddle2d", "--methods", "pcd,ws", "--steps", "3000"])
    assert len(recs) == 6
    keys = {"method", "start", "end", "losses", "primary_grad_norm", "cms_residual", "pareto_residual",
            "stalled", "diverged"}
    for r in recs:
        assert keys <= set(r)
    pcd = [r for r in recs if r["method"] == "pcd"]
    ws = [r for r in recs if r["method"] == "ws"]
    assert all(abs(r["end"][0] - 2.0) < 1e-6 and r["diagnosis"] == "cms" for r in pcd)
    assert all(r["end"][0] < -1 and r["stalled"] for r in ws)


def test_toy_custom_starts(tmp_path):
    recs = _run_json(tmp_path, ["toy", "--methods", "pcd", "--steps", "5", "--starts", "0,1;1,0"])
    assert [r["start"] for r in recs] == [[0.0, 1.0], [1.0, 0.0]]


def test_kdw_json(tmp_path):
    recs = _run_json(tmp_path, ["kdw", "--K", "2,5", "--methods", "pcd,mgda", "--steps", "3000"])
    assert [(r["K"], r["method"]) for r in recs] == [(2, "pcd"), (2, "mgda"), (5, "pcd"), (5, "mgda")]
    for r in recs:
        assert {"K", "method", "primary_grad_norm", "losses", "law", "stalled"} <= set(r)
        assert r["law"] == pytest.approx(1.536 * (r["K"] - 1) ** 0.5)
        if r["method"] == "pcd":
            assert r["primary_grad_norm"] <= 1e-12
        else:
            assert r["primary_grad_norm"] == pytest.approx(r["law"], rel=1e-4)


def test_scale_json(tmp_path):
    out = _run_json(tmp_path, ["scale", "--exponents=-2,0,2", "--steps", "1500"])
    assert out["scales"] == [0.01, 1.0, 100.0]
    assert set(out["methods"]) == {"ws", "pcd"}
    for m in out["methods"].values():
        assert len(m["endpoints"]) == 3 and isinstance(m["drift"], float)
    assert out["methods"]["ws"]["drift"] > 0.5 > out["methods"]["pcd"]["drift"]


def test_scale_default_is_the_page_default_and_eps_is_an_option(tmp_path):
    """`python -m pcd scale` with no options = the Scale invariance page's first view (k = -6..7,
    1000 steps, ε = 1e-8): PCD's drift over the scale-free ten orders <= 0.0075."""
    out = _run_json(tmp_path, ["scale", "--methods", "pcd"])
    assert out["exponents"] == list(range(-6, 8)) and out["settings"]["steps"] == 1000 and out["eps"] == 1e-8
    assert out["methods"]["pcd"]["drift"] <= 0.0075
    out = _run_json(tmp_path, ["scale", "--methods", "pcd", "--exponents=-5,0", "--eps", "0", "--steps", "200"])
    assert out["eps"] == 0.0 and all(out["scale_free"])
    assert main(["scale", "--methods", "ws", "--eps", "1e-9"]) == 2


def test_tau_json(tmp_path):
    rows = _run_json(tmp_path, ["tau", "--problem", "saddle2d", "--taus", "0,0.3", "--steps", "3000"])
    assert [r["tau"] for r in rows] == [0.0, 0.3]
    assert rows[0]["cms_fraction"] == 0.0 and rows[1]["cms_fraction"] == 1.0


@pytest.mark.parametrize("argv,msg", [
    (["toy", "--methods", "pcd,foo"], "unknown method 'foo'"),
    (["toy", "--problem", "nope"], "unknown problem 'nope'"),
    (["toy", "--steps", "0"], "steps must be"),
    (["toy", "--lr", "0"], "lr must be > 0"),
    (["toy", "--lr", "-0.1"], "lr must be > 0"),
    (["toy", "--starts", "a,b"], "--starts"),
    (["kdw", "--K", "1,3"], "K must be in [2, 257]"),
    (["kdw", "--K", "x"], "--K"),
    (["kdw", "--steps", "-5"], "steps must be"),
    (["scale", "--exponents", "1"], "at least two"),
    (["tau", "--taus", "2"], "tau must be"),
    (["tau", "--method", "ws", "--steps", "1"], "no tau"),
])
def test_bad_arguments_give_one_line_and_exit_2(argv, msg, capsys, tmp_path):
    code = main(argv + ["--json", str(tmp_path / "x.json")])
    err = capsys.readouterr().err
    assert code == 2
    assert err.startswith("error: ") and msg in err
    assert err.count("\n") == 1


def test_module_entry_point_exit_code():
    proc = subprocess.run([sys.executable, "-m", "pcd", "toy", "--steps", "0"], capture_output=True, text=True,
                          timeout=120)
    assert proc.returncode == 2
    assert proc.stderr.strip().startswith("error: steps must be") and proc.stderr.count("\n") == 1


def test_tau_budgets_are_the_tau_dial_page_curves(tmp_path):
    rows = _run_json(tmp_path, ["tau", "--problem", "quadratic", "--taus", "0.1", "--budgets", "100,300", "--lr", "0.02"])
    assert set(rows[0]["budgets"]) == {"100", "300"}
    assert rows[0]["budgets"]["100"]["moving_fraction"] == 1.0  # no end point after 100 steps
    assert main(["tau", "--budgets", "0"]) == 2


def test_toy_html_map_is_the_pages_figure(tmp_path):
    out = tmp_path / "map.html"
    _run_json(tmp_path, ["toy", "--methods", "pcd,ws", "--steps", "200", "--lr", "0.02", "--tau", "0.02",
                         "--html", str(out)])
    html = out.read_text()
    assert "pcd-settings" in html and "Plotly" in html and "all objectives optimal" in html
    assert '"updatemenus"' in html  # a standalone file has Plotly's own play button and slider
