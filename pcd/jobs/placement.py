"""Where runs run: a run's recorded placement in words, the supervisor's view of its cluster
(``<data_dir>/cluster.json``) and the tail of a run's ``worker.log`` -- for ``python -m pcd runs
list|cluster|log`` and the Pruning lab page, which show the same data."""
from __future__ import annotations

import os

from pcd import _files
from pcd.jobs.store import RunStore

CLUSTER_NAME = "cluster.json"


def where(run: dict) -> str:
    """One short phrase: ``"vm gpu 0 pid 4242 (node 1a2b3c4d)"``, ``"vm cpu pid 17"``, or ``""``."""
    p = run.get("placement") or {}
    if not p:
        return ""
    gpu = p.get("gpu")
    if isinstance(gpu, list):
        gpu = ",".join(str(g) for g in gpu)
    parts = [str(p.get("host") or "?"), f"gpu {gpu}" if gpu not in (None, "") else "cpu"]
    if p.get("pid"):
        parts.append(f"pid {p['pid']}")
    if p.get("node"):
        parts.append(f"(node {str(p['node'])[:8]})")
    return " ".join(parts)


def read_cluster(data_dir: str | os.PathLike, live_pid: int | None) -> dict | None:
    """The cluster as the live supervisor (pid ``live_pid``) last wrote it; None when no supervisor
    serves the folder or the file is another (dead) supervisor's."""
    if not live_pid:
        return None
    try:
        info = _files.read_json(os.path.join(data_dir, CLUSTER_NAME), data_dir, kind="json", name=CLUSTER_NAME)
    except ValueError:
        return None
    if not isinstance(info, dict) or info.get("pid") != live_pid:
        return None
    return info


def cluster_rows(info: dict | None) -> list[dict]:
    """One row per node: host, node id, GPUs, CPUs, slots, state (ready / probing / ignored / suspect), reason."""
    if not info:
        return []
    slots = [str(s) for s in info.get("slots") or []]
    rows = []
    for n in info.get("nodes") or []:
        nid = str(n.get("node") or "")
        mine = [s for s in slots if nid and nid[:8] in s] if nid else slots
        rows.append({"host": n.get("host"), "node": nid[:8], "gpus": n.get("gpus"), "cpus": n.get("cpus"),
                     "slots": len(mine), "state": n.get("state"), "supervisor here": bool(n.get("home")),
                     "reason": n.get("reason") or ""})
    return rows


def cluster_summary(info: dict | None) -> str:
    """``"ray: 3 nodes (2 ready), 2 slots; progress channel on node 1a2b3c4d"`` or ``""``."""
    if not info:
        return ""
    nodes = info.get("nodes") or []
    ready = sum(n.get("state") == "ready" for n in nodes)
    text = f"{info.get('backend')}: {len(nodes)} node(s) ({ready} ready), {len(info.get('slots') or [])} slot(s)"
    if info.get("channel_node"):
        text += f"; progress channel on node {str(info['channel_node'])[:8]}"
    return text


def log_tail(store: RunStore, run_id: int, lines: int = 40) -> str:
    """The last ``lines`` lines of ``runs/<id>/worker.log`` through the one reader (:mod:`pcd._files`:
    at most its last 256 KiB are read, whatever its size); '' when there is none. A log that may not
    be read (a link out of the run folder, a FIFO, a device) gives one line saying why, not its text."""
    try:
        folder = _files.run_folder(store.data_dir, run_id)
        text = _files.read_tail(folder / "worker.log", folder, kind="log", name="worker.log")
    except _files.FileRefused as exc:
        if str(exc).endswith("no such file"):
            return ""
        return f"worker.log not shown: {exc}"
    return "\n".join(text.splitlines()[-max(1, int(lines)):])
