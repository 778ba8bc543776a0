"""Secondary objectives on the weights, with analytic gradients (no backward pass through the net).

* Group lasso (PCD paper, structured pruning, K = 2): ``Omega(w) = sum_g ||w_g||_2``, gradient
  ``w_g / ||w_g||`` (the minimum-norm subgradient ``0`` when ``w_g = 0``).
* L1: ``sum |w|`` over the penalized conv weights, gradient ``sign(w)`` (``0`` at ``0``).
* Nuclear norm: ``sum_l ||W_l||_*`` with each conv viewed as ``W_l = [C_out, C_in*k*k]``, gradient
  ``U V^T`` (reduced SVD ``W = U S V^T``). Computed from the smaller Gram matrix in float64:
  ``W W^T = U S^2 U^T`` so ``U V^T = U S^{-1} U^T W`` (singular values below ``1e-7 * s_max``
  are treated as zero; their directions get the subgradient ``0``).

Groups (what the group lasso sums over), see issue 6 "findings":

* ``filter``: the paper's groups, one per output filter of every penalized conv.
* ``filter+bn``: each filter together with the BN gamma/beta of its channel (a zero filter
  followed by BN is not a dead channel: BN still adds beta).
* ``coupled``: Torch-Pruning's dependency groups: every producer of a channel (all convs feeding
  a residual sum, the depthwise conv and BNs on that channel, DenseNet's BN slices after the
  concatenations) in one group, so what the lasso kills can be physically removed. A group is
  penalized when it contains at least one penalized conv.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import cast

import torch
from torch import nn

from pcd.train.models import classifier_layers, penalized_convs

SECONDARIES = ("group_lasso", "l1+nuclear")
GROUPINGS = ("filter", "filter+bn", "coupled")


def dependency_graph(model: nn.Module, input_shape: tuple[int, ...]):
    """Torch-Pruning dependency graph of ``model`` traced on one zero input (eval mode, grad on)."""
    import torch_pruning as tp

    if len(input_shape) != 3:
        raise ValueError(f"input_shape must be (C, H, W), got {input_shape!r}")
    was_training = model.training
    model.eval()
    dev = next(model.parameters()).device
    with torch.enable_grad():
        dg = tp.DependencyGraph().build_dependency(model, torch.zeros(1, *input_shape, device=dev), verbose=False)
    model.train(was_training)
    return dg


def channel_groups(model: nn.Module, dg) -> list[list[tuple[nn.Module, list[int], list[int], bool]]]:
    """Coupled channel groups from Torch-Pruning: each a list of ``(module, idxs, root_idxs, out)``.

    ``out`` says the member *produces* the channel (conv out-channels, BN); consumers (convs'
    in-channels, the classifier) have ``out = False``. Groups rooted at the classifier are skipped.
    """
    groups: list[list[tuple[nn.Module, list[int], list[int], bool]]] = []
    for g in dg.get_all_groups(ignored_layers=classifier_layers(model), root_module_types=(nn.Conv2d,)):
        members: list[tuple[nn.Module, list[int], list[int], bool]] = []
        for item in g.items:
            mod = item.dep.target.module
            if not isinstance(mod, (nn.Conv2d, nn.BatchNorm2d, nn.Linear)):
                continue
            out = isinstance(mod, nn.BatchNorm2d) or dg.is_out_channel_pruning_fn(item.dep.handler)
            members.append((mod, list(item.idxs), list(item.root_idxs), bool(out)))
        groups.append(members)
    return groups


def following_bn(dg, conv: nn.Conv2d) -> nn.BatchNorm2d | None:
    """The BatchNorm that directly consumes ``conv``'s output, if there is exactly one."""
    node = dg.module2node.get(conv)
    if node is None or len(node.outputs) != 1:
        return None
    m = node.outputs[0].module
    return m if isinstance(m, nn.BatchNorm2d) else None


