"""The Pruning lab's "Where runs run" panel: the supervisor's nodes and slots, where each run ran
(node, host, GPU, pid) and the tail of its ``worker.log``. Data from :mod:`pcd.jobs.placement`
(the same as ``python -m pcd runs cluster|list|log``)."""
from __future__ import annotations

import os

import pandas as pd
import streamlit as st

from pcd.jobs.placement import cluster_rows, cluster_summary, log_tail, read_cluster, where
from pcd.jobs.store import RunStore


def where_panel(store: RunStore, runs: list[dict], data_dir: str | os.PathLike, supervisor: int | None,
                selected: list[dict] | None = None) -> None:
    """An expander: cluster table, placement of ``selected`` runs (else the 10 newest), one run's log."""
    with st.expander("Where runs run: nodes, placement, worker.log", expanded=False):
        info = read_cluster(data_dir, supervisor)
        st.caption(cluster_summary(info) or "No supervisor serves this data folder: nothing is placed.")
        nodes = cluster_rows(info)
        if nodes and info and info.get("backend") == "ray":
            st.dataframe(pd.DataFrame(nodes), hide_index=True, key="pl_where_nodes")
        shown = selected or sorted(runs, key=lambda r: r["id"], reverse=True)[:10]
        if not shown:
            return
        st.dataframe(pd.DataFrame([{"id": r["id"], "status": r["status"], "slot": r["device"] or "",
                                    "where": where(r), "attempts": f"{r['attempts']}/{r['max_attempts']}"}
                                   for r in shown]), hide_index=True, key="pl_where_runs")
        rid = st.selectbox("worker.log of run", [r["id"] for r in shown], key="pl_where_log")
        text = log_tail(store, int(rid), 60) if rid is not None else ""
        st.code(text or f"run {rid} has no worker.log yet", language=None)
