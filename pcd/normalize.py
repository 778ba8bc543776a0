"""EMA normalization of per-objective gradient norms (PCD paper, arXiv 2606.29521, Sec. 3.3).

    v_i <- beta v_i + (1 - beta) ||g_i||^2,     v^_i = v_i / (1 - beta^t),
    s_i  = 1 / sqrt(v^_i + eps),                 g~_i = s_i g_i.

With bias correction the first step gives ``s_i = 1/sqrt(||g_i||^2 + eps)``: each objective's
gradient is brought to unit scale, so the same dimensionless tau means the same thing whatever
the losses' units (asymptotic scale invariance; multiplying loss i by c multiplies ``v_i`` by
``c^2`` and ``s_i`` by ``1/c``, up to ``eps``). Framework-free: works on NumPy arrays of squared
norms ``[..., K]`` so the batched toy engine and the torch integration share it.

The update is a pure function of the state (:func:`ema_step`: ``(v, t)`` -> the next ``(v, t)``
and the scales); PCD's method state is that pair (:class:`pcd.methods.pcd.PCDState`), also in the
PyTorch front end (:class:`pcd.PCD`). :class:`EMANormalizer` keeps it in an object for callers that
want one (the constraints experiments).
"""
from __future__ import annotations

import math
from typing import Any

import numpy as np

from pcd._kernels import formula, where

__all__ = ["EMANormalizer", "check_beta_eps", "ema_step", "ema_scales", "ema_scale"]


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


def ema_scales(v: np.ndarray, t: int, beta: float, eps: float) -> np.ndarray:
    """``s_i = 1/sqrt(v_i / (1 - beta^t) + eps)``; 0 where that denominator is 0 (only with eps = 0)."""
    return ema_scale(v, 1.0 - beta ** t, eps)


@formula
def ema_scale(v: Any, bc: Any, eps: Any) -> Any:
    """:func:`ema_scales` for the bias correction ``bc = 1 - beta^t``, written once (NumPy arrays, or
    one row compiled: PCD's K = 2 step, :func:`pcd.methods.pcd.pcd_k2`)."""
    denom = v / bc + eps  # v^ (bias-corrected) + eps
    # A gradient that has always been exactly zero (possible only with eps = 0) gets s = 0:
    # its normalized gradient is zero either way, and this keeps the Gram matrix finite. The
    # square root is taken of ``denom > 0`` or of 1, so nothing divides by zero.
    pos = denom > 0
    return where(pos, 1.0 / np.sqrt(where(pos, denom, 1.0)), 0.0)


def ema_step(v: np.ndarray, t: int, sq_norms: np.ndarray, beta: float, eps: float
             ) -> tuple[np.ndarray, int, np.ndarray]:
    """One pure EMA update: ``(v, t)`` and squared norms ``[..., K]`` -> ``(v', t + 1, scales)``.

    ``v`` starts as zeros (``t = 0``); no input checks (the caller validated the norms).
    """
    t = t + 1
    v = beta * v + (1.0 - beta) * sq_norms
    return v, t, ema_scales(v, t, beta, eps)


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
            self.v, self.t, s = ema_step(self.v, self.t, sq, self.beta, self.eps)
            return s
        if sq.ndim == 0:
            raise ValueError("squared norms must have shape [..., K]")
        if not np.isfinite(sq).all() or (sq < 0).any():
            raise ValueError("squared gradient norms must be finite and >= 0")
        if self.v is None:
            self.v = np.zeros_like(sq)
        elif self.v.shape != sq.shape:
            raise ValueError(f"expected squared norms of shape {self.v.shape}, got {sq.shape}")
        self.v, self.t, s = ema_step(self.v, self.t, sq, self.beta, self.eps)
        return s

    def scales(self) -> np.ndarray:
        """Current ``s_i``; before any update there is nothing to normalize by."""
        if self.v is None:
            raise ValueError("EMANormalizer.scales() called before the first update()")
        return ema_scales(self.v, self.t, self.beta, self.eps)

    def state_dict(self) -> dict:
        return {"beta": self.beta, "eps": self.eps, "t": self.t,
                "v": None if self.v is None else self.v.copy()}

    def load_state_dict(self, state: dict) -> None:
        self.beta, self.eps = check_beta_eps(state["beta"], state["eps"])
        self.t = int(state["t"])
        self.v = None if state["v"] is None else np.array(state["v"], dtype=np.float64)

    def __repr__(self) -> str:
        return f"EMANormalizer(beta={self.beta}, eps={self.eps}, t={self.t})"
