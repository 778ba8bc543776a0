"""ConFIG: conflict-free gradient (Liu, Chu, Thuerey, "ConFIG: Towards Conflict-free Training of
Physics Informed Neural Networks", ICLR 2025, arXiv 2408.11104, eq. 2), as TorchJD 0.18's ``ConFIG``.

With the unit gradients ``U = diag(1 / ||g_i||) J`` (a zero gradient gives a zero row) and the
preference vector ``w`` (default all ones, TorchJD's ``SumWeighting``):

    u = pinv(U) w / ||pinv(U) w||,         d = (sum_i g_i . u) u                       (eq. 2)

so, for independent gradients, ``u`` makes the same angle with every unit gradient (its cosines are
proportional to ``w``) and the length is the sum of the gradients' projections onto it.

Gram form (exact, no Jacobian needed): with ``s_i = ||g_i|| = sqrt(G_ii)`` and the cosine matrix
``C = diag(1/s) G diag(1/s)``, ``pinv(U) w = U^T C^+ w``, i.e. ``pinv(U) w = J^T beta`` with
``beta_i = (C^+ w)_i / s_i`` (0 for a zero gradient), and

    weights = beta (1^T G beta) / (beta^T G beta)      (``beta^T G beta = ||pinv(U) w||^2``;
                                                         0 when ``||pinv(U) w|| <= 1e-12``).

``C^+`` comes from the eigen-decomposition of C with eigenvalues below ``1e-11 * max`` treated as
zero. TorchJD cuts the *singular values* of U below ``max(K, n) eps`` of the largest; in the Gram
form the squared singular values carry a rounding error of ~``n eps``, so the cut-off is set above
that: the two agree unless the unit gradients are nearly but not exactly dependent (smallest to largest
singular value of U between ~1e-15 and ~3e-6). The 1e-12 is TorchJD's ``F.normalize`` floor: it
divides by ``max(||pinv(U) w||, 1e-12)``, which amplifies the round-off of ``pinv(U) w`` when ``w``
is orthogonal to the span of the unit gradients (e.g. ``g_2 = -g_1``, ``w = 1``) to ~1e-8 of the
gradients; there the exact update is 0, which is what we return.

Linear under scaling (``u`` depends only on the unit gradients, the length is linear in the
scales) and weighted; non-conflicting for independent gradients (``g_i . d`` is proportional to
``s_i w_i``) but not for dependent ones, whose least-squares fit of ``w`` can have negative entries.
"""
from __future__ import annotations

from typing import Any

import numpy as np

from pcd.methods.base import Method, Param, Step, register

_RCOND = 1e-11  # relative eigenvalue cut-off of the cosine matrix's pseudo-inverse (see the docstring)
_NORM_EPS = 1e-12  # F.normalize's floor on ||pinv(U) w||, as TorchJD


def pref_vector(value: Any, K: int, who: str) -> np.ndarray:
    """The preference vector ``[K]``: one number (each objective gets it) or K numbers."""
    arr = np.atleast_1d(np.asarray(value, dtype=np.float64))
    if arr.size == 1:
        return np.full(K, float(arr[0]))
    if arr.size != K:
        raise ValueError(f"{who}: pref_vector needs one number or {K} numbers (one per objective), got {arr.size}")
    return arr


def config_weights(G: np.ndarray, w: np.ndarray) -> np.ndarray:
    """ConFIG's weights ``[B, K]`` for Gram matrices ``G [B, K, K]`` and preference ``w [K]``."""
    diag = np.diagonal(G, axis1=1, axis2=2)
    s = np.sqrt(np.maximum(diag, 0.0))
    nz = s > 0.0
    inv_s = np.where(nz, 1.0 / np.where(nz, s, 1.0), 0.0)
    C = G * inv_s[:, :, None] * inv_s[:, None, :]
    C = 0.5 * (C + np.swapaxes(C, 1, 2))
    lam, V = np.linalg.eigh(C)  # ascending
    top = lam[:, -1:]
    keep = lam > _RCOND * np.maximum(top, 0.0)
    inv_lam = np.where(keep, 1.0 / np.where(keep, lam, 1.0), 0.0)
    q = (V @ (inv_lam * (w @ V))[..., None])[..., 0]  # C^+ w = V diag(1/lam) V^T w
    beta = q * inv_s
    Gb = np.einsum("bij,bj->bi", G, beta)
    num = Gb.sum(axis=-1)                      # 1^T G beta = sum_i g_i . (J^T beta)
    den = np.einsum("bi,bi->b", beta, Gb)      # ||pinv(U) w||^2 = ||J^T beta||^2
    ok = den > _NORM_EPS**2
    return beta * np.where(ok, num / np.where(ok, den, 1.0), 0.0)[:, None]


@register("config", "ConFIG", "gradient aggregation")
class ConFIG(Method):
    claims = frozenset({"linear_under_scaling", "weighted"})
    description = "The direction at equal angles to every unit gradient, as long as their projections' sum."
    paper = ("Liu, Chu & Thuerey, ConFIG: Towards Conflict-free Training of Physics Informed Neural Networks, "
             "ICLR 2025 (arXiv 2408.11104), eq. 2")
    params = (Param("pref_vector", 1.0, 0.0, 1e6, per_objective=True,
                    help="preference w: the cosines of the update with the unit gradients are proportional "
                         "to it (one number: all equal, TorchJD's default)"),)
    gram_scaling = 0.0

    def update(self, gram: np.ndarray, state: Any = None, *, losses: Any = None, jacobian: Any = None,
               rng: Any = None) -> Step:
        w = pref_vector(self.hparams["pref_vector"], gram.shape[-1], self.name)
        return Step(weights=config_weights(gram, w), state=state)
