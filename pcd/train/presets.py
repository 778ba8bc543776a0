"""Pruning studies as data: a preset is the training settings plus the (method, setting) grid and
the seeds of one study. ``python -m pcd prune --preset NAME`` trains one run with a preset's
training settings, ``python -m pcd runs submit --preset NAME`` queues the whole study, and the
Pruning lab's form offers the same presets. Importing this module does not import torch.

- ``digits-quick`` (CPU, three runs, minutes): the first look a newcomer lands on -- PCD at τ = 0.2,
  the weighted sum at its default weight and the unpruned network, one seed.
- ``digits-demo`` (CPU, each run well under a minute): the paper's structured-pruning picture in
  miniature. Its training settings were chosen by measurement (see the README's Pruning lab
  section): with them PCD removes more than half of the parameters of the 8x8-digits CNN while
  staying within 1.5 points of the unpruned network.
- ``digits-k3``: cross-entropy + L1 + nuclear norm (K = 3): accuracy, parameter sparsity,
  effective rank and the dominated hypervolume.
- ``cifar10-resnet20-short`` and ``paper-protocol`` (300 epochs, Adam 1e-3, cosine, batch 128,
  the paper's tau grid, 5 seeds): for machines with a GPU; their time is estimated before queuing.
"""
from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

# The paper's tau grid: 0, 0.01 ... 0.1, 0.2 ... 1.0 (CLAIMS.md, "Protocol").
PAPER_TAUS: tuple[float, ...] = (0.0,) + tuple(round(0.01 * k, 2) for k in range(1, 11)) + tuple(
    round(0.1 * k, 1) for k in range(2, 11))

# The symmetric baselines of the paper's pruning table, at their default hyper-parameters.
SYMMETRIC = ("mgda", "pcgrad", "cagrad", "famo", "auxinash", "dbgd")

# Nominal training throughput (images / s) on one recent datacenter GPU, used only until a
# finished or calibration run of the same shape gives a measured figure; shown as "nominal".
NOMINAL_GPU_IMAGES_PER_S: dict[str, float] = {"resnet20": 12000.0, "resnet34": 2500.0, "resnet18": 4000.0}
TRAIN_IMAGES = {"digits": 1437, "cifar10": 50000, "cifar100": 50000}


@dataclass(frozen=True)
class Preset:
    """One study: ``base`` training settings (keys of :data:`pcd.train.run.DEFAULTS`), the grid of
    ``(method, overrides)`` settings (``overrides`` holds ``tau`` and/or ``method_params``) and the seeds."""

    name: str
    title: str
    description: str
    base: Mapping[str, Any]
    grid: Sequence[tuple[str, Mapping[str, Any]]]
    seeds: Sequence[int]
    needs_gpu: bool = False
    measured: str = ""  # what was measured with these settings (empty for GPU presets not run here)
    notes: Sequence[str] = field(default_factory=tuple)

    @property
    def methods(self) -> list[str]:
        out: list[str] = []
        for m, _ in self.grid:
            if m not in out:
                out.append(m)
        return out

    def configs(self, seeds: Sequence[int] | None = None, **overrides: Any) -> list[dict]:
        """Every run of the study: one config per (grid entry, seed); ``overrides`` (e.g.
        ``threads=1``, ``device="cuda"``) replace base settings in every run."""
        seeds = list(self.seeds if seeds is None else seeds)
        if not seeds:
            raise ValueError("give at least one seed")
        out = []
        for method, setting in self.grid:
            for seed in seeds:
                cfg = {**dict(self.base), **overrides, "method": method, "seed": int(seed)}
                if "tau" in setting:
                    cfg["tau"] = float(setting["tau"])
                cfg["method_params"] = dict(setting.get("method_params") or {})
                out.append(cfg)
        return out

    def run_config(self, **explicit: Any) -> dict:
        """One run with the preset's training settings; ``explicit`` keys win over them."""
        return {**dict(self.base), **{k: v for k, v in explicit.items() if v is not None}}


