"""One pruning run: ``train(config, out_dir=..., on_progress=..., should_stop=...)``.

The run is split in four modules: :mod:`pcd.train.config` (defaults, validation),
:mod:`pcd.train.step` (the gradient path, :class:`GramStep`), :mod:`pcd.train.baselines` (``prox``,
``lagrangian``) and this one (the loop, checkpoints, files); every name is importable from here.

Every registry method (PCD, WS, MGDA, PCGrad, CAGrad, FAMO, UPGrad, ...) runs through one path:

1. primary ``f_1`` = cross-entropy; its gradient ``g_1`` by one backward pass;
2. secondaries (group lasso, or L1 + nuclear) with *analytic* gradients on the weights
   (:mod:`pcd.train.objectives`), never a second pass through the network;
3. Gram matrix ``G_ij = <g_i, g_j>`` (``K x K``, float64, assembled from per-tensor dot products;
   ``J`` itself is only materialized for methods that need it, e.g. GradDrop);
4. ``step = method(G[None], losses=..., state=..., rng=...)``; direction :meth:`Step.direction`
   (``weights @ J`` combined in place on the gradients, or a direction method's own) into ``p.grad``;
5. any ``torch.optim`` optimizer steps (Adam / SGD), cosine schedule per step.

Method state (PCD's EMA normalizer, FAMO's logits, Nash-MTL's ...) lives per run and is saved in
the checkpoint as its plain fields (:meth:`GramStep.state_dict`). ``unpruned`` trains the primary
alone (the reference accuracy). Two specialised baselines of the PCD paper are not registry methods:
``prox`` (cross-entropy step, then the group soft-threshold
``w_g <- w_g * max(0, 1 - lr * lam / ||w_g||)``) and ``lagrangian`` (Cooper 1.x, a target group
density as an inequality constraint; the differentiable proxy is the group lasso relative to its
initial value, the multiplier is driven by the true density -- a proxy-Lagrangian).

Files in ``out_dir``: ``config.json``, ``metrics.jsonl`` (one row per epoch), ``checkpoint.pt``
(after every epoch and on cancel; resuming from it gives the same result as an uninterrupted run
on CPU),
``final.json`` (the result, identical to ``python -m pcd prune --json``), ``model_pruned.pt``
(see :mod:`pcd.train.export`). On CUDA: bf16 autocast, TF32 and channels-last.
"""
from __future__ import annotations

import contextlib
import json
import math
import os
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, cast

import numpy as np
import torch
import torch.nn.functional as F

from pcd import _files
from pcd._json import dumps, jsonable
from pcd.train import anatomy as an
from pcd.train import export as ex
from pcd.train import metrics as mt
from pcd.train.baselines import _make_cooper, _prox_step
from pcd.train.config import _RESUME_FREE, DEFAULTS, SPECIAL_METHODS, method_names, resolve_device, validate_config
from pcd.train.data import load_dataset
from pcd.train.models import build_model
from pcd.train.objectives import GroupLasso, build_groups, build_secondaries
from pcd.train.step import GramStep

__all__ = ["train", "Cancelled", "validate_config", "method_names", "resolve_device", "GramStep", "DEFAULTS",
           "SPECIAL_METHODS"]


class Cancelled(Exception):
    """Raised by :func:`train` when ``should_stop()`` returns True (the last checkpoint is kept)."""


# --------------------------------------------------------------------------- the gradient path


class _Stats:
    """Running per-epoch averages of step diagnostics."""

    def __init__(self) -> None:
        self.sums: dict[str, float] = {}
        self.counts: dict[str, int] = {}

    def add(self, key: str, value: float) -> None:
        if value is None or not math.isfinite(value):
            return
        self.sums[key] = self.sums.get(key, 0.0) + float(value)
        self.counts[key] = self.counts.get(key, 0) + 1

    def mean(self, key: str) -> float | None:
        return self.sums[key] / self.counts[key] if self.counts.get(key) else None


def _record(stats: _Stats, diag: dict, K: int) -> None:
    losses = diag.get("losses")
    if losses is not None:
        for k in range(1, K):
            stats.add(f"secondary_{k}", float(losses[k]))
    G = diag.get("gram")
    if G is not None and K >= 2 and G[0, 0] > 0 and G[1, 1] > 0:
        stats.add("cosine", G[0, 1] / math.sqrt(G[0, 0] * G[1, 1]))
        stats.add("grad_norm_ratio", math.sqrt(G[1, 1] / G[0, 0]))
    w = diag.get("weights")
    if w is not None:
        for k in range(K):
            stats.add(f"weight_{k}", float(w[k]))
    info = diag.get("info") or {}
    if "mu" in info:
        mu = np.asarray(info["mu"], dtype=float).reshape(-1)
        mu = mu[1:] if mu.size == K else mu
        if mu.size:
            stats.add("mu", float(mu.mean()))
            stats.add("active_fraction", float((mu > 0).any()))
    if "feasible" in info:
        stats.add("infeasible_fraction", float(not bool(np.asarray(info["feasible"]).reshape(-1)[0])))


