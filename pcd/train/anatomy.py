"""Inside a pruned network: per-layer structure, group norms, the whole trade-off curve of one run,
a latency protocol that can be trusted on a shared machine, and each run's provenance.

- :func:`layer_table`: one row per convolution / linear layer -- channels in -> out, parameters and
  FLOPs (2 per multiply-add, as :func:`pcd.train.export.count_flops`), before and after pruning. The
  rows' FLOPs add up to ``count_flops`` of each model (tested).
- :func:`channel_norms`: the per-channel norms the export thresholds (the max filter norm of each
  coupled channel, :func:`pcd.train.export.plan_pruning`'s rule).
- :func:`tradeoff_curve`: the group norms at the end of a run define a whole family of pruned
  networks. Sweep the export threshold over the norms' quantiles, physically export each point
  (Torch-Pruning), reload it from the saved file and measure accuracy, parameters, FLOPs, latency
  and file size: an accuracy-vs-sparsity curve per run with no retraining. :func:`meets_budget`
  answers "which setting meets ≤ X MFLOPs".
- :func:`latency`: warm-up, repetitions, threads pinned, the models timed *interleaved* in one
  process (so drift and load hit them alike); medians with their 25-75 % spread and the speed-up as
  the median of per-round ratios with its spread. An unchanged network measures 1.0x within it.
  :func:`speedup_reason` says in one sentence why a pruned network is or is not faster.
- :func:`provenance`: pcd and torch versions, the git revision of a checkout, device model, threads.
- :func:`config_diff`: only the keys in which a set of runs' configs differ.
"""
from __future__ import annotations

import copy
import math
import os
import platform
import statistics
import subprocess
import tempfile
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import torch
from torch import nn

from pcd.train import export as ex

# ---------------------------------------------------------------------------------- structure


def _layer_shapes(model: nn.Module, input_shape: tuple[int, ...]) -> dict[str, tuple[int, ...]]:
    """Output shape (batch 1) of every Conv2d / Linear, by module name (one forward with hooks)."""
    shapes: dict[str, tuple[int, ...]] = {}
    hooks = []
    for name, m in model.named_modules():
        if isinstance(m, (nn.Conv2d, nn.Linear)):
            hooks.append(m.register_forward_hook(
                lambda mod, inp, out, name=name: shapes.__setitem__(name, tuple(out.shape))))
    was = model.training
    model.eval()
    try:
        with torch.no_grad():
            p = next(model.parameters())
            model(torch.zeros(1, *input_shape, device=p.device, dtype=p.dtype))
    finally:
        for h in hooks:
            h.remove()
        model.train(was)
    return shapes