def _grid(taus: Sequence[float], ws: Sequence[float] = (), prox: Sequence[float] = (),
          targets: Sequence[float] = (), symmetric: Sequence[str] = SYMMETRIC) -> list[tuple[str, dict]]:
    g: list[tuple[str, dict]] = [("unpruned", {})]
    g += [("pcd", {"tau": float(t)}) for t in taus]
    g += [("ws", {"method_params": {"w": float(w)}}) for w in ws]
    g += [(m, {}) for m in symmetric]
    g += [("prox", {"method_params": {"lam": float(v)}}) for v in prox]
    g += [("lagrangian", {"method_params": {"target_density": float(v)}}) for v in targets]
    return g


_DIGITS = {"dataset": "digits", "arch": "smallcnn", "tau": 0.2, "secondary": "group_lasso", "grouping": "filter+bn",
           "epochs": 40, "batch_size": 128, "optimizer": "adam", "lr": 0.01, "schedule": "cosine",
           "device": "cpu", "latency_repeats": 5}



def _gpu(dataset: str, arch: str, grouping: str, epochs: int) -> dict[str, Any]:
    """The paper's training recipe (Adam 1e-3, cosine, batch 128) on a GPU."""
    return {"dataset": dataset, "arch": arch, "tau": 0.02, "secondary": "group_lasso", "grouping": grouping,
            "epochs": epochs, "batch_size": 128, "optimizer": "adam", "lr": 1e-3, "schedule": "cosine",
            "device": "cuda"}


PRESETS: dict[str, Preset] = {}


def _add(p: Preset) -> None:
    PRESETS[p.name] = p


_add(Preset(
    name="digits-quick",
    title="first look (CPU, under a minute): PCD vs weighted sum vs unpruned on digits",
    description=("The paper's result in three runs that fit a laptop: the digits-demo network and training "
                 "(40 epochs), one seed. PCD at τ = 0.2 removes most of the parameters at the unpruned accuracy; "
                 "the weighted sum at its default weight (w = 1) collapses. Each run ends with a pruned model "
                 "to download."),
    base=_DIGITS,
    grid=[("unpruned", {}), ("pcd", {"tau": 0.2}), ("ws", {"method_params": {"w": 1.0}})],
    seeds=(0,),
    measured=("on this project's idle 2-core machine, the three runs through the queue in 26 s "
              "(`python -m pcd runs submit --preset digits-quick` + `python -m pcd worker --idle-exit 3`): "
              "unpruned 99.4 %; PCD τ = 0.2 99.4 % with 81 % of the parameters removed (24,058 → 4,559); "
              "the weighted sum at w = 1 7.8 % with 99.8 % removed (collapsed)"),
))

_add(Preset(
    name="digits-demo",
    title="digits demo (CPU, minutes): PCD vs every baseline at matched settings",
    description=("8x8 digits, SmallCNN, group lasso over filters + their BN, 40 epochs Adam lr 0.01 cosine: "
                 "PCD over a τ grid, WS and the proximal baseline over their weight, the Lagrangian over its "
                 "target density, MGDA / PCGrad / CAGrad / FAMO / AuxiNash / DBGD at their defaults, and the "
                 "unpruned network; 3 seeds."),
    base=_DIGITS,
    grid=_grid(taus=(0.05, 0.1, 0.2, 0.3, 0.5), ws=(0.001, 0.01, 0.1, 1.0), prox=(1.0, 2.0, 3.0),
               targets=(0.2, 0.5, 0.8)),
    seeds=(0, 1, 2),
    measured="",
))

_add(Preset(
    name="digits-k3",
    title="digits K = 3 (CPU): cross-entropy + ℓ1 + nuclear norm",
    description=("Same network and training as digits-demo with two secondaries, ℓ1 (sparse weights) and the "
                 "nuclear norm (low rank): accuracy, parameter sparsity (% weights |w| < 1e-3 × their layer's "
                 "largest |w|), effective rank "
                 "and the dominated hypervolume per method; PCD over τ = 0 … 0.8 (the paper's grid thinned), "
                 "3 seeds."),
    base={**_DIGITS, "secondary": "l1+nuclear", "grouping": "filter"},
    # τ from 0 (no required progress on the secondaries) to 0.8, denser below 0.1 where the paper
    # reports the largest gains: the whole trade-off, not only its pruned end.
    grid=_grid(taus=(0.0, 0.02, 0.05, 0.1, 0.2, 0.3, 0.5, 0.8), ws=(0.01, 0.1, 1.0)),
    seeds=(0, 1, 2),
))

