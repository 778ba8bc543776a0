"""Physical pruning export with Torch-Pruning (``torch-pruning==1.6.1``).

A *channel* is a coupled channel of Torch-Pruning's dependency graph (all producers of a channel
across residual sums / concatenations). Channel ``c`` of a group is removable when every
non-depthwise conv producing it has a filter (weight row + bias) of L2 norm below ``threshold``
(depthwise convs only pass their input channel through). With ``target_reduction`` the channels
with the smallest coupled norm ``sqrt(sum of producers' squared filter norms)`` are removed until
the parameter count has dropped by at least that fraction. One channel of every group is kept.

A zero filter followed by BatchNorm is *not* a dead channel: BN still adds ``beta`` (and, in
pre-activation nets, the BN after a concatenation adds its own). Export therefore first builds the
*masked* network -- every producer of a removed channel zeroed, filters and the BN gamma/beta on
that channel -- whose outputs the physically pruned network reproduces exactly (tests: max abs
difference ~1e-5 on every architecture). ``beta`` is dropped, not folded: the accuracy reported
for the export is measured on the exported network itself.

Saved file: ``{"format", "arch", "num_classes", "in_channels", "input_shape", "pruning_history",
"state_dict"}`` via ``torch.save``; :func:`load_pruned` rebuilds the architecture, replays the
pruning history with Torch-Pruning and loads the state dict, all under
``torch.load(weights_only=True)`` (a pickled pruned module would need ``weights_only=False``).
"""
from __future__ import annotations

import copy
import io
import os
import pickle
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import cast

import torch
from torch import nn

from pcd import _files
from pcd.train.models import build_model
from pcd.train.objectives import channel_groups, dependency_graph

FORMAT = "pcd-pruned-v1"


@dataclass
class PruningPlan:
    """Channels to remove: for each coupled group, its root module name and root channel indices."""

    groups: list[tuple[str, list[int]]] = field(default_factory=list)
    channels_total: int = 0
    weakest_norm: float | None = None  # smallest max filter norm over prunable channels (why nothing went)

    @property
    def channels_removed(self) -> int:
        return sum(len(i) for _, i in self.groups)


def _coupled(model: nn.Module, input_shape: tuple[int, ...]):
    dg = dependency_graph(model, input_shape)
    names = {m: n for n, m in model.named_modules()}
    out = []
    for members in channel_groups(model, dg):
        root = members[0][0]
        n_root = cast(int, root.out_channels)
        # importance^2 per root channel from non-depthwise producer convs; "all below thr" as max
        sq = torch.zeros(n_root, dtype=torch.float64)
        mx = torch.zeros(n_root, dtype=torch.float64)
        has_prod = torch.zeros(n_root, dtype=torch.bool)
        for m, idxs, rr, is_out in members:
            if not is_out or not isinstance(m, nn.Conv2d) or (m.groups > 1 and m.groups == m.in_channels):
                continue
            w = m.weight.detach().double().reshape(m.out_channels, -1)
            rn = w.pow(2).sum(1)
            if m.bias is not None:
                rn = rn + m.bias.detach().double().pow(2)
            idx = torch.tensor(idxs)
            r = torch.tensor(rr)
            vals = rn.cpu()[idx]
            sq.index_add_(0, r, vals)
            mx = mx.scatter_reduce(0, r, vals, reduce="amax")
            has_prod[r] = True
        out.append((names[root], root, members, sq.sqrt(), mx.sqrt(), has_prod))
    return dg, out


def count_params(model: nn.Module) -> int:
    return sum(p.numel() for p in model.parameters())


