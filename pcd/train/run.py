"""One pruning run: ``train(config, out_dir=..., on_progress=..., should_stop=...)``.

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

import json
import math
import os
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, cast

import numpy as np
import torch
import torch.nn.functional as F

from pcd._json import dumps, jsonable
from pcd.methods.base import state_fields, state_from_fields
from pcd.train import export as ex
from pcd.train import metrics as mt
from pcd.train.data import DATASETS, cifar_source, load_dataset, missing_data_message
from pcd.train.models import ARCHS, build_model
from pcd.train.objectives import GROUPINGS, SECONDARIES, GroupLasso, build_groups, build_secondaries


class Cancelled(Exception):
    """Raised by :func:`train` when ``should_stop()`` returns True (the last checkpoint is kept)."""


SPECIAL_METHODS = {
    "unpruned": {},  # primary only: plain cross-entropy training, the reference every method is compared with
    "prox": {"lam": (1.0, 0.0, 1e6, "group soft-threshold strength lambda (step lr*lambda)")},
    "lagrangian": {
        "target_density": (0.5, 0.0, 1.0, "fraction of groups allowed to stay non-zero"),
        "dual_lr": (1e-2, 0.0, 1e3, "learning rate of the Lagrange multiplier (gradient ascent)"),
    },
}

DEFAULTS: dict[str, Any] = {
    "dataset": "digits",
    "arch": None,  # smallcnn for digits, resnet18 for CIFAR
    "method": "pcd",
    "method_params": {},
    "tau": 0.02,
    "secondary": "group_lasso",
    "grouping": "filter",
    "epochs": 2,
    "batch_size": 128,
    "optimizer": "adam",
    "lr": 1e-3,
    "momentum": 0.9,
    "weight_decay": 0.0,
    "schedule": "cosine",
    "seed": 0,
    "device": "auto",
    "data_dir": None,
    "download": False,
    "max_train_samples": None,
    "max_test_samples": None,
    "export": True,
    "export_threshold": 1e-4,
    "target_reduction": None,
    "latency_repeats": 10,
    "progress_every": 10,
    "threads": None,
}

# keys that may change between an interrupted run and its resumption
_RESUME_FREE = {"device", "progress_every", "latency_repeats", "threads", "data_dir", "download", "export"}


def method_names() -> list[str]:
    """Registry methods plus the specialised baselines ``prox`` and ``lagrangian``."""
    import pcd.methods as M

    return M.available() + list(SPECIAL_METHODS)


def _int(cfg: dict, key: str, low: int, allow_none: bool = False) -> None:
    v = cfg[key]
    if v is None and allow_none:
        return
    if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or v < low:
        raise ValueError(f"{key} must be an integer >= {low}{' or null' if allow_none else ''}, got {v!r}")
    cfg[key] = int(v)


def _float(cfg: dict, key: str, low: float, high: float, allow_none: bool = False, open_low: bool = False) -> None:
    v = cfg[key]
    if v is None and allow_none:
        return
    try:
        f = float(v)
    except (TypeError, ValueError):
        raise ValueError(f"{key} must be a number, got {v!r}") from None
    if isinstance(v, bool) or not math.isfinite(f) or f < low or f > high or (open_low and f == low):
        lo = "(" if open_low else "["
        raise ValueError(f"{key} must be in {lo}{low}, {high}], got {v!r}")
    cfg[key] = f


def resolve_device(device: str) -> torch.device:
    """``auto`` -> cuda if available else cpu; ``cpu``; ``cuda``; ``cuda:N``."""
    d = str(device).strip().lower()
    if d == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    if d == "cpu":
        return torch.device("cpu")
    if d == "cuda" or (d.startswith("cuda:") and d[5:].isdigit()):
        if not torch.cuda.is_available():
            raise ValueError(f"device {device!r} requested but CUDA is not available here; use cpu or auto")
        if ":" in d and int(d[5:]) >= torch.cuda.device_count():
            raise ValueError(f"device {device!r}: only {torch.cuda.device_count()} CUDA device(s)")
        return torch.device(d)
    raise ValueError(f"device must be auto, cpu, cuda or cuda:N, got {device!r}")


def validate_config(config: dict) -> dict:
    """Fill defaults and check every field; ``ValueError`` with a clear message otherwise.

    Checks: known keys only; dataset in digits|cifar10|cifar100 and its data present (or
    ``download``); arch known; method a registry name or prox|lagrangian with valid
    ``method_params``; tau in [0, 1]; secondary, grouping, optimizer, schedule known; positive
    epochs / batch size / lr; device available; export threshold >= 0 or target reduction in [0, 1).
    """
    if not isinstance(config, dict):
        raise ValueError(f"config must be a dict, got {type(config).__name__}")
    unknown = sorted(set(config) - set(DEFAULTS))
    if unknown:
        raise ValueError(f"unknown config key(s) {unknown}; allowed: {', '.join(DEFAULTS)}")
    cfg = {**DEFAULTS, **{k: v for k, v in config.items()}}
    if cfg["dataset"] not in DATASETS:
        raise ValueError(f"unknown dataset {cfg['dataset']!r}; allowed: {', '.join(DATASETS)}")
    if cfg["arch"] is None:
        cfg["arch"] = "smallcnn" if cfg["dataset"] == "digits" else "resnet18"
    arch = str(cfg["arch"]).strip().lower().replace("-", "").replace("_", "")
    if arch not in ARCHS:
        raise ValueError(f"unknown arch {cfg['arch']!r}; allowed: {', '.join(ARCHS)}")
    cfg["arch"] = arch
    if cfg["secondary"] not in SECONDARIES:
        raise ValueError(f"unknown secondary {cfg['secondary']!r}; allowed: {', '.join(SECONDARIES)}")
    if cfg["grouping"] not in GROUPINGS:
        raise ValueError(f"unknown grouping {cfg['grouping']!r}; allowed: {', '.join(GROUPINGS)}")
    _float(cfg, "tau", 0.0, 1.0)
    method = str(cfg["method"]).strip().lower()
    names = method_names()
    if method not in names:
        raise ValueError(f"unknown method {cfg['method']!r}; allowed: {', '.join(names)}")
    cfg["method"] = method
    mp = cfg["method_params"] or {}
    if not isinstance(mp, dict):
        raise ValueError(f"method_params must be a dict, got {mp!r}")
    mp = dict(mp)
    if method in SPECIAL_METHODS:
        spec = SPECIAL_METHODS[method]
        bad = sorted(set(mp) - set(spec))
        if bad:
            raise ValueError(f"{method}: unknown hyper-parameter(s) {bad}; allowed: {', '.join(spec)}")
        for k, (default, lo, hi, _) in spec.items():
            sub = {k: mp.get(k, default)}
            _float(sub, k, lo, hi, open_low=(k != "lam"))
            mp[k] = sub[k]
        if cfg["secondary"] != "group_lasso" and method != "unpruned":
            raise ValueError(f"method {method} works with secondary group_lasso only")
    else:
        import pcd.methods as M

        cls = M.get(method)
        if "tau" in {p.name for p in cls.params}:
            if "tau" not in mp:
                mp["tau"] = cfg["tau"]
            elif isinstance(mp["tau"], (int, float)) and not isinstance(mp["tau"], bool):
                cfg["tau"] = float(mp["tau"])  # one source of truth in the recorded config
                _float(cfg, "tau", 0.0, 1.0)
        inst = cls(**mp)  # raises ValueError for bad hyper-parameters
        mp = {k: (v.tolist() if isinstance(v, np.ndarray) else v) for k, v in inst.hparams.items()}
    cfg["method_params"] = mp
    _int(cfg, "epochs", 1)
    _int(cfg, "batch_size", 1)
    _int(cfg, "seed", 0)
    _int(cfg, "max_train_samples", 1, allow_none=True)
    _int(cfg, "max_test_samples", 1, allow_none=True)
    _int(cfg, "latency_repeats", 1)
    _int(cfg, "progress_every", 1)
    _int(cfg, "threads", 1, allow_none=True)
    _float(cfg, "lr", 0.0, 10.0, open_low=True)
    _float(cfg, "momentum", 0.0, 1.0)
    _float(cfg, "weight_decay", 0.0, 1.0)
    if cfg["optimizer"] not in ("adam", "sgd"):
        raise ValueError(f"optimizer must be adam or sgd, got {cfg['optimizer']!r}")
    if cfg["schedule"] not in ("cosine", "none"):
        raise ValueError(f"schedule must be cosine or none, got {cfg['schedule']!r}")
    for k in ("download", "export"):
        if not isinstance(cfg[k], bool):
            raise ValueError(f"{k} must be true or false, got {cfg[k]!r}")
    if cfg["target_reduction"] is not None:
        _float(cfg, "target_reduction", 0.0, 0.999)
        cfg["export_threshold"] = None
    else:
        _float(cfg, "export_threshold", 0.0, 1e6)
    resolve_device(cfg["device"])
    if cfg["data_dir"] is not None:
        cfg["data_dir"] = str(cfg["data_dir"])
    if cfg["dataset"] != "digits" and not cfg["download"] and cifar_source(cfg["dataset"], cfg["data_dir"]) is None:
        raise ValueError(missing_data_message(cfg["dataset"], cfg["data_dir"]))
    return cfg


# --------------------------------------------------------------------------- the gradient path


class GramStep:
    """Per-objective gradients -> Gram matrix -> method weights -> ``p.grad``."""

    def __init__(self, params: Sequence[torch.Tensor], secondaries: list, method, K: int) -> None:
        self.params = params
        self.secondaries = secondaries
        self.method = method
        self.K = K
        self.pos = {id(p): i for i, p in enumerate(params)}
        self.state = method.init(1, K)

    def state_dict(self) -> dict[str, Any] | None:
        """The method's state as plain fields, arrays as tensors (``torch.load(weights_only=True)``)."""
        fields = state_fields(self.state)
        if fields is None:
            return None
        return {k: torch.from_numpy(np.ascontiguousarray(v)).clone() if isinstance(v, np.ndarray) else v
                for k, v in fields.items()}

    def load_state_dict(self, fields: dict[str, Any] | None) -> None:
        plain = None if fields is None else {
            k: v.numpy().copy() if isinstance(v, torch.Tensor) else v for k, v in fields.items()}
        self.state = state_from_fields(self.method, 1, self.K, plain)

    def gram(self, g1: list[torch.Tensor], sec: list[list[torch.Tensor]]) -> np.ndarray:
        dots = [sum(torch.dot(g.reshape(-1), g.reshape(-1)) for g in g1)]
        index = [(0, 0)]
        gmaps = [{id(p): g for p, g in zip(s.params, gs)} for s, gs in zip(self.secondaries, sec)]
        for i, (s, gs) in enumerate(zip(self.secondaries, sec), start=1):
            dots.append(sum(torch.dot(g1[self.pos[id(p)]].reshape(-1), g.reshape(-1)) for p, g in zip(s.params, gs)))
            index.append((0, i))
            for j in range(i, self.K):
                other = gmaps[j - 1]
                dots.append(sum(torch.dot(g.reshape(-1), other[id(p)].reshape(-1)) for p, g in zip(s.params, gs) if id(p) in other))
                index.append((i, j))
        vals = torch.stack([torch.as_tensor(d, dtype=torch.float32, device=g1[0].device) for d in dots]).double().cpu().numpy()
        G = np.zeros((self.K, self.K))
        for (i, j), v in zip(index, vals):
            G[i, j] = G[j, i] = v
        return G

    def jacobian(self, g1: list[torch.Tensor], sec: list[list[torch.Tensor]]) -> np.ndarray:
        J = torch.zeros(self.K, sum(p.numel() for p in self.params), dtype=torch.float64)
        offs = np.cumsum([0] + [p.numel() for p in self.params])
        for k, g in enumerate(g1):
            J[0, offs[k]:offs[k + 1]] = g.reshape(-1).double().cpu()
        for i, (s, gs) in enumerate(zip(self.secondaries, sec), start=1):
            for p, g in zip(s.params, gs):
                k = self.pos[id(p)]
                J[i, offs[k]:offs[k + 1]] = g.reshape(-1).double().cpu()
        return J.numpy()[None]

    def __call__(self, primary_loss: torch.Tensor, rng: np.random.Generator) -> dict:
        g1 = []
        for p in self.params:
            if p.grad is None:
                p.grad = torch.zeros_like(p)
            g1.append(p.grad)
        vals, sec = [], []
        for s in self.secondaries:
            v, gs = s.value_and_grads()
            vals.append(v)
            sec.append(gs)
        G = self.gram(g1, sec)
        losses = torch.stack([primary_loss.detach().float()] + [v.float() for v in vals]).double().cpu().numpy()
        diag: dict[str, Any] = {"losses": losses, "gram": G}
        if not (np.isfinite(G).all() and np.isfinite(losses).all()):
            diag["diverged"] = True
            return diag
        kw: dict[str, Any] = {"losses": losses[None], "state": self.state, "rng": rng}
        if self.method.needs_jacobian:
            kw["jacobian"] = self.jacobian(g1, sec)
        out = self.method(G[None], **kw)
        self.state = out.state
        w = np.asarray(out.weights, dtype=np.float64)[0]
        diag["weights"] = w
        diag["info"] = out.info
        # Step.direction in torch: a direction method's own update, else weights @ J combined in
        # place on the gradients (J itself is never formed for a weighted method).
        if out.exact is not None:
            d = torch.as_tensor(np.asarray(out.exact)[0])
            if not torch.isfinite(d).all():
                diag["diverged"] = True
                return diag
            off = 0
            for p in self.params:
                p.grad.copy_(d[off:off + p.numel()].view_as(p).to(p.grad.dtype))  # type: ignore[union-attr]
                off += p.numel()
            return diag
        if not np.isfinite(w).all():
            diag["diverged"] = True
            return diag
        for g in g1:
            g.mul_(float(w[0]))
        for i, (s, gs) in enumerate(zip(self.secondaries, sec), start=1):
            if w[i] != 0.0:
                for p, g in zip(s.params, gs):
                    p.grad.add_(g, alpha=float(w[i]))
        return diag


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


