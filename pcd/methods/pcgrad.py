"""PCGrad: gradient surgery (Yu et al., "Gradient Surgery for Multi-Task Learning", NeurIPS 2020,
arXiv 2001.06782, Algorithm 1), in Gram-matrix form as TorchJD 0.18's ``PCGradWeighting``.

For each objective i, start from ``g_i^PC = g_i`` and, for j in a random order (j != i):

    if g_i^PC . g_j < 0:   g_i^PC <- g_i^PC - (g_i^PC . g_j / ||g_j||^2) g_j

then ``d = sum_i g_i^PC`` (a sum, as in the paper and TorchJD). Every inner product is read from
G: with ``g_i^PC = sum_k c_k g_k``, ``g_i^PC . g_j = (G c)_j``. For K = 2 the order does not matter
and PCGrad equals K * UPGrad; for K >= 3 it is not non-conflicting and depends on the order.
``order="random"`` draws one permutation per (problem, objective) from ``rng`` (as TorchJD does with
``torch.randperm``); ``order="fixed"`` uses 0, 1, ..., K-1 (deterministic).
"""
from __future__ import annotations

from typing import Any

import numpy as np

from pcd._kernels import NO_PARAMS, STEP_SIG, formula, jit, k2_batch, where
from pcd.methods.base import Kernel, Method, Param, Step, register


def pcgrad_weights(G: np.ndarray, perms: np.ndarray) -> np.ndarray:
    """``G [B, K, K]``, ``perms [B, K, K]`` (a permutation of 0..K-1 per problem and objective)."""
    B, K = G.shape[0], G.shape[-1]
    if K == 2:  # closed form: each gradient loses its component along the other when they conflict
        return k2_batch(G, pcgrad_k2, _pcgrad_k2_rows, NO_PARAMS)
    rows = np.arange(B)
    diag = np.diagonal(G, axis1=1, axis2=2)
    total = np.zeros((B, K))
    for i in range(K):
        c = np.zeros((B, K))
        c[:, i] = 1.0
        for t in range(K):
            j = perms[:, i, t]
            inner = np.einsum("bk,bk->b", G[rows, j], c)
            gjj = diag[rows, j]
            # inner < 0 implies g_j != 0, hence G_jj > 0 (guarded against underflow)
            hit = (j != i) & (inner < 0.0) & (gjj > 0.0)
            c[rows, j] -= np.where(hit, inner / np.where(hit, gjj, 1.0), 0.0)
        total += c
    return total


@formula
def pcgrad_k2(a: Any, b: Any, c: Any, p: Any) -> Any:
    """PCGrad's K = 2 closed form, written once (NumPy arrays, or one row compiled): for
    ``a = ||g_1||^2, b = g_1.g_2, c = ||g_2||^2`` each gradient loses its component along the other
    when they conflict (``b < 0``), ``w = (1 - b / a, 1 - b / c)``, else ``(1, 1)``; the order does
    not matter. ``b < 0`` implies ``a, c > 0`` in exact arithmetic; guarded against underflowed
    squared norms. ``p``: no parameters."""
    n1, n2 = (b < 0.0) & (c > 0.0), (b < 0.0) & (a > 0.0)
    return 1.0 + where(n2, -b / where(n2, a, 1.0), 0.0), 1.0 + where(n1, -b / where(n1, c, 1.0), 0.0)


_pcgrad_k2_c = jit(pcgrad_k2, inline=True)  # the formula, compiled into the row loop below


@jit
def _pcgrad_k2_rows(a: Any, b: Any, c: Any, p: Any, W: Any) -> Any:
    for i in range(a.shape[0]):
        W[0, i], W[1, i] = _pcgrad_k2_c(a[i], b[i], c[i], p)


@jit(sig=STEP_SIG)
def _pcgrad_k2_step(t: Any, L: Any, G: Any, W: Any, S: Any, p: Any) -> None:
    """The fast path's step (:class:`pcd.methods.base.Kernel`), compiled for :func:`pcd._kernels.trajectory`."""
    _pcgrad_k2_rows(G[0], G[1], G[2], p, W)


@register("pcgrad", "PCGrad", "gradient aggregation")
class PCGrad(Method):
    claims = frozenset({"linear_under_scaling", "weighted"})
    description = "Projects each gradient off the others it conflicts with, in random order, then sums."
    paper = "Yu et al., Gradient Surgery for Multi-Task Learning, NeurIPS 2020 (arXiv 2001.06782)"
    params = (Param("order", "random", kind="choice", choices=("random", "fixed"),
                    help="projection order: a random permutation per step (paper) or 0..K-1"),)
    stochastic = True

    def update(self, gram: np.ndarray, state: Any = None, *, losses: Any = None, jacobian: Any = None,
               rng: Any = None) -> Step:
        B, K = gram.shape[0], gram.shape[-1]
        if K == 2:  # the order does not matter: the closed form, no permutations to draw or build
            return Step(weights=k2_batch(gram, pcgrad_k2, _pcgrad_k2_rows, NO_PARAMS), state=state)
        if self.hparams["order"] == "fixed" or K == 1:
            perms = np.broadcast_to(np.arange(K), (B, K, K))
        else:
            rng = rng if rng is not None else np.random.default_rng()
            perms = rng.permuted(np.broadcast_to(np.arange(K), (B, K, K)), axis=-1)
        return Step(weights=pcgrad_weights(gram, perms), state=state)

    def kernel(self) -> Kernel:
        """The K = 2 closed form, compiled (:func:`pcgrad_k2`; the order does not matter for K = 2)."""
        return Kernel(rows=_pcgrad_k2_step)
