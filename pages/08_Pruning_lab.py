"""Page 8 -- Pruning lab: queue pruning runs, watch them train, explore the results.

Everything here reads and writes the run store of the data folder (``pcd.jobs.RunStore``), the
same one ``python -m pcd runs ...`` uses; a background supervisor executes the queue.
"""
from __future__ import annotations

import os
import time

import pandas as pd
import streamlit as st

import pcd.methods as registry
from pcd.jobs import RunStore, default_data_dir, ensure_supervisor, eta_seconds, supervisor_pid, validate_for_queue
from pcd.jobs import results as R
from pcd.jobs.sweep import build_sweep, describe, parse_numbers, uses_tau
from pcd.train.data import cifar_source, missing_data_message
from pcd.train.models import ARCHS
from pcd.train.objectives import GROUPINGS, SECONDARIES
from pcd.train.run import SPECIAL_METHODS, method_names
from pcd.ui import claim, download_csv, download_figure, setup_page, show_error, url_default, url_sync
from pcd.viz.runs import curves_figure, method_bars, results_scatter

setup_page(
    "Pruning lab",
    icon=":material/content_cut:",
    intro=(
        "Structured pruning as a hierarchical problem: the **primary** objective is cross-entropy, the "
        "**secondary** is a group lasso over conv filters (or ℓ1 + nuclear norm, K = 3). Queue runs of any "
        "method on this machine's GPUs (or CPU), watch them train, then compare the accuracy each reaches at "
        "a given sparsity, FLOPs, latency and file size after **physical pruning**. Runs live in the data "
        "folder: close the browser, come back tomorrow, everything is still here."
    ),
)

DATA_DIR = default_data_dir()
try:
    store = RunStore(DATA_DIR)
except ValueError as exc:
    show_error(exc)
    st.stop()

if os.environ.get("PCD_NO_AUTOSTART") != "1":
    try:
        ensure_supervisor(DATA_DIR)
    except OSError as exc:  # e.g. a read-only data folder
        show_error(f"could not start the run supervisor: {exc}")

tab_queue, tab_runs, tab_results = st.tabs(["Queue runs", "Queue & runs", "Results explorer"])

# ---------------------------------------------------------------------------------------------
# Queue form
# ---------------------------------------------------------------------------------------------
METHODS = method_names()


def _method_label(m: str) -> str:
    if m in SPECIAL_METHODS:
        return {"prox": "Proximal group lasso (tuned)", "lagrangian": "Lagrangian (Cooper)"}.get(m, m)
    return registry.get(m).display_name


def _param_widget(method: str, p, key: str):
    label = f"{p.name}" + (f" — {p.help}" if p.help else "")
    if p.kind == "bool":
        return st.checkbox(label, value=bool(p.default), key=key)
    if p.kind == "choice":
        return st.selectbox(label, list(p.choices), index=list(p.choices).index(p.default), key=key)
    if p.kind == "int":
        return int(st.number_input(label, value=int(p.default), step=1, key=key,
                                   min_value=int(p.low) if p.low is not None else None,
                                   max_value=int(p.high) if p.high is not None else None))
    return float(st.number_input(label, value=float(p.default), key=key, format="%g",
                                 min_value=float(p.low) if p.low is not None else None,
                                 max_value=float(p.high) if p.high is not None else None))