def plan_pruning(
    model: nn.Module,
    input_shape: tuple[int, ...],
    *,
    threshold: float | None = 1e-4,
    target_reduction: float | None = None,
) -> PruningPlan:
    """Decide which coupled channels to remove (by ``threshold`` or by ``target_reduction``)."""
    if (threshold is None) == (target_reduction is None):
        raise ValueError("give exactly one of threshold or target_reduction")
    if threshold is not None and not (threshold >= 0):
        raise ValueError(f"threshold must be >= 0, got {threshold!r}")
    if target_reduction is not None and not (0.0 <= target_reduction < 1.0):
        raise ValueError(f"target_reduction must be in [0, 1), got {target_reduction!r}")
    _, groups = _coupled(model, input_shape)
    total = sum(len(g[3]) for g in groups)
    norms = [float(mx[i]) for _, _, _, _, mx, has in groups for i in range(len(mx)) if has[i]]
    weakest = min(norms) if norms else None
    if threshold is not None:
        plan = PruningPlan(channels_total=total, weakest_norm=weakest)
        for name, _, _, imp, mx, has in groups:
            dead = [i for i in range(len(imp)) if has[i] and mx[i] < threshold]
            if len(dead) == len(imp):  # keep the strongest channel of the group
                dead.remove(int(torch.argmax(imp)))
            if dead:
                plan.groups.append((name, dead))
        return plan
    # target_reduction: global order by coupled norm, binary search on how many to remove
    order = []
    for gi, (_name, _, _, imp, _, has) in enumerate(groups):
        keep = int(torch.argmax(imp))
        order += [(float(imp[i]), gi, i) for i in range(len(imp)) if has[i] and i != keep]
    order.sort()
    base = count_params(model)

    def plan_for(k: int) -> PruningPlan:
        per: dict[int, list[int]] = {}
        for _, gi, i in order[:k]:
            per.setdefault(gi, []).append(i)
        return PruningPlan([(groups[gi][0], sorted(v)) for gi, v in sorted(per.items())], total, weakest)

    def reduction(k: int) -> float:
        return 1.0 - count_params(prune_model(model, input_shape, plan_for(k))[0]) / base

    assert target_reduction is not None  # exactly one of threshold / target_reduction (checked above)
    lo, hi = 0, len(order)
    if target_reduction == 0 or not order:
        return plan_for(0)
    if reduction(hi) < target_reduction:
        return plan_for(hi)
    while lo < hi:  # smallest k with reduction(k) >= target
        mid = (lo + hi) // 2
        if reduction(mid) >= target_reduction:
            hi = mid
        else:
            lo = mid + 1
    return plan_for(lo)


@torch.no_grad()
def mask_model(model: nn.Module, input_shape: tuple[int, ...], plan: PruningPlan) -> nn.Module:
    """A copy of ``model`` with every producer of each removed channel zeroed (filters, bias, BN gamma/beta)."""
    masked = copy.deepcopy(model)
    _, groups = _coupled(masked, input_shape)
    byname = {g[0]: g for g in groups}
    for name, chans in plan.groups:
        if name not in byname:
            raise ValueError(f"plan names unknown group root {name!r}")
        dead = set(chans)
        for m, idxs, rr, is_out in byname[name][2]:
            if not is_out:
                continue
            rows = [i for i, r in zip(idxs, rr) if r in dead]
            if not rows:
                continue
            rows_t = torch.tensor(rows, device=m.weight.device)
            m.weight.index_fill_(0, rows_t, 0.0)
            if getattr(m, "bias", None) is not None:
                m.bias.index_fill_(0, rows_t, 0.0)
            if isinstance(m, nn.BatchNorm2d) and m.running_mean is not None and m.running_var is not None:
                m.running_mean.index_fill_(0, rows_t, 0.0)
                m.running_var.index_fill_(0, rows_t, 1.0)
    return masked


def prune_model(model: nn.Module, input_shape: tuple[int, ...], plan: PruningPlan) -> tuple[nn.Module, list]:
    """A physically pruned copy of ``model`` (Torch-Pruning) and its pruning history."""
    pruned = copy.deepcopy(model)
    dg = dependency_graph(pruned, input_shape)
    mods = dict(pruned.named_modules())
    for name, chans in plan.groups:
        if not chans:
            continue
        root = mods[name]
        group = dg.get_pruning_group(root, dg.get_pruner_of_module(root).prune_out_channels, idxs=list(chans))
        group.prune()
    return pruned, [list(h) for h in dg.pruning_history()]


