"""Page 08, Pruning lab: its defaults, the run store and supervisor of the data folder, and what the
page shows computed from them -- the queue form's configs and time estimates, the preset studies,
the queue tab's page of runs and the results explorer's study tables, figures and exports.

Everything reads and writes the run store of the data folder (:class:`pcd.jobs.RunStore`, with
training's config check), the same one ``python -m pcd runs ...`` uses; a background supervisor
executes the queue. The presets are :mod:`pcd.train.presets` (``runs submit --preset NAME``); the
tables and the matched-sparsity comparison are :mod:`pcd.train.studies` (``runs summary``).
Nothing is cached here: the store changes while runs train (the page keeps the last reads in its
session and re-reads only what changed), so there is no ``warm()``.
"""
from __future__ import annotations

import json
import os
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd

import pcd.methods as _methods
from pcd import _validate as V
from pcd.jobs import RunStore, default_data_dir, ensure_supervisor, eta_seconds, supervisor_pid
from pcd.jobs.queue_view import PAGE_SIZE, QueuePage, estimate_basis, queue_page
from pcd.jobs.sweep import build_sweep, describe, parse_numbers
from pcd.train import presets as P
from pcd.train import studies as R
from pcd.train.config import SPECIAL_METHODS, method_names
from pcd.train.data import cifar_source, missing_data_message
from pcd.train.metrics import K3_MEASURES, PARAM_ZERO
from pcd.train.models import ARCHS
from pcd.train.objectives import GROUPINGS, SECONDARIES
from pcd.train.queue import check_stored, validate_for_queue
from pcd.train.studies import done_studies, study_points
from pcd.viz.runs import results_scatter, study_scatter
from pcd.viz.theme import method_label

DASH = "—"
QUEUE_PAGE_SIZE = PAGE_SIZE  # runs per page of the queue tab (newest first)

# ---- the queue form's choices and defaults ---------------------------------------------------------
METHODS = method_names()
PRESETS = ["custom"] + P.names()
DEFAULT_PRESET = "digits-quick"  # a first visit lands on the laptop preset
FORM_KEYS = ("dataset", "epochs", "tau", "sweep", "methods")  # URL parameters that open the form as they say
DATASETS = ("digits", "cifar10", "cifar100")
DATASET_LABELS = {"digits": "digits (8×8, ships with scikit-learn)", "cifar10": "CIFAR-10", "cifar100": "CIFAR-100"}
ARCH_CHOICES = list(ARCHS)
SECONDARY_CHOICES = list(SECONDARIES)
GROUPING_CHOICES = list(GROUPINGS)
OPTIMIZERS = ("adam", "sgd")
DEVICES = ("auto", "cpu", "cuda")
MAX_EPOCHS = V.LIMITS["epochs"]
MAX_BATCH = V.LIMITS["batch_size"]
DEFAULT_EPOCHS, DEFAULT_TAU, DEFAULT_METHODS = 3, 0.02, ("pcd",)
DEFAULT_TAUS_TEXT, DEFAULT_SEEDS_TEXT = "0, 0.01, 0.02, 0.05, 0.1", "0"
# the form's other fields: session-state key -> first value
FORM_DEFAULTS = {"pl_batch": 128, "pl_lr": 1e-3, "pl_subset": 0, "pl_export_thr": 1e-4, "pl_target": 0.0}

# ---- the results explorer's axes ---------------------------------------------------------------------
X_CHOICES = ["param_reduction", "flops_factor", "latency_factor", "size_factor", "group_sparsity"]
X_SHORT = {"param_reduction": "reduction %", "flops_factor": "FLOPs ÷", "latency_factor": "latency ÷",
           "size_factor": "size ÷", "group_sparsity": "group sparsity %"}
X_AXES: dict[str, str] = R.X_AXES  # axis key -> its label (pcd.train.studies)
Y_AXES: dict[str, str] = R.Y_AXES


def fmt(v: Any, spec: str = ".1f", unit: str = "") -> str:
    """A number for a table, ``—`` when there is none yet."""
    try:
        f = float(v)
    except (TypeError, ValueError):
        return DASH
    return format(f, spec) + unit if f == f else DASH


def pm(mean: Any, std: Any, spec: str = ".1f") -> str:
    """``mean ± std`` for a table (``—`` without a mean; the mean alone without a std)."""
    if mean is None:
        return DASH
    return fmt(mean, spec) + (f" ± {fmt(std, spec)}" if std is not None else "")


