"""The one torch integration of the method registry: per-objective gradients -> Gram matrix ->
``Method.update`` -> the update direction written into ``p.grad``.

The core, :func:`gram_update`, is shared by both torch entry points:

* :class:`GramStep` -- the training loop, any registry method: the primary's gradient is ``p.grad``
  after ``loss.backward()``, the secondaries' gradients are analytic (:mod:`pcd.train.objectives`);
* :class:`pcd.frontend.PCD` -- the PCD optimizer wrapper users call, per-loss gradients from autograd
  or passed in (:meth:`~pcd.frontend.PCD.apply_gradients`).

Each caller hands over, per objective ``i``, the list of ``(k, g_ik)`` pairs of the parameters
``p_k`` it depends on (a parameter an objective does not touch has no entry: its gradient is zero
and is never materialized). Then, with ``J = [g_1; ...; g_K]`` never formed for a weighted method:

    G_ij = sum_k <g_ik, g_jk>                      (over the parameters both objectives use)
    step = method(G[None], state=..., losses=..., jacobian=J (only if method.needs_jacobian), rng=...)
    p_k.grad = Step.direction(J)_k = sum_i w_i g_ik  (objectives that use p_k; None if none does)

(:meth:`pcd.methods.base.Step.direction`: a direction method's ``exact`` update instead of
``w @ J``). The caller steps *against* ``p.grad`` with any ``torch.optim`` optimizer. PCD's
``w`` is Alg. 1 of arXiv 2606.29521 (:mod:`pcd.methods.pcd`). The method's state is checkpointed
as its plain fields (:meth:`GramStep.state_dict`).
"""
from __future__ import annotations

from collections.abc import Sequence
from typing import Any, NamedTuple

import numpy as np
import torch

from pcd.methods.base import Method, Step, finite_step, state_fields, state_from_fields

__all__ = ["GramStep", "GradUpdate", "gram_matrix", "jacobian_matrix", "write_grads", "gram_update"]

#: One objective's gradients: ``(k, g)`` pairs, ``g`` the gradient with respect to ``params[k]``
#: (same shape); parameters the objective does not depend on are left out.
ObjectiveGrads = Sequence[tuple[int, torch.Tensor]]


class GradUpdate(NamedTuple):
    """What :func:`gram_update` did: the Gram matrix ``[K, K]`` (float64), the method's step (None
    when nothing was stepped: diverged, or no objective has a gradient) and the divergence flag."""

    gram: np.ndarray
    step: Step | None
    diverged: bool


def gram_matrix(grads: Sequence[ObjectiveGrads], dtype: torch.dtype | None = None) -> np.ndarray:
    """``G_ij = sum_k <g_ik, g_jk>`` ``[K, K]`` float64 from per-objective ``(k, g)`` lists.

    Precision: each per-parameter dot product is taken in ``dtype`` (None: the gradients' own
    dtype); the sum over parameters, and everything downstream (normalizer, QP, weights), is in
    float64. :class:`pcd.frontend.PCD` passes ``torch.float64``: its Gram matrix is float64 end to
    end, as it always was, so its numbers (and the exact-cancellation test ``||d~||^2 <= 10 eps
    size^2`` of :mod:`pcd.direction`) are unchanged for float32 models too. The training loop
    passes None (float32 dots, as it always did): float64 copies of the gradients make the whole
    :func:`gram_update` of a ResNet-18 step (11M parameters, K = 2, 1 CPU thread) cost 0.146 s
    instead of 0.039 s of CPU time (measured), +2 % of a ~5.5 s CPU training step, while the float32
    dot's relative error (~2e-7 measured) is of the order of the float32 gradients' own rounding.
    All dots go to the host in one transfer.
    """
    K = len(grads)
    flat = [[(k, g.reshape(-1) if dtype is None else g.reshape(-1).to(dtype)) for k, g in obj] for obj in grads]
    maps = [dict(f) for f in flat]
    dots: list[torch.Tensor] = []
    where: list[int] = []
    for i in range(K):
        for j in range(i, K):
            other = maps[j]
            for k, g in flat[i]:
                h = other.get(k)
                if h is not None:
                    dots.append(torch.dot(g, h))
                    where.append(i * K + j)
    if not dots:
        return np.zeros((K, K))
    vals = torch.stack(dots).to(torch.float64).cpu().numpy()
    upper = np.bincount(np.asarray(where), weights=vals, minlength=K * K).reshape(K, K)  # float64 sums
    return np.triu(upper) + np.triu(upper, 1).T


def jacobian_matrix(params: Sequence[torch.Tensor], grads: Sequence[ObjectiveGrads]) -> np.ndarray:
    """``J`` ``[1, K, n]`` float64 on the host (``n`` = all parameters, zeros where unused); only
    formed for methods that need it (``needs_jacobian``, e.g. GradDrop)."""
    offs = np.cumsum([0] + [p.numel() for p in params])
    J = torch.zeros(len(grads), int(offs[-1]), dtype=torch.float64)
    for i, obj in enumerate(grads):
        for k, g in obj:
            J[i, offs[k]:offs[k + 1]] = g.reshape(-1).double().cpu()
    return J.numpy()[None]


