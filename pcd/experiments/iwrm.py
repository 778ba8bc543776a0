"""Jacobian descent's instance-wise risk minimization (arXiv 2406.16232, Sec. 5) next to PCD.

:func:`run_iwrm` -- instance-wise risk minimization (paper Sec. 5): every sample's loss in a
batch of ``B`` is its own objective (``K = B``), a tiny CNN on scikit-learn's digits is trained
with an aggregator at a fixed learning rate, and training loss, test accuracy and the cosine
between each update and the SGD gradient (the mean of the rows) are recorded.
``ws`` (Mean) is plain SGD / ERM. PCD's variant: primary = the batch's mean loss, secondaries =
the ``B`` per-sample losses (``K = B + 1``), so PCD follows SGD and bends it only where a sample
would not get its ``tau`` share of progress.
"""
from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from pcd import methods as _methods
from pcd.methods.properties import _check_int

__all__ = ["TinyCNN", "IWRMConfig", "run_iwrm", "IWRM_DEFAULT_METHODS", "iwrm_rows"]

IWRM_DEFAULT_METHODS = ("ws", "upgrad", "mgda", "pcgrad", "pcd")


def _torch():
    import torch

    return torch


def TinyCNN(width: int = 8, num_classes: int = 10):
    """A tiny CNN for 8x8 digits without BatchNorm.

    ``conv3x3(1 -> w)-ReLU-conv3x3(w -> 2w)-ReLU-maxpool2-linear(2w*16 -> 10)`` (``width = 8``:
    3,802 parameters). No BatchNorm on purpose: in IWRM every sample's loss must depend on that
    sample alone, and TorchJD's autogram engine with ``batch_dim=0`` rejects BatchNorm (the
    pruning models' :class:`pcd.train.models.SmallCNN` uses BatchNorm, so it is not reused here).
    """
    from torch import nn

    w = _check_int(width, "width", 1, 256)
    return nn.Sequential(
        nn.Conv2d(1, w, 3, padding=1), nn.ReLU(),
        nn.Conv2d(w, 2 * w, 3, padding=1), nn.ReLU(),
        nn.MaxPool2d(2), nn.Flatten(),
        nn.Linear(2 * w * 16, _check_int(num_classes, "num_classes", 2, 1000)),
    )


@dataclass(frozen=True)
class IWRMConfig:
    """Settings of one IWRM comparison (validated on construction).

    ``n_train`` samples of the digits training split (the paper uses 1024-image subsets), batches
    of ``batch_size`` objectives, ``steps`` SGD steps at the fixed ``lr`` for every method (the
    paper tunes one fixed lr per method; we use one shared lr), metrics every ``eval_every`` steps.
    ``tau`` is PCD's share. ``lr_overrides`` sets a method's own lr as ``(name, lr)`` pairs; by
    default PCGrad's lr is ``lr / batch_size`` because PCGrad *sums* the B projected gradients
    (its definition in the paper and TorchJD) while Mean, UPGrad, MGDA and PCD are on the scale of
    one averaged gradient -- with the shared lr PCGrad diverges.
    """

    methods: tuple[str, ...] = IWRM_DEFAULT_METHODS
    seeds: tuple[int, ...] = (0, 1)
    steps: int = 100
    batch_size: int = 32
    lr: float = 0.05
    n_train: int = 1024
    width: int = 8
    eval_every: int = 10
    tau: float = 0.02
    lr_overrides: tuple[tuple[str, float], ...] | None = None

    def lr_for(self, name: str) -> float:
        """The learning rate used for method ``name``."""
        if self.lr_overrides is None:
            return float(self.lr) / self.batch_size if name == "pcgrad" else float(self.lr)
        return float(dict(self.lr_overrides).get(name, self.lr))

    def __post_init__(self) -> None:
        methods = tuple(_methods.parse_names(self.methods, duplicates="drop"))  # the one name parser
        object.__setattr__(self, "methods", methods)
        seeds = tuple(self.seeds)
        if not seeds or len(seeds) > 20:
            raise ValueError(f"give 1 to 20 seeds, got {len(seeds)}")
        object.__setattr__(self, "seeds", tuple(_check_int(s, "seed", 0, 2**31 - 1) for s in seeds))
        _check_int(self.steps, "steps", 1, 5000)
        _check_int(self.batch_size, "batch_size", 2, 128)
        _check_int(self.n_train, "n_train", 16, 1437)
        if self.batch_size > self.n_train:
            raise ValueError(f"batch_size ({self.batch_size}) must not exceed n_train ({self.n_train})")
        _check_int(self.width, "width", 1, 64)
        _check_int(self.eval_every, "eval_every", 1, 5000)
        if isinstance(self.lr, bool) or not isinstance(self.lr, (int, float)) or not (0.0 < float(self.lr) <= 10.0):
            raise ValueError(f"lr must be a number in (0, 10], got {self.lr!r}")
        if isinstance(self.tau, bool) or not isinstance(self.tau, (int, float)) or not (0.0 <= float(self.tau) <= 1.0):
            raise ValueError(f"tau must be a number in [0, 1], got {self.tau!r}")
        if self.lr_overrides is not None:
            pairs = []
            for item in (self.lr_overrides.items() if isinstance(self.lr_overrides, dict) else self.lr_overrides):
                try:
                    name, lr = item
                    lr = float(lr)
                except (TypeError, ValueError):
                    raise ValueError(f"lr_overrides must be (method, lr) pairs, got {item!r}") from None
                if not (0.0 < lr <= 10.0):
                    raise ValueError(f"lr for {name} must be in (0, 10], got {lr}")
                pairs.append((str(name).lower(), lr))
            object.__setattr__(self, "lr_overrides", tuple(pairs))