def duration(sec: float) -> str:
    """A study's duration in hours (from one hour on) or minutes."""
    return f"{sec / 3600:.1f} h" if sec >= 3600 else f"{sec / 60:.0f} min"


# ---- the data folder: its run store and supervisor -----------------------------------------------------
def open_store() -> tuple[RunStore, Path]:
    """The data folder (``PCD_DATA_DIR`` or the default) and its run store, which checks every stored
    config with training's check; a ValueError when the folder cannot hold a store."""
    data_dir = default_data_dir()
    return RunStore(data_dir, check=check_stored), data_dir


def start_supervisor(data_dir: Path) -> str | None:
    """Make sure a background supervisor serves ``data_dir`` (not when ``PCD_NO_AUTOSTART=1``); the
    reason in words when it could not start (e.g. a read-only data folder), else None."""
    if os.environ.get("PCD_NO_AUTOSTART") == "1":
        return None
    try:
        ensure_supervisor(data_dir)
    except OSError as exc:
        return f"could not start the run supervisor: {exc}"
    return None


def supervisor(data_dir: Path) -> int | None:
    """The pid of the supervisor serving ``data_dir``, None when nothing serves it."""
    return supervisor_pid(data_dir)


def is_active(store: RunStore) -> bool:
    """True while runs are running or queued (the tabs then refresh themselves)."""
    counts = store.counts()
    return bool(counts["running"] or counts["queued"])


# ---- presets -------------------------------------------------------------------------------------------
def preset(name: str) -> P.Preset:
    """The preset ``name`` (:mod:`pcd.train.presets`)."""
    return P.get(name)


def preset_label(name: str) -> str:
    """The preset picker's label of ``name``."""
    return "custom settings" if name == "custom" else f"{name} — {P.get(name).title}"


def preset_form(name: str) -> dict[str, Any]:
    """The queue form's session-state values that the preset ``name`` sets (its training settings;
    its τ turns the sweep off); nothing for ``custom``."""
    if name == "custom":
        return {}
    b = P.get(name).base
    out: dict[str, Any] = {"pl_dataset": b["dataset"], f"pl_arch_{b['dataset']}": b["arch"]}
    for key, fld in (("pl_secondary", "secondary"), ("pl_grouping", "grouping"), ("pl_epochs", "epochs"),
                     ("pl_batch", "batch_size"), ("pl_lr", "lr"), ("pl_opt", "optimizer"), ("pl_device", "device")):
        out[key] = b[fld]
    if "tau" in b:
        out["pl_tau"] = float(b["tau"])
        out["pl_sweep"] = False
    return out


def preset_grid(p: P.Preset) -> pd.DataFrame:
    """The preset's (method, setting) pairs and their number of seeds, as a table."""
    return pd.DataFrame([{"method": method_label(m), "setting": R.setting_label({"method": m, **s}),
                          "seeds": len(p.seeds)} for m, s in p.grid])


@dataclass
class Study:
    """A preset's study as the form sets it: its validated ``configs`` (empty when ``error``), the
    time estimate ``est`` (:func:`pcd.train.studies.estimate_study`) and ``error``."""

    configs: list[dict]
    est: dict
    error: ValueError | None = None


def preset_study(store: RunStore, p: P.Preset, seeds_text: str, epochs: Any) -> Study:
    """The study of preset ``p`` with the seeds ``seeds_text`` and ``epochs`` per run (refused with a
    ValueError in ``error``, never clamped), and its duration estimated from this store's finished
    runs (the preset's own configs when the form's are refused)."""
    err = None
    configs: list[dict] = []
    base = dict(p.base)
    try:
        base["epochs"] = V.integer(epochs, "epochs per run", low=1, high=V.LIMITS["epochs"], strict=False)
        seeds = parse_numbers(seeds_text, name="seeds", low=0, integer=True)
        configs = [validate_for_queue(c) for c in p.configs(seeds, epochs=base["epochs"])]
    except ValueError as exc:
        err = exc
    nom = P.nominal_seconds(p, epochs=base["epochs"])
    est = R.estimate_study(estimate_basis(store), configs or p.configs(), nom["per_run"], nom["basis"])
    return Study(configs, est, err)


def submit_study(store: RunStore, p: P.Preset, configs: list[dict]) -> list[int]:
    """Queue a preset's study; the new run ids."""
    return store.submit_many(configs, labels=[f"{p.name} · {describe(c)}" for c in configs])


