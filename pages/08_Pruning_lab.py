"""Page 8 -- Pruning lab: presets, queue pruning runs, watch them train, explore the results live.

The widgets only: the run store of the data folder, the presets, the form's configs and estimates,
the queue's pages and the results' tables are the page's data module, :mod:`pcd.studio.pruning_lab`.
"""
from __future__ import annotations

import streamlit as st

from pcd.studio import pruning_lab as PL
from pcd.studio.registry import this_page
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
    url_tabs,
)
from pcd.ui.chart import plotly_chart
from pcd.ui.geometry_view import show_file as show_geometry
from pcd.ui.queue_tab import table_runs
from pcd.ui.run_inside import config_diff_panel, inside_panel, parallel_panel
from pcd.ui.runs_where import where_panel
from pcd.viz.runs import curves_figure, method_bars
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

try:
    store, DATA_DIR = PL.open_store()
except ValueError as exc:
    show_error(exc)
    st.stop()

_sup_error = PL.start_supervisor(DATA_DIR)  # e.g. a read-only data folder
if _sup_error:
    show_error(_sup_error)

# the selected tab is in the URL (?tab=...): a shared link opens on it
tab_queue, tab_runs, tab_results = url_tabs(["Queue runs", "Queue & runs", "Results explorer"])
ss = st.session_state


# ---------------------------------------------------------------------------------------------
# Presets and the queue form
# ---------------------------------------------------------------------------------------------
def _apply_preset() -> None:
    """Copy the chosen preset's training settings into the form (before its widgets are drawn)."""
    for key, value in PL.preset_form(ss.get("pl_preset", "custom")).items():
        ss[key] = value


# A first visit lands on the laptop preset; a link that carries form settings opens the form with them.
ss.setdefault("pl_preset", url_default("preset", "custom" if any(k in st.query_params for k in PL.FORM_KEYS)
                                       else PL.DEFAULT_PRESET, PL.PRESETS))
ss.setdefault("pl_dataset", url_default("dataset", "digits", list(PL.DATASETS)))
ss.setdefault("pl_epochs", url_default("epochs", PL.DEFAULT_EPOCHS, low=1))
for _key, _value in PL.FORM_DEFAULTS.items():
    ss.setdefault(_key, _value)
ss.setdefault("pl_tau", float(url_default("tau", PL.DEFAULT_TAU, low=0.0, high=1.0)))
ss.setdefault("pl_sweep", url_default("sweep", False))
ss.setdefault("pl_methods", url_default("methods", list(PL.DEFAULT_METHODS), allowed=PL.METHODS))
if ss.get("pl_preset_applied") != ss["pl_preset"]:  # a preset from the URL on first load
    _apply_preset()
    ss["pl_preset_applied"] = ss["pl_preset"]


def _preset_panel() -> None:
    preset = PL.preset(ss["pl_preset"])
    st.markdown(f"**{preset.title}** — {preset.description}")
    if preset.measured:
        st.caption(f"Measured here: {preset.measured}")
    c1, c2, c3 = st.columns([1, 1, 2])
    seeds_txt = c1.text_input("study seeds", ", ".join(map(str, preset.seeds)), key=f"pl_study_seeds_{preset.name}")
    ep_in = c2.number_input(f"epochs per run (preset: {preset.base['epochs']})", value=int(preset.base["epochs"]),
                            step=1, key=f"pl_study_epochs_{preset.name}",
                            help="fewer epochs give a quick look; the preset's value is the measured study")
    study = PL.preset_study(store, preset, seeds_txt, ep_in)
    with c3.expander(f"{len(preset.grid)} (method, setting) pairs × seeds"):
        st.dataframe(PL.preset_grid(preset), hide_index=True)
    est = study.est
    n = est["n"]
    dur = PL.duration
    spread = f" (25–75 %: {dur(est['low'])}–{dur(est['high'])})" if est["high"] > est["low"] else ""
    st.info(f"**{n} runs**, estimated ≈ {est['total'] / max(n, 1):.0f} s per run, ≈ {dur(est['total'])}{spread} "
            f"on one slot ({est['basis']}).", icon=":material/schedule:")
    if study.error:
        show_error(study.error)
    if st.button(f"Queue the {preset.name} study ({n} runs)", type="primary", disabled=bool(study.error),
                 key="pl_submit_study"):
        ids = PL.submit_study(store, preset, study.configs)
        st.success(f"Queued {len(ids)} runs ({ids[0]}–{ids[-1]}). Follow them on the **Queue & runs** tab; "
                   "finished runs appear in the **Results explorer** as they finish.")