with tab_queue:
    left, right = st.columns([1, 1], gap="large")
    with left:
        ds_opts = ["digits", "cifar10", "cifar100"]
        dataset = st.selectbox("dataset", ds_opts, index=ds_opts.index(url_default("dataset", "digits", ds_opts)),
                               key="pl_dataset",
                               format_func=lambda d: {"digits": "digits (8×8, ships with scikit-learn)",
                                                      "cifar10": "CIFAR-10", "cifar100": "CIFAR-100"}[d])
        if dataset == "digits":
            st.caption("Always available: 1,797 8×8 digit images, fine for CPU demos (seconds per run).")
        else:
            src = cifar_source(dataset)
            if src is not None:
                st.caption(f"Found at `{src}`.")
            else:
                st.warning(missing_data_message(dataset), icon=":material/download:")
        arch_opts = list(ARCHS)
        arch_default = "smallcnn" if dataset == "digits" else ("resnet20" if "resnet20" in ARCHS else arch_opts[0])
        arch = st.selectbox("architecture", arch_opts, index=arch_opts.index(arch_default), key=f"pl_arch_{dataset}")
        methods = st.multiselect("method(s)", METHODS, default=url_default("methods", ["pcd"], allowed=METHODS),
                                 format_func=_method_label, key="pl_methods")
        c1, c2 = st.columns(2)
        secondary = c1.selectbox("secondary objective(s)", list(SECONDARIES), key="pl_secondary",
                                 help="group_lasso: K = 2 (filters); l1+nuclear: K = 3 (sparse + low rank)")
        grouping = c2.selectbox("groups", list(GROUPINGS), key="pl_grouping",
                                help="filter: the paper's filter-only groups; filter+bn: also the channel's BN "
                                     "γ/β (a zero filter then really is a dead channel); coupled: all producers "
                                     "of a channel along the dependency graph (what dies can be removed)")
        sweep = st.toggle("τ sweep", value=url_default("sweep", False), key="pl_sweep",
                          help="one click queues every τ × seed (× method)")
        if sweep:
            tau_text = st.text_input("τ values (comma-separated, each in [0, 1])", "0, 0.01, 0.02, 0.05, 0.1",
                                     key="pl_taus")
        else:
            tau_text = str(st.number_input("τ (PCD's guaranteed share of secondary progress)", 0.0, 1.0,
                                           float(url_default("tau", 0.02, low=0.0, high=1.0)), 0.01, format="%g", key="pl_tau"))
        seeds_text = st.text_input("seed(s) (comma-separated)", "0", key="pl_seeds")
    with right:
        c1, c2, c3 = st.columns(3)
        epochs = int(c1.number_input("epochs", 1, 1000, int(url_default("epochs", 3, low=1, high=1000)), key="pl_epochs"))
        batch = int(c2.number_input("batch size", 1, 4096, 128, key="pl_batch"))
        lr = float(c3.number_input("learning rate", 1e-6, 10.0, 1e-3, step=1e-4, format="%g", key="pl_lr"))
        c1, c2, c3 = st.columns(3)
        optimizer = c1.selectbox("optimizer", ["adam", "sgd"], key="pl_opt")
        device = c2.selectbox("device", ["auto", "cpu", "cuda"], key="pl_device")
        subset = int(c3.number_input("training images (0 = all)", 0, 1_000_000, 0, step=256, key="pl_subset",
                                     help="a CIFAR subset keeps CPU runs short"))
        hparams: dict[str, dict] = {}
        for m in methods:
            spec = ([p for p in registry.get(m).params if p.name != "tau"] if m not in SPECIAL_METHODS else None)
            if spec == []:
                continue
            with st.expander(f"{_method_label(m)} hyper-parameters"):
                if spec is None:
                    hparams[m] = {k: float(st.number_input(f"{k} — {h}", lo, hi, float(d), format="%g",
                                                             key=f"pl_hp_{m}_{k}"))
                                  for k, (d, lo, hi, h) in SPECIAL_METHODS[m].items()}
                else:
                    hparams[m] = {p.name: _param_widget(m, p, f"pl_hp_{m}_{p.name}") for p in spec}
    url_sync(dataset=dataset, methods=methods, sweep=sweep, epochs=epochs,
             **({} if sweep else {"tau": float(tau_text)}))

    base = {"dataset": dataset, "arch": arch, "secondary": secondary, "grouping": grouping, "epochs": epochs,
            "batch_size": batch, "lr": lr, "optimizer": optimizer, "device": device,
            "max_train_samples": subset or None}
    configs, form_error = [], None
    try:
        taus = parse_numbers(tau_text, name="τ", low=0.0, high=1.0)
        seeds = parse_numbers(seeds_text, name="seeds", low=0, integer=True)
        configs = build_sweep(base, methods, taus, seeds, hparams)
        configs = [validate_for_queue(c) for c in configs]
    except ValueError as exc:
        form_error = exc
    all_runs = store.list()
    est = R.estimate_seconds(all_runs, base) if not form_error else None
    if form_error:
        show_error(form_error)
    else:
        msg = f"**{len(configs)} run(s)**: " + "; ".join(describe(c) for c in configs[:6])
        msg += " …" if len(configs) > 6 else ""
        st.markdown(msg)
        if est:
            st.caption(f"Estimated ≈ {est['seconds']:.0f} s per run ({est['per_epoch']:.1f} s/epoch + "
                       f"{est['overhead']:.0f} s start-up/export, from {est['basis']} finished run(s) of the same "
                       f"shape); ≈ {est['seconds'] * len(configs) / 60:.1f} min for all on one slot.")
        else:
            st.caption("No time estimate yet: no finished run of this shape (dataset, architecture, batch size, "
                       "subset, secondary, device). Queue a 1-epoch calibration run to get one.")
    b1, b2, _ = st.columns([1, 1, 2])
    if b1.button("Queue run(s)", type="primary", disabled=bool(form_error), key="pl_submit"):
        ids = store.submit_many(configs, labels=[describe(c) for c in configs])
        st.success(f"Queued run(s) {', '.join(map(str, ids))}. Follow them on the **Queue & runs** tab.")
    if b2.button("Calibrate (1 epoch)", disabled=bool(form_error), key="pl_calibrate",
                 help="queues a 1-epoch run of this shape first (export skipped), to estimate run times"):
        rid = store.submit(R.calibration_config(configs[0]), priority=10, label="calibration")
        st.success(f"Queued calibration run {rid} at the front of the queue.")