@dataclass
class GroupSet:
    """Groups as ``(param, rows, group_id)`` entries: row ``rows[i]`` of ``param`` is in group ``gid[i]``."""

    grouping: str
    n_groups: int
    entries: list[tuple[torch.Tensor, torch.Tensor, torch.Tensor]] = field(default_factory=list)

    @property
    def params(self) -> list[torch.Tensor]:
        seen: dict[int, torch.Tensor] = {}
        for p, _, _ in self.entries:
            seen.setdefault(id(p), p)
        return list(seen.values())

    def sq_norms(self, differentiable: bool = False) -> torch.Tensor:
        """Squared L2 norm of every group, ``[n_groups]`` (float32)."""
        dev = self.entries[0][0].device
        sq = torch.zeros(self.n_groups, device=dev, dtype=torch.float32)
        for p, rows, gid in self.entries:
            w = p if differentiable else p.detach()
            rs = w.index_select(0, rows).reshape(rows.numel(), -1).float().pow(2).sum(1)
            sq = sq.index_add(0, gid, rs) if differentiable else sq.index_add_(0, gid, rs)
        return sq

    def norms(self) -> torch.Tensor:
        return self.sq_norms().sqrt()


def build_groups(model: nn.Module, grouping: str, input_shape: tuple[int, ...] | None = None, dg=None) -> GroupSet:
    """The group lasso's groups for ``model`` under ``grouping`` (filter | filter+bn | coupled)."""
    if grouping not in GROUPINGS:
        raise ValueError(f"unknown grouping {grouping!r}; allowed: {', '.join(GROUPINGS)}")
    dev = next(model.parameters()).device
    convs = penalized_convs(model)
    if not convs:
        raise ValueError("model has no penalized convolutions")
    if grouping != "filter" and dg is None:
        if input_shape is None:
            raise ValueError(f"grouping {grouping!r} needs input_shape to trace the dependency graph")
        dg = dependency_graph(model, input_shape)
    gs = GroupSet(grouping, 0)
    if grouping in ("filter", "filter+bn"):
        for _, conv in convs:
            c = conv.out_channels
            rows = torch.arange(c, device=dev)
            gid = rows + gs.n_groups
            gs.entries.append((conv.weight, rows, gid))
            if conv.bias is not None:
                gs.entries.append((conv.bias, rows, gid))
            if grouping == "filter+bn":
                bn = following_bn(dg, conv)
                if bn is not None and bn.affine:
                    gs.entries += [(bn.weight, rows, gid), (bn.bias, rows, gid)]
            gs.n_groups += c
        return gs
    penalized = {id(m) for _, m in convs}
    for members in channel_groups(model, dg):
        if not any(out and id(m) in penalized for m, _, _, out in members):
            continue
        roots = sorted({r for _, _, rr, out in members if out for r in rr})
        local = {r: i for i, r in enumerate(roots)}
        for m, idxs, rr, out in members:
            if not out:
                continue
            rows = torch.tensor(idxs, device=dev, dtype=torch.long)
            gid = torch.tensor([local[r] + gs.n_groups for r in rr], device=dev, dtype=torch.long)
            for p in (cast(torch.Tensor, m.weight), getattr(m, "bias", None)):
                if p is not None:
                    gs.entries.append((p, rows, gid))
        gs.n_groups += len(roots)
    if gs.n_groups == 0:
        raise ValueError("no coupled group contains a penalized convolution")
    return gs


# --------------------------------------------------------------------------- secondary objectives


class Secondary:
    """A weight-only objective: ``value_and_grads() -> (value tensor, [grad per param])``."""

    name = ""
    params: list[torch.Tensor]

    @torch.no_grad()
    def value_and_grads(self) -> tuple[torch.Tensor, list[torch.Tensor]]:
        raise NotImplementedError

    def value(self) -> torch.Tensor:
        """Differentiable value (autograd on the weights' own small graph), for checks and Cooper."""
        raise NotImplementedError


