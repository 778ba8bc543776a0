"""GradVac: gradient vaccine (Wang, Tsvetkov, Firat, Cao, "Gradient Vaccine: Investigating and
Improving Multi-task Optimization in Massively Multilingual Models", ICLR 2021, arXiv 2010.05874,
eq. 2 and Algorithm 1), in Gram-matrix form as TorchJD 0.18's ``GradVacWeighting``.

For each objective i, start from ``g_i^PC = g_i`` and, for j != i in a random order, with the
cosine ``phi_ij = g_i^PC . g_j / (||g_i^PC|| ||g_j|| + eps)`` and the EMA target ``phi^_ij`` (state):

    if phi_ij < phi^_ij:
        g_i^PC <- g_i^PC + ||g_i^PC|| (phi^_ij sqrt(1 - phi_ij^2) - phi_ij sqrt(1 - phi^_ij^2))
                           / (||g_j|| sqrt(1 - phi^_ij^2) + eps)  g_j                       (eq. 2)
    phi^_ij <- (1 - beta) phi^_ij + beta phi_ij

then ``d = sum_i g_i^PC`` (a sum, as TorchJD). Every inner product is read from G: with
``g_i^PC = sum_k C_ik g_k``, ``g_i^PC . g_j = (C_i G)_j`` and ``||g_i^PC||^2 = C_i G C_i^T``; the
weights are the column sums of C. The targets start at 0, so the first call is PCGrad (up to eps).

With ``eps = 0`` a zero denominator (a zero gradient, or a target of exactly +-1) skips the step
(cosine 0, no correction) where TorchJD divides by zero.

State: :class:`GradVacState`, the targets ``phi^ [B, K, K]`` (TorchJD's ``_phi_t``). The order of
the j's is a permutation of the others per (problem, i), drawn from ``rng`` (TorchJD:
``torch.randperm``); K = 2 draws nothing (one other objective).
"""
from __future__ import annotations

from typing import Any, NamedTuple

import numpy as np

from pcd.methods.base import Method, Param, Step, register


class GradVacState(NamedTuple):
    """EMA targets ``phi^_ij`` of the cosines ``[B, K, K]`` (row i: objective i's target with each j)."""

    phi: np.ndarray


def gradvac_weights(G: np.ndarray, phi: np.ndarray, order: np.ndarray, beta: float,
                    eps: float) -> tuple[np.ndarray, np.ndarray]:
    """``G [B, K, K]``, targets ``phi [B, K, K]``, ``order [B, K, K-1]`` (for each i, the j != i in
    visiting order) -> ``(weights [B, K], new targets)``. Pure: ``phi`` is not modified."""
    B, K = G.shape[0], G.shape[-1]
    rows = np.arange(B)
    phi = phi.copy()
    norm_g = np.sqrt(np.maximum(np.diagonal(G, axis1=1, axis2=2), 0.0))  # ||g_j||
    total = np.zeros((B, K))
    for i in range(K):
        c = np.zeros((B, K))
        c[:, i] = 1.0
        cG = G[:, i, :].copy()  # C_i G
        for t in range(K - 1):
            j = order[:, i, t]
            dot = cG[rows, j]
            norm_i = np.sqrt(np.maximum(np.einsum("bk,bk->b", cG, c), 0.0))
            norm_j = norm_g[rows, j]
            den = norm_i * norm_j + eps
            cos = np.where(den > 0, dot / np.where(den > 0, den, 1.0), 0.0)  # eps = 0, a zero gradient: 0
            hat = phi[rows, i, j]
            hit = cos < hat
            if hit.any():
                s_cos = np.sqrt(np.maximum(1.0 - cos * cos, 0.0))
                s_hat = np.sqrt(np.maximum(1.0 - hat * hat, 0.0))
                den_w = norm_j * s_hat + eps
                ok = hit & (den_w > 0)
                w = np.where(ok, norm_i * (hat * s_cos - cos * s_hat) / np.where(ok, den_w, 1.0), 0.0)
                c[rows, j] += w
                cG += w[:, None] * G[rows, j]
            phi[rows, i, j] = (1.0 - beta) * hat + beta * cos
        total += c
    return total, phi


def visiting_order(B: int, K: int, rng: np.random.Generator | None) -> np.ndarray:
    """``[B, K, K-1]``: for each problem and objective i, a random permutation of the j != i (as
    TorchJD: ``others[torch.randperm(K - 1)]``); K <= 2 draws nothing."""
    base = np.broadcast_to(np.arange(K - 1), (B, K, K - 1))
    if K > 2:
        rng = rng if rng is not None else np.random.default_rng()
        base = rng.permuted(base, axis=-1)
    return base + (base >= np.arange(K)[None, :, None])  # index among the others -> objective


@register("gradvac", "GradVac", "gradient aggregation")
class GradVac(Method):
    claims = frozenset({"weighted"})
    description = "Moves each gradient towards an adaptive target cosine with the others (EMA), then sums."
    paper = ("Wang, Tsvetkov, Firat & Cao, Gradient Vaccine, ICLR 2021 (arXiv 2010.05874), eq. 2 and "
             "Algorithm 1")
    params = (
        Param("beta", 0.5, 0.0, 1.0, help="EMA rate of the target cosines (TorchJD's default 0.5)"),
        Param("eps", 1e-8, 0.0, 1e-2, log=True, help="added to the denominators (TorchJD's default 1e-8)"),
    )
    stochastic = True

    def init(self, batch: int, K: int) -> GradVacState:
        return GradVacState(phi=np.zeros((batch, K, K)))

    def update(self, gram: np.ndarray, state: Any = None, *, losses: Any = None, jacobian: Any = None,
               rng: Any = None) -> Step:
        B, K = gram.shape[0], gram.shape[-1]
        if state is None:
            state = self.init(B, K)
        if state.phi.shape != (B, K, K):
            raise ValueError(f"gradvac: state is for shape {list(state.phi.shape)}, got a batch of [{B}, {K}, {K}]")
        w, phi = gradvac_weights(gram, state.phi, visiting_order(B, K, rng), self.hparams["beta"], self.hparams["eps"])
        return Step(weights=w, state=GradVacState(phi=phi))
