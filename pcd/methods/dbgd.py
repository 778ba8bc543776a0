"""DBGD: dynamic barrier gradient descent (Gong & Liu, "Automatic and Harmless Regularization with
Constrained and Lexicographic Optimization: A Dynamic Barrier Approach", NeurIPS 2021,
arXiv 2106.10343). For a primary f and secondaries g_j with barrier ``phi_j = beta ||g_j||^2``:

    d = argmin_d ||d - g_1||^2   s.t.   g_j . d >= beta ||g_j||^2     (raw gradients)
      = g_1 + sum_j mu_j g_j,    K = 2:  mu = max(0, (beta ||g_2||^2 - g_1.g_2) / ||g_2||^2)

i.e. PCD's QP (:func:`pcd.solve_qp`) with ``tau = beta`` on the raw, un-normalized Gram matrix and
no rescaling (the PCD paper, Sec. 5: DBGD is PCD without the EMA normalization). The weights are
``[1, mu]``; ``info`` carries ``mu``, ``feasible`` and ``active`` (mutually incompatible constraints,
K >= 3 only, fall back to the primary as in PCD). Because the gradients are not normalized, the same
beta buys very different amounts of secondary progress depending on the gradients' scales.
"""
from __future__ import annotations

from typing import Any

import numpy as np

from pcd._fast import small_batch
from pcd.methods.base import Method, Param, Step, register
from pcd.qp import check_tau, k2_mu_small, solve_qp


@register("dbgd", "DBGD", "hierarchical")
class DBGD(Method):
    claims = frozenset({"weighted", "hierarchical"})
    moves_at_cancellation = True  # it keeps a beta share of the secondary's progress
    description = "PCD's constrained direction on raw (un-normalized) gradients: a dynamic barrier."
    paper = "Gong & Liu, Automatic and Harmless Regularization ... Dynamic Barrier Approach, NeurIPS 2021"
    params = (Param("beta", 0.3, 0.0, 1.0, per_objective=True,
                    help="barrier: each secondary's progress >= beta ||g_j||^2 (raw gradients)"),)

    def update(self, gram: np.ndarray, state: Any = None, *, losses: Any = None, jacobian: Any = None,
               rng: Any = None) -> Step:
        beta = self.hparams["beta"]
        if gram.shape[-1] == 2 and small_batch(gram.shape[0]):  # a few start points: compiled closed form
            mu = k2_mu_small(gram, beta if isinstance(beta, float) else float(check_tau(beta, 2)[0]))
            if mu is not None:
                w = np.ones((len(mu), 2))
                w[:, 1] = mu
                active = np.zeros((len(mu), 2), dtype=bool)
                active[:, 1] = mu > 0
                info = {"mu": w[:, 1:].copy(), "feasible": np.ones(len(mu), dtype=bool), "active": active}
                return Step(weights=w, state=state, info=info)
        res = solve_qp(gram, tau=beta)
        info = {"mu": res.mu, "feasible": np.asarray(res.feasible), "active": res.active_mask}
        return Step(weights=res.weights, state=state, info=info)