def _layer_rows(model: nn.Module, input_shape: tuple[int, ...]) -> dict[str, dict[str, Any]]:
    """Per layer: kind, in / out channels, parameters, FLOPs of a batch-1 forward.

    Conv2d: ``2 * H_out * W_out * C_out * (C_in / groups) * k_h * k_w``; Linear: ``2 * in * out``
    (per row of the output); biases are not counted, as in ``torch.utils.flop_counter``."""
    shapes = _layer_shapes(model, input_shape)
    rows: dict[str, dict[str, Any]] = {}
    for name, m in model.named_modules():
        if name not in shapes:
            continue
        out = shapes[name]
        if isinstance(m, nn.Conv2d):
            kh, kw = m.kernel_size
            flops = 2 * out[2] * out[3] * m.out_channels * (m.in_channels // m.groups) * kh * kw
            rows[name] = {"kind": "conv", "in": m.in_channels, "out": m.out_channels,
                          "params": sum(p.numel() for p in m.parameters(recurse=False)), "flops": int(flops)}
        elif isinstance(m, nn.Linear):
            lead = math.prod(out[:-1])
            rows[name] = {"kind": "linear", "in": m.in_features, "out": m.out_features,
                          "params": sum(p.numel() for p in m.parameters(recurse=False)),
                          "flops": int(2 * lead * m.in_features * m.out_features)}
    return rows


def layer_table(before: nn.Module, after: nn.Module, input_shape: tuple[int, ...]) -> list[dict[str, Any]]:
    """The structure diff: one row per Conv2d / Linear of ``before`` (names are kept by Torch-Pruning),
    ``{"layer", "kind", "in_before", "in_after", "out_before", "out_after", "params_before",
    "params_after", "flops_before", "flops_after", "kept"}`` (``kept`` = out channels after / before)."""
    a, b = _layer_rows(before, input_shape), _layer_rows(after, input_shape)
    rows = []
    for name, r in a.items():
        s = b.get(name, {"in": 0, "out": 0, "params": 0, "flops": 0})
        rows.append({"layer": name, "kind": r["kind"], "in_before": r["in"], "in_after": s["in"],
                     "out_before": r["out"], "out_after": s["out"], "params_before": r["params"],
                     "params_after": s["params"], "flops_before": r["flops"], "flops_after": s["flops"],
                     "kept": s["out"] / r["out"] if r["out"] else 1.0})
    return rows


def channel_norms(model: nn.Module, input_shape: tuple[int, ...]) -> list[dict[str, Any]]:
    """Per prunable coupled channel: its group (root layer), index and norm -- the max L2 norm of its
    producer filters, the value :func:`pcd.train.export.plan_pruning` compares with the threshold."""
    _, groups = ex._coupled(model, input_shape)
    out = []
    for name, _root, _members, _imp, mx, has in groups:
        for i in range(len(mx)):
            if bool(has[i]):
                out.append({"group": name, "channel": i, "norm": float(mx[i])})
    return out


# ---------------------------------------------------------------------------------- latency


@contextmanager
def pinned_threads(threads: int | None) -> Iterator[int]:
    """``torch.set_num_threads(threads)`` for the block (restored after); yields the count in force."""
    old = torch.get_num_threads()
    if threads is not None:
        if isinstance(threads, bool) or not isinstance(threads, int) or not 1 <= threads <= 1024:
            raise ValueError(f"threads must be an integer in [1, 1024], got {threads!r}")
        torch.set_num_threads(threads)
    try:
        yield torch.get_num_threads()
    finally:
        torch.set_num_threads(old)


def _quantile(xs: Sequence[float], q: float) -> float:
    s = sorted(xs)
    if len(s) == 1:
        return float(s[0])
    pos = q * (len(s) - 1)
    lo = int(math.floor(pos))
    hi = min(lo + 1, len(s) - 1)
    return float(s[lo] + (s[hi] - s[lo]) * (pos - lo))


@torch.no_grad()
def latency(models: Mapping[str, nn.Module], input_shape: tuple[int, ...], *, batch: int = 1,
            device: str | torch.device = "cpu", repeats: int = 30, warmup: int = 5,
            threads: int | None = None) -> dict[str, Any]:
    """Time eval forwards of several models *interleaved* (round r runs every model once, in an order
    rotated each round), after ``warmup`` rounds, with torch's threads pinned.

    Returns ``{"batch", "device", "threads", "repeats", "ms": {name: {"median", "p25", "p75"}},
    "speedup": {name: {"median", "p25", "p75", "p10", "p90"}}}``; the speed-up of model m is the
    per-round ratio ``t(first model) / t(m)`` (the first model is the reference, e.g. "before")."""
    if not models:
        raise ValueError("give at least one model to time")
    if isinstance(repeats, bool) or not isinstance(repeats, int) or not 3 <= repeats <= 10_000:
        raise ValueError(f"repeats must be an integer in [3, 10000], got {repeats!r}")
    if isinstance(warmup, bool) or not isinstance(warmup, int) or not 0 <= warmup <= 1000:
        raise ValueError(f"warmup must be an integer in [0, 1000], got {warmup!r}")
    if isinstance(batch, bool) or not isinstance(batch, int) or not 1 <= batch <= 4096:
        raise ValueError(f"batch must be an integer in [1, 4096], got {batch!r}")
    dev = torch.device(device)
    names = list(models)
    nets = {n: copy.deepcopy(m).to(dev).eval() for n, m in models.items()}
    x = torch.randn(batch, *input_shape, device=dev)
    times: dict[str, list[float]] = {n: [] for n in names}
    with pinned_threads(threads) as nthreads:
        for r in range(warmup + repeats):
            order = names[r % len(names):] + names[:r % len(names)]
            for n in order:
                if dev.type == "cuda":
                    torch.cuda.synchronize(dev)
                t = time.perf_counter()
                nets[n](x)
                if dev.type == "cuda":
                    torch.cuda.synchronize(dev)
                if r >= warmup:
                    times[n].append((time.perf_counter() - t) * 1e3)
    ref = names[0]
    out: dict[str, Any] = {"batch": batch, "device": str(dev), "threads": nthreads, "repeats": repeats,
                           "ms": {}, "speedup": {}}
    for n in names:
        ts = times[n]
        out["ms"][n] = {"median": statistics.median(ts), "p25": _quantile(ts, 0.25), "p75": _quantile(ts, 0.75)}
        ratios = [a / b for a, b in zip(times[ref], ts) if b > 0]
        out["speedup"][n] = {"median": statistics.median(ratios), "p25": _quantile(ratios, 0.25),
                             "p75": _quantile(ratios, 0.75), "p10": _quantile(ratios, 0.10),
                             "p90": _quantile(ratios, 0.90)}
    return out


ALIGN = 8  # channel counts that are multiples of 8 map onto vectorized / tensor-core kernels


def speedup_reason(layers: Sequence[Mapping[str, Any]], lat: Mapping[str, Any], after: str = "after") -> str:
    """One sentence: why the pruned network is (or is not) faster, from the structure diff and a
    :func:`latency` measurement (reference first, ``after`` the pruned model)."""
    f0 = sum(r["flops_before"] for r in layers)
    f1 = sum(r["flops_after"] for r in layers)
    cut = 1.0 - f1 / f0 if f0 else 0.0
    sp = lat["speedup"][after]
    ms = lat["ms"][after]["median"]
    faster = sp["p25"] > 1.0
    slower = sp["p75"] < 1.0
    spread = f"{sp['median']:.2f}x (25-75 %: {sp['p25']:.2f}-{sp['p75']:.2f}) at batch {lat['batch']}"
    if cut < 0.02:
        return (f"{spread}: pruning removed {cut:.0%} of the FLOPs, so no speed-up is expected; "
                "the difference is timing noise.")
    misaligned = [r for r in layers if r["kind"] == "conv" and 0 < r["out_after"] < r["out_before"]
                  and r["out_after"] % ALIGN and not r["out_before"] % ALIGN]
    if faster:
        return f"{spread}: {cut:.0%} fewer FLOPs, and the pruned layers are large enough for that to show."
    reasons = []
    if lat["batch"] == 1 or ms < 1.0:
        reasons.append(f"one forward takes {ms:.2f} ms, so fixed per-layer overhead (kernel launches, Python "
                       "dispatch), not arithmetic, sets the time")
    if misaligned:
        reasons.append(f"{len(misaligned)} layer(s) now have channel counts that are not multiples of {ALIGN} "
                       "(slower kernels)")
    if not reasons:
        reasons.append("the remaining time is memory-bound (normalization, activations, copies) rather than "
                       "in the convolutions that shrank")
    verb = "slower" if slower else "not measurably faster"
    return f"{spread}: {verb} despite {cut:.0%} fewer FLOPs because " + "; ".join(reasons) + "."


# ---------------------------------------------------------------------------------- the curve


def curve_thresholds(norms: Sequence[float], points: int = 8) -> list[float]:
    """Export thresholds that span the trade-off: 0 (nothing removed) and thresholds just above
    the norms' quantiles at evenly spaced fractions in (0, 1) -- each removes about that fraction of
    the prunable channels. Distinct and increasing."""
    if isinstance(points, bool) or not isinstance(points, int) or not 2 <= points <= 64:
        raise ValueError(f"points must be an integer in [2, 64], got {points!r}")
    vals = sorted(float(v) for v in norms if math.isfinite(float(v)))
    if not vals:
        return [0.0]
    out = {0.0}
    for k in range(1, points):
        v = vals[min(len(vals) - 1, int(round(k / points * len(vals))) - 1)]
        out.add(math.nextafter(v, math.inf))
    return sorted(out)


def tradeoff_curve(model: nn.Module, input_shape: tuple[int, ...], evaluate: Callable[[nn.Module], float], *,
                   arch: str, num_classes: int, thresholds: Sequence[float] | None = None, points: int = 8,
                   latency_batch: int = 1, repeats: int = 10, threads: int | None = None,
                   progress: Callable[[int, int], None] | None = None) -> list[dict[str, Any]]:
    """One row per export threshold: ``{"threshold", "channels_removed", "channels_total", "params",
    "param_reduction", "flops", "flop_reduction", "bytes", "test_acc", "latency_ms", "latency_p25",
    "latency_p75", "speedup", "speedup_p25", "speedup_p75"}`` (latency: median and 25-75 % spread).

    Each point is physically pruned (:func:`pcd.train.export.prune_model`), saved with
    :func:`pcd.train.export.save_pruned`, *reloaded from that file* and evaluated with ``evaluate``
    (e.g. test accuracy in %); latency is :func:`latency` of the unpruned model vs the reloaded one."""
    model = model.eval()
    if thresholds is None:
        thresholds = curve_thresholds([r["norm"] for r in channel_norms(model, input_shape)], points)
    p0, f0 = ex.count_params(model), ex.count_flops(model, input_shape)
    rows = []
    with tempfile.TemporaryDirectory(prefix="pcd-curve-") as tmp:
        for i, thr in enumerate(thresholds):
            plan = ex.plan_pruning(model, input_shape, threshold=float(thr))
            masked = ex.mask_model(model, input_shape, plan)
            pruned, history = ex.prune_model(masked, input_shape, plan)
            path = Path(tmp) / f"point_{i}.pt"
            size = ex.save_pruned(path, pruned, arch=arch, num_classes=num_classes, in_channels=input_shape[0],
                                  input_shape=input_shape, history=history)
            loaded = ex.load_pruned(path, folder=tmp)
            params, flops = ex.count_params(loaded), ex.count_flops(loaded, input_shape)
            lat = latency({"before": model, "after": loaded}, input_shape, batch=latency_batch, repeats=repeats,
                          warmup=2, threads=threads)
            rows.append({"threshold": float(thr), "channels_removed": plan.channels_removed,
                         "channels_total": plan.channels_total, "params": params,
                         "param_reduction": 1.0 - params / p0 if p0 else 0.0, "flops": flops,
                         "flop_reduction": 1.0 - flops / f0 if f0 else 0.0, "bytes": size,
                         "test_acc": float(evaluate(loaded)), "latency_ms": lat["ms"]["after"]["median"],
                         "latency_p25": lat["ms"]["after"]["p25"], "latency_p75": lat["ms"]["after"]["p75"],
                         "speedup": lat["speedup"]["after"]["median"],
                         "speedup_p25": lat["speedup"]["after"]["p25"], "speedup_p75": lat["speedup"]["after"]["p75"]})
            if progress is not None:
                progress(i + 1, len(thresholds))
    return rows


BUDGET_KEYS = {"max_flops": "flops", "max_params": "params", "max_latency_ms": "latency_ms", "max_bytes": "bytes"}


def meets_budget(curve: Sequence[Mapping[str, Any]], **budget: float | None) -> dict[str, Any] | None:
    """The most accurate curve point within every given budget (``max_flops``, ``max_params``,
    ``max_latency_ms``, ``max_bytes``); ties go to the smaller model. None when no point fits."""
    bad = sorted(set(budget) - set(BUDGET_KEYS))
    if bad:
        raise ValueError(f"unknown budget {bad}; allowed: {', '.join(BUDGET_KEYS)}")
    for k, v in budget.items():
        if v is not None and (isinstance(v, bool) or not isinstance(v, (int, float)) or not v > 0
                              or not math.isfinite(v)):
            raise ValueError(f"{k} must be a positive finite number, got {v!r}")
    fits = [r for r in curve if all(v is None or r[BUDGET_KEYS[k]] <= v for k, v in budget.items())]
    if not fits:
        return None
    return dict(max(fits, key=lambda r: (r["test_acc"], -r["params"])))


# ---------------------------------------------------------------------------------- comparing runs


def _git_revision() -> str | None:
    root = Path(__file__).resolve().parents[2]
    if not (root / ".git").exists():
        return None
    try:
        out = subprocess.run(["git", "-C", str(root), "rev-parse", "--short=12", "HEAD"], capture_output=True,
                             text=True, timeout=10, check=False)
    except (OSError, subprocess.SubprocessError):
        return None
    rev = out.stdout.strip()
    return rev if out.returncode == 0 and rev else None


def _device_model(device: str | torch.device) -> str:
    dev = torch.device(device)
    if dev.type == "cuda" and torch.cuda.is_available():
        return torch.cuda.get_device_name(dev)
    try:
        with open("/proc/cpuinfo", encoding="utf-8", errors="replace") as fh:
            for line in fh:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine() or "unknown CPU"


def provenance(device: str | torch.device = "cpu") -> dict[str, Any]:
    """Where and with what a run ran: pcd / torch / python versions, the git revision when run from a
    checkout (else None), the device model, torch's thread count and the CPU count."""
    from pcd._version import read_version

    return {"pcd": read_version(), "torch": torch.__version__, "python": platform.python_version(),
            "git": _git_revision(), "device": str(device), "device_model": _device_model(device),
            "threads": torch.get_num_threads(), "cpus": os.cpu_count()}


def config_diff(configs: Mapping[Any, Mapping[str, Any]]) -> dict[str, dict[Any, Any]]:
    """Only the keys whose values differ between the given configs: ``{key: {run: value}}`` (a key
    missing from a config shows as None), keys sorted."""
    keys = sorted({k for c in configs.values() for k in c})
    out = {}
    for k in keys:
        vals = {rid: c.get(k) for rid, c in configs.items()}
        if len({repr(v) for v in vals.values()}) > 1:
            out[k] = vals
    return out


# ---------------------------------------------------------------------------------- a finished run

CURVE_FILE = "curve.json"


def load_run_model(out_dir: str | os.PathLike, device: str | torch.device = "cpu") -> tuple[dict, nn.Module, Any]:
    """``(config, unpruned final model, dataset)`` of a run folder: ``config.json`` and the model of
    ``checkpoint.pt`` read through the one reader (:mod:`pcd._files`; a tampered checkpoint is refused),
    the dataset as the run used it (same subsets)."""
    from pcd import _files
    from pcd.train.config import validate_config
    from pcd.train.data import load_dataset
    from pcd.train.models import build_model

    folder = Path(out_dir)
    raw = _files.read_json(folder / "config.json", folder, kind="config", name="config.json")
    if not isinstance(raw, dict):
        raise ValueError(f"{folder / 'config.json'} is not a JSON object")
    cfg = validate_config(raw)
    if not (folder / "checkpoint.pt").exists():
        raise ValueError(f"{folder} has no checkpoint.pt: the run did not train (or its files were removed)")
    ck = ex.load_tensors(folder / "checkpoint.pt", folder, kind="checkpoint", map_location=device)
    if not isinstance(ck, dict) or "model" not in ck:
        raise ValueError(f"{folder / 'checkpoint.pt'} holds no model state")
    data = load_dataset(cfg["dataset"], data_dir=cfg["data_dir"], device=torch.device(device), download=False,
                        max_train_samples=cfg["max_train_samples"], max_test_samples=cfg["max_test_samples"])
    model = build_model(cfg["arch"], data.num_classes, data.input_shape[0]).to(device)
    model.load_state_dict(ck["model"])
    return cfg, model.eval(), data


def inspect_run(out_dir: str | os.PathLike, *, points: int = 8, device: str | torch.device = "cpu",
                latency_batch: int = 1, repeats: int = 10, threads: int | None = None,
                progress: Callable[[int, int], None] | None = None, save: bool = True) -> dict[str, Any]:
    """The trade-off curve of a finished run (no retraining): ``{"config", "params", "flops",
    "test_acc", "curve": [rows of tradeoff_curve], "norms": [...], "export_threshold"}``; with
    ``save`` it is also written to ``<out_dir>/curve.json``."""
    from pcd.train import metrics as mt

    cfg, model, data = load_run_model(out_dir, device)
    shape = data.input_shape

    def evaluate(net: nn.Module) -> float:
        return float(mt.accuracy(net, data.test_batches())[0])

    curve = tradeoff_curve(model, shape, evaluate, arch=cfg["arch"], num_classes=data.num_classes, points=points,
                           latency_batch=latency_batch, repeats=repeats, threads=threads, progress=progress)
    out = {"config": cfg, "params": ex.count_params(model), "flops": ex.count_flops(model, shape),
           "test_acc": evaluate(model), "export_threshold": cfg["export_threshold"],
           "norms": [r["norm"] for r in channel_norms(model, shape)], "curve": curve,
           "provenance": provenance(device)}
    if save:
        from pcd._json import dumps

        tmp = Path(out_dir) / (CURVE_FILE + ".tmp")
        tmp.write_text(dumps(out), encoding="utf-8")
        tmp.replace(Path(out_dir) / CURVE_FILE)
    return out


def read_curve(out_dir: str | os.PathLike) -> dict[str, Any] | None:
    """``<out_dir>/curve.json`` written by :func:`inspect_run`, through the one reader; None when absent."""
    from pcd import _files

    path = Path(out_dir) / CURVE_FILE
    if not os.path.lexists(path):
        return None
    out = _files.read_json(path, out_dir, kind="json", name=CURVE_FILE)
    if not isinstance(out, dict) or not isinstance(out.get("curve"), list):
        raise ValueError(f"{path} is not a trade-off curve written by `python -m pcd anatomy`")
    return out


def export_point(out_dir: str | os.PathLike, *, threshold: float | None = None,
                 target_reduction: float | None = None, device: str | torch.device = "cpu") -> dict[str, Any]:
    """Re-export a finished run at another setting (an export ``threshold`` or a ``target_reduction``
    of the parameters), without retraining: writes ``model_<setting>.pt`` into the run folder and
    returns ``{"path", "bytes", "params", "flops", "test_acc", "threshold", "target_reduction"}``."""
    from pcd.train import metrics as mt

    if (threshold is None) == (target_reduction is None):
        raise ValueError("give exactly one of threshold or target_reduction")
    cfg, model, data = load_run_model(out_dir, device)
    shape = data.input_shape
    plan = ex.plan_pruning(model, shape, threshold=threshold, target_reduction=target_reduction)
    pruned, history = ex.prune_model(ex.mask_model(model, shape, plan), shape, plan)
    tag = f"t{threshold:.6g}" if threshold is not None else f"r{target_reduction:.4g}"
    path = Path(out_dir) / f"model_{tag}.pt"
    size = ex.save_pruned(path, pruned, arch=cfg["arch"], num_classes=data.num_classes, in_channels=shape[0],
                          input_shape=shape, history=history)
    loaded = ex.load_pruned(path, folder=out_dir)
    return {"path": path.name, "bytes": size, "params": ex.count_params(loaded), "flops": ex.count_flops(loaded, shape),
            "test_acc": float(mt.accuracy(loaded, data.test_batches())[0]), "threshold": threshold,
            "target_reduction": target_reduction, "channels_removed": plan.channels_removed,
            "channels_total": plan.channels_total}