_add(Preset(
    name="cifar10-resnet20-short",
    title="CIFAR-10 ResNet-20, 30 epochs (GPU)",
    description=("CIFAR-10, ResNet-20, group lasso over filters + BN, 30 epochs Adam 1e-3 cosine, batch 128: "
                 "PCD at τ = 0.01, 0.02, 0.05, 0.1, 0.2, WS at w = 0.01, 0.1, 1, the symmetric baselines, "
                 "prox and the Lagrangian, unpruned; 3 seeds. Not run on this project's CPU machines."),
    base=_gpu("cifar10", "resnet20", "filter+bn", 30),
    grid=_grid(taus=(0.01, 0.02, 0.05, 0.1, 0.2), ws=(0.01, 0.1, 1.0), prox=(1.0, 3.0), targets=(0.2, 0.5)),
    seeds=(0, 1, 2),
    needs_gpu=True,
))

_add(Preset(
    name="paper-protocol",
    title="the paper's protocol: ResNet-34 / CIFAR-100, 300 epochs, 5 seeds (GPU)",
    description=("The PCD paper's pruning protocol: CIFAR-100, ResNet-34, group lasso over filters, 300 epochs, "
                 "Adam 1e-3, cosine, batch 128, its τ grid (0, 0.01 … 0.1, 0.2 … 1.0) and 5 seeds, against "
                 "unpruned, WS, MGDA, PCGrad, CAGrad, FAMO, AuxiNash and DBGD."),
    base=_gpu("cifar100", "resnet34", "filter", 300),
    grid=[("unpruned", {})] + [("pcd", {"tau": t}) for t in PAPER_TAUS] + [("ws", {})] + [(m, {}) for m in SYMMETRIC],
    seeds=(0, 1, 2, 3, 4),
    needs_gpu=True,
))


def names() -> list[str]:
    return list(PRESETS)


def get(name: str) -> Preset:
    """The preset called ``name``; ``ValueError`` listing the presets otherwise."""
    key = str(name).strip().lower()
    if key not in PRESETS:
        raise ValueError(f"unknown preset {name!r}; allowed: {', '.join(PRESETS)}")
    return PRESETS[key]


def nominal_seconds(preset: Preset, n_runs: int | None = None, epochs: int | None = None) -> dict:
    """Rough wall time of the whole study before anything of its shape has run here:
    epochs x training images / nominal images-per-second, per run, times the number of runs
    (one slot). ``{"per_run", "total", "basis"}``; the basis says it is nominal, not measured."""
    base = preset.base
    n = len(preset.configs()) if n_runs is None else int(n_runs)
    imgs = TRAIN_IMAGES.get(str(base.get("dataset")), 50000) * int(epochs or base.get("epochs", 1))
    if preset.needs_gpu:
        ips = NOMINAL_GPU_IMAGES_PER_S.get(str(base.get("arch")), 2000.0)
        basis = (f"nominal {ips:,.0f} images/s for {base.get('arch')} on one GPU (not measured here; "
                 "queue a calibration run or run benchmarks/gpu_check.py for a measured figure)")
    else:
        ips = 2500.0
        basis = ("nominal 2,500 images/s and 5 s of start-up, evaluation and export per run on a CPU (the "
                 "digits-quick study took 26 s for its three runs on this project's idle 2-core machine; a busy "
                 "machine takes several times longer); a finished run of this shape replaces it with measured "
                 "times")
    per_run = imgs / ips + 5.0
    return {"per_run": per_run, "total": per_run * n, "basis": basis}
