"""EMA normalization of per-objective gradient norms (PCD paper, arXiv 2606.29521, Sec. 3.3).

    v_i <- beta v_i + (1 - beta) ||g_i||^2,     v^_i = v_i / (1 - beta^t),
    s_i  = 1 / sqrt(v^_i + eps),                 g~_i = s_i g_i.

With bias correction the first step gives ``s_i = 1/sqrt(||g_i||^2 + eps)``: each objective's
gradient is brought to unit scale, so the same dimensionless tau means the same thing whatever
the losses' units (asymptotic scale invariance; multiplying loss i by c multiplies ``v_i`` by
``c^2`` and ``s_i`` by ``1/c``, up to ``eps``). Framework-free: works on NumPy arrays of squared
norms ``[..., K]`` so the batched toy engine and the PyTorch front end share it.
"""
from __future__ import annotations

import math
from typing import Any

import numpy as np

__all__ = ["EMANormalizer", "check_beta_eps"]


def check_beta_eps(beta: Any, eps: Any) -> tuple[float, float]:
    try:
        beta, eps = float(beta), float(eps)
    except (TypeError, ValueError):
        raise ValueError("beta and eps must be numbers") from None
    if not (0.0 <= beta < 1.0) or not math.isfinite(beta):
        raise ValueError(f"beta must be in [0, 1), got {beta}")
    if not (eps >= 0.0) or not math.isfinite(eps):
        raise ValueError(f"eps must be a finite number >= 0, got {eps}")
    return beta, eps


class EMANormalizer:
    """Bias-corrected EMA of each objective's squared gradient norm; ``update`` returns ``s``.

    State: ``v`` (``[..., K]`` float64, ``None`` before the first update) and the step count ``t``.
    ``state_dict()`` / ``load_state_dict()`` round-trip exactly.
    """

    def __init__(self, beta: float = 0.999, eps: float = 1e-8) -> None:
        self.beta, self.eps = check_beta_eps(beta, eps)
        self.v: np.ndarray | None = None
        self.t = 0

    def update(self, sq_norms: Any, *, check: bool = True) -> np.ndarray:
        """Fold in ``||g_i||^2`` (``[..., K]``) and return the scales ``s_i = 1/sqrt(v^_i + eps)``.

        ``check=False`` skips the finiteness/sign checks (the caller validated the Gram matrix).
        """
        sq = np.asarray(sq_norms, dtype=np.float64)
        if not check and self.v is not None and self.v.shape == sq.shape:
            self.t += 1
            self.v = self.beta * self.v + (1.0 - self.beta) * sq
            return self.scales()
        if sq.ndim == 0:
            raise ValueError("squared norms must have shape [..., K]")
        if not np.isfinite(sq).all() or (sq < 0).any():
            raise ValueError("squared gradient norms must be finite and >= 0")
        if self.v is None:
            self.v = np.zeros_like(sq)
        elif self.v.shape != sq.shape:
            raise ValueError(f"expected squared norms of shape {self.v.shape}, got {sq.shape}")
        self.t += 1
        self.v = self.beta * self.v + (1.0 - self.beta) * sq
        return self.scales()

    def scales(self) -> np.ndarray:
        """Current ``s_i``; before any update there is nothing to normalize by."""
        if self.v is None:
            raise ValueError("EMANormalizer.scales() called before the first update()")
        vhat = self.v / (1.0 - self.beta ** self.t)
        denom = vhat + self.eps
        # A gradient that has always been exactly zero (possible only with eps = 0) gets s = 0:
        # its normalized gradient is zero either way, and this keeps the Gram matrix finite.
        with np.errstate(divide="ignore"):
            return np.where(denom > 0, 1.0 / np.sqrt(np.where(denom > 0, denom, 1.0)), 0.0)

    def state_dict(self) -> dict:
        return {"beta": self.beta, "eps": self.eps, "t": self.t,
                "v": None if self.v is None else self.v.copy()}

    def load_state_dict(self, state: dict) -> None:
        self.beta, self.eps = check_beta_eps(state["beta"], state["eps"])
        self.t = int(state["t"])
        self.v = None if state["v"] is None else np.array(state["v"], dtype=np.float64)

    def __repr__(self) -> str:
        return f"EMANormalizer(beta={self.beta}, eps={self.eps}, t={self.t})"