class GroupLasso(Secondary):
    """``Omega(w) = sum_g ||w_g||_2`` (PCD paper, structured pruning secondary)."""

    name = "group_lasso"

    def __init__(self, groups: GroupSet) -> None:
        if groups.n_groups < 1:
            raise ValueError("group lasso needs at least one group")
        self.groups = groups
        self.params = groups.params
        self._index = {id(p): i for i, p in enumerate(self.params)}

    @torch.no_grad()
    def value_and_grads(self) -> tuple[torch.Tensor, list[torch.Tensor]]:
        norm = self.groups.sq_norms().sqrt()
        inv = torch.where(norm > 0, 1.0 / norm.clamp_min(1e-30), torch.zeros_like(norm))
        grads = [torch.zeros_like(p) for p in self.params]
        for p, rows, gid in self.groups.entries:
            g = grads[self._index[id(p)]]
            scale = inv[gid].to(p.dtype).view(-1, *([1] * (p.dim() - 1)))
            if rows.numel() == p.shape[0] and self.groups.grouping != "coupled":
                g.add_(p * scale)
            else:
                g.index_add_(0, rows, p.index_select(0, rows) * scale)
        return norm.sum(), grads

    def value(self, eps: float = 0.0) -> torch.Tensor:
        return (self.groups.sq_norms(differentiable=True) + eps).sqrt().sum()


class _ConvWeights(Secondary):
    """A secondary on the weights of the model's penalized convs (``penalized_convs``), one tensor each."""

    def __init__(self, model: nn.Module) -> None:
        self.params = [m.weight for _, m in penalized_convs(model)]


class L1(_ConvWeights):
    """``sum |w|`` over the penalized conv weights; gradient ``sign(w)``."""

    name = "l1"

    @torch.no_grad()
    def value_and_grads(self) -> tuple[torch.Tensor, list[torch.Tensor]]:
        value = cast(torch.Tensor, sum(p.abs().sum() for p in self.params))
        return value, [torch.sign(p) for p in self.params]

    def value(self) -> torch.Tensor:
        return cast(torch.Tensor, sum(p.abs().sum() for p in self.params))


def nuclear_value_and_grad(w: torch.Tensor, rel_tol: float = 1e-7) -> tuple[torch.Tensor, torch.Tensor]:
    """``||W||_*`` and ``U V^T`` for ``W = w.reshape(C_out, -1)``, via ``eigh`` of the smaller Gram (float64)."""
    W = w.detach().reshape(w.shape[0], -1).double()
    m, n = W.shape
    A = W @ W.T if m <= n else W.T @ W
    lam, Q = torch.linalg.eigh(A)
    s = lam.clamp_min(0).sqrt()
    keep = s > rel_tol * s.max().clamp_min(1e-300)
    inv = torch.where(keep, 1.0 / s.clamp_min(1e-300), torch.zeros_like(s))
    P = (Q * inv) @ Q.T
    G = P @ W if m <= n else W @ P
    return s[keep].sum().to(w.dtype), G.to(w.dtype).reshape(w.shape)


class Nuclear(_ConvWeights):
    """``sum_l ||W_l||_*`` over penalized convs viewed as ``[C_out, C_in*k*k]``; gradient ``U V^T``."""

    name = "nuclear"

    @torch.no_grad()
    def value_and_grads(self) -> tuple[torch.Tensor, list[torch.Tensor]]:
        vals, grads = [], []
        for p in self.params:
            v, g = nuclear_value_and_grad(p)
            vals.append(v)
            grads.append(g)
        return torch.stack(vals).sum(), grads

    def value(self) -> torch.Tensor:
        return sum(torch.linalg.svdvals(p.reshape(p.shape[0], -1)).sum() for p in self.params)


def build_secondaries(model: nn.Module, secondary: str, groups: GroupSet | None = None) -> list[Secondary]:
    """The secondary objectives for ``secondary`` (group_lasso -> [GroupLasso]; l1+nuclear -> [L1, Nuclear])."""
    if secondary == "group_lasso":
        if groups is None:
            raise ValueError("group_lasso needs the groups (build_groups)")
        return [GroupLasso(groups)]
    if secondary == "l1+nuclear":
        return [L1(model), Nuclear(model)]
    raise ValueError(f"unknown secondary {secondary!r}; allowed: {', '.join(SECONDARIES)}")
