"""The Pruning lab's "Where runs run" panel (issue 16): the live supervisor's nodes, where each run
ran and the tail of its worker.log -- the same data as ``python -m pcd runs cluster|list|log``."""
from __future__ import annotations

import json
import os
from pathlib import Path

from streamlit.testing.v1 import AppTest

from pcd.jobs import RunStore
from pcd.jobs.supervisor import SupervisorLock

PAGE = str(Path(__file__).resolve().parents[2] / "pages" / "08_Pruning_lab.py")
NODE_A, NODE_B = "1a2b3c4d" + "0" * 48, "9f8e7d6c" + "1" * 48


def test_where_panel_shows_nodes_placement_and_the_log(tmp_path, monkeypatch):
    monkeypatch.setenv("PCD_DATA_DIR", str(tmp_path))
    monkeypatch.setenv("PCD_NO_AUTOSTART", "1")
    store = RunStore(tmp_path)
    rid = store.submit({"dataset": "digits", "method": "pcd", "tau": 0.02, "epochs": 3})
    run = store.claim("head:1", f"ray:gpu0@gpu-2:{NODE_B[:8]}")
    store.set_pid(rid, run["token"], 4242, placement={"backend": "ray", "node": NODE_B, "host": "gpu-2",
                                                      "ip": "10.0.0.2", "gpu": ["1"], "pid": 4242})
    store.run_dir(rid).mkdir(parents=True, exist_ok=True)
    (store.run_dir(rid) / "worker.log").write_text("--- attempt 1 on Ray node 9f8e7d6c1111 (host gpu-2)\nepoch 1 ok\n")
    lock = SupervisorLock(tmp_path).acquire()  # this process plays the live supervisor
    try:
        (tmp_path / "cluster.json").write_text(json.dumps({
            "backend": "ray", "pid": os.getpid(), "slots": [f"ray:gpu0@gpu-1:{NODE_A[:8]}", f"ray:gpu0@gpu-2:{NODE_B[:8]}"],
            "channel_node": NODE_A, "nodes": [
                {"node": NODE_A, "host": "gpu-1", "gpus": 1, "cpus": 8, "state": "ready", "home": True, "reason": None},
                {"node": NODE_B, "host": "gpu-2", "gpus": 1, "cpus": 8, "state": "ready", "home": False, "reason": None},
                {"node": "77" * 28, "host": "gpu-3", "gpus": 1, "cpus": 8, "state": "ignored", "home": False,
                 "reason": "node gpu-3 runs pcd 0.0.9 but the supervisor runs pcd 0.1.0"}]}))
        at = AppTest.from_file(PAGE, default_timeout=120)
        at.run()
        assert not at.exception, at.exception
        assert any(e.label.startswith("Where runs run") for e in at.expander)
        frames = {tuple(df.value.columns): df.value for df in at.dataframe}
        nodes = next(v for k, v in frames.items() if "state" in k and "host" in k)
        assert list(nodes["host"]) == ["gpu-1", "gpu-2", "gpu-3"] and list(nodes["slots"]) == [1, 1, 0]
        assert "runs pcd 0.0.9" in nodes["reason"].iloc[2]
        where = next(v for k, v in frames.items() if "where" in k)
        assert where["where"].iloc[0] == "gpu-2 gpu 1 pid 4242 (node 9f8e7d6c)"
        assert any("epoch 1 ok" in c.value for c in at.code)
        assert any("3 node(s) (2 ready), 2 slot(s); progress channel on node 1a2b3c4d" in c.value for c in at.caption)
    finally:
        lock.release()