# ---------------------------------------------------------------------------------------------
# Queue and runs (live)
# ---------------------------------------------------------------------------------------------
STATUS_ICON = {"queued": "queued", "running": "running", "done": "done", "failed": "failed",
               "cancelled": "cancelled"}


def _runs_table(runs: list[dict]) -> pd.DataFrame:
    now = time.time()
    rows = []
    for r in runs:
        cfg = r["config"] or {}
        res = r["result"] or {}
        eta = eta_seconds(r)
        rows.append({
            "id": r["id"], "status": STATUS_ICON.get(r["status"], r["status"]),
            "progress": float(r["progress"] or 0.0),
            "epoch": f"{r['epoch'] or 0}/{r['epochs'] or cfg.get('epochs', '?')}",
            "ETA": f"{eta:.0f} s" if eta is not None else "",
            "device": r["device"] or "",
            "heartbeat": (f"{max(0.0, now - r['heartbeat']):.0f} s ago" if r["status"] == "running"
                          and r.get("heartbeat") else ""),
            "method": cfg.get("method", ""),
            "τ": cfg.get("tau") if uses_tau(str(cfg.get("method"))) else None, "seed": cfg.get("seed"),
            "data / arch": f"{cfg.get('dataset')}/{cfg.get('arch')}",
            "acc %": res.get("test_acc"), "group sparsity %": res.get("group_sparsity"),
            "error": r["error"] or "",
        })
    return pd.DataFrame(rows)


