"""The one method palette: every method (symmetric, PCD, constrained baselines) has its own colour,
distinct under normal vision and under simulated colour-vision deficiencies, readable on white."""
from __future__ import annotations

import itertools

import numpy as np

import pcd.methods as registry
from pcd.viz.theme import METHOD_COLORS, method_color

# Machado, Oliveira & Fernandes (2009), severity 1.0, applied in linear RGB
CVD = {
    "deuteranopia": np.array([[0.367322, 0.860646, -0.227968], [0.280085, 0.672501, 0.047413],
                              [-0.011820, 0.042940, 0.968881]]),
    "protanopia": np.array([[0.152286, 1.052583, -0.204868], [0.114503, 0.786281, 0.099216],
                            [-0.003882, -0.048116, 1.051998]]),
    "tritanopia": np.array([[1.255528, -0.076749, -0.178779], [-0.078411, 0.930809, 0.147602],
                            [0.004733, 0.691367, 0.303900]]),
}
CONSTRAINED = ("lagrangian", "auglag", "nupi", "gda", "penalty", "prox")


def _lab(hexes, M=None):
    rgb = np.array([[int(h[i:i + 2], 16) for i in (1, 3, 5)] for h in hexes]) / 255.0
    lin = np.where(rgb <= 0.04045, rgb / 12.92, ((rgb + 0.055) / 1.055) ** 2.4)
    if M is not None:
        lin = np.clip(lin @ M.T, 0.0, 1.0)
    xyz = lin @ np.array([[0.4124, 0.3576, 0.1805], [0.2126, 0.7152, 0.0722], [0.0193, 0.1192, 0.9505]]).T
    t = xyz / np.array([0.95047, 1.0, 1.08883])
    f = np.where(t > 0.008856, np.cbrt(t), 7.787 * t + 16 / 116)
    return np.stack([116 * f[:, 1] - 16, 500 * (f[:, 0] - f[:, 1]), 200 * (f[:, 1] - f[:, 2])], axis=-1)


def _min_distance(hexes, M=None) -> tuple[float, tuple[str, str]]:
    L = _lab(hexes, M)
    best = (np.inf, ("", ""))
    for i, j in itertools.combinations(range(len(hexes)), 2):
        d = float(np.linalg.norm(L[i] - L[j]))
        best = min(best, (d, (hexes[i], hexes[j])))
    return best


def test_every_method_and_constrained_baseline_has_a_colour():
    for name in list(registry.available()) + list(CONSTRAINED):
        assert name in METHOD_COLORS, name
        assert method_color(name) == METHOD_COLORS[name]
    assert len(set(METHOD_COLORS.values())) == len(METHOD_COLORS)


def _palette() -> list[str]:
    return [METHOD_COLORS[n] for n in list(registry.available()) + list(CONSTRAINED)]


def test_colours_distinct_for_normal_and_colour_blind_vision():
    """ΔE*ab between any two method colours: >= 20 for normal vision, >= 12 under deuteranopia /
    protanopia, >= 8 under tritanopia (the previous D3 palette had 4.6 / 3.6 / 1.6 / 2.3: DBGD ~
    PCD, AuxiNash ~ FAMO, MGDA ~ the Lagrangian)."""
    hexes = _palette()
    assert _min_distance(hexes)[0] >= 20
    assert _min_distance(hexes, CVD["deuteranopia"])[0] >= 12
    assert _min_distance(hexes, CVD["protanopia"])[0] >= 12
    assert _min_distance(hexes, CVD["tritanopia"])[0] >= 8


def test_colours_readable_on_white():
    L = _lab(_palette())[:, 0]
    assert L.min() >= 30 and L.max() <= 75