# --------------------------------------------------------------------------- the run


def _cosine(total: int) -> Callable[[int], float]:
    return lambda t: 0.5 * (1.0 + math.cos(math.pi * min(t, total) / max(total, 1)))


def _write_json(path: Path, data: Any) -> None:
    tmp = path.with_suffix(path.suffix + ".tmp")
    tmp.write_text(dumps(data, indent=2) + "\n", encoding="utf-8")
    tmp.replace(path)


#: Every Gram-based run records its training geometry (:mod:`pcd.monitor`) every this many steps
#: into ``monitor.jsonl``: the Gram matrix and losses are computed by :class:`GramStep` anyway.
MONITOR_EVERY = 10


def train(
    config: dict,
    *,
    out_dir: str | os.PathLike,
    on_progress: Callable[[dict], None] | None = None,
    should_stop: Callable[[], bool] | None = None,
    monitor_every: int | None = MONITOR_EVERY,
) -> dict:
    """Run one training run into ``out_dir``; resume from ``out_dir/checkpoint.pt`` if present.

    ``on_progress(payload)`` is called every ``progress_every`` steps and at each epoch end with
    ``{"epoch", "epochs", "step", "steps_total", "progress", "metrics"}`` (``metrics`` = the
    epoch's row at epoch end, else None). ``should_stop()`` is polled every few steps; when it
    returns True, :class:`Cancelled` is raised after saving a mid-epoch checkpoint (model, optimizer,
    method state, the epoch's RNG state and running averages), so the next call resumes at that batch.
    Divergence (NaN/inf) ends training early and is reported (``"diverged": true``), not raised.
    A Gram-based method's run records its training geometry every ``monitor_every`` steps into
    ``monitor.jsonl`` (:mod:`pcd.monitor`; None: not recorded; the training is the same either way).
    Returns the result dict (also written to ``final.json``).
    """
    cfg = validate_config(config)
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    ckpt_path, cfg_path = out / "checkpoint.pt", out / "config.json"
    if ckpt_path.exists() and cfg_path.exists():
        old = _files.read_json(cfg_path, out, kind="config", name="config.json")
        if not isinstance(old, dict):
            raise ValueError(f"{cfg_path} is not a JSON object; use a new out_dir")
        diff = sorted(k for k in set(old) | set(cfg) if k not in _RESUME_FREE and old.get(k) != json.loads(json.dumps(cfg.get(k))))
        if diff:
            raise ValueError(f"{out} holds a checkpoint of a different run (config differs in {diff}); use a new out_dir")
    _write_json(cfg_path, cfg)

    device = resolve_device(cfg["device"])
    if cfg["threads"]:
        torch.set_num_threads(cfg["threads"])
    cuda = device.type == "cuda"
    if cuda:
        torch.backends.cuda.matmul.allow_tf32 = True
        torch.backends.cudnn.allow_tf32 = True
        torch.backends.cudnn.benchmark = True

    data = load_dataset(cfg["dataset"], data_dir=cfg["data_dir"], device=device, download=cfg["download"],
                        max_train_samples=cfg["max_train_samples"], max_test_samples=cfg["max_test_samples"])
    in_shape = data.input_shape
    torch.manual_seed(cfg["seed"])
    model = build_model(cfg["arch"], data.num_classes, in_shape[0]).to(device)
    if cuda:
        model = model.to(memory_format=torch.channels_last)  # type: ignore[call-overload]  # not in the stub
    params = [p for p in model.parameters() if p.requires_grad]
    groups = build_groups(model, cfg["grouping"], in_shape) if cfg["secondary"] == "group_lasso" else None
    secondaries = build_secondaries(model, cfg["secondary"], groups)
    K = 1 + len(secondaries)

    if cfg["optimizer"] == "adam":
        opt: torch.optim.Optimizer = torch.optim.Adam(params, lr=cfg["lr"], weight_decay=cfg["weight_decay"])
    else:
        opt = torch.optim.SGD(params, lr=cfg["lr"], momentum=cfg["momentum"], weight_decay=cfg["weight_decay"])
    steps_per_epoch = data.steps_per_epoch(cfg["batch_size"])
    steps_total = steps_per_epoch * cfg["epochs"]
    sched = torch.optim.lr_scheduler.LambdaLR(opt, _cosine(steps_total) if cfg["schedule"] == "cosine" else (lambda t: 1.0))

    method_name, mp = cfg["method"], cfg["method_params"]
    gram_step: GramStep | None = None
    cmp: Any = None
    cooper_opt: Any = None
    if method_name == "lagrangian":
        # validate_config allows prox/lagrangian with secondary group_lasso only
        cmp, cooper_opt = _make_cooper(cast(GroupLasso, secondaries[0]), mp, opt, device)
    elif method_name not in ("prox", "unpruned"):
        import pcd.methods as M

        gram_step = GramStep(params, secondaries, M.make(method_name, **mp), K)
    recorder = None
    if gram_step is not None and monitor_every:
        from pcd.monitor import Recorder

        recorder = Recorder(out / "monitor.jsonl", every=monitor_every, hparams={method_name: mp},
                            objectives=["cross-entropy"] + [s.name for s in secondaries], seed=cfg["seed"],
                            append=ckpt_path.exists())

    rows: list[dict] = []
    start_epoch, elapsed, diverged = 0, 0.0, False
    mid = None
    if ckpt_path.exists():
        ck = cast(dict, ex.load_tensors(ckpt_path, out, kind="checkpoint", map_location=device))
        model.load_state_dict(ck["model"])
        opt.load_state_dict(ck["optimizer"])
        sched.load_state_dict(ck["scheduler"])
        if gram_step is not None:
            gram_step.load_state_dict(ck["method_state"])
        if cmp is not None:
            cmp.load_state_dict(ck["cmp"])
            cooper_opt.dual_optimizers[0].load_state_dict(ck["dual_optimizer"])
        rows = [json.loads(r) for r in ck["rows"]]
        start_epoch, elapsed, diverged = int(ck["epoch"]), float(ck["elapsed"]), bool(ck["diverged"])
        mid = json.loads(ck.get("mid_epoch") or "null")  # a run cancelled inside an epoch

    def progress(epoch: int, step: int, row: dict | None) -> None:
        if on_progress is not None:
            on_progress({"epoch": epoch, "epochs": cfg["epochs"], "step": step, "steps_total": steps_total,
                         "progress": min(1.0, step / max(steps_total, 1)), "metrics": row})

    def save_checkpoint(epochs_done: int, mid_epoch: dict | None = None) -> None:
        ck = {"model": model.state_dict(), "optimizer": opt.state_dict(), "scheduler": sched.state_dict(),
              "method_state": gram_step.state_dict() if gram_step is not None else None,
              "rows": [json.dumps(_clean(r), allow_nan=False) for r in rows], "epoch": epochs_done,
              "elapsed": elapsed, "diverged": diverged,
              "mid_epoch": json.dumps(mid_epoch) if mid_epoch is not None else None}
        if cmp is not None:
            ck["cmp"] = cmp.state_dict()
            ck["dual_optimizer"] = cooper_opt.dual_optimizers[0].state_dict()
        tmp = ckpt_path.with_suffix(".tmp")
        torch.save(ck, tmp)
        tmp.replace(ckpt_path)

    skip = int(mid["batches"]) if mid else 0
    step = start_epoch * steps_per_epoch + skip
    autocast = torch.autocast("cuda", dtype=torch.bfloat16) if cuda else contextlib.nullcontext()
    for epoch in range(start_epoch, cfg["epochs"]):
        if diverged:
            break
        if should_stop is not None and should_stop():
            raise Cancelled(f"stopped before epoch {epoch + 1}")
        gen = torch.Generator().manual_seed(cfg["seed"] * 1_000_003 + epoch)
        rng = np.random.default_rng([cfg["seed"], epoch])
        stats = _Stats()
        t0 = time.perf_counter()
        if mid and epoch == start_epoch:  # resume inside this epoch: same batches, same RNG streams
            rng.bit_generator.state = mid["rng"]
            stats.sums, stats.counts = mid["sums"], mid["counts"]
            t0 -= float(mid["epoch_seconds"])
        else:
            skip = 0
        model.train()
        for i, (x, y) in enumerate(data.train_batches(cfg["batch_size"], gen)):
            if i < skip:  # batches already trained on before the interruption (drawn, not used)
                continue
            if cuda:
                x = x.contiguous(memory_format=torch.channels_last)
            if cmp is not None:
                roll = cooper_opt.roll(compute_cmp_state_kwargs={"model": model, "x": x, "y": y, "autocast": autocast})
                loss = roll.loss.detach()
                stats.add("multiplier", float(cmp.constraint.multiplier.weight.detach().sum()))
                stats.add("secondary_1", float(roll.cmp_state.misc["group_lasso"]))
                stats.add("density", float(roll.cmp_state.misc["density"]))
            else:
                opt.zero_grad(set_to_none=False)
                with autocast:
                    loss = F.cross_entropy(model(x).float(), y)
                loss.backward()
                if gram_step is not None:
                    diag = gram_step(loss, rng)
                    _record(stats, diag, K)
                    if recorder is not None and step % recorder.every == 0:
                        recorder.record_gram(diag["gram"], diag["losses"], step=step)
                    if diag.get("diverged"):
                        diverged = True
                        break
                opt.step()
                if method_name == "prox":
                    val = _prox_step(cast(GroupLasso, secondaries[0]), float(opt.param_groups[0]["lr"]) * mp["lam"])
                    stats.add("secondary_1", val)
            sched.step()
            lv = float(loss.detach())
            if not math.isfinite(lv):
                diverged = True
                break
            stats.add("train_loss", lv)
            step += 1
            if should_stop is not None and step % 5 == 0 and should_stop():
                save_checkpoint(epoch, {"batches": i + 1, "rng": rng.bit_generator.state, "sums": stats.sums,
                                        "counts": stats.counts, "epoch_seconds": time.perf_counter() - t0})
                raise Cancelled(f"stopped in epoch {epoch + 1} at step {step} (checkpoint saved)")
            if step % cfg["progress_every"] == 0:
                progress(epoch + 1, step, None)
        epoch_time = time.perf_counter() - t0
        elapsed += epoch_time
        if not diverged and not all(torch.isfinite(p).all() for p in params):
            diverged = True
        row = _epoch_row(epoch + 1, model, data, stats, K, opt, elapsed, epoch_time, i + 1, diverged, groups)
        rows.append(row)
        (out / "metrics.jsonl").write_text("".join(json.dumps(_clean(r), allow_nan=False) + "\n" for r in rows), encoding="utf-8")
        save_checkpoint(epoch + 1)
        progress(epoch + 1, step, _clean(row))

    result = _finish(cfg, model, data, rows, elapsed, diverged, out, device, groups)
    _write_json(out / "final.json", result)
    return json.loads(json.dumps(_clean(result), allow_nan=False))