def _digits(n_train: int):
    torch = _torch()
    from pcd.train.data import load_digits_arrays

    xtr, ytr, xte, yte = load_digits_arrays()
    keep = np.sort(np.random.default_rng(0).permutation(len(ytr))[:n_train])
    xtr, ytr = xtr[keep], ytr[keep]
    mean, std = float(xtr.mean()), float(xtr.std())
    f = lambda a: torch.from_numpy((a.astype(np.float32) - mean) / std)  # noqa: E731
    return f(xtr), torch.from_numpy(ytr), f(xte), torch.from_numpy(yte)


def _per_sample_jacobian(model, x, y):
    """Per-sample losses ``[B]`` and Jacobian ``[B, n]`` (``torch.func.vmap`` of ``grad``)."""
    torch = _torch()
    from torch.func import functional_call, grad_and_value, vmap

    params = {k: v.detach() for k, v in model.named_parameters()}

    def loss_one(p, xi, yi):
        out = functional_call(model, p, (xi[None],))
        return torch.nn.functional.cross_entropy(out, yi[None])

    grads, losses = vmap(grad_and_value(loss_one), in_dims=(None, 0, 0))(params, x, y)
    J = torch.cat([grads[k].reshape(x.shape[0], -1) for k in params], dim=1)
    return losses, J


