"""Page 8 -- Pruning lab: presets, queue pruning runs, watch them train, explore the results live.

Everything here reads and writes the run store of the data folder (``pcd.jobs.RunStore``), the
same one ``python -m pcd runs ...`` uses; a background supervisor executes the queue. The presets
are ``pcd.train.presets`` (``python -m pcd runs submit --preset NAME``); the tables and the
matched-sparsity comparison are ``pcd.train.studies`` (``python -m pcd runs summary``).
"""
from __future__ import annotations

import json
import os
import time

import pandas as pd
import streamlit as st

import pcd.methods as registry
from pcd import _validate as V
from pcd.jobs import RunStore, default_data_dir, ensure_supervisor, eta_seconds, supervisor_pid
from pcd.jobs.queue_view import PAGE_SIZE, estimate_basis, queue_page
from pcd.jobs.sweep import build_sweep, describe, parse_numbers
from pcd.studio.registry import this_page
from pcd.train import presets as P
from pcd.train import studies as R
from pcd.train.config import SPECIAL_METHODS, method_names
from pcd.train.data import cifar_source, missing_data_message
from pcd.train.metrics import K3_MEASURES, PARAM_ZERO
from pcd.train.models import ARCHS
from pcd.train.objectives import GROUPINGS, SECONDARIES
from pcd.train.queue import check_stored, validate_for_queue
from pcd.train.studies import done_studies, study_points
from pcd.ui import (
    claim,
    download_csv,
    download_figure,
    download_json,
    method_picker,
    param_widget,
    setup_page,
    show_error,
    url_default,
    url_sync,
)
from pcd.ui.chart import plotly_chart
from pcd.ui.geometry_view import show_file as show_geometry
from pcd.ui.queue_tab import table_runs
from pcd.ui.run_inside import config_diff_panel, inside_panel, parallel_panel
from pcd.ui.runs_where import where_panel
from pcd.viz.runs import curves_figure, method_bars, results_scatter, study_scatter
from pcd.viz.theme import method_label

setup_page(
    **this_page(__file__).setup,
    intro=(
        "Structured pruning as a hierarchical problem: the **primary** objective is cross-entropy, the "
        "**secondary** is a group lasso over conv filters (or ℓ1 + nuclear norm, K = 3). Pick a **preset** to "
        "see the paper's result in minutes, or queue runs of any method on this machine's GPUs (or CPU), watch "
        "them train, then compare the accuracy each reaches at a given sparsity, FLOPs, latency and file size "
        "after **physical pruning**. Runs live in the data folder: close the browser, come back tomorrow, "
        "everything is still here."
    ),
)

DATA_DIR = default_data_dir()
try:
    store = RunStore(DATA_DIR, check=check_stored)
except ValueError as exc:
    show_error(exc)
    st.stop()

if os.environ.get("PCD_NO_AUTOSTART") != "1":
    try:
        ensure_supervisor(DATA_DIR)
    except OSError as exc:  # e.g. a read-only data folder
        show_error(f"could not start the run supervisor: {exc}")

tab_queue, tab_runs, tab_results = st.tabs(["Queue runs", "Queue & runs", "Results explorer"])
METHODS = method_names()
DASH = "—"
ss = st.session_state


def _fmt(v, spec: str = ".1f", unit: str = "") -> str:
    """A number for a table, ``—`` when there is none yet."""
    try:
        f = float(v)
    except (TypeError, ValueError):
        return DASH
    return format(f, spec) + unit if f == f else DASH


def _pm(mean, std, spec: str = ".1f") -> str:
    if mean is None:
        return DASH
    return _fmt(mean, spec) + (f" ± {_fmt(std, spec)}" if std is not None else "")


# ---------------------------------------------------------------------------------------------
# Presets and the queue form
# ---------------------------------------------------------------------------------------------
PRESETS = ["custom"] + P.names()


def _apply_preset() -> None:
    """Copy the chosen preset's training settings into the form (before its widgets are drawn)."""
    name = ss.get("pl_preset", "custom")
    if name == "custom":
        return
    b = P.get(name).base
    ss["pl_dataset"] = b["dataset"]
    ss[f"pl_arch_{b['dataset']}"] = b["arch"]
    for key, field in (("pl_secondary", "secondary"), ("pl_grouping", "grouping"), ("pl_epochs", "epochs"),
                       ("pl_batch", "batch_size"), ("pl_lr", "lr"), ("pl_opt", "optimizer"), ("pl_device", "device")):
        ss[key] = b[field]
    if "tau" in b:
        ss["pl_tau"] = float(b["tau"])
        ss["pl_sweep"] = False


