"""The Pruning lab's "inside the network" panels: a finished run's per-layer structure diff, its
channel norms with the export threshold, the latency protocol with its one-sentence reason, its
provenance, the whole trade-off curve from one run (computed on demand, with budgets and re-export
of any point), and the comparison of selected runs (config diff, aligned curves, parallel
coordinates). Data from :mod:`pcd.train.anatomy` (the same as ``python -m pcd anatomy``), figures
from :mod:`pcd.viz.anatomy`."""
from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pandas as pd
import streamlit as st

from pcd import _files
from pcd.jobs.store import RunStore
from pcd.train import anatomy as A
from pcd.ui import download_csv, show_error
from pcd.ui.chart import plotly_chart
from pcd.ui.table import html_table
from pcd.viz import anatomy as VA


def _ms(d: dict[str, Any]) -> str:
    return f"{d['median']:.3f} ({d['p25']:.3f}–{d['p75']:.3f})"


def latency_rows(export: dict[str, Any]) -> list[dict[str, Any]]:
    """One row per (device, batch) of the stored latency protocol."""
    rows = []
    for dev, per in (export.get("latency_protocol") or {}).items():
        for m in per.values():
            sp = m["speedup"]["after"]
            rows.append({"device": dev, "batch": m["batch"], "threads": m["threads"], "rounds": m["repeats"],
                         "before ms (25–75 %)": _ms(m["ms"]["before"]), "after ms (25–75 %)": _ms(m["ms"]["after"]),
                         "speed-up (25–75 %)": f"{sp['median']:.2f}× ({sp['p25']:.2f}–{sp['p75']:.2f})"})
    return rows


def inside_panel(store: RunStore, rid: int, result: dict[str, Any]) -> None:
    """Inside one finished run: structure diff, norms, latency protocol, provenance, trade-off curve."""
    export = result.get("export") or {}
    with st.expander("Inside the network: channels per layer, norms, latency, provenance", expanded=False):
        layers = export.get("layers") or []
        if not layers:
            st.caption("This run has no per-layer record (no export, or a run from an older version).")
        else:
            left, right = st.columns(2)
            with left:
                plotly_chart(VA.layers_figure(layers), key=f"pl_in_layers_{rid}", config={"displaylogo": False})
            with right:
                plotly_chart(VA.norms_figure(export.get("channel_norms") or [], export.get("threshold")),
                             key=f"pl_in_norms_{rid}", config={"displaylogo": False})
            diff = pd.DataFrame([{"layer": r["layer"], "kind": r["kind"],
                                  "in": f"{r['in_before']} → {r['in_after']}",
                                  "out": f"{r['out_before']} → {r['out_after']}",
                                  "params": f"{r['params_before']:,} → {r['params_after']:,}",
                                  "FLOPs": f"{r['flops_before']:,} → {r['flops_after']:,}",
                                  "kept %": 100.0 * r["kept"]} for r in layers])
            html_table(diff, formats={"kept %": "{:.0f}"})
        if export.get("speedup_reason"):
            st.markdown(f"**Why (not) faster:** {export['speedup_reason']}")
        lat = latency_rows(export)
        if lat:
            html_table(pd.DataFrame(lat))
            st.caption("Before and after are timed interleaved in one process (the order rotates each round), "
                       "after warm-up, with torch's threads pinned; the speed-up is the median of the per-round "
                       "ratios, so load on a shared machine hits both alike. An unchanged network measures 1.0×.")
        prov = result.get("provenance") or {}
        if prov:
            st.caption("Ran with pcd {pcd}, torch {torch}, Python {python}{git} on {device} ({device_model}), "
                       "{threads} thread(s) of {cpus} CPU(s).".format(
                           **{k: prov.get(k, "?") for k in ("pcd", "torch", "python", "device", "device_model",
                                                            "threads", "cpus")},
                           git=f", revision {prov['git']}" if prov.get("git") else ""))
    curve_panel(store, rid, result)


