import json
import subprocess
import sys

import pytest

from pcd.cli import main


def test_help_lists_archs_and_methods():
    r = subprocess.run([sys.executable, "-m", "pcd", "prune", "--help"], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0
    text = " ".join(r.stdout.split())
    for word in ("resnet18", "resnet34", "densenet121", "mobilenetv2", "googlenet", "smallcnn", "pcd", "mgda", "ws",
                 "prox", "lagrangian"):
        assert word in text


@pytest.mark.parametrize("argv, msg", [
    (["--tau", "2"], "tau"),
    (["--arch", "vgg"], "unknown arch"),
    (["--method-params", "[1]"], "JSON object"),
    (["--dataset", "cifar10", "--data-dir", "/nonexistent/x"], "cifar-10-python.tar.gz"),
])
def test_bad_input_is_one_line_exit_2(argv, msg, tmp_path, capsys):
    assert main(["prune", "--out", str(tmp_path / "o"), *argv]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("error:") and msg in err and "\n" not in err


@pytest.mark.slow
def test_cli_run_writes_contract_json(tmp_path, capsys):
    out = tmp_path / "run"
    js = tmp_path / "r.json"
    rc = main(["prune", "--dataset", "digits", "--method", "mgda", "--epochs", "1", "--seed", "3",
               "--max-train-samples", "128", "--max-test-samples", "60", "--latency-repeats", "1",
               "--out", str(out), "--json", str(js), "--quiet"])
    assert rc == 0
    r = json.loads(js.read_text())
    for k in ("config", "test_acc", "group_sparsity", "param_sparsity", "effective_rank", "seconds", "export"):
        assert k in r
    assert set(r["export"]) >= {"params_before", "params_after", "flops_before", "flops_after", "latency_ms_before",
                                "latency_ms_after", "file_bytes_before", "file_bytes_after", "test_acc"}
    assert r["config"]["method"] == "mgda" and r["config"]["seed"] == 3
    assert json.loads((out / "final.json").read_text()) == r
    for f in ("config.json", "metrics.jsonl", "checkpoint.pt", "model_pruned.pt"):
        assert (out / f).exists()
