"""STCH: smooth Tchebycheff scalarization (Lin, Zhang, Yang, Zhang & Zhang, "Smooth Tchebycheff
Scalarization for Multi-Objective Optimization", ICML 2024, arXiv 2402.19078, Sec. 3), TorchJD
0.18's ``scalarization.STCH``:

    S(L) = mu log sum_i exp( lambda_i (L_i - z_i) / mu )

a smooth approximation of the Tchebycheff scalarization ``max_i lambda_i (L_i - z_i)``, with
``max <= S <= max + mu log K`` (tighter as ``mu`` decreases). Its gradient is a softmax-weighted
sum, so as weights on the gradients

    weights_i = lambda_i p_i,      p = softmax( lambda (L - z) / mu )

(the exponent shifted by its maximum, as TorchJD and the paper's Appendix B.1 do: exact, never
overflows). The weights sum to at most ``max_i lambda_i``; as ``mu -> 0`` they concentrate on the
worst weighted objective. ``weights`` is the preference ``lambda``: one number (every secondary;
the primary 1, as for the weighted sum) or one value per objective, normalized to sum to 1 (the
paper's ``lambda`` on the simplex; TorchJD's default, uniform, is ``1/K`` each). ``reference`` is
the ideal point ``z`` (one number for every objective or one value each; TorchJD: no shift).
TorchJD has no default for ``mu``; the paper evaluates {0.01, 0.1, 0.5, 1}. Losses of any sign.
Needs the loss values (``losses [B, K]``).
"""
from __future__ import annotations

from typing import Any

import numpy as np

from pcd import _validate as V
from pcd.methods.base import Method, Param, Step, check_losses, per_objective, register
from pcd.methods.rgw import softmax
from pcd.methods.ws import user_weights


@register("stch", "STCH", "loss weighting")
class STCH(Method):
    claims = frozenset({"weighted"})
    description = "Minimizes a smooth maximum (log-sum-exp) of the weighted losses: the worst one gets the weight."
    paper = "Lin et al., Smooth Tchebycheff Scalarization for Multi-Objective Optimization, ICML 2024 (arXiv 2402.19078)"
    params = (
        Param("mu", 0.1, 1e-4, 1e3, log=True, help="smoothing mu > 0: smaller is closer to the max (paper 0.01-1)"),
        Param("weights", 1.0, 0.0, 1e6, per_objective=True,
              help="preference: one weight per secondary (primary 1) or per objective; normalized to sum 1"),
        Param("reference", 0.0, None, None, per_objective=True, help="ideal point z subtracted from the losses"),
    )
    needs_losses = True

    def _preference(self, K: int) -> np.ndarray:
        lam = user_weights(self.hparams["weights"], K, "stch: weights")
        total = float(lam.sum())
        if total <= 0.0:
            raise V.Invalid(f"stch: weights must have a positive sum (a preference on the simplex), got {lam.tolist()}")
        return lam / total

    def update(self, gram: np.ndarray, state: Any = None, *, losses: Any = None, jacobian: Any = None,
               rng: Any = None) -> Step:
        B, K = gram.shape[0], gram.shape[-1]
        L = check_losses(losses, B, K, self.name)
        lam = self._preference(K)
        y = lam * (L - per_objective(self.hparams["reference"], K, "stch: reference"))
        p = softmax((y - y.max(axis=1, keepdims=True)) / self.hparams["mu"])  # shifted first: no overflow
        return Step(weights=lam * p, state=state)