with tab_queue:
    st.selectbox("preset", PL.PRESETS, key="pl_preset", on_change=_apply_preset, format_func=PL.preset_label,
                 help="a preset fills the form with its training settings and can queue its whole study")
    url_sync(preset=ss["pl_preset"])
    if ss["pl_preset"] != "custom":
        _preset_panel()
        st.divider()
        st.markdown("**Or queue single runs** with these training settings (the form below holds them):")
    left, right = st.columns([1, 1], gap="large")
    with left:
        dataset = st.selectbox("dataset", list(PL.DATASETS), key="pl_dataset", format_func=PL.DATASET_LABELS.get)
        if dataset == "digits":
            st.caption("Always available: 1,797 8×8 digit images, fine for CPU demos (seconds per run).")
        else:
            src, missing = PL.dataset_source(dataset)
            if src is not None:
                st.caption(f"Found at `{src}`.")
            else:
                st.warning(missing, icon=":material/download:")
        ss.setdefault(f"pl_arch_{dataset}", PL.default_arch(dataset))
        arch = st.selectbox("architecture", PL.ARCH_CHOICES, key=f"pl_arch_{dataset}")
        methods = method_picker("method(s)", PL.METHODS, key="pl_methods")
        c1, c2 = st.columns(2)
        secondary = c1.selectbox("secondary objective(s)", PL.SECONDARY_CHOICES, key="pl_secondary",
                                 help="group_lasso: K = 2 (filters); l1+nuclear: K = 3 (sparse + low rank)")
        grouping = c2.selectbox("groups", PL.GROUPING_CHOICES, key="pl_grouping",
                                help="filter: the paper's filter-only groups; filter+bn: also the channel's BN "
                                     "γ/β (a zero filter then really is a dead channel); coupled: all producers "
                                     "of a channel along the dependency graph (what dies can be removed)")
        sweep = st.toggle("τ sweep", key="pl_sweep", help="one click queues every τ × seed (× method)")
        if sweep:
            tau_text = st.text_input("τ values (comma-separated, each in [0, 1])", PL.DEFAULT_TAUS_TEXT,
                                     key="pl_taus")
        else:
            tau_text = str(st.number_input("τ (PCD's guaranteed share of secondary progress), in [0, 1]",
                                           step=0.01, format="%g", key="pl_tau"))
        seeds_text = st.text_input("seed(s) (comma-separated)", PL.DEFAULT_SEEDS_TEXT, key="pl_seeds")
    with right:
        c1, c2, c3 = st.columns(3)
        epochs_in = c1.number_input(f"epochs (1–{PL.MAX_EPOCHS:,})", step=1, key="pl_epochs")
        batch_in = c2.number_input(f"batch size (1–{PL.MAX_BATCH:,})", step=1, key="pl_batch")
        lr_in = c3.number_input("learning rate (0, 10]", step=1e-4, format="%g", key="pl_lr")
        c1, c2, c3 = st.columns(3)
        optimizer = c1.selectbox("optimizer", list(PL.OPTIMIZERS), key="pl_opt")
        device = c2.selectbox("device", list(PL.DEVICES), key="pl_device")
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
            special, spec = PL.hyperparameters(m)
            if not special and not spec:
                continue
            with st.expander(f"{method_label(m)} hyper-parameters"):
                if special is not None:
                    hparams[m] = {k: st.number_input(f"{k} — {h} (default {d:g})", value=float(d), format="%g",
                                                     key=f"pl_hp_{m}_{k}")
                                  for k, (d, lo, hi, h) in special.items()}
                else:
                    hparams[m] = {p.name: param_widget(p, f"pl_hp_{m}_{p.name}", help_in_label=True) for p in spec}

    # out-of-range values are refused with the allowed range, never clamped silently
    form = PL.read_form(dataset=dataset, arch=arch, secondary=secondary, grouping=grouping, epochs=epochs_in,
                        batch=batch_in, lr=lr_in, optimizer=optimizer, device=device, subset=subset_in,
                        threshold=thr_in, target=target_in, tau_text=tau_text, seeds_text=seeds_text,
                        methods=methods, hparams=hparams)
    configs, form_error = form.configs, form.error
    url_sync(dataset=dataset, methods=methods, sweep=sweep,
             **({"epochs": epochs_in} if not form_error else {}), **({} if sweep else {"tau": tau_text}))
    if form_error:
        show_error(form_error)
    else:
        st.markdown(PL.runs_line(configs))
        est = PL.form_estimate(store, form.base)
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
        ids = PL.submit_runs(store, configs)
        st.success(f"Queued run(s) {', '.join(map(str, ids))}. Follow them on the **Queue & runs** tab.")
    if b2.button("Calibrate (1 epoch)", disabled=bool(form_error), key="pl_calibrate",
                 help="queues a 1-epoch run of this shape first (export skipped), to estimate run times"):
        rid = PL.submit_calibration(store, configs[0])
        st.success(f"Queued calibration run {rid} at the front of the queue.")