def run_iwrm(config: IWRMConfig | None = None, *,
             progress: Callable[[float, str], None] | None = None) -> dict[str, Any]:
    """Instance-wise risk minimization on digits (see the module docstring).

    Returns ``{"config", "steps" [E], "methods": {name: {"train_loss" [S, E], "test_acc" [S, E],
    "cosine" [S, T], "final_train_loss", "final_test_acc" (mean over seeds), "seconds"}}}`` with
    ``E`` evaluation points (step 0 included), ``T = steps`` and ``S`` seeds, as lists.
    ``cosine[t]`` is the cosine between step ``t``'s update and the SGD gradient (the batch mean).
    """
    cfg = config if config is not None else IWRMConfig()
    torch = _torch()
    F = torch.nn.functional
    xtr, ytr, xte, yte = _digits(cfg.n_train)
    eval_steps = sorted(set([0] + list(range(cfg.eval_every, cfg.steps + 1, cfg.eval_every)) + [cfg.steps]))
    total = len(cfg.methods) * len(cfg.seeds)
    result: dict[str, Any] = {"config": {k: (list(v) if isinstance(v, tuple) else v)
                                         for k, v in cfg.__dict__.items()},
                              "steps": eval_steps, "methods": {}}

    def evaluate(model) -> tuple[float, float]:
        with torch.no_grad():
            tl = float(F.cross_entropy(model(xtr), ytr))
            acc = float((model(xte).argmax(1) == yte).float().mean())
        return tl, acc

    done = 0
    for name in cfg.methods:
        t0 = time.perf_counter()
        losses_all, accs_all, cos_all, diverged_at = [], [], [], []
        for seed in cfg.seeds:
            if progress is not None:
                progress(done / total, f"{name}, seed {seed}")
            torch.manual_seed(seed)
            model = TinyCNN(cfg.width)
            knob = _methods.get(name).primary_knob
            hp = {knob: float(cfg.tau)} if knob == "tau" else {}
            method = _methods.make(name, **hp)
            hier = method.hierarchical
            K = cfg.batch_size + (1 if hier else 0)
            state = method.init(1, K)
            rng = np.random.default_rng(seed)
            gen = torch.Generator().manual_seed(seed)
            perm = torch.randperm(cfg.n_train, generator=gen)
            pos = 0
            lr = cfg.lr_for(name)
            tl, acc = evaluate(model)
            curve_l, curve_a, cosines = [tl], [acc], []
            diverged = None
            for step in range(1, cfg.steps + 1):
                if pos + cfg.batch_size > cfg.n_train:  # drop the last partial batch: K stays fixed
                    perm, pos = torch.randperm(cfg.n_train, generator=gen), 0
                idx = perm[pos:pos + cfg.batch_size]
                pos += cfg.batch_size
                losses, J = _per_sample_jacobian(model, xtr[idx], ytr[idx])
                if not (torch.isfinite(J).all() and torch.isfinite(losses).all()):
                    diverged = step  # the rest of the curves stay NaN (null in JSON)
                    break
                Jn = J.double().numpy()
                ln = losses.detach().double().numpy()
                if hier:  # primary = the mean loss, secondaries = the per-sample losses
                    Jn = np.vstack([Jn.mean(axis=0, keepdims=True), Jn])
                    ln = np.concatenate([[ln.mean()], ln])
                G = Jn @ Jn.T
                out = method(G[None], losses=ln[None], jacobian=Jn[None], state=state, rng=rng)
                state = out.state
                d = out.direction(Jn[None])[0]
                sgd = Jn[1:].mean(axis=0) if hier else Jn.mean(axis=0)
                nd, ns = np.linalg.norm(d), np.linalg.norm(sgd)
                cosines.append(float(d @ sgd / (nd * ns)) if nd > 0 and ns > 0 else 0.0)
                if not np.isfinite(d).all():
                    diverged = step
                    break
                with torch.no_grad():
                    off = 0
                    dt = torch.from_numpy(d).float()
                    for p in model.parameters():
                        k = p.numel()
                        p -= lr * dt[off:off + k].view_as(p)
                        off += k
                if step in eval_steps:
                    tl, acc = evaluate(model)
                    curve_l.append(tl)
                    curve_a.append(acc)
            if diverged is not None:
                diverged_at.append(diverged)
            pad = len(eval_steps) - len(curve_l)
            losses_all.append(curve_l + [math.nan] * pad)
            accs_all.append(curve_a + [math.nan] * pad)
            cos_all.append(cosines + [math.nan] * (cfg.steps - len(cosines)))
            done += 1
        result["methods"][name] = {
            "display_name": _methods.get(name).display_name or name,
            "train_loss": losses_all, "test_acc": accs_all, "cosine": cos_all,
            "final_train_loss": float(np.mean([c[-1] for c in losses_all])),
            "final_test_acc": float(np.mean([c[-1] for c in accs_all])),
            "early_cosine": float(np.mean([np.mean(c[: max(1, len(c) // 5)]) for c in cos_all])),
            "late_cosine": float(np.mean([np.mean(c[-max(1, len(c) // 5):]) for c in cos_all])),
            "lr": cfg.lr_for(name),
            "diverged_at": diverged_at,
            "seconds": time.perf_counter() - t0,
        }
    if progress is not None:
        progress(1.0, "done")
    return result



def iwrm_rows(result: dict[str, Any]) -> list[dict[str, Any]]:
    """One row per IWRM method: final training loss / test accuracy (mean over seeds), cosines."""
    if not isinstance(result, dict) or "methods" not in result:
        raise ValueError("IWRM result must be the dict returned by run_iwrm")
    return [{"method": name, "display_name": r["display_name"], "lr": r["lr"],
             "final_train_loss": r["final_train_loss"], "final_test_acc_pct": 100.0 * r["final_test_acc"],
             "early_cosine": r["early_cosine"], "late_cosine": r["late_cosine"],
             "diverged_runs": len(r["diverged_at"]), "seconds": r["seconds"]}
            for name, r in result["methods"].items()]