# ---- the queue form ------------------------------------------------------------------------------------
def dataset_source(dataset: str) -> tuple[Path | None, str]:
    """Where the CIFAR files of ``dataset`` were found (None when they were not) and what to do
    when they are missing."""
    src = cifar_source(dataset)
    return src, ("" if src is not None else missing_data_message(dataset))


def default_arch(dataset: str) -> str:
    """The architecture the form proposes for ``dataset``."""
    return "smallcnn" if dataset == "digits" else ("resnet20" if "resnet20" in ARCHS else ARCH_CHOICES[0])


def hyperparameters(method: str) -> tuple[dict | None, list]:
    """What the form asks about ``method`` besides τ: ``(special, params)`` -- for a training-only
    method its ``{name: (default, low, high, help)}`` (:data:`pcd.train.config.SPECIAL_METHODS`) and no
    params; for a registered method None and its :class:`pcd.methods.Param` specs other than the
    primary knob. Both empty: nothing to ask."""
    if method in SPECIAL_METHODS:
        return SPECIAL_METHODS[method], []
    m = _methods.get(method)
    return None, [p for p in m.params if p.name != m.primary_knob]


@dataclass
class Form:
    """The queue form read: the validated ``configs`` (one per method × τ × seed), the shared
    training settings ``base`` and the ``error`` that refused them (then ``configs`` is empty)."""

    configs: list[dict] = field(default_factory=list)
    base: dict = field(default_factory=dict)
    error: ValueError | None = None


def read_form(*, dataset: str, arch: str, secondary: str, grouping: str, epochs: Any, batch: Any, lr: Any,
              optimizer: str, device: str, subset: Any, threshold: Any, target: Any, tau_text: str,
              seeds_text: str, methods: Sequence[str], hparams: dict[str, dict]) -> Form:
    """The runs the form's values ask for. Out-of-range values are refused with the allowed range
    (a ValueError in ``error``), never clamped silently."""
    out = Form()
    try:
        ep = V.integer(epochs, "epochs", low=1, high=V.LIMITS["epochs"], strict=False)
        bs = V.integer(batch, "batch size", low=1, high=V.LIMITS["batch_size"], strict=False)
        lr_ = V.number(lr, "learning rate", low=0, high=10, open_low=True)
        n = V.integer(subset, "training images", low=0, high=V.LIMITS["samples"], strict=False)
        thr = V.number(threshold, "export threshold", low=0.0, high=1e6)
        tgt = V.number(target, "target parameter reduction", low=0.0, high=0.99)
        out.base = {"dataset": dataset, "arch": arch, "secondary": secondary, "grouping": grouping, "epochs": ep,
                    "batch_size": bs, "lr": lr_, "optimizer": optimizer, "device": device,
                    "max_train_samples": n or None, "export_threshold": thr, "target_reduction": tgt or None}
        taus = parse_numbers(tau_text, name="τ", low=0.0, high=1.0)
        seeds = parse_numbers(seeds_text, name="seeds", low=0, integer=True)
        configs = build_sweep(out.base, list(methods), taus, seeds, hparams)
        out.configs = [validate_for_queue(c) for c in configs]
    except ValueError as exc:
        out.error = exc
    return out


def runs_line(configs: Sequence[dict], shown: int = 6) -> str:
    """``**N run(s)**: ...``: the runs the form would queue, the first ``shown`` described."""
    msg = f"**{len(configs)} run(s)**: " + "; ".join(describe(c) for c in configs[:shown])
    return msg + (" …" if len(configs) > shown else "")


def form_estimate(store: RunStore, base: dict) -> dict | None:
    """Seconds per run of the form's shape, from this store's newest finished runs
    (:func:`pcd.train.studies.estimate_seconds`); None without a finished run of that shape."""
    return R.estimate_seconds(estimate_basis(store), base)


def submit_runs(store: RunStore, configs: list[dict]) -> list[int]:
    """Queue the form's runs; their ids."""
    return store.submit_many(configs, labels=[describe(c) for c in configs])


def submit_calibration(store: RunStore, config: dict) -> int:
    """Queue a 1-epoch run of ``config``'s shape (export skipped) at the front of the queue; its id."""
    return store.submit(R.calibration_config(config), priority=10, label="calibration")


# ---- the queue tab --------------------------------------------------------------------------------------
def queue_data(store: RunStore, page_no: int, previous: QueuePage | None) -> tuple[QueuePage, int]:
    """Counts and page ``page_no`` of the runs (newest first; ``previous`` returned as it is when
    nothing changed), and the page number shown: the last page that exists when runs were deleted
    since, page 1 when ``page_no`` is refused."""
    try:
        data = queue_page(store, page=page_no, previous=previous)
    except ValueError:
        data = queue_page(store, page=1)
    if page_no > data.pages:
        page_no = data.pages
        data = queue_page(store, page=data.pages)
    return data, page_no