# ---------------------------------------------------------------------------------------------
# Queue and runs (live), actions on the selected rows
# ---------------------------------------------------------------------------------------------


def _act(action: str, ids: list[int]) -> None:
    ss["pl_action_msg"] = PL.act(store, action, ids)


def _runs_view() -> None:
    msgs, errors = ss.pop("pl_action_msg", ([], []))
    for m in msgs:
        st.toast(m)
    if errors:
        show_error("; ".join(errors))
    # counts (SQL) + the newest page only; an auto-refresh with nothing changed re-reads nothing
    page_no = int(ss.get("pl_page", 1) or 1)
    data, shown_page = PL.queue_data(store, page_no, ss.get("pl_queue_data"))
    if shown_page != page_no:  # runs were deleted since: the last page that exists (before its widget is drawn)
        ss["pl_page"] = shown_page
    ss["pl_queue_data"] = data
    runs, counts = data.runs, data.counts
    pid = PL.supervisor(DATA_DIR)
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
        c2.caption(f"Runs {data.offset + 1:,}–{data.offset + len(runs):,} of {data.total:,}, {PL.QUEUE_PAGE_SIZE} per page. "
                   "`python -m pcd runs list --all` lists every run.")
    # running runs pinned on top, then newest first; held still while rows are selected (pcd.ui.queue_tab)
    shown, chosen = table_runs(store, data, "pl_table")
    st.caption("Select rows (click the boxes at the left; shift-click for a range) to cancel, retry, delete or "
               "compare exactly those runs. While rows are selected the table keeps its order (new runs are "
               "added below), so a refresh never moves a selection.")
    st.dataframe(PL.runs_table(shown), hide_index=True, key="pl_table", on_select="rerun",
                 selection_mode="multi-row", column_config={
                     "progress": st.column_config.ProgressColumn("progress", min_value=0.0, max_value=1.0,
                                                                 format="percent")})
    by_id = {r["id"]: r for r in shown}
    sel = [by_id[i] for i in chosen if i in by_id]
    st.markdown(PL.selection_line(sel))
    ids = PL.action_ids(sel)
    n_cancel, n_retry, n_delete = len(ids["cancel"]), len(ids["retry"]), len(ids["delete"])
    c1, c2, c3, c4 = st.columns(4)
    # on_click: the action runs on exactly the ids listed above, before the table is drawn again
    c1.button(f"Cancel ({n_cancel})", key="pl_cancel", disabled=not n_cancel, on_click=_act,
              args=("cancel", ids["cancel"]),
              help="cancel the selected queued / running runs")
    c2.button(f"Retry ({n_retry})", key="pl_retry", disabled=not n_retry, on_click=_act,
              args=("retry", ids["retry"]),
              help="requeue the selected failed / cancelled runs (they resume from their checkpoints)")
    c3.button(f"Delete ({n_delete})", key="pl_delete", disabled=not n_delete, on_click=_act,
              args=("delete", ids["delete"]),
              help="delete the selected finished runs and their files (running runs: cancel them first)")
    compare = c4.toggle(f"Compare ({len(sel)})", key="pl_compare", disabled=len(sel) < 1)
    if compare and sel:
        st.markdown("**Comparison of the selected runs**")
        series, meth = PL.curves(store, sel)
        plotly_chart(curves_figure(series, meth), key="pl_compare_curves",
                        config={"displaylogo": False})
        config_diff_panel(sel)
    where_panel(store, runs, DATA_DIR, pid, sel)  # issue 16: nodes, placement, worker.log (pcd.ui.runs_where)
    running = data.running
    if running:
        st.markdown("**Live curves of the running runs**")
        series, meth = PL.curves(store, running, history=False)
        plotly_chart(curves_figure(series, meth, keys=["test_acc", "train_loss", "secondary_1", "group_sparsity",
                                                          "mu", "cosine"]),
                        key="pl_live", config={"displaylogo": False})
    if ss.get("pl_was_active") and not (running or counts["queued"]):
        ss["pl_was_active"] = False
        st.rerun(scope="app")  # the queue drained: refresh everything and stop polling
    ss["pl_was_active"] = bool(running or counts["queued"])