def _clean(obj: Any) -> Any:
    return jsonable(obj)


def _epoch_row(epoch: int, model, data, stats: _Stats, K: int, opt, elapsed: float, epoch_time: float,
               n_steps: int, diverged: bool, groups) -> dict:
    acc, test_loss = mt.accuracy(model, data.test_batches()) if not diverged else (float("nan"), float("nan"))
    eff, red = mt.rank_metrics(model) if not diverged else (float("nan"), float("nan"))
    row: dict[str, Any] = {
        "epoch": epoch,
        "train_loss": stats.mean("train_loss"),
        "test_acc": acc,
        "test_loss": test_loss,
        "group_sparsity": mt.group_sparsity(model),
        "param_sparsity": mt.param_sparsity(model),
        "effective_rank": eff,
        "numerical_rank_reduction": red,
        "lr": float(opt.param_groups[0]["lr"]),
        "seconds": elapsed,
        "step_seconds": epoch_time / max(n_steps, 1),
        "diverged": diverged,
    }
    if groups is not None:
        norms = groups.norms()
        row["group_sparsity_grouped"] = 100.0 * float((norms < mt.GROUP_ZERO).float().mean())
    for k in range(1, K):
        row[f"secondary_{k}"] = stats.mean(f"secondary_{k}")
    for key in ("mu", "active_fraction", "cosine", "infeasible_fraction", "grad_norm_ratio", "multiplier", "density"):
        if stats.mean(key) is not None:
            row[key] = stats.mean(key)
    ws = [stats.mean(f"weight_{k}") for k in range(K)]
    if all(w is not None for w in ws):
        row["weights"] = ws
    return row