# A first visit lands on the laptop preset; a link that carries form settings opens the form with them.
_FORM_KEYS = ("dataset", "epochs", "tau", "sweep", "methods")
ss.setdefault("pl_preset", url_default("preset", "custom" if any(k in st.query_params for k in _FORM_KEYS)
                                       else "digits-quick", PRESETS))
ss.setdefault("pl_dataset", url_default("dataset", "digits", ["digits", "cifar10", "cifar100"]))
ss.setdefault("pl_epochs", url_default("epochs", 3, low=1))
ss.setdefault("pl_batch", 128)
ss.setdefault("pl_lr", 1e-3)
ss.setdefault("pl_subset", 0)
ss.setdefault("pl_export_thr", 1e-4)
ss.setdefault("pl_target", 0.0)
ss.setdefault("pl_tau", float(url_default("tau", 0.02, low=0.0, high=1.0)))
ss.setdefault("pl_sweep", url_default("sweep", False))
ss.setdefault("pl_methods", url_default("methods", ["pcd"], allowed=METHODS))
if ss.get("pl_preset_applied") != ss["pl_preset"]:  # a preset from the URL on first load
    _apply_preset()
    ss["pl_preset_applied"] = ss["pl_preset"]


def _preset_panel(all_runs: list[dict]) -> None:
    preset = P.get(ss["pl_preset"])
    st.markdown(f"**{preset.title}** — {preset.description}")
    if preset.measured:
        st.caption(f"Measured here: {preset.measured}")
    c1, c2, c3 = st.columns([1, 1, 2])
    seeds_txt = c1.text_input("study seeds", ", ".join(map(str, preset.seeds)), key=f"pl_study_seeds_{preset.name}")
    ep_in = c2.number_input(f"epochs per run (preset: {preset.base['epochs']})", value=int(preset.base["epochs"]),
                            step=1, key=f"pl_study_epochs_{preset.name}",
                            help="fewer epochs give a quick look; the preset's value is the measured study")
    err = None
    configs: list[dict] = []
    study_base = dict(preset.base)
    try:
        study_base["epochs"] = V.integer(ep_in, "epochs per run", low=1, high=V.LIMITS["epochs"], strict=False)
        seeds = parse_numbers(seeds_txt, name="seeds", low=0, integer=True)
        configs = [validate_for_queue(c) for c in preset.configs(seeds, epochs=study_base["epochs"])]
    except ValueError as exc:
        err = exc
    grid = pd.DataFrame([{"method": method_label(m), "setting": R.setting_label({"method": m, **s}),
                          "seeds": len(preset.seeds)} for m, s in preset.grid])
    with c3.expander(f"{len(preset.grid)} (method, setting) pairs × seeds"):
        st.dataframe(grid, hide_index=True)
    nom = P.nominal_seconds(preset, epochs=study_base["epochs"])
    est = R.estimate_study(all_runs, configs or preset.configs(), nom["per_run"], nom["basis"])
    n = est["n"]

    def _dur(sec: float) -> str:
        return f"{sec / 3600:.1f} h" if sec >= 3600 else f"{sec / 60:.0f} min"

    spread = f" (25–75 %: {_dur(est['low'])}–{_dur(est['high'])})" if est["high"] > est["low"] else ""
    st.info(f"**{n} runs**, estimated ≈ {est['total'] / max(n, 1):.0f} s per run, ≈ {_dur(est['total'])}{spread} "
            f"on one slot ({est['basis']}).", icon=":material/schedule:")
    if err:
        show_error(err)
    if st.button(f"Queue the {preset.name} study ({n} runs)", type="primary", disabled=bool(err),
                 key="pl_submit_study"):
        ids = store.submit_many(configs, labels=[f"{preset.name} · {describe(c)}" for c in configs])
        st.success(f"Queued {len(ids)} runs ({ids[0]}–{ids[-1]}). Follow them on the **Queue & runs** tab; "
                   "finished runs appear in the **Results explorer** as they finish.")