def curve_panel(store: RunStore, rid: int, result: dict[str, Any]) -> None:
    """The whole trade-off curve of one run: computed on demand from its checkpoint (every point
    physically exported, reloaded and evaluated), budgets, and the export of any point."""
    try:  # the run's real folder: a run folder that is a link is neither read nor written
        folder = _files.run_folder(store.data_dir, rid)
    except _files.FileRefused as exc:
        show_error(exc)
        return
    with st.expander("Trade-off curve from this run (no retraining): threshold → accuracy, params, FLOPs, "
                     "latency, size", expanded=False):
        try:
            data = A.read_curve(folder)
        except ValueError as exc:
            show_error(exc)
            data = None
        c1, c2 = st.columns([1, 3])
        points = c1.number_input("points", min_value=2, max_value=64, value=8, step=1, key=f"pl_curve_n_{rid}")
        if c2.button("Compute the curve" if data is None else "Recompute the curve", key=f"pl_curve_go_{rid}",
                     help="loads the run's final model, sweeps the export threshold over its channel norms, and "
                          "exports, reloads and measures each point (the same as python -m pcd anatomy)"):
            bar = st.progress(0.0, text="exporting and measuring each point …")
            try:
                def step(i: int, n: int) -> None:
                    bar.progress(i / n, text=f"point {i} of {n}")

                data = A.inspect_run(folder, points=int(points), progress=step)
            except (ValueError, FileNotFoundError) as exc:
                show_error(exc)
            bar.empty()
        c1, c2 = st.columns([1, 3])
        target = c1.number_input("re-export at a target parameter reduction", min_value=0.01, max_value=0.99,
                                 value=0.5, step=0.05, format="%g", key=f"pl_reexport_t_{rid}")
        if c2.button("Re-export at this reduction", key=f"pl_reexport_go_{rid}",
                     help="removes the weakest channels of the run's final model until this share of the "
                          "parameters is gone; no retraining"):
            _offer_export(store, rid, folder, target_reduction=float(target))
        if data is None:
            st.caption("Not computed yet for this run. It needs the run's checkpoint.pt and dataset on this "
                       "machine; digits takes seconds, a CIFAR ResNet minutes.")
            return
        curve = data["curve"]
        c1, c2 = st.columns(2)
        mflops = c1.number_input("budget: at most MFLOPs (0 = none)", min_value=0.0, value=0.0, format="%g",
                                 key=f"pl_curve_mflops_{rid}")
        kparams = c2.number_input("budget: at most thousand parameters (0 = none)", min_value=0.0, value=0.0,
                                  format="%g", key=f"pl_curve_kparams_{rid}")
        budget = {"max_flops": mflops * 1e6 if mflops > 0 else None,
                  "max_params": kparams * 1e3 if kparams > 0 else None}
        best = A.meets_budget(curve, **budget) if any(budget.values()) else None
        label = f"run {rid}"
        plotly_chart(VA.curve_figure({label: curve}, {label: str(data["config"].get("method", ""))}, best),
                     key=f"pl_curve_fig_{rid}", config={"displaylogo": False})
        if any(budget.values()):
            st.markdown("**Meets the budget:** " + ("no point of this run's curve." if best is None else
                        f"threshold {best['threshold']:.3g} → {best['test_acc']:.2f} % accuracy, "
                        f"{best['params']:,} parameters, {best['flops'] / 1e6:.3f} MFLOPs, "
                        f"{best['bytes'] / 1e3:.1f} KB."))
        download_csv(pd.DataFrame(curve), f"run_{rid}_curve.csv", "Download the curve (CSV, with the run's config)",
                     key=f"pl_curve_csv_{rid}", settings={"run": rid, **data["config"]})
        thr = st.selectbox("export the model at", [r["threshold"] for r in curve], key=f"pl_curve_pick_{rid}",
                           format_func=lambda t: next(f"threshold {t:.3g} ({r['param_reduction']:.0%} fewer "
                                                      f"parameters, {r['test_acc']:.1f} %)"
                                                      for r in curve if r["threshold"] == t))
        if st.button("Export this point", key=f"pl_curve_export_{rid}"):
            _offer_export(store, rid, folder, threshold=float(thr))


def _offer_export(store: RunStore, rid: int, folder: Any, *, threshold: float | None = None,
                  target_reduction: float | None = None) -> None:
    """Re-export a finished run (:func:`pcd.train.anatomy.export_point`) and offer the file."""
    try:
        with st.spinner("exporting, reloading and measuring …"):
            out = A.export_point(folder, threshold=threshold, target_reduction=target_reduction)
        blob = store.read_run_file(rid, out["path"], kind="model")
    except (ValueError, FileNotFoundError) as exc:
        show_error(exc)
        return
    st.success(f"{out['channels_removed']} of {out['channels_total']} channels removed: {out['params']:,} "
               f"parameters, {out['flops'] / 1e6:.3f} MFLOPs, {out['test_acc']:.1f} % test accuracy.")
    if blob is not None:
        st.download_button(f"Download {out['path']} ({out['bytes'] / 1e3:.1f} KB)", blob,
                           file_name=f"run_{rid}_{out['path']}", key=f"pl_reexport_dl_{rid}")


def parallel_panel(points: Sequence[dict[str, Any]]) -> None:
    """Parallel coordinates of a study's finished runs (drag along an axis to brush)."""
    if not st.toggle("The study at a glance: parallel coordinates (method, accuracy, sparsity, FLOPs, latency, "
                     "size)", key="pl_parallel_on",
                     help="drawn with Plotly's full bundle (WebGL), fetched only when you open it"):
        return
    plotly_chart(VA.parallel_figure(points), key="pl_parallel", config={"displaylogo": False})
    st.caption("One line per finished run of this study, coloured by method; drag along an axis to keep only "
               "the runs in a range (several axes combine). ÷ = before / after (2 = half the FLOPs).")


def config_diff_panel(runs: Sequence[dict[str, Any]]) -> None:
    """Only the config keys in which the selected runs differ (one column per run)."""
    if len(runs) < 2:
        return
    diff = A.config_diff({r["id"]: r["config"] or {} for r in runs})
    if not diff:
        st.caption("The selected runs' configs are identical.")
        return
    st.markdown("**Where their configs differ** (every other key is the same)")
    html_table(pd.DataFrame([{"key": k, **{f"run {rid}": str(v) for rid, v in vals.items()}}
                             for k, vals in diff.items()]))