def _finish(cfg: dict, model, data, rows: list[dict], elapsed: float, diverged: bool, out: Path,
            device: torch.device, groups) -> dict:
    last = rows[-1] if rows else {}
    result: dict[str, Any] = {
        "config": cfg,
        "test_acc": last.get("test_acc"),
        "group_sparsity": last.get("group_sparsity"),
        "group_sparsity_grouped": last.get("group_sparsity_grouped"),
        "grouping": cfg["grouping"],
        "param_sparsity": last.get("param_sparsity"),
        "effective_rank": last.get("effective_rank"),
        "numerical_rank_reduction": last.get("numerical_rank_reduction"),
        "param_sparsity_threshold": mt.PARAM_ZERO,  # relative to each layer's largest |w|
        "param_sparsity_sweep": None if diverged else mt.param_sparsity_sweep(model),
        "param_sparsity_abs_sweep": None if diverged else mt.param_sparsity_sweep(model, relative=False),
        "zeroed_acc": None if diverged else mt.zeroed_accuracy(model, data.test_batches()),
        "seconds": elapsed,
        "epochs_completed": len(rows),
        "diverged": diverged,
        "device": str(device),
        "provenance": an.provenance(device),
        "history": rows,
        "export": None,
    }
    if diverged or not cfg["export"]:
        return result
    model.eval()
    in_shape = data.input_shape
    plan = ex.plan_pruning(model, in_shape, threshold=cfg["export_threshold"], target_reduction=cfg["target_reduction"])
    masked = ex.mask_model(model, in_shape, plan)
    pruned, history = ex.prune_model(masked, in_shape, plan)
    path = out / "model_pruned.pt"
    size_after = ex.save_pruned(path, pruned, arch=cfg["arch"], num_classes=data.num_classes, in_channels=in_shape[0],
                                input_shape=in_shape, history=history)
    import io

    buf = io.BytesIO()
    ex.save_pruned(buf, model, arch=cfg["arch"], num_classes=data.num_classes, in_channels=in_shape[0],
                   input_shape=in_shape, history=[])
    size_before = buf.getbuffer().nbytes
    loaded = ex.load_pruned(path, map_location=device, folder=out)
    x0 = next(data.test_batches(64))[0]
    masked_acc, _ = mt.accuracy(masked, data.test_batches())
    exp_acc, _ = mt.accuracy(loaded, data.test_batches())
    # The latency protocol (pcd.train.anatomy.latency): before and after timed interleaved in this
    # process, threads pinned, median + 25-75 % spread; speed-up = median of per-round ratios.
    reps = max(3, cfg["latency_repeats"])
    lat: dict[str, dict[str, list[float]]] = {}
    protocol: dict[str, dict[str, Any]] = {}
    for dev in sorted({str(device), "cpu"}):
        lat[dev], protocol[dev] = {}, {}
        for b in (1, 128):
            m = an.latency({"before": model, "after": loaded}, in_shape, batch=b, device=dev, repeats=reps,
                           warmup=3, threads=cfg["threads"])
            lat[dev][f"batch_{b}"] = [m["ms"]["before"]["median"], m["ms"]["after"]["median"]]
            protocol[dev][f"batch_{b}"] = m
    layers = an.layer_table(model, loaded, in_shape)
    result["removable_fraction"] = plan.channels_removed / max(plan.channels_total, 1)
    result["export"] = {
        "threshold": cfg["export_threshold"],
        "target_reduction": cfg["target_reduction"],
        "channels_total": plan.channels_total,
        "channels_removed": plan.channels_removed,
        "weakest_channel_norm": plan.weakest_norm,
        "params_before": ex.count_params(model),
        "params_after": ex.count_params(loaded),
        "flops_before": ex.count_flops(model, in_shape, device),
        "flops_after": ex.count_flops(loaded, in_shape, device),
        "flops_unit": "FLOPs of one batch-1 forward, torch.utils.flop_counter (2 per multiply-add)",
        "latency_ms_before": lat[str(device)]["batch_1"][0],
        "latency_ms_after": lat[str(device)]["batch_1"][1],
        "latency_ms": lat,
        "latency_unit": "median ms over repeated eval forwards; [before, after] per device and batch",
        "latency_protocol": protocol,
        # batch-1 speed-up on the run's device, the protocol's median of per-round ratios: one scalar for
        # the study summaries (pcd.train.studies.run_point reads it in SQL without the protocol's tables)
        "latency_speedup": protocol[str(device)]["batch_1"]["speedup"]["after"]["median"],
        "speedup_reason": an.speedup_reason(layers, protocol[str(device)]["batch_1"]),
        "layers": layers,
        "channel_norms": [round(r["norm"], 9) for r in an.channel_norms(model, in_shape)],
        "file_bytes_before": size_before,
        "file_bytes_after": size_after,
        "test_acc": exp_acc,
        "test_acc_masked": masked_acc,
        "max_abs_diff_vs_masked": ex.max_abs_diff(masked, loaded, x0),
        "path": str(path),
    }
    return result