def runs_table(runs: Sequence[dict], now: float | None = None) -> pd.DataFrame:
    """The queue tab's table: one row per run (status, progress, ETA, heartbeat, setting, results)."""
    now = time.time() if now is None else now
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
            "accuracy %": fmt(res.get("test_acc")),
            "param. reduction %": fmt(pt.get("param_reduction")),
            "group sparsity %": fmt(res.get("group_sparsity")),
            "wall s": fmt(pt.get("wall_seconds"), ".0f"),
            "error": (f"INVALID: {r['invalid']}; delete this run" if r.get("invalid") else "")
                     + (r["error"] or ""),
        })
    return pd.DataFrame(rows)


def selection_line(sel: Sequence[dict], shown: int = 6) -> str:
    """``**Selected:** ...``: the selected runs (the first ``shown``), or none."""
    if not sel:
        return "**Selected:** none"
    what = ", ".join(f"run {r['id']} ({method_label(r['config'].get('method', ''))} "
                     f"{R.setting_label(r['config'])}, seed {r['config'].get('seed', DASH)}, {r['status']})"
                     for r in sel[:shown])
    return f"**Selected:** {what}" + (" …" if len(sel) > shown else "")


# the statuses each action applies to
ACTION_STATUSES = {"cancel": ("queued", "running"), "retry": ("failed", "cancelled"),
                   "delete": ("done", "failed", "cancelled")}


def action_ids(sel: Sequence[dict]) -> dict[str, list[int]]:
    """The ids of the selected runs each action (cancel, retry, delete) applies to."""
    return {a: [r["id"] for r in sel if r["status"] in statuses] for a, statuses in ACTION_STATUSES.items()}


def act(store: RunStore, action: str, ids: Sequence[int]) -> tuple[list[str], list[str]]:
    """Cancel, retry or delete the runs ``ids``; what happened to each and the errors."""
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
    return msgs, errors


def curves(store: RunStore, runs: Sequence[dict], history: bool = True) -> tuple[dict, dict]:
    """``(series, methods)`` for :func:`pcd.viz.runs.curves_figure`: each run's metric rows (with
    ``history``: its result's history when the store holds none) and its method, keyed ``run N``."""
    series = {f"run {r['id']}": (store.metrics(r["id"]) or (r["result"] or {}).get("history") or [])
              if history else store.metrics(r["id"]) for r in runs}
    meth = {f"run {r['id']}": (r["config"] or {}).get("method", "") for r in runs}
    return series, meth


# ---- the results explorer ------------------------------------------------------------------------------
def studies(store: RunStore, previous: tuple | None) -> tuple:
    """``(marker, studies)``: the finished studies (one SQL aggregate), ``previous`` as it is when
    no run finished since."""
    return done_studies(store, previous)


def points(store: RunStore, marker: Any, name: str, all_studies: dict, cached: tuple | None) -> tuple:
    """``(key, points, rows)`` of the study ``name``: its runs' points (the newest
    :data:`pcd.train.studies.STUDY_POINTS`) and their mean ± std per (method, setting);
    ``cached`` as it is when it holds this study at this ``marker``."""
    if cached is None or cached[0] != (marker, name):
        cached = ((marker, name), *study_points(store, all_studies[name]))
    return cached


def reference_accuracy(rows: Sequence[dict]) -> float | None:
    """The unpruned network's accuracy in the study, None without an unpruned run."""
    ref = [r["test_acc"] for r in rows if r["method"] == "unpruned" and r["test_acc"] is not None]
    return ref[0] if ref else None


def is_k3(pts: Sequence[dict]) -> bool:
    """True when the study has K = 3 runs (ℓ1 + nuclear norm)."""
    return any(p["secondary"] == "l1+nuclear" for p in pts)