def save_pruned(path: str | os.PathLike | io.BytesIO, model: nn.Module, *, arch: str, num_classes: int, in_channels: int,
                input_shape: tuple[int, ...], history: list) -> int:
    """Save architecture + pruning history + state dict; returns the file size in bytes."""
    blob = {
        "format": FORMAT,
        "arch": arch,
        "num_classes": int(num_classes),
        "in_channels": int(in_channels),
        "input_shape": [int(s) for s in input_shape],
        "pruning_history": [[str(n), bool(o), [int(i) for i in idx]] for n, o, idx in history],
        "state_dict": {k: v.detach().cpu() for k, v in model.state_dict().items()},
    }
    torch.save(blob, path)
    if isinstance(path, io.BytesIO):
        return path.getbuffer().nbytes
    return Path(path).stat().st_size


_GLOBAL = re.compile(r"GLOBAL ([\w.]+)", re.IGNORECASE)


def load_tensors(path: str | os.PathLike, folder: str | os.PathLike | None = None, *, kind: str = "model",
                 map_location: str | torch.device = "cpu") -> object:
    """``torch.load(..., weights_only=True)`` of a file opened through the one reader (:mod:`pcd._files`:
    a regular file inside ``folder``, at most the kind's size bound). A file that holds more than
    tensors, numbers, strings and containers (a pickled object: code could run) is refused in one line
    naming the object; a file that is not a ``torch.save`` file is refused as damaged. The message
    never suggests loading it with ``weights_only=False``."""
    label = "checkpoint" if kind == "checkpoint" else "model file"
    with _files.open_file(path, folder, kind=kind, name=label) as (fh, _):
        try:
            return torch.load(fh, map_location=map_location, weights_only=True)
        except (pickle.UnpicklingError, RuntimeError, EOFError, ValueError, KeyError, TypeError,
                AttributeError, IndexError) as exc:
            m = _GLOBAL.search(str(exc))
            if m:
                raise ValueError(f"{label} {path} refused: it holds more than tensors (a pickled Python object, "
                                 f"{m.group(1)}, whose loading could run code); it was not loaded") from None
            raise ValueError(f"{label} {path} refused: not a file written by torch.save, or damaged "
                             f"({type(exc).__name__}); it was not loaded") from None


def load_pruned(path: str | os.PathLike, map_location: str | torch.device = "cpu",
                folder: str | os.PathLike | None = None) -> nn.Module:
    """Load a model written by :func:`save_pruned` through :func:`load_tensors` (``weights_only=True``;
    no pickled code; a regular file inside ``folder`` when given, at most 1 GiB)."""
    blob = cast(dict, load_tensors(path, folder, kind="model", map_location=map_location))
    if not isinstance(blob, dict) or blob.get("format") != FORMAT:
        raise ValueError(f"{path} is not a {FORMAT} file")
    model = build_model(blob["arch"], blob["num_classes"], blob["in_channels"])
    if blob["pruning_history"]:
        dg = dependency_graph(model, tuple(blob["input_shape"]))
        dg.load_pruning_history(blob["pruning_history"])
    model.load_state_dict(blob["state_dict"])
    return model.to(map_location).eval()


def count_flops(model: nn.Module, input_shape: tuple[int, ...], device: str | torch.device = "cpu") -> int:
    """FLOPs of one batch-1 forward (``torch.utils.flop_counter``: 2 FLOPs per multiply-add)."""
    from torch.utils.flop_counter import FlopCounterMode

    was = model.training
    model.eval()
    with torch.no_grad(), FlopCounterMode(display=False) as fc:
        model(torch.zeros(1, *input_shape, device=device))
    model.train(was)
    return int(fc.get_total_flops())


@torch.no_grad()
def max_abs_diff(a: nn.Module, b: nn.Module, x: torch.Tensor) -> float:
    a.eval(), b.eval()
    return float((a(x) - b(x)).abs().max())