def _runs_view() -> None:
    runs = store.list()
    counts = {s: sum(r["status"] == s for r in runs) for s in STATUS_ICON}
    pid = supervisor_pid(DATA_DIR)
    cols = st.columns(6)
    for col, (s, n) in zip(cols, counts.items()):
        col.metric(s, n)
    cols[5].metric("supervisor", "on" if pid else "off",
                   help=f"pid {pid} serves {DATA_DIR}" if pid else f"nothing serves {DATA_DIR}")
    if not pid:
        st.caption("No supervisor is serving this data folder: queued runs wait. It starts with the app, or run "
                   f"`python -m pcd worker --data-dir {DATA_DIR}`.")
    if not runs:
        st.info("No runs yet: queue one on the **Queue runs** tab.")
        return
    st.dataframe(_runs_table(runs[::-1]), hide_index=True, key="pl_table", column_config={
        "progress": st.column_config.ProgressColumn("progress", min_value=0.0, max_value=1.0, format="percent"),
        "acc %": st.column_config.NumberColumn(format="%.1f"),
        "group sparsity %": st.column_config.NumberColumn(format="%.1f")})
    running = [r for r in runs if r["status"] == "running"]
    if running:
        st.markdown("**Live curves of the running runs**")
        series = {f"run {r['id']}": store.metrics(r["id"]) for r in running}
        meth = {f"run {r['id']}": (r["config"] or {}).get("method", "") for r in running}
        st.plotly_chart(curves_figure(series, meth, keys=["test_acc", "train_loss", "secondary_1", "group_sparsity",
                                                          "mu", "cosine"]),
                        theme=None, key="pl_live", config={"displaylogo": False})
    if st.session_state.get("pl_was_active") and not (running or counts["queued"]):
        st.session_state["pl_was_active"] = False
        st.rerun(scope="app")  # the queue drained: refresh the results and stop polling
    st.session_state["pl_was_active"] = bool(running or counts["queued"])


with tab_runs:
    active = any(r["status"] in ("running", "queued") for r in store.list(["running", "queued"]))
    st.session_state.setdefault("pl_was_active", active)
    st.fragment(run_every=2.0 if active else None)(_runs_view)()

    ids = [r["id"] for r in store.list()][::-1]
    if ids:
        c1, c2, c3, c4 = st.columns([1.2, 1, 1, 1], vertical_alignment="bottom")
        sel = c1.selectbox("run", ids, key="pl_action_id", format_func=lambda i: f"run {i}")
        try:
            if c2.button("Cancel", key="pl_cancel"):
                st.toast(f"run {sel}: {store.cancel(sel)}")
                st.rerun()
            if c3.button("Retry", key="pl_retry"):
                store.retry(sel)
                st.rerun()
            if c4.button("Delete", key="pl_delete"):
                store.delete(sel)
                st.rerun()
        except ValueError as exc:
            show_error(exc)