def summary_frame(rows: Sequence[dict], ref_acc: float | None, k3: bool) -> pd.DataFrame:
    """The summary table: mean ± std over seeds per (method, setting), and where each lands."""
    out = []
    for r in rows:
        d = {"method": method_label(r["method"]), "setting": r["setting"], "seeds": r["n"],
             "accuracy %": pm(r["test_acc"], r["test_acc_std"]),
             "exported accuracy %": pm(r["export_acc"], r["export_acc_std"]),
             "param. reduction %": pm(r["param_reduction"], r["param_reduction_std"]),
             "params after": fmt(r["params_after"], ",.0f"),
             "FLOPs after": fmt(r["flops_after"], ",.0f"), "FLOPs ÷": fmt(r["flops_factor"], ".2f", "×"),
             "file KB": fmt((r["file_bytes_after"] or float("nan")) / 1024, ".1f"),
             "size ÷": fmt(r["size_factor"], ".2f", "×"), "latency ÷": fmt(r["latency_factor"], ".2f", "×"),
             "train s / run": fmt(r["seconds"], ".0f"), "wall s / run": fmt(r["wall_seconds"], ".0f"),
             "where it lands": R.landing(r, ref_acc)}
        if k3:
            d["param. sparsity %"] = pm(r["param_sparsity"], r["param_sparsity_std"])
            d["effective rank"] = pm(r["effective_rank"], r["effective_rank_std"], ".2f")
        out.append(d)
    return pd.DataFrame(out)


def _with_config(frame: pd.DataFrame, config: dict) -> pd.DataFrame:
    """``frame`` with one ``config.KEY`` column per config entry (lists and dicts as JSON)."""
    for k, v in config.items():
        frame[f"config.{k}"] = json.dumps(v) if isinstance(v, (dict, list)) else v
    return frame


def summary_csv(pts: Sequence[dict], rows: Sequence[dict]) -> pd.DataFrame:
    """The summary's numbers for the CSV download, with the study's shared config."""
    cfg0 = {k: v for k, v in pts[0]["config"].items() if k not in ("method", "method_params", "tau", "seed")}
    numeric = pd.DataFrame([{k: v for k, v in r.items() if k not in ("run_ids", "seeds")} for r in rows])
    return _with_config(numeric, cfg0)


def findings(rows: Sequence[dict]) -> list[str]:
    """What the study shows, one line each (:func:`pcd.train.studies.findings`)."""
    return R.findings(rows, label=method_label)


def results_figure(pts: list[dict], rows: list[dict], x_key: str, y_key: str, every_seed: bool) -> Any:
    """The accuracy-vs-compression scatter: every seed with the overall Pareto front, or the means
    per (method, setting) with each method's own front."""
    if every_seed:
        return results_scatter(pts, x_key, y_key, front=R.pareto_front(pts, x_key, y_key),
                               x_label=X_AXES[x_key], y_label=Y_AXES[y_key])
    return study_scatter(rows, x_key, y_key, fronts=R.method_fronts(rows, x_key, y_key),
                         x_label=X_AXES[x_key], y_label=Y_AXES[y_key])


def fronts_line(rows: Sequence[dict], x_key: str, y_key: str) -> str | None:
    """Each method's front as one number (its dominated hypervolume), best first; None without fronts."""
    fronts_hv = R.front_hypervolumes(rows, x_key, y_key)
    if not fronts_hv:
        return None
    return ("**Each method's front, as one number** — dominated hypervolume in (" + X_AXES[x_key]
            + " / 100, " + Y_AXES[y_key] + " / 100), 1.0 = everything removed at 100 %: "
            + " · ".join(f"{method_label(m)} {v:.3f}" for m, v in sorted(fronts_hv.items(), key=lambda kv: -kv[1])))


def comparison(rows: Sequence[dict], x_key: str, y_key: str, min_x: float) -> tuple[dict, str]:
    """The paper's matched-sparsity comparison (baseline points with x >= ``min_x``, each paired
    with the PCD setting closest in x) and its one-line verdict."""
    comp = R.paired_comparison(rows, x_key, y_key, min_x=min_x)
    line = (R.pairs_line(comp) if comp["n"] else comp["nothing"] if comp.get("nothing")
            else "no baseline point to pair (queue PCD and baseline runs)")
    return comp, line


def pairs_frame(comp: dict, x_key: str, y_key: str) -> pd.DataFrame:
    """The matched pairs as a table."""
    xs = X_SHORT[x_key]
    return pd.DataFrame([{"baseline": method_label(p["method"]), "setting": p["setting"],
                          xs: fmt(p[x_key], ".1f"), "accuracy %": fmt(p[y_key], ".1f"),
                          "paired PCD": p["pcd_setting"], f"PCD {xs}": fmt(p[f"pcd_{x_key}"], ".1f"),
                          "PCD accuracy %": fmt(p[f"pcd_{y_key}"], ".1f"),
                          "difference": fmt(p["difference"], "+.1f"), "noise": fmt(p["noise"], ".1f"),
                          "verdict": p["verdict"], "dominated by PCD": "yes" if p["dominated_by_pcd"] else "no"}
                         for p in comp["pairs"]])