def write_grads(params: Sequence[torch.Tensor], grads: Sequence[ObjectiveGrads], step: Step) -> None:
    """The one ``p.grad`` writer: ``p_k.grad = Step.direction(J)_k`` for every parameter some
    objective uses, ``None`` for the others (so the optimizer skips them; a stale gradient is
    cleared).

    Weighted methods: ``sum_i w_i g_ik`` combined on the gradients themselves, in objective order
    (``J`` is never formed). The first term is scaled in place when it *is* ``p.grad`` (the training
    loop's primary gradient after ``loss.backward()``: no allocation), else ``p.grad`` is set to a
    new tensor (passed-in gradients are only read); later terms with ``w_i = 0`` are skipped.
    Direction methods: their ``exact`` update, sliced per parameter.
    """
    used: set[int] = set()
    if step.exact is not None:
        d = torch.as_tensor(np.asarray(step.exact)[0])
        for obj in grads:
            used.update(k for k, _ in obj)
        off = 0
        for k, p in enumerate(params):
            if k in used:
                src = d[off:off + p.numel()].view_as(p).to(dtype=p.dtype, device=p.device)
                if p.grad is not None and p.grad.shape == p.shape and p.grad.dtype == p.dtype:
                    p.grad.copy_(src)
                else:
                    p.grad = src
            off += p.numel()
    else:
        w = np.asarray(step.weights, dtype=np.float64).reshape(-1)
        for i, obj in enumerate(grads):
            wi = float(w[i])
            for k, g in obj:
                p = params[k]
                if k not in used:
                    used.add(k)
                    if g is p.grad:
                        g.mul_(wi)
                    else:
                        d = g.detach() * wi
                        p.grad = d if d.dtype == p.dtype and d.device == p.device else d.to(p)
                elif wi != 0.0:
                    p.grad.add_(g, alpha=wi)  # type: ignore[union-attr]  # set by its first term
    for k, p in enumerate(params):
        if k not in used:
            p.grad = None


def gram_update(params: Sequence[torch.Tensor], grads: Sequence[ObjectiveGrads], method: Method, state: Any, *,
                dtype: torch.dtype | None = None, losses: np.ndarray | None = None,
                rng: np.random.Generator | None = None) -> GradUpdate:
    """Per-objective gradients -> :func:`gram_matrix` -> ``method(G[None], state=...)`` ->
    :func:`write_grads`. The new state is ``result.step.state`` (the caller keeps it).

    A non-finite Gram matrix (a NaN/inf gradient, or an overflow) or non-finite ``losses``
    (``[K]``) writes nothing and gives ``diverged=True``; what to do with that is the caller's
    (the training loop stops the run, :class:`pcd.frontend.PCD` raises). No gradient at all: every
    ``p.grad`` is cleared and ``step`` is None.
    """
    K = len(grads)
    if not any(len(obj) for obj in grads):
        for p in params:
            p.grad = None
        return GradUpdate(np.zeros((K, K)), None, False)
    G = gram_matrix(grads, dtype)
    if not np.isfinite(G).all() or (losses is not None and not np.isfinite(losses).all()):
        return GradUpdate(G, None, True)
    kw: dict[str, Any] = {"state": state, "rng": rng}
    if losses is not None:
        kw["losses"] = np.asarray(losses, dtype=np.float64)[None]
    if method.needs_jacobian:
        kw["jacobian"] = jacobian_matrix(params, grads)
    step = method(G[None], **kw)
    if not finite_step(step):
        return GradUpdate(G, step, True)
    write_grads(params, grads, step)
    return GradUpdate(G, step, False)


class GramStep:
    """The training loop's step for any method: ``p.grad`` (primary, after ``loss.backward()``) and
    the secondaries' analytic gradients -> :func:`gram_update` (Gram in the gradients' dtype
    per parameter, float64 across parameters) -> ``p.grad``."""

    def __init__(self, params: Sequence[torch.Tensor], secondaries: list, method: Method, K: int) -> None:
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

    def grads(self, g1: list[torch.Tensor], sec: list[list[torch.Tensor]]) -> list[list[tuple[int, torch.Tensor]]]:
        """The per-objective ``(k, g)`` lists: the primary on every parameter, each secondary on its own."""
        out = [list(enumerate(g1))]
        for s, gs in zip(self.secondaries, sec):
            out.append([(self.pos[id(p)], g) for p, g in zip(s.params, gs)])
        return out

    def gram(self, g1: list[torch.Tensor], sec: list[list[torch.Tensor]]) -> np.ndarray:
        return gram_matrix(self.grads(g1, sec))

    def jacobian(self, g1: list[torch.Tensor], sec: list[list[torch.Tensor]]) -> np.ndarray:
        return jacobian_matrix(self.params, self.grads(g1, sec))

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
        losses = torch.stack([primary_loss.detach().float()] + [v.float() for v in vals]).double().cpu().numpy()
        res = gram_update(self.params, self.grads(g1, sec), self.method, self.state, losses=losses, rng=rng)
        diag: dict[str, Any] = {"losses": losses, "gram": res.gram}
        if res.step is not None:
            self.state = res.step.state
            diag["weights"] = np.asarray(res.step.weights, dtype=np.float64)[0]
            diag["info"] = res.step.info
        if res.diverged:
            diag["diverged"] = True
        return diag
