"""Shared matrix samplers for the method tests (TorchJD style), float64.

Each returns a Jacobian ``J [B, K, n]``; ``gram(J)`` gives ``G = J J^T [B, K, K]``.

* ``random``     i.i.d. standard normal rows
* ``scaled``     random rows multiplied by factors spread over 1e-3 ... 1e3 (diag-scaled Gram)
* ``rank_def``   rank K - 1 (rows are combinations of K - 1 random vectors); K = 2: parallel rows
* ``cancel``     exact cancellation ``g_2 = -g_1`` (other rows random)

``loss_trajectory`` gives positive losses ``[T, B, K]`` that mostly decrease (the loss-based methods).
"""
from __future__ import annotations

import numpy as np

KINDS = ("random", "scaled", "rank_def", "cancel")


def jacobian(kind: str, B: int, K: int, n: int | None = None, seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    n = K + 3 if n is None else n
    if kind == "random":
        return rng.standard_normal((B, K, n))
    if kind == "scaled":
        J = rng.standard_normal((B, K, n))
        f = 10.0 ** rng.uniform(-3, 3, (B, K))
        return J * f[..., None]
    if kind == "rank_def":
        r = max(1, K - 1)
        return np.einsum("bkr,brn->bkn", rng.standard_normal((B, K, r)), rng.standard_normal((B, r, n)))
    if kind == "cancel":
        J = rng.standard_normal((B, K, n))
        J[:, 1] = -J[:, 0]
        return J
    raise ValueError(kind)


def gram(J: np.ndarray) -> np.ndarray:
    return np.einsum("bkn,bln->bkl", J, J)


def loss_trajectory(T: int, B: int, K: int, seed: int = 0, start: tuple[float, float] = (0.2, 3.0),
                    factor: tuple[float, float] = (0.7, 1.1)) -> np.ndarray:
    """Losses ``[T, B, K]``: uniform in ``start`` at first, then each multiplied by a factor drawn
    uniformly in ``factor`` per step (positive, mostly decreasing, each objective at its own rate)."""
    rng = np.random.default_rng(seed)
    L = rng.uniform(*start, size=(B, K))
    out = []
    for _ in range(T):
        out.append(L.copy())
        L = L * rng.uniform(*factor, size=(B, K))
    return np.array(out)


def loss_weighting_steps(m, losses: np.ndarray, state):
    """A loss-weighting method ``m`` run along ``losses`` ``[T, B, K]`` (identity Gram matrices) from
    ``state``, each call getting the last one's state: yields ``(t, output)`` per step."""
    T, B, K = losses.shape
    eye = np.broadcast_to(np.eye(K), (B, K, K))
    for t in range(T):
        out = m(eye, losses=losses[t], state=state)
        state = out.state
        yield t, out


def scalarization_weights(scalarize, losses) -> np.ndarray:
    """TorchJD's weights for one batch row: the gradient of ``scalarize`` (a ``torchjd.scalarization``
    module) w.r.t. the ``losses`` ``[K]``."""
    import torch

    x = torch.tensor(losses, requires_grad=True)
    scalarize(x).backward()
    return x.grad.numpy()