def above_80(rows: Sequence[dict], ref_acc: float | None) -> str:
    """Per method, its most accurate setting among those removing at least 80 % of the parameters
    (or how far it gets), after the unpruned accuracy: the paper claim's ``here``."""
    above = R.best_above(rows, 80.0)
    ref_txt = [f"{method_label('unpruned')} {ref_acc:.1f} %"] if ref_acc is not None else []
    return ", ".join(ref_txt + [
        f"{method_label(m)} {b['row']['test_acc']:.1f} % ({b['row']['setting']}, "
        f"{b['row']['param_reduction']:.0f} % removed)" if b["row"] else
        f"{method_label(m)}: no setting reaches 80 % (at most {fmt(b['max_x'], '.0f')} % removed)"
        for m, b in above.items() if m != "unpruned"])


@dataclass
class K3View:
    """The K = 3 hypervolumes of a study: per method (``methods``, empty without K = 3 runs), the
    caption, the warning when nothing was sparsified (None otherwise) and the claim's ``here``."""

    methods: dict[str, float]
    caption: str = ""
    flat: str | None = None
    here: str = ""


def k3_view(pts: Sequence[dict]) -> K3View:
    """The dominated hypervolume per method of the study's K = 3 runs (cross-entropy + ℓ1 + nuclear)."""
    hv = R.hypervolume_by_method(pts)
    if not hv["methods"]:
        return K3View({})
    methods = dict(hv["methods"])
    top = max((p["param_sparsity"] or 0.0) for p in pts if p["secondary"] == "l1+nuclear")
    flat = None
    if top < 5.0:
        flat = (f"Parameter sparsity (share of weights with |w| < {PARAM_ZERO:g} × their layer's largest) stays at "
                f"or below {top:.1f} % for every method here: nothing was sparsified (too few epochs?), so that axis "
                "is flat and the hypervolume does not rank it. Compare effective rank and parameter reduction in the "
                "summary instead.")
    return K3View(methods, f"Measures: {K3_MEASURES}. Normalization: {hv['normalization']}.", flat,
                  ", ".join(f"{method_label(m)} {v:.3f}" for m, v in methods.items()))


def run_labels(pts: Sequence[dict]) -> dict[int, str]:
    """The run picker's label of each point's run."""
    return {p["id"]: f"run {p['id']} · {method_label(p['method'])} {p['setting']} · seed {p['seed']}" for p in pts}


@dataclass
class RunDetail:
    """One run for the detail view: the store's ``run``, its ``result`` (``{}`` before it finished),
    its metric ``rows`` (the store's, else the result's history), its ``config``, its recorder file
    (``monitor``, None when it has none) and its export ``report``."""

    run: dict
    result: dict
    rows: list[dict]
    config: dict
    folder: Path
    monitor: Path | None
    report: dict


def run_detail(store: RunStore, rid: int) -> RunDetail:
    """Run ``rid`` read for the detail view (:class:`RunDetail`)."""
    run = store.get(rid)
    res = run["result"] or {}
    rows = store.metrics(rid) or res.get("history") or []
    folder = store.run_dir(rid)
    mon = folder / "monitor.jsonl"
    return RunDetail(run, res, rows, res.get("config") or run["config"], folder,
                     mon if mon.is_file() else None, R.export_report(res))


def export_table(report: dict) -> pd.DataFrame:
    """The export report's before / after measures as a table."""
    return pd.DataFrame([{"measure": r["measure"], "before": fmt(r["before"], ",.6g"),
                          "after": fmt(r["after"], ",.6g")} for r in report["rows"]])


def metrics_csv(d: RunDetail) -> pd.DataFrame:
    """The run's metric rows for the CSV download, with its config."""
    return _with_config(pd.DataFrame(d.rows), d.config)


def run_json(rid: int, d: RunDetail) -> dict:
    """The run for the JSON download: config, result (without its history) and metric rows."""
    return {"id": rid, "config": d.config, "result": {k: v for k, v in d.result.items() if k != "history"},
            "metrics": d.rows}


def pruned_model(store: RunStore, rid: int, d: RunDetail) -> bytes | None:
    """The run's pruned model file, served only when it is a regular file inside the run's real
    folder (:mod:`pcd._files`; a ValueError otherwise); None when it is not on this machine."""
    return store.read_run_file(rid, (d.result.get("export") or {}).get("path"), kind="model")