def train(
    config: dict,
    *,
    out_dir: str | os.PathLike,
    on_progress: Callable[[dict], None] | None = None,
    should_stop: Callable[[], bool] | None = None,
) -> dict:
    """Run one training run into ``out_dir``; resume from ``out_dir/checkpoint.pt`` if present.

    ``on_progress(payload)`` is called every ``progress_every`` steps and at each epoch end with
    ``{"epoch", "epochs", "step", "steps_total", "progress", "metrics"}`` (``metrics`` = the
    epoch's row at epoch end, else None). ``should_stop()`` is polled every few steps; when it
    returns True, :class:`Cancelled` is raised after saving a mid-epoch checkpoint (model, optimizer,
    method state, the epoch's RNG state and running averages), so the next call resumes at that batch.
    Divergence (NaN/inf) ends training early and is reported (``"diverged": true``), not raised.
    Returns the result dict (also written to ``final.json``).
    """
    cfg = validate_config(config)
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    ckpt_path, cfg_path = out / "checkpoint.pt", out / "config.json"
    if ckpt_path.exists() and cfg_path.exists():
        old = json.loads(cfg_path.read_text(encoding="utf-8"))
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

    rows: list[dict] = []
    start_epoch, elapsed, diverged = 0, 0.0, False
    mid = None
    if ckpt_path.exists():
        ck = torch.load(ckpt_path, map_location=device, weights_only=True)
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
    autocast = torch.autocast("cuda", dtype=torch.bfloat16) if cuda else _nullcontext()
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


