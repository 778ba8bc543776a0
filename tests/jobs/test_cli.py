"""CLI contract: ``python -m pcd runs submit|list|show|cancel|retry|delete`` and ``worker`` errors."""
from __future__ import annotations

import json

import pytest

from pcd.cli import main
from pcd.jobs import RunStore


def _run(capsys, *argv):
    rc = main([str(a) for a in argv])
    out = capsys.readouterr()
    return rc, out.out, out.err


def test_submit_list_show_cancel_retry_delete(tmp_path, capsys):
    d = tmp_path / "data"
    f = tmp_path / "c.json"
    f.write_text(json.dumps([{"dataset": "digits", "method": "pcd", "tau": 0.05, "epochs": 1},
                             {"dataset": "digits", "method": "ws", "epochs": 1}]))
    rc, out, _ = _run(capsys, "runs", "submit", "--data-dir", d, "--config", f)
    assert rc == 0 and out.split() == ["1", "2"]
    rc, out, _ = _run(capsys, "runs", "list", "--data-dir", d, "--json")
    runs = json.loads(out)
    assert [r["id"] for r in runs] == [2, 1]  # newest first
    for r in runs:
        assert {"id", "status", "progress", "config", "result", "error"} <= set(r)
        assert r["status"] == "queued" and r["progress"] == 0.0 and r["result"] is None
    assert runs[1]["config"]["tau"] == 0.05 and runs[1]["config"]["batch_size"] == 128  # validated + defaults
    rc, out, _ = _run(capsys, "runs", "cancel", "--data-dir", d, 1)
    assert rc == 0 and out.strip() == "1: cancelled"
    rc, out, _ = _run(capsys, "runs", "show", "--data-dir", d, 1)
    shown = json.loads(out)
    assert shown["status"] == "cancelled" and shown["metrics"] == []
    rc, out, _ = _run(capsys, "runs", "retry", "--data-dir", d, 1)
    assert rc == 0 and RunStore(d).get(1)["status"] == "queued"
    _run(capsys, "runs", "cancel", "--data-dir", d, 1)
    rc, out, _ = _run(capsys, "runs", "delete", "--data-dir", d, 1)
    assert rc == 0 and [r["id"] for r in RunStore(d).list()] == [2]
    rc, out, _ = _run(capsys, "runs", "list", "--data-dir", d)
    assert rc == 0 and "queued" in out and "ws" in out


@pytest.mark.parametrize("content, message", [
    ("{not json", "is not valid JSON"),
    (json.dumps({"dataset": "imagenet"}), "dataset"),
    (json.dumps({"dataset": "digits", "tau": 2}), "tau must be in [0.0, 1.0]"),
    (json.dumps({"dataset": "digits", "arch": "vgg99"}), "unknown arch"),
    (json.dumps(["x"]), "JSON object"),
])
def test_submit_rejects_bad_configs_with_one_line_and_exit_2(tmp_path, capsys, content, message):
    f = tmp_path / "c.json"
    f.write_text(content)
    rc, out, err = _run(capsys, "runs", "submit", "--data-dir", tmp_path / "d", "--config", f)
    assert rc == 2 and out == ""
    assert err.startswith("error: ") and message in err and err.count("\n") == 1
    assert RunStore(tmp_path / "d").list() == []


def test_bad_ids_and_missing_file(tmp_path, capsys):
    rc, _, err = _run(capsys, "runs", "cancel", "--data-dir", tmp_path, 7)
    assert rc == 2 and err.strip() == "error: no run with id 7"
    rc, _, err = _run(capsys, "runs", "cancel", "--data-dir", tmp_path, "x")
    assert rc == 2 and "positive integer" in err
    rc, _, err = _run(capsys, "runs", "submit", "--data-dir", tmp_path, "--config", tmp_path / "nope.json")
    assert rc == 2 and "config file" in err and "no such file" in err
    rc, _, err = _run(capsys, "worker", "--data-dir", tmp_path, "--slots", "0")
    assert rc == 2 and "--slots must be in [1, 64]" in err
    rc, _, err = _run(capsys, "worker", "--data-dir", tmp_path, "--runner", "nocolon")
    assert rc == 2 and "package.module:function" in err
