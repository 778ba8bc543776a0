"""The one torch integration of the method registry: per-objective gradients -> Gram matrix ->
``Method.update`` -> :meth:`Step.direction` written into ``p.grad`` (:class:`GramStep`).

The secondaries' gradients are analytic (:mod:`pcd.train.objectives`); ``J`` itself is only formed
for methods that need it (``needs_jacobian``, e.g. GradDrop). The method's state is checkpointed as
its plain fields (:meth:`GramStep.state_dict`).
"""
from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import torch

from pcd.methods.base import state_fields, state_from_fields


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
