"""The toy engine's optimizers: ``torch.optim.Adam`` and ``torch.optim.SGD`` on a batch of parameter
rows, in NumPy, with the same formulas and order of floating-point operations (tested against
torch.optim). ``make_optimizer("adam" | "sgd", shape, lr, **torch_optim_params)``.

Also importable from :mod:`pcd.engine` (its public names before the split).
"""
from __future__ import annotations

import inspect
import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from pcd.problems.base import check_float

__all__ = ["Adam", "SGD", "make_optimizer"]


class Adam:
    """``torch.optim.Adam`` (amsgrad=False, maximize=False) on a batch of parameter rows.

    With gradient ``g`` (here: the method's direction d) at step t = 1, 2, ...::

        g  <- g + weight_decay * x
        m  <- lerp(m, g, 1 - beta1)             = m + (1 - beta1)(g - m)
        v  <- beta2 v + (1 - beta2) g^2
        x  <- x - (lr / (1 - beta1^t)) * m / (sqrt(v) / sqrt(1 - beta2^t) + eps)

    Kingma & Ba (2015), Alg. 1, in PyTorch's order of operations.
    """

    def __init__(self, shape: tuple[int, ...], lr: float, betas: Sequence[float] = (0.9, 0.999),
                 eps: float = 1e-8, weight_decay: float = 0.0) -> None:
        self.lr = check_float(lr, "lr", 0.0, who="adam", strict_low=True)
        if not (isinstance(betas, (list, tuple, np.ndarray)) and len(betas) == 2):
            raise ValueError(f"adam: betas must be a pair of numbers in [0, 1), got {betas!r}")
        self.b1 = check_float(betas[0], "beta1", 0.0, who="adam")
        self.b2 = check_float(betas[1], "beta2", 0.0, who="adam")
        if self.b1 >= 1 or self.b2 >= 1:
            raise ValueError(f"adam: betas must be in [0, 1), got {tuple(betas)!r}")
        self.eps = check_float(eps, "eps", 0.0, who="adam")
        self.wd = check_float(weight_decay, "weight_decay", 0.0, who="adam")
        self.m = np.zeros(shape)
        self.v = np.zeros(shape)
        self.t = 0

    def step(self, x: np.ndarray, g: np.ndarray, active: np.ndarray | None = None) -> np.ndarray:
        """Return the new ``x`` (rows where ``active`` is False keep x and state unchanged)."""
        if self.wd:
            g = g + self.wd * x
        self.t += 1
        t = self.t
        m = self.m + (1.0 - self.b1) * (g - self.m)
        v = self.v * self.b2 + (1.0 - self.b2) * (g * g)
        bc1 = 1.0 - self.b1 ** t
        bc2s = math.sqrt(1.0 - self.b2 ** t)
        denom = np.sqrt(v) / bc2s + self.eps
        new = x + (-(self.lr / bc1)) * (m / denom)
        if active is None:
            self.m, self.v = m, v
            return new
        a = active[:, None]
        self.m = np.where(a, m, self.m)
        self.v = np.where(a, v, self.v)
        return np.where(a, new, x)


class SGD:
    """``torch.optim.SGD`` on a batch of parameter rows.

    ::

        g  <- g + weight_decay * x
        b  <- g                                  (first step, momentum > 0)
        b  <- momentum * b + (1 - dampening) g   (later steps)
        g  <- g + momentum * b  if nesterov else b
        x  <- x - lr * g

    Sutskever et al. (2013) momentum as implemented by PyTorch.
    """

    def __init__(self, shape: tuple[int, ...], lr: float, momentum: float = 0.0, dampening: float = 0.0,
                 nesterov: bool = False, weight_decay: float = 0.0) -> None:
        self.lr = check_float(lr, "lr", 0.0, who="sgd", strict_low=True)
        self.momentum = check_float(momentum, "momentum", 0.0, 1.0, who="sgd")
        self.dampening = check_float(dampening, "dampening", 0.0, 1.0, who="sgd")
        self.nesterov = bool(nesterov)
        if self.nesterov and (self.momentum <= 0 or self.dampening != 0):
            raise ValueError("sgd: nesterov needs momentum > 0 and dampening = 0")
        self.wd = check_float(weight_decay, "weight_decay", 0.0, who="sgd")
        self.buf: np.ndarray | None = None
        self.shape = shape

    def step(self, x: np.ndarray, g: np.ndarray, active: np.ndarray | None = None) -> np.ndarray:
        if self.wd:
            g = g + self.wd * x
        if self.momentum:
            if self.buf is None:
                buf = g.copy()
            else:
                buf = self.buf * self.momentum + (1.0 - self.dampening) * g
            if active is not None and self.buf is not None:
                buf = np.where(active[:, None], buf, self.buf)
            self.buf = buf
            g = g + self.momentum * buf if self.nesterov else buf
        new = x + (-self.lr) * g
        if active is None:
            return new
        return np.where(active[:, None], new, x)


def make_optimizer(name: str, shape: tuple[int, ...], lr: float, **params: Any) -> Adam | SGD:
    """``"adam"`` or ``"sgd"`` with torch.optim's parameter names; ValueError on anything else."""
    key = str(name).strip().lower()
    cls = {"adam": Adam, "sgd": SGD}.get(key)
    if cls is None:
        raise ValueError(f"unknown optimizer {name!r}; allowed: adam, sgd")
    allowed = [p for p in inspect.signature(cls).parameters if p not in ("self", "shape", "lr")]
    bad = sorted(set(params) - set(allowed))
    if bad:
        raise ValueError(f"{key}: unknown optimizer parameter(s) {bad}; allowed: {', '.join(allowed)}")
    return cls(shape, lr, **params)
