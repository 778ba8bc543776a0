"""Where runs run, the Ray executor's pure parts (version check, what is shipped), the metrics
reconcile and the placement column of old data folders -- no cluster needed."""
from __future__ import annotations

import json
import os
import sqlite3
import subprocess

import pytest

from pcd.jobs import RunStore, Supervisor
from pcd.jobs.executors.ray import check_pcd_version, runtime_env_for
from pcd.jobs.placement import cluster_rows, cluster_summary, log_tail, read_cluster, where
from tests.jobs.conftest import REPO


def test_where_in_words():
    assert where({"placement": None}) == ""
    assert where({"placement": {"host": "gpu-2", "gpu": ["0", "1"], "pid": 7, "node": "abcdef0123456789"}}) \
        == "gpu-2 gpu 0,1 pid 7 (node abcdef01)"
    assert where({"placement": {"host": "vm", "gpu": None, "pid": 9, "backend": "local"}}) == "vm cpu pid 9"


def test_version_check_says_what_to_install():
    assert check_pcd_version("0.1.0", "0.1.0", "gpu-2") is None
    assert check_pcd_version(None, "0+unknown", "gpu-2") is None  # pcd shipped with the job: our own files
    msg = check_pcd_version("0.2.0", "0.1.0", "gpu-2")
    assert msg == ("node gpu-2 runs pcd 0.1.0 but the supervisor runs pcd 0.2.0: install the same version on "
                   "every node (pip install 'pcd-studio==0.2.0')")


def test_runtime_env_ships_a_source_checkout_and_a_users_runner(tmp_path, monkeypatch):
    env, shipped = runtime_env_for("pcd.train.run:train")
    assert shipped == [str(REPO / "pcd")] and env["py_modules"] == shipped  # pcd runs from this checkout
    assert "__pycache__/" in env["excludes"]
    (tmp_path / "myrunner.py").write_text("def run(config, **kw):\n    return {}\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    _, shipped = runtime_env_for("myrunner:run")
    assert shipped == [str(REPO / "pcd"), str(tmp_path / "myrunner.py")]
    _, shipped = runtime_env_for("json.decoder:JSONDecoder")  # the standard library is not shipped
    assert shipped == [str(REPO / "pcd")]
    _, shipped = runtime_env_for("pytest:main")  # nor an installed package (every node must have it)
    assert shipped == [str(REPO / "pcd")]
    with pytest.raises(ValueError, match="cannot be found"):
        runtime_env_for("no_such_pkg_xyz:run")
    monkeypatch.setenv("PCD_RAY_PY_MODULES", str(tmp_path / "missing"))
    with pytest.raises(ValueError, match="PCD_RAY_PY_MODULES: .* does not exist"):
        runtime_env_for("pcd.train.run:train")


def test_reconcile_copies_only_the_missing_epoch_rows(tmp_path):
    store = RunStore(tmp_path)
    rid = store.submit({"epochs": 4})
    run = store.claim("w", "cpu:0")
    store.report_progress(rid, run["token"], {"epoch": 1, "metrics": {"epoch": 1, "test_acc": 0.5}})
    rows = [{"epoch": e, "test_acc": 0.5 + e / 100} for e in (1, 2, 3)]
    store.run_dir(rid).mkdir(parents=True, exist_ok=True)
    (store.run_dir(rid) / "metrics.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows) + '{"epoch": 4, "te')
    sup = Supervisor(tmp_path, runner="tests.jobs.runners:quick", log=lambda m: None)
    assert sup.reconcile(rid) == 2  # epochs 2 and 3; the torn last line is skipped
    assert [(m["epoch"], m["test_acc"]) for m in store.metrics(rid)] == [(1, 0.5), (2, 0.52), (3, 0.53)]
    assert sup.reconcile(rid) == 0  # idempotent
    assert sup.reconcile(999) == 0


def test_an_old_data_folder_gets_the_placement_column(tmp_path):
    store = RunStore(tmp_path)
    store.close()
    con = sqlite3.connect(tmp_path / "pcd.sqlite3")  # a folder created before the column existed
    con.execute("ALTER TABLE runs DROP COLUMN placement")
    con.execute("INSERT INTO runs (config, created_at) VALUES ('{}', 0)")
    con.commit()
    con.close()
    store = RunStore(tmp_path)
    run = store.claim("w", "cpu:0")
    assert run["placement"] is None
    store.set_pid(run["id"], run["token"], 5, placement={"host": "vm", "pid": 5})
    assert store.get(run["id"])["placement"] == {"host": "vm", "pid": 5}


def test_cluster_file_is_read_only_from_the_live_supervisor(tmp_path):
    info = {"backend": "ray", "pid": 4321, "slots": ["ray:cpu0@a:11111111", "ray:cpu1@a:11111111"],
            "nodes": [{"node": "1111111100", "host": "a", "gpus": 0, "cpus": 2, "state": "ready", "home": True}]}
    (tmp_path / "cluster.json").write_text(json.dumps(info))
    assert read_cluster(tmp_path, None) is None and read_cluster(tmp_path, 999) is None  # stale file
    got = read_cluster(tmp_path, 4321)
    assert cluster_rows(got)[0]["slots"] == 2
    assert cluster_summary(got) == "ray: 1 node(s) (1 ready), 2 slot(s)"


def test_runs_log_and_cluster_cli(tmp_path):
    store = RunStore(tmp_path)
    rid = store.submit({"epochs": 1})
    store.run_dir(rid).mkdir(parents=True, exist_ok=True)
    (store.run_dir(rid) / "worker.log").write_text("".join(f"line {i}\n" for i in range(100)))
    assert log_tail(store, rid, 3) == "line 97\nline 98\nline 99"
    env = dict(os.environ, PYTHONPATH=str(REPO))
    out = subprocess.run([os.sys.executable, "-m", "pcd", "runs", "log", "--data-dir", str(tmp_path), str(rid),
                          "--lines", "2"], capture_output=True, text=True, cwd=REPO, env=env, timeout=120)
    assert out.returncode == 0 and out.stdout == "line 98\nline 99\n"
    out = subprocess.run([os.sys.executable, "-m", "pcd", "runs", "cluster", "--data-dir", str(tmp_path)],
                         capture_output=True, text=True, cwd=REPO, env=env, timeout=120)
    assert out.returncode == 0 and out.stdout.startswith("no supervisor serves")
    out = subprocess.run([os.sys.executable, "-m", "pcd", "runs", "log", "--data-dir", str(tmp_path), str(rid),
                          "--lines", "0"], capture_output=True, text=True, cwd=REPO, env=env, timeout=120)
    assert out.returncode == 2 and "--lines must be in [1, 100000]" in out.stderr
