"""SDMGrad: stochastic direction-oriented multi-objective gradient descent (Xiao, Ban, Ji,
"Direction-oriented Multi-objective Learning: Simple and Provable Stochastic Algorithms",
NeurIPS 2023, arXiv 2305.18409, Algorithm 1 / eq. 8), as TorchJD 0.18's ``SDMGradWeighting``.

The weights ``w`` (state, ``1/K`` at start) minimize ``1/2 ||J^T (w + lambda w~)||^2`` over the
simplex, approximately: each call normalizes ``A`` (``J_1 J_2^T`` from two independent draws, or
``G``) by the squared mean gradient norm and runs ``n_iter`` projected SGD steps with momentum,

    a = A / (mean_i sqrt(max(A_ii, 0))^2 + 1e-8),
    v <- momentum v + a (w + lambda w~)   (v = the gradient at the first step),
    w <- Proj_simplex(w - lr v),                                                      (eq. 8)

and returns ``weights = (w + lambda w~) / (1 + lambda)``: MGDA's min-norm weights pulled towards
the preference ``w~`` (``lambda = 0``: MGDA-like; ``lambda -> infinity``: ``w~``, the mean by
default). The projection is TorchJD's (:func:`pcd.methods.modo.project_onto_simplex`).
``lambda_`` is TorchJD's name (``lambda`` is a Python keyword); its default 0.3 is the official
experiments'. ``pref_vector``: one number ``v`` means ``w~ = v / K`` each (1: TorchJD's default,
the uniform ``1/K``), K numbers are ``w~`` itself.

State: :class:`SDMGradState`, ``w [B, K]``. Weights are non-negative ("weighted"); a few SGD steps
per call, so not non-conflicting, and not linear under scaling of single objectives.
"""
from __future__ import annotations

from typing import Any, NamedTuple

import numpy as np

from pcd.methods.base import Method, Param, Step, register
from pcd.methods.modo import project_onto_simplex


class SDMGradState(NamedTuple):
    """The inner weights ``w [B, K]`` (on the simplex)."""

    w: np.ndarray


def preference(value: Any, K: int, who: str) -> np.ndarray:
    """``w~ [K]``: one number ``v`` -> ``v / K`` each; K numbers -> as given."""
    arr = np.atleast_1d(np.asarray(value, dtype=np.float64))
    if arr.size == 1:
        return np.full(K, float(arr[0]) / K)
    if arr.size != K:
        raise ValueError(f"{who}: pref_vector needs one number or {K} numbers (one per objective), got {arr.size}")
    return arr


@register("sdmgrad", "SDMGrad", "gradient aggregation")
class SDMGrad(Method):
    claims = frozenset({"weighted"})
    description = "MGDA's weights found by a few stochastic steps, pulled towards a preferred direction (the mean)."
    paper = ("Xiao, Ban & Ji, Direction-oriented Multi-objective Learning, NeurIPS 2023 (arXiv 2305.18409), "
             "Algorithm 1, eq. 8")
    params = (
        Param("lr", 10.0, 1e-6, 1e4, log=True, help="step size of the inner SGD (TorchJD's default 10)"),
        Param("momentum", 0.5, 0.0, 0.999, help="momentum of the inner SGD, below 1 (TorchJD's default 0.5)"),
        Param("n_iter", 20, 1, 10_000, kind="int", help="inner SGD steps per call (TorchJD's default 20)"),
        Param("lambda_", 0.3, 0.0, 1e3, help="pull towards the preferred direction (TorchJD's default 0.3)"),
        Param("pref_vector", 1.0, 0.0, 1e6, per_objective=True,
              help="preference w~: one number v is v/K each (1: the mean, TorchJD's default), or K numbers"),
    )
    gram_scaling = None  # the 1e-8 in the normalization

    def init(self, batch: int, K: int) -> SDMGradState:
        return SDMGradState(w=np.full((batch, K), 1.0 / K))

    def update(self, gram: np.ndarray, state: Any = None, *, losses: Any = None, jacobian: Any = None,
               rng: Any = None) -> Step:
        B, K = gram.shape[0], gram.shape[-1]
        w = self.state_for(state, B, K).w
        wt = preference(self.hparams["pref_vector"], K, self.name)
        lam, lr, mom = self.hparams["lambda_"], self.hparams["lr"], self.hparams["momentum"]
        scale = np.sqrt(np.maximum(np.diagonal(gram, axis1=1, axis2=2), 0.0)).mean(axis=-1)
        a = gram / (scale * scale + 1e-8)[:, None, None]
        v = None
        for _ in range(self.hparams["n_iter"]):
            g = np.einsum("bij,bj->bi", a, w + lam * wt)
            v = g if v is None else mom * v + g
            w = project_onto_simplex(w - lr * v)
        return Step(weights=(w + lam * wt) / (1.0 + lam), state=SDMGradState(w=w.copy()))