with tab_queue:
    st.selectbox("preset", PRESETS, key="pl_preset", on_change=_apply_preset,
                 format_func=lambda n: "custom settings" if n == "custom" else f"{n} — {P.get(n).title}",
                 help="a preset fills the form with its training settings and can queue its whole study")
    url_sync(preset=ss["pl_preset"])
    if ss["pl_preset"] != "custom":
        _preset_panel(estimate_basis(store))
        st.divider()
        st.markdown("**Or queue single runs** with these training settings (the form below holds them):")
    left, right = st.columns([1, 1], gap="large")
    with left:
        dataset = st.selectbox("dataset", ["digits", "cifar10", "cifar100"], key="pl_dataset",
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
        ss.setdefault(f"pl_arch_{dataset}", "smallcnn" if dataset == "digits" else
                      ("resnet20" if "resnet20" in ARCHS else arch_opts[0]))
        arch = st.selectbox("architecture", arch_opts, key=f"pl_arch_{dataset}")
        methods = method_picker("method(s)", METHODS, key="pl_methods")
        c1, c2 = st.columns(2)
        secondary = c1.selectbox("secondary objective(s)", list(SECONDARIES), key="pl_secondary",
                                 help="group_lasso: K = 2 (filters); l1+nuclear: K = 3 (sparse + low rank)")
        grouping = c2.selectbox("groups", list(GROUPINGS), key="pl_grouping",
                                help="filter: the paper's filter-only groups; filter+bn: also the channel's BN "
                                     "γ/β (a zero filter then really is a dead channel); coupled: all producers "
                                     "of a channel along the dependency graph (what dies can be removed)")
        sweep = st.toggle("τ sweep", key="pl_sweep", help="one click queues every τ × seed (× method)")
        if sweep:
            tau_text = st.text_input("τ values (comma-separated, each in [0, 1])", "0, 0.01, 0.02, 0.05, 0.1",
                                     key="pl_taus")
        else:
            tau_text = str(st.number_input("τ (PCD's guaranteed share of secondary progress), in [0, 1]",
                                           step=0.01, format="%g", key="pl_tau"))
        seeds_text = st.text_input("seed(s) (comma-separated)", "0", key="pl_seeds")
    with right:
        c1, c2, c3 = st.columns(3)
        epochs_in = c1.number_input(f"epochs (1–{V.LIMITS['epochs']:,})", step=1, key="pl_epochs")
        batch_in = c2.number_input(f"batch size (1–{V.LIMITS['batch_size']:,})", step=1, key="pl_batch")
        lr_in = c3.number_input("learning rate (0, 10]", step=1e-4, format="%g", key="pl_lr")
        c1, c2, c3 = st.columns(3)
        optimizer = c1.selectbox("optimizer", ["adam", "sgd"], key="pl_opt")
        device = c2.selectbox("device", ["auto", "cpu", "cuda"], key="pl_device")
        subset_in = c3.number_input("training images (0 = all)", step=256, key="pl_subset",
                                    help="a CIFAR subset keeps CPU runs short")
        c1, c2 = st.columns(2)
        thr_in = c1.number_input("export: remove channels whose filter norm is below", step=1e-4, format="%g",
                                 key="pl_export_thr", help="the paper's threshold is 1e-4")
        target_in = c2.number_input("or: target parameter reduction, 0–0.99 (0 = use the threshold)", step=0.05,
                                   format="%g", key="pl_target",
                                   help="removes the weakest channels until this share of the parameters is gone")
        hparams: dict[str, dict] = {}
        for m in methods:
            spec = ([p for p in registry.get(m).params if p.name != registry.get(m).primary_knob]
                    if m not in SPECIAL_METHODS else None)
            if spec == [] or (spec is None and not SPECIAL_METHODS[m]):
                continue
            with st.expander(f"{method_label(m)} hyper-parameters"):
                if spec is None:
                    hparams[m] = {k: st.number_input(f"{k} — {h} (default {d:g})", value=float(d), format="%g",
                                                     key=f"pl_hp_{m}_{k}")
                                  for k, (d, lo, hi, h) in SPECIAL_METHODS[m].items()}
                else:
                    hparams[m] = {p.name: param_widget(p, f"pl_hp_{m}_{p.name}", help_in_label=True) for p in spec}

    configs, form_error = [], None
    try:  # out-of-range values are refused here with the allowed range, never clamped silently
        epochs = V.integer(epochs_in, "epochs", low=1, high=V.LIMITS["epochs"], strict=False)
        batch = V.integer(batch_in, "batch size", low=1, high=V.LIMITS["batch_size"], strict=False)
        lr = V.number(lr_in, "learning rate", low=0, high=10, open_low=True)
        subset = V.integer(subset_in, "training images", low=0, high=V.LIMITS["samples"], strict=False)
        thr = V.number(thr_in, "export threshold", low=0.0, high=1e6)
        target = V.number(target_in, "target parameter reduction", low=0.0, high=0.99)
        base = {"dataset": dataset, "arch": arch, "secondary": secondary, "grouping": grouping, "epochs": epochs,
                "batch_size": batch, "lr": lr, "optimizer": optimizer, "device": device,
                "max_train_samples": subset or None, "export_threshold": thr, "target_reduction": target or None}
        taus = parse_numbers(tau_text, name="τ", low=0.0, high=1.0)
        seeds = parse_numbers(seeds_text, name="seeds", low=0, integer=True)
        configs = build_sweep(base, methods, taus, seeds, hparams)
        configs = [validate_for_queue(c) for c in configs]
    except ValueError as exc:
        form_error = exc
    url_sync(dataset=dataset, methods=methods, sweep=sweep,
             **({"epochs": epochs_in} if not form_error else {}), **({} if sweep else {"tau": tau_text}))
    all_runs = estimate_basis(store)  # the newest finished runs: bounded however many the store holds
    if form_error:
        show_error(form_error)
    else:
        msg = f"**{len(configs)} run(s)**: " + "; ".join(describe(c) for c in configs[:6])
        msg += " …" if len(configs) > 6 else ""
        st.markdown(msg)
        est = R.estimate_seconds(all_runs, base)
        if est:
            st.caption(f"Estimated ≈ {est['seconds']:.0f} s per run (25–75 %: {est['low']:.0f}–{est['high']:.0f} s; "
                       f"{est['per_epoch']:.1f} s/epoch + {est['overhead']:.0f} s start-up/export, from "
                       f"{est['basis']} finished run(s) of the same shape"
                       + (" and method" if est["same_method"] else ", any method") + f"); ≈ "
                       f"{est['seconds'] * len(configs) / 60:.1f} min for all on one slot.")
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
# Queue and runs (live), actions on the selected rows
# ---------------------------------------------------------------------------------------------


def _runs_table(runs: list[dict]) -> pd.DataFrame:
    now = time.time()
    rows = []
    for r in runs:
        cfg = r["config"] or {}
        res = r["result"] or {}
        pt = R.run_point(r) or {}
        eta = eta_seconds(r)
        m = str(cfg.get("method", ""))
        rows.append({
            "run": r["id"], "status": r["status"],
            "progress": float(r["progress"] or 0.0),
            "epoch": f"{r['epoch'] or 0}/{r['epochs'] or cfg.get('epochs', '?')}",
            "ETA": f"{eta:.0f} s" if eta is not None else DASH,
            "device": r["device"] or DASH,
            "heartbeat": (f"{max(0.0, now - r['heartbeat']):.0f} s ago" if r["status"] == "running"
                          and r.get("heartbeat") else DASH),
            "method": method_label(m) if m else DASH,
            "setting": R.setting_label(cfg) if m else DASH,
            "seed": str(cfg.get("seed", DASH)) if r.get("invalid") else cfg.get("seed", DASH),
            "data / arch": f"{cfg.get('dataset')}/{cfg.get('arch') or 'default'}",
            "accuracy %": _fmt(res.get("test_acc")),
            "param. reduction %": _fmt(pt.get("param_reduction")),
            "group sparsity %": _fmt(res.get("group_sparsity")),
            "wall s": _fmt(pt.get("wall_seconds"), ".0f"),
            "error": (f"INVALID: {r['invalid']}; delete this run" if r.get("invalid") else "")
                     + (r["error"] or ""),
        })
    return pd.DataFrame(rows)


def _act(action: str, ids: list[int]) -> None:
    msgs, errors = [], []
    for rid in ids:
        try:
            if action == "cancel":
                msgs.append(f"run {rid}: {store.cancel(rid)}")
            elif action == "retry":
                store.retry(rid)
                msgs.append(f"run {rid}: queued again")
            else:
                store.delete(rid)
                msgs.append(f"run {rid}: deleted")
        except ValueError as exc:
            errors.append(str(exc))
    ss["pl_action_msg"] = (msgs, errors)


def _runs_view() -> None:
    msgs, errors = ss.pop("pl_action_msg", ([], []))
    for m in msgs:
        st.toast(m)
    if errors:
        show_error("; ".join(errors))
    # counts (SQL) + the newest page only; an auto-refresh with nothing changed re-reads nothing
    page_no = int(ss.get("pl_page", 1) or 1)
    try:
        data = queue_page(store, page=page_no, previous=ss.get("pl_queue_data"))
    except ValueError:
        data = queue_page(store, page=1)
    if page_no > data.pages:  # runs were deleted since: the last page that exists (before its widget is drawn)
        ss["pl_page"] = data.pages
        data = queue_page(store, page=data.pages)
    ss["pl_queue_data"] = data
    runs, counts = data.runs, data.counts
    pid = supervisor_pid(DATA_DIR)
    cols = st.columns(6)
    for col, (s, n) in zip(cols, counts.items()):
        col.metric(s, n)
    cols[5].metric("supervisor", "on" if pid else "off",
                   help=f"pid {pid} serves {DATA_DIR}" if pid else f"nothing serves {DATA_DIR}")
    if not pid:
        st.caption("No supervisor is serving this data folder: queued runs wait. It starts with the app, or run "
                   f"`python -m pcd worker --data-dir {DATA_DIR}`.")
    if not data.total:
        st.info("No runs yet: queue one on the **Queue runs** tab.")
        return
    if data.pages > 1:
        c1, c2 = st.columns([1, 3])
        c1.number_input(f"page (of {data.pages:,}; newest first)", min_value=1, max_value=data.pages, step=1,
                        key="pl_page")
        c2.caption(f"Runs {data.offset + 1:,}–{data.offset + len(runs):,} of {data.total:,}, {PAGE_SIZE} per page. "
                   "`python -m pcd runs list --all` lists every run.")
    # running runs pinned on top, then newest first; held still while rows are selected (pcd.ui.queue_tab)
    shown, chosen = table_runs(store, data, "pl_table")
    st.caption("Select rows (click the boxes at the left; shift-click for a range) to cancel, retry, delete or "
               "compare exactly those runs. While rows are selected the table keeps its order (new runs are "
               "added below), so a refresh never moves a selection.")
    st.dataframe(_runs_table(shown), hide_index=True, key="pl_table", on_select="rerun",
                 selection_mode="multi-row", column_config={
                     "progress": st.column_config.ProgressColumn("progress", min_value=0.0, max_value=1.0,
                                                                 format="percent")})
    by_id = {r["id"]: r for r in shown}
    sel = [by_id[i] for i in chosen if i in by_id]
    what = ", ".join(f"run {r['id']} ({method_label(r['config'].get('method', ''))} "
                     f"{R.setting_label(r['config'])}, seed {r['config'].get('seed', DASH)}, {r['status']})"
                     for r in sel[:6])
    st.markdown(f"**Selected:** {what}" + (" …" if len(sel) > 6 else "") if sel else "**Selected:** none")
    n_cancel = sum(r["status"] in ("queued", "running") for r in sel)
    n_retry = sum(r["status"] in ("failed", "cancelled") for r in sel)
    n_delete = sum(r["status"] in ("done", "failed", "cancelled") for r in sel)
    c1, c2, c3, c4 = st.columns(4)
    # on_click: the action runs on exactly the ids listed above, before the table is drawn again
    c1.button(f"Cancel ({n_cancel})", key="pl_cancel", disabled=not n_cancel, on_click=_act,
              args=("cancel", [r["id"] for r in sel if r["status"] in ("queued", "running")]),
              help="cancel the selected queued / running runs")
    c2.button(f"Retry ({n_retry})", key="pl_retry", disabled=not n_retry, on_click=_act,
              args=("retry", [r["id"] for r in sel if r["status"] in ("failed", "cancelled")]),
              help="requeue the selected failed / cancelled runs (they resume from their checkpoints)")
    c3.button(f"Delete ({n_delete})", key="pl_delete", disabled=not n_delete, on_click=_act,
              args=("delete", [r["id"] for r in sel if r["status"] in ("done", "failed", "cancelled")]),
              help="delete the selected finished runs and their files (running runs: cancel them first)")
    compare = c4.toggle(f"Compare ({len(sel)})", key="pl_compare", disabled=len(sel) < 1)
    if compare and sel:
        st.markdown("**Comparison of the selected runs**")
        series = {f"run {r['id']}": store.metrics(r["id"]) or (r["result"] or {}).get("history") or [] for r in sel}
        meth = {f"run {r['id']}": r["config"].get("method", "") for r in sel}
        plotly_chart(curves_figure(series, meth), key="pl_compare_curves",
                        config={"displaylogo": False})
        config_diff_panel(sel)
    where_panel(store, runs, DATA_DIR, pid, sel)  # issue 16: nodes, placement, worker.log (pcd.ui.runs_where)
    running = data.running
    if running:
        st.markdown("**Live curves of the running runs**")
        series = {f"run {r['id']}": store.metrics(r["id"]) for r in running}
        meth = {f"run {r['id']}": (r["config"] or {}).get("method", "") for r in running}
        plotly_chart(curves_figure(series, meth, keys=["test_acc", "train_loss", "secondary_1", "group_sparsity",
                                                          "mu", "cosine"]),
                        key="pl_live", config={"displaylogo": False})
    if ss.get("pl_was_active") and not (running or counts["queued"]):
        ss["pl_was_active"] = False
        st.rerun(scope="app")  # the queue drained: refresh everything and stop polling
    ss["pl_was_active"] = bool(running or counts["queued"])


_COUNTS = store.counts()
ACTIVE = bool(_COUNTS["running"] or _COUNTS["queued"])
ss.setdefault("pl_was_active", ACTIVE)
with tab_runs:
    st.fragment(run_every=2.0 if ACTIVE else None)(_runs_view)()

# ---------------------------------------------------------------------------------------------
# Results explorer (follows the queue while runs are active)
# ---------------------------------------------------------------------------------------------
X_CHOICES = ["param_reduction", "flops_factor", "latency_factor", "size_factor", "group_sparsity"]
X_SHORT = {"param_reduction": "reduction %", "flops_factor": "FLOPs ÷", "latency_factor": "latency ÷",
           "size_factor": "size ÷", "group_sparsity": "group sparsity %"}


def _height(n_rows: int, cap: int = 30) -> int:
    """A table tall enough for its rows (up to ``cap``; then it scrolls)."""
    return 38 + 35 * max(1, min(n_rows, cap))


def _summary_frame(rows: list[dict], ref_acc: float | None, k3: bool) -> pd.DataFrame:
    out = []
    for r in rows:
        d = {"method": method_label(r["method"]), "setting": r["setting"], "seeds": r["n"],
             "accuracy %": _pm(r["test_acc"], r["test_acc_std"]),
             "exported accuracy %": _pm(r["export_acc"], r["export_acc_std"]),
             "param. reduction %": _pm(r["param_reduction"], r["param_reduction_std"]),
             "params after": _fmt(r["params_after"], ",.0f"),
             "FLOPs after": _fmt(r["flops_after"], ",.0f"), "FLOPs ÷": _fmt(r["flops_factor"], ".2f", "×"),
             "file KB": _fmt((r["file_bytes_after"] or float("nan")) / 1024, ".1f"),
             "size ÷": _fmt(r["size_factor"], ".2f", "×"), "latency ÷": _fmt(r["latency_factor"], ".2f", "×"),
             "train s / run": _fmt(r["seconds"], ".0f"), "wall s / run": _fmt(r["wall_seconds"], ".0f"),
             "where it lands": R.landing(r, ref_acc)}
        if k3:
            d["param. sparsity %"] = _pm(r["param_sparsity"], r["param_sparsity_std"])
            d["effective rank"] = _pm(r["effective_rank"], r["effective_rank_std"], ".2f")
        out.append(d)
    return pd.DataFrame(out)


def _results_view() -> None:
    # studies from one SQL aggregate, re-read only when a run finished; points of the chosen study only
    ss["pl_done_studies"] = done_studies(store, ss.get("pl_done_studies"))
    marker, all_studies = ss["pl_done_studies"]
    counts = store.counts()
    pending = counts["running"] + counts["queued"]
    if not all_studies:
        st.info("No finished run yet. Finished runs appear here with their accuracy, sparsity, FLOPs, latency "
                "and file size" + (f" ({pending} queued or running)." if pending else "."))
        return
    study = st.selectbox("study (runs that share everything but method, setting and seed)", list(all_studies),
                         key="pl_study")
    cached = ss.get("pl_study_points")
    if cached is None or cached[0] != (marker, study):
        cached = ((marker, study), *study_points(store, all_studies[study]))
        ss["pl_study_points"] = cached
    _, pts, rows = cached
    n_runs = all_studies[study]["runs"]
    st.caption(f"{n_runs:,} finished run(s) in this study"
               + (f" (shown: the newest {len(pts):,}; `python -m pcd runs summary` summarises all)"
                  if n_runs > len(pts) else "")
               + (f"; {pending} queued or running — this view updates as they finish." if pending else "."))
    ref = [r["test_acc"] for r in rows if r["method"] == "unpruned" and r["test_acc"] is not None]
    ref_acc = ref[0] if ref else None
    k3 = any(p["secondary"] == "l1+nuclear" for p in pts)

    st.subheader("Summary: mean ± std over seeds per (method, setting)")
    st.dataframe(_summary_frame(rows, ref_acc, k3), hide_index=True, key="pl_summary", height=_height(len(rows)),
                 column_config={"method": st.column_config.TextColumn(width="medium"),
                                "setting": st.column_config.TextColumn(width="medium")})
    with st.expander("What this study shows — and what it does not", expanded=True):
        st.markdown("\n".join(f"- {line}" for line in R.findings(rows, label=method_label)))
        st.caption("Not shown by a digits study: the test split has 360 images (one image = 0.28 points), the "
                   "network has 24k parameters and trains in seconds, so a weighted sum or a Lagrangian tuned to "
                   "the right weight or target can match PCD. The paper's claim is about *equal* settings: "
                   "symmetric methods over- or under-compress where PCD's τ keeps accuracy (compare the "
                   "default settings above), and its numbers are ResNet-34 / CIFAR-100 after 300 epochs "
                   "(presets paper-protocol and cifar10-resnet20-short, on a GPU). Latency on a shared CPU "
                   "is noisy.")
    cfg0 = {k: v for k, v in pts[0]["config"].items() if k not in ("method", "method_params", "tau", "seed")}
    numeric = pd.DataFrame([{k: v for k, v in r.items() if k not in ("run_ids", "seeds")} for r in rows])
    for k, v in cfg0.items():
        numeric[f"config.{k}"] = json.dumps(v) if isinstance(v, (dict, list)) else v
    download_csv(numeric, "pruning_summary.csv", "Download summary CSV (with the study's config)",
                 key="pl_dl_summary")

    c1, c2, c3 = st.columns([1, 1, 1])
    x_key = c1.selectbox("x axis", X_CHOICES, format_func=R.X_AXES.get, key="pl_x")
    y_key = c2.selectbox("y axis", list(R.Y_AXES), format_func=R.Y_AXES.get, key="pl_y")
    seeds_view = c3.toggle("every seed (instead of means)", key="pl_every_seed")
    if seeds_view:
        fig = results_scatter(pts, x_key, y_key, front=R.pareto_front(pts, x_key, y_key),
                              x_label=R.X_AXES[x_key], y_label=R.Y_AXES[y_key])
    else:
        fig = study_scatter(rows, x_key, y_key, fronts=R.method_fronts(rows, x_key, y_key),
                            x_label=R.X_AXES[x_key], y_label=R.Y_AXES[y_key])
    plotly_chart(fig, key="pl_scatter", config={"displaylogo": False})
    st.caption("Marker = mean over seeds of one (method, setting), bars = ±1 std; dotted line = that method's own "
               "Pareto front (no other of its settings is both more accurate and more compressed); dashed line = "
               "the unpruned network's accuracy.")
    download_figure(fig, "pruning_results.html", key="pl_dl_fig", settings={"study": study, "x": x_key, "y": y_key})
    fronts_hv = R.front_hypervolumes(rows, x_key, y_key)
    if fronts_hv:
        st.markdown("**Each method's front, as one number** — dominated hypervolume in (" + R.X_AXES[x_key]
                    + " / 100, " + R.Y_AXES[y_key] + " / 100), 1.0 = everything removed at 100 %: "
                    + " · ".join(f"{method_label(m)} {v:.3f}" for m, v in sorted(fronts_hv.items(),
                                                                                   key=lambda kv: -kv[1])))

    st.subheader("Matched sparsity, as in the paper")
    c1, c2 = st.columns(2)
    min_x = c1.number_input(f"only baseline points with {R.X_AXES[x_key]} ≥", value=0.0, format="%g",
                            key=f"pl_minx_{x_key}", help="the paper counts pairs above ~80 % sparsity")
    comp = R.paired_comparison(rows, x_key, y_key, min_x=min_x)
    line = (R.pairs_line(comp) if comp["n"] else comp["nothing"] if comp.get("nothing")
            else "no baseline point to pair (queue PCD and baseline runs)")
    st.markdown(f"**Matched comparisons** — {line}")
    st.caption("Each baseline point (mean over seeds of a method at one setting) is paired with the PCD setting whose "
               "x is closest — chosen on x alone, never on accuracy; tie = the accuracy difference is within the seed "
               "noise sqrt(std_PCD² + std_baseline²). The paper's 47 pairs are against pruning-specific methods "
               "above ~80 % sparsity on CIFAR; ours are the symmetric baselines, prox and the Lagrangian of this "
               "study (raise the threshold above to restrict them to high sparsity).")
    if comp["pairs"]:
        xs = X_SHORT[x_key]
        pf = pd.DataFrame([{"baseline": method_label(p["method"]), "setting": p["setting"],
                            xs: _fmt(p[x_key], ".1f"), "accuracy %": _fmt(p[y_key], ".1f"),
                            "paired PCD": p["pcd_setting"], f"PCD {xs}": _fmt(p[f"pcd_{x_key}"], ".1f"),
                            "PCD accuracy %": _fmt(p[f"pcd_{y_key}"], ".1f"),
                            "difference": _fmt(p["difference"], "+.1f"), "noise": _fmt(p["noise"], ".1f"),
                            "verdict": p["verdict"], "dominated by PCD": "yes" if p["dominated_by_pcd"] else "no"}
                           for p in comp["pairs"]])
        st.dataframe(pf, hide_index=True, key="pl_pairs", height=_height(len(pf)))
    above = R.best_above(rows, 80.0)
    ref_txt = [f"{method_label('unpruned')} {ref_acc:.1f} %"] if ref_acc is not None else []
    claim("ResNet-34/CIFAR-100 at 80–85 % parameter reduction: PCD 73.0 %, unpruned 73.3 %, AuxiNash 44.4 %, "
          "PCGrad ~7.4 %, CAGrad ~7.3 %, FAMO 2.7 %, MGDA 1.2 %",
          here=", ".join(ref_txt + [
              f"{method_label(m)} {b['row']['test_acc']:.1f} % ({b['row']['setting']}, "
              f"{b['row']['param_reduction']:.0f} % removed)" if b["row"] else
              f"{method_label(m)}: no setting reaches 80 % (at most {_fmt(b['max_x'], '.0f')} % removed)"
              for m, b in above.items() if m != "unpruned"]),
          note=("Per method, its most accurate setting among those that remove at least 80 % of the parameters "
                "(this study's measure; the paper's table is at 80–85 %). A tuned weighted sum, prox or "
                "Lagrangian can get there on digits; at their default settings the symmetric methods collapse "
                "or remove nothing (see 'where it lands')."))

    hv = R.hypervolume_by_method(pts)
    if hv["methods"]:
        st.subheader("K = 3 (cross-entropy + ℓ1 + nuclear): dominated hypervolume")
        plotly_chart(method_bars({m: v for m, v in hv["methods"].items()}, "dominated hypervolume per method",
                                    "hypervolume", text_format=".3f"), key="pl_hv",
                        config={"displaylogo": False})
        st.caption(f"Measures: {K3_MEASURES}. Normalization: {hv['normalization']}.")
        top = max((p["param_sparsity"] or 0.0) for p in pts if p["secondary"] == "l1+nuclear")
        if top < 5.0:
            st.warning(f"Parameter sparsity (share of weights with |w| < {PARAM_ZERO:g} × their layer's largest) stays at or below {top:.1f} % "
                       "for every method here: nothing was sparsified (too few epochs?), so that axis is flat and "
                       "the hypervolume does not rank it. Compare effective rank and parameter reduction in the "
                       "summary instead.", icon=":material/info:")
        claim("PCD vs AuxiNash hypervolume 39.03 vs 14.1 (2.78×), ResNet-34/CIFAR-100, in the paper's own "
              "normalization", here=", ".join(f"{method_label(m)} {v:.3f}" for m, v in hv["methods"].items()),
              note="Different normalization and scale: compare the ratio between methods, not the values.")

    parallel_panel(pts)

    st.subheader("Run detail")
    labels = {p["id"]: f"run {p['id']} · {method_label(p['method'])} {p['setting']} · seed {p['seed']}" for p in pts}
    rid = st.selectbox("run", list(labels), format_func=labels.get, key="pl_detail")
    run = store.get(rid)
    res = run["result"] or {}
    rows_m = store.metrics(rid) or res.get("history") or []
    plotly_chart(curves_figure({f"run {rid}": rows_m}, {f"run {rid}": run["config"].get("method", "")}),
                    key="pl_detail_curves", config={"displaylogo": False})
    if (store.run_dir(rid) / "monitor.jsonl").is_file():  # Gram-based runs record their training geometry
        with st.expander("Training geometry: what every method would have done with this run's gradients"):
            show_geometry(store.run_dir(rid) / "monitor.jsonl", key=f"pl_geo_{rid}", folder=store.run_dir(rid))
    rep = R.export_report(res)
    st.markdown("**Export report** (physical pruning; `after` = the exported network)")
    (st.success if rep["removed"] else st.warning)(rep["message"])
    if rep["rows"]:
        st.dataframe(pd.DataFrame([{"measure": r["measure"], "before": _fmt(r["before"], ",.6g"),
                                    "after": _fmt(r["after"], ",.6g")} for r in rep["rows"]]),
                     hide_index=True, key="pl_export_table")
    if res:
        inside_panel(store, rid, res)
    c1, c2, c3 = st.columns(3)
    cfg = res.get("config") or run["config"]
    with c1:
        if rows_m:
            mf = pd.DataFrame(rows_m)
            for k, v in cfg.items():
                mf[f"config.{k}"] = json.dumps(v) if isinstance(v, (dict, list)) else v
            download_csv(mf, f"run_{rid}_metrics.csv", "Download metrics CSV (with config)", key="pl_dl_csv")
    with c2:
        download_json({"id": rid, "config": cfg, "result": {k: v for k, v in res.items() if k != "history"},
                       "metrics": rows_m}, f"run_{rid}.json", "Download run JSON", key="pl_dl_json")
    with c3:
        blob = None
        if rep["offer_model"]:
            try:  # served only when it is a regular file inside this run's real folder (pcd._files)
                blob = store.read_run_file(rid, (res.get("export") or {}).get("path"), kind="model")
            except ValueError as exc:
                show_error(f"not serving the pruned model: {exc}")
        if blob is not None:
            st.download_button("Download pruned model", blob, file_name=f"run_{rid}_pruned.pt", key="pl_dl_model")
        elif rep["offer_model"]:
            st.caption("The pruned model file is not on this machine (deleted, or written by a Ray node).")


with tab_results:
    st.fragment(run_every=3.0 if ACTIVE else None)(_results_view)()