class _nullcontext:
    def __enter__(self) -> None:
        return None

    def __exit__(self, *a: Any) -> None:
        return None


def _clean(obj: Any) -> Any:
    return jsonable(obj)


@torch.no_grad()
def _prox_step(gl: GroupLasso, step: float) -> float:
    """Group soft-threshold ``w_g <- w_g * max(0, 1 - step / ||w_g||)`` (proximal operator of step*GL)."""
    norms = gl.groups.norms()
    scale = torch.where(norms > step, 1.0 - step / norms.clamp_min(1e-30), torch.zeros_like(norms))
    for p, rows, gid in gl.groups.entries:
        s = scale[gid].to(p.dtype).view(-1, *([1] * (p.dim() - 1)))
        p.index_copy_(0, rows, p.index_select(0, rows) * s)
    return float(gl.groups.norms().sum())


def _make_cooper(gl: GroupLasso, mp: dict, opt: torch.optim.Optimizer, device: torch.device):
    """Cooper 1.x proxy-Lagrangian: ``min CE  s.t.  density(w) <= target`` (density = share of groups >= 1e-4)."""
    import cooper

    with torch.no_grad():
        gl0 = float(gl.value(1e-12))
    target = float(mp["target_density"])

    class SparsityCMP(cooper.ConstrainedMinimizationProblem):
        def __init__(self) -> None:
            super().__init__()
            self.constraint = cooper.Constraint(
                constraint_type=cooper.ConstraintType.INEQUALITY,
                formulation_type=cooper.formulations.Lagrangian,
                multiplier=cooper.multipliers.DenseMultiplier(num_constraints=1, device=device),
            )

        def compute_cmp_state(self, model, x, y, autocast) -> cooper.CMPState:
            with autocast:
                loss = F.cross_entropy(model(x).float(), y)
            surrogate = gl.value(1e-12) / gl0  # differentiable on the weights only
            norms = gl.groups.norms()
            density = (norms >= mt.GROUP_ZERO).float().mean()
            state = cooper.ConstraintState(violation=(surrogate - target).reshape(1),
                                           strict_violation=(density - target).reshape(1))
            return cooper.CMPState(loss=loss, observed_constraints={self.constraint: state},
                                   misc={"group_lasso": float(surrogate.detach()) * gl0, "density": float(density)})

    cmp = SparsityCMP()
    dual = torch.optim.SGD(cmp.dual_parameters(), lr=float(mp["dual_lr"]), maximize=True)
    return cmp, cooper.optim.SimultaneousOptimizer(cmp=cmp, primal_optimizers=opt, dual_optimizers=dual)


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
        "seconds": elapsed,
        "epochs_completed": len(rows),
        "diverged": diverged,
        "device": str(device),
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
    loaded = ex.load_pruned(path, map_location=device)
    x0 = next(data.test_batches(64))[0]
    masked_acc, _ = mt.accuracy(masked, data.test_batches())
    exp_acc, _ = mt.accuracy(loaded, data.test_batches())
    reps = cfg["latency_repeats"]
    lat: dict[str, dict[str, list[float]]] = {}
    for dev in sorted({str(device), "cpu"}):
        lat[dev] = {f"batch_{b}": [ex.measure_latency_ms(model, in_shape, b, dev, reps),
                                   ex.measure_latency_ms(loaded, in_shape, b, dev, reps)] for b in (1, 128)}
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
        "file_bytes_before": size_before,
        "file_bytes_after": size_after,
        "test_acc": exp_acc,
        "test_acc_masked": masked_acc,
        "max_abs_diff_vs_masked": ex.max_abs_diff(masked, loaded, x0),
        "path": str(path),
    }
    return result
