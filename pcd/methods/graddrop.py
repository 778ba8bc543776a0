"""GradDrop: gradient sign dropout (Chen et al., "Just Pick a Sign: Optimizing Deep Multitask Models
with Gradient Sign Dropout", NeurIPS 2020, arXiv 2010.06808, Algorithm 1 lines 10-15), as TorchJD
0.18's ``GradDrop`` aggregator (``f`` = identity).

Per coordinate k, the positive sign purity ``P_k = 1/2 (1 + sum_i J_ik / sum_i |J_ik|)``; with
``U_k ~ Uniform(0, 1)`` each objective keeps its coordinate when its sign wins the draw:

    M_ik = [P_k > U_k][J_ik > 0] + [P_k < U_k][J_ik < 0],
    d_k  = sum_i (leak_i + (1 - leak_i) M_ik) J_ik.

**Needs the Jacobian J** (``needs_jacobian = True``): the mask acts per coordinate, so the update
is *not* a combination ``weights @ J`` of the gradients. The exact update is returned in
``info["direction"]`` ``[B, n]`` and callers must use it when present. ``weights`` holds the
least-squares weights ``argmin_w ||J^T w - d||`` (``w = pinv(G) J d``): ``weights @ J`` is the
projection of the GradDrop update onto the span of the gradients, for plots of weights only.
Not non-conflicting, not linear under scaling, not weighted (Jacobian Descent, Table 1).
"""
from __future__ import annotations

import numpy as np

from pcd.methods.base import Method, MethodOutput, Param, register


def graddrop_direction(J: np.ndarray, U: np.ndarray, leak: np.ndarray) -> np.ndarray:
    """``J [B, K, n]``, ``U [B, n]`` uniform draws, ``leak [K]`` -> direction ``[B, n]``."""
    with np.errstate(divide="ignore", invalid="ignore"):
        P = 0.5 * (1.0 + J.sum(axis=1) / np.abs(J).sum(axis=1))  # NaN where the column is all zero
    M = ((P > U)[:, None, :] & (J > 0)) | ((P < U)[:, None, :] & (J < 0))
    coef = leak[None, :, None] + (1.0 - leak[None, :, None]) * M
    return np.einsum("bkn,bkn->bn", coef, J)


@register
class GradDrop(Method):
    name = "graddrop"
    display_name = "GradDrop"
    description = "Per coordinate, randomly keeps only the gradients whose sign wins a purity-weighted draw."
    paper = "Chen et al., Just Pick a Sign: Gradient Sign Dropout, NeurIPS 2020 (arXiv 2010.06808)"
    params = (Param("leak", 0.0, 0.0, 1.0, per_objective=True,
                    help="fraction of each gradient always let through (one value per objective allowed)"),)
    needs_jacobian = True
    stochastic = True

    def weights(self, gram, *, losses=None, jacobian=None, state=None, rng=None) -> MethodOutput:
        B, K = gram.shape[0], gram.shape[-1]
        J = np.asarray(jacobian, dtype=np.float64)
        if J.ndim == 2:
            J = J[None]
        if J.ndim != 3 or J.shape[:2] != (B, K):
            raise ValueError(f"graddrop: jacobian must have shape [B, K, n] = [{B}, {K}, n], got {list(J.shape)}")
        if not np.isfinite(J).all():
            raise ValueError("graddrop: jacobian contains NaN or inf")
        leak = np.asarray(self.hparams["leak"], dtype=np.float64)
        leak = np.full(K, float(leak)) if leak.ndim == 0 else leak
        if leak.shape != (K,):
            raise ValueError(f"graddrop: leak needs one value or {K} values (one per objective), got {leak.size}")
        rng = rng if rng is not None else np.random.default_rng()
        U = rng.random((B, J.shape[-1]))
        d = graddrop_direction(J, U, leak)
        Gj = np.einsum("bkn,bln->bkl", J, J)
        Jd = np.einsum("bkn,bn->bk", J, d)
        w = np.einsum("bij,bj->bi", np.linalg.pinv(Gj, hermitian=True), Jd)
        return MethodOutput(weights=w, state=state, info={"direction": d})