# ---------------------------------------------------------------------------------------------
# Results explorer
# ---------------------------------------------------------------------------------------------
with tab_results:
    done = store.list("done")
    points = R.run_points(done)
    if not points:
        st.info("No finished run yet. Finished runs appear here with their accuracy, sparsity, FLOPs, latency "
                "and file size.")
    else:
        labels = {p["id"]: f"run {p['id']} · {describe(next(r['config'] for r in done if r['id'] == p['id']))}"
                  for p in points}
        chosen = st.multiselect("runs", list(labels), default=list(labels), format_func=labels.get, key="pl_pick")
        pts = [p for p in points if p["id"] in chosen]
        c1, c2 = st.columns(2)
        x_key = c1.selectbox("x axis", list(R.X_AXES), format_func=R.X_AXES.get, key="pl_x")
        y_key = c2.selectbox("y axis", list(R.Y_AXES), format_func=R.Y_AXES.get, key="pl_y")
        front = R.pareto_front(pts, x_key, y_key)
        fig = results_scatter(pts, x_key, y_key, front=front, x_label=R.X_AXES[x_key], y_label=R.Y_AXES[y_key])
        st.plotly_chart(fig, theme=None, key="pl_scatter", config={"displaylogo": False})
        st.caption("Marker = method (outline in the method's colour), fill = τ; dotted line = Pareto front "
                   "(no other selected run is both more accurate and more compressed). Groupings used: "
                   + ", ".join(sorted({str(p['grouping']) for p in pts})) + ".")
        download_figure(fig, "pruning_results.html", key="pl_dl_fig")

        st.subheader("Methods at matched sparsity")
        c1, c2 = st.columns(2)
        target = c1.number_input("target (x axis)", value=80.0 if x_key.endswith(("sparsity", "reduction")) else 5.0,
                                 key=f"pl_target_{x_key}", format="%g")
        tol = c2.number_input("± window", 0.0, 1e6, 5.0 if x_key.endswith(("sparsity", "reduction")) else 1.0,
                              key=f"pl_tol_{x_key}", format="%g")
        matched = R.matched_comparison(pts, x_key, target, tol, y_key)
        if matched:
            st.plotly_chart(method_bars({m["method"]: m[y_key] for m in matched},
                                        f"best {R.Y_AXES[y_key]} with {R.X_AXES[x_key]} in {target:g} ± {tol:g}",
                                        R.Y_AXES[y_key]), theme=None, key="pl_matched", config={"displaylogo": False})
            st.dataframe(pd.DataFrame(matched), hide_index=True, key="pl_matched_table")
        else:
            st.caption("No selected run falls in this window.")
        here = {m["method"]: m[y_key] for m in matched}
        claim("ResNet-34/CIFAR-100 at 80–85 % parameter reduction: PCD 73.0 %, AuxiNash 44.4 %, PCGrad ~7.4 %, "
              "FAMO 2.7 %, MGDA 1.2 % (unpruned 73.3 %)",
              here=(", ".join(f"{m} {v:.1f} %" for m, v in here.items()) or "no runs in the window")
              + f" ({R.X_AXES[x_key]} {target:g} ± {tol:g}, your runs)",
              note="The paper trains 300 epochs on CIFAR-100; small CPU runs here only show the direction of the gap.")

        hv = R.hypervolume_by_method(pts)
        if hv["methods"]:
            st.subheader("K = 3 (cross-entropy + ℓ1 + nuclear): dominated hypervolume")
            st.plotly_chart(method_bars(hv["methods"], "dominated hypervolume per method", "hypervolume",
                                        text_format=".3f"), theme=None, key="pl_hv", config={"displaylogo": False})
            st.caption(f"Normalization: {hv['normalization']}.")
            claim("PCD vs AuxiNash hypervolume 39.03 vs 14.1 (2.78×), ResNet-34/CIFAR-100, in the paper's own "
                  "normalization", here=", ".join(f"{m} {v:.3f}" for m, v in hv["methods"].items()),
                  note="Different normalization and scale: compare the ratio between methods, not the values.")

        st.subheader("Run detail")
        rid = st.selectbox("run", chosen or list(labels), format_func=labels.get, key="pl_detail")
        run = store.get(rid)
        rows = store.metrics(rid) or (run["result"] or {}).get("history") or []
        st.plotly_chart(curves_figure({f"run {rid}": rows}, {f"run {rid}": run["config"].get("method", "")}),
                        theme=None, key="pl_detail_curves", config={"displaylogo": False})
        ex = (run["result"] or {}).get("export") or {}
        if ex:
            rep = pd.DataFrame([
                {"measure": "parameters", "before": ex.get("params_before"), "after": ex.get("params_after")},
                {"measure": "FLOPs (batch 1)", "before": ex.get("flops_before"), "after": ex.get("flops_after")},
                {"measure": "latency ms (batch 1)", "before": ex.get("latency_ms_before"),
                 "after": ex.get("latency_ms_after")},
                {"measure": "file bytes", "before": ex.get("file_bytes_before"), "after": ex.get("file_bytes_after")},
                {"measure": "test accuracy %", "before": run["result"].get("test_acc"), "after": ex.get("test_acc")},
            ])
            st.markdown("**Export report** (physical pruning; `after` = the exported network)")
            st.dataframe(rep, hide_index=True, key="pl_export_table")
        c1, c2 = st.columns(2)
        with c1:
            if rows:
                download_csv(pd.DataFrame(rows), f"run_{rid}_metrics.csv", "Download metrics CSV", key="pl_dl_csv")
        with c2:
            path = ex.get("path")
            if path and os.path.isfile(path):
                with open(path, "rb") as fh:
                    st.download_button("Download pruned model", fh.read(), file_name=f"run_{rid}_pruned.pt",
                                       key="pl_dl_model")
            elif ex:
                st.caption("The pruned model file is not on this machine (deleted, or written by a Ray node).")