ACTIVE = PL.is_active(store)
ss.setdefault("pl_was_active", ACTIVE)
with tab_runs:
    st.fragment(run_every=2.0 if ACTIVE else None)(_runs_view)()

# ---------------------------------------------------------------------------------------------
# Results explorer (follows the queue while runs are active)
# ---------------------------------------------------------------------------------------------
def _height(n_rows: int, cap: int = 30) -> int:
    """A table tall enough for its rows (up to ``cap``; then it scrolls)."""
    return 38 + 35 * max(1, min(n_rows, cap))


def _results_view() -> None:
    # studies from one SQL aggregate, re-read only when a run finished; points of the chosen study only
    ss["pl_done_studies"] = PL.studies(store, ss.get("pl_done_studies"))
    marker, all_studies = ss["pl_done_studies"]
    counts = store.counts()
    pending = counts["running"] + counts["queued"]
    if not all_studies:
        st.info("No finished run yet. Finished runs appear here with their accuracy, sparsity, FLOPs, latency "
                "and file size" + (f" ({pending} queued or running)." if pending else "."))
        return
    study = st.selectbox("study (runs that share everything but method, setting and seed)", list(all_studies),
                         key="pl_study")
    ss["pl_study_points"] = PL.points(store, marker, study, all_studies, ss.get("pl_study_points"))
    _, pts, rows = ss["pl_study_points"]
    n_runs = all_studies[study]["runs"]
    st.caption(f"{n_runs:,} finished run(s) in this study"
               + (f" (shown: the newest {len(pts):,}; `python -m pcd runs summary` summarises all)"
                  if n_runs > len(pts) else "")
               + (f"; {pending} queued or running — this view updates as they finish." if pending else "."))
    ref_acc = PL.reference_accuracy(rows)
    k3 = PL.is_k3(pts)

    st.subheader("Summary: mean ± std over seeds per (method, setting)")
    st.dataframe(PL.summary_frame(rows, ref_acc, k3), hide_index=True, key="pl_summary", height=_height(len(rows)),
                 column_config={"method": st.column_config.TextColumn(width="medium"),
                                "setting": st.column_config.TextColumn(width="medium")})
    with st.expander("What this study shows — and what it does not", expanded=True):
        st.markdown("\n".join(f"- {line}" for line in PL.findings(rows)))
        st.caption("Not shown by a digits study: the test split has 360 images (one image = 0.28 points), the "
                   "network has 24k parameters and trains in seconds, so a weighted sum or a Lagrangian tuned to "
                   "the right weight or target can match PCD. The paper's claim is about *equal* settings: "
                   "symmetric methods over- or under-compress where PCD's τ keeps accuracy (compare the "
                   "default settings above), and its numbers are ResNet-34 / CIFAR-100 after 300 epochs "
                   "(presets paper-protocol and cifar10-resnet20-short, on a GPU). Latency on a shared CPU "
                   "is noisy.")
    download_csv(PL.summary_csv(pts, rows), "pruning_summary.csv", "Download summary CSV (with the study's config)",
                 key="pl_dl_summary")

    c1, c2, c3 = st.columns([1, 1, 1])
    x_key = c1.selectbox("x axis", PL.X_CHOICES, format_func=PL.X_AXES.get, key="pl_x")
    y_key = c2.selectbox("y axis", list(PL.Y_AXES), format_func=PL.Y_AXES.get, key="pl_y")
    seeds_view = c3.toggle("every seed (instead of means)", key="pl_every_seed")
    fig = PL.results_figure(pts, rows, x_key, y_key, seeds_view)
    plotly_chart(fig, key="pl_scatter", config={"displaylogo": False})
    st.caption("Marker = mean over seeds of one (method, setting), bars = ±1 std; dotted line = that method's own "
               "Pareto front (no other of its settings is both more accurate and more compressed); dashed line = "
               "the unpruned network's accuracy.")
    download_figure(fig, "pruning_results.html", key="pl_dl_fig", settings={"study": study, "x": x_key, "y": y_key})
    fronts_line = PL.fronts_line(rows, x_key, y_key)
    if fronts_line:
        st.markdown(fronts_line)

    st.subheader("Matched sparsity, as in the paper")
    c1, c2 = st.columns(2)
    min_x = c1.number_input(f"only baseline points with {PL.X_AXES[x_key]} ≥", value=0.0, format="%g",
                            key=f"pl_minx_{x_key}", help="the paper counts pairs above ~80 % sparsity")
    comp, line = PL.comparison(rows, x_key, y_key, min_x)
    st.markdown(f"**Matched comparisons** — {line}")
    st.caption("Each baseline point (mean over seeds of a method at one setting) is paired with the PCD setting whose "
               "x is closest — chosen on x alone, never on accuracy; tie = the accuracy difference is within the seed "
               "noise sqrt(std_PCD² + std_baseline²). The paper's 47 pairs are against pruning-specific methods "
               "above ~80 % sparsity on CIFAR; ours are the symmetric baselines, prox and the Lagrangian of this "
               "study (raise the threshold above to restrict them to high sparsity).")
    if comp["pairs"]:
        pf = PL.pairs_frame(comp, x_key, y_key)
        st.dataframe(pf, hide_index=True, key="pl_pairs", height=_height(len(pf)))
    claim("ResNet-34/CIFAR-100 at 80–85 % parameter reduction: PCD 73.0 %, unpruned 73.3 %, AuxiNash 44.4 %, "
          "PCGrad ~7.4 %, CAGrad ~7.3 %, FAMO 2.7 %, MGDA 1.2 %",
          here=PL.above_80(rows, ref_acc),
          note=("Per method, its most accurate setting among those that remove at least 80 % of the parameters "
                "(this study's measure; the paper's table is at 80–85 %). A tuned weighted sum, prox or "
                "Lagrangian can get there on digits; at their default settings the symmetric methods collapse "
                "or remove nothing (see 'where it lands')."))

    hv = PL.k3_view(pts)
    if hv.methods:
        st.subheader("K = 3 (cross-entropy + ℓ1 + nuclear): dominated hypervolume")
        plotly_chart(method_bars(hv.methods, "dominated hypervolume per method", "hypervolume", text_format=".3f"),
                     key="pl_hv", config={"displaylogo": False})
        st.caption(hv.caption)
        if hv.flat:
            st.warning(hv.flat, icon=":material/info:")
        claim("PCD vs AuxiNash hypervolume 39.03 vs 14.1 (2.78×), ResNet-34/CIFAR-100, in the paper's own "
              "normalization", here=hv.here,
              note="Different normalization and scale: compare the ratio between methods, not the values.")

    parallel_panel(pts)

    st.subheader("Run detail")
    labels = PL.run_labels(pts)
    rid = st.selectbox("run", list(labels), format_func=labels.get, key="pl_detail")
    d = PL.run_detail(store, rid)
    res, rows_m, rep = d.result, d.rows, d.report
    plotly_chart(curves_figure({f"run {rid}": rows_m}, {f"run {rid}": d.run["config"].get("method", "")}),
                 key="pl_detail_curves", config={"displaylogo": False})
    if d.monitor is not None:  # Gram-based runs record their training geometry
        with st.expander("Training geometry: what every method would have done with this run's gradients"):
            show_geometry(d.monitor, key=f"pl_geo_{rid}", folder=d.folder)
    st.markdown("**Export report** (physical pruning; `after` = the exported network)")
    (st.success if rep["removed"] else st.warning)(rep["message"])
    if rep["rows"]:
        st.dataframe(PL.export_table(rep), hide_index=True, key="pl_export_table")
    if res:
        inside_panel(store, rid, res)
    c1, c2, c3 = st.columns(3)
    with c1:
        if rows_m:
            download_csv(PL.metrics_csv(d), f"run_{rid}_metrics.csv", "Download metrics CSV (with config)",
                         key="pl_dl_csv")
    with c2:
        download_json(PL.run_json(rid, d), f"run_{rid}.json", "Download run JSON", key="pl_dl_json")
    with c3:
        blob = None
        if rep["offer_model"]:
            try:  # served only when it is a regular file inside this run's real folder (pcd._files)
                blob = PL.pruned_model(store, rid, d)
            except ValueError as exc:
                show_error(f"not serving the pruned model: {exc}")
        if blob is not None:
            st.download_button("Download pruned model", blob, file_name=f"run_{rid}_pruned.pt", key="pl_dl_model")
        elif rep["offer_model"]:
            st.caption("The pruned model file is not on this machine (deleted, or written by a Ray node).")


with tab_results:
    st.fragment(run_every=3.0 if ACTIVE else None)(_results_view)()
