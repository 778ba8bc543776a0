"""The one method palette: every method (registry methods and the constrained baselines) has its
own colour, dash and marker. Colours come in hue families (one band per method family): distinct
within a family and families apart, under normal vision and under simulated deuteranopia,
protanopia and tritanopia (Machado et al. 2009), readable on white; sized for ~30 methods (B1's
nine gradient aggregators included) without a hand-picked entry.

Thresholds (ΔE*ab, CIE76), measured on the palette and kept a little below it:
  within a family             >= 9 for up to 6 members (measured 9.95, loss weighting), >= 8 for
                              the gradient aggregators once nine more arrive (19 members; measured
                              8.28, protanopia)
  families apart              centroids >= 15 in every vision (measured 16.05, tritanopia), every
                              cross-family pair >= 9 under normal vision (measured 10.04)
  objective colours           every method >= 15 from g1, g2, g3's colours in every vision
  readable on white           L* in [30, 75]
"""
from __future__ import annotations

import itertools

import numpy as np
import pytest

import pcd.methods as registry
from pcd.methods.base import Method
from pcd.viz import theme as T
from pcd.viz.theme import METHOD_COLORS, method_color, method_style

VISIONS = ("normal", "deuteranopia", "protanopia", "tritanopia")
B1_NINE = ("config", "fairgrad", "gradvac", "excessmtl", "crmogm", "modo", "sdmgrad", "krum", "trimmedmean")


def _min_distance(hexes, vision) -> float:
    L = T.lab(hexes, vision)
    return min(float(np.linalg.norm(L[i] - L[j])) for i, j in itertools.combinations(range(len(hexes)), 2))


def _palettes(extra_gradient: int = 0) -> dict[str, tuple[str, ...]]:
    """Each family's palette; ``extra_gradient`` more gradient aggregators than are registered, less
    those of B1's nine that already are (so the 19-member case is checked before and after they land)."""
    members = T.family_members()
    extra_gradient = max(0, extra_gradient - sum(n in members.get("gradient aggregation", ()) for n in B1_NINE))
    return {f: T.family_palette(f, len(m) + (extra_gradient if f == "gradient aggregation" else 0))
            for f, m in members.items()}


def test_lab_matches_published_values():
    """sRGB -> CIELAB (D65) against the standard values: red (53.24, 80.09, 67.20), white (100, 0, 0);
    the simulations leave greys grey (each Machado matrix has rows summing to 1)."""
    np.testing.assert_allclose(T.lab(["#ff0000"])[0], [53.24, 80.09, 67.20], atol=0.05)
    np.testing.assert_allclose(T.lab(["#ffffff"])[0], [100.0, 0.0, 0.0], atol=0.05)
    for v in VISIONS[1:]:
        np.testing.assert_allclose(T.lab(["#777777"], v), T.lab(["#777777"]), atol=0.05)
        assert np.linalg.norm(T.lab(["#ff0000"], v)[0] - T.lab(["#00aa00"], v)[0]) < \
            np.linalg.norm(T.lab(["#ff0000"])[0] - T.lab(["#00aa00"])[0])


def test_every_method_and_constrained_baseline_has_a_style():
    for name in list(registry.available()) + list(T.CONSTRAINED_BASELINES):
        st = method_style(name)
        assert st["color"] == METHOD_COLORS[name] == method_color(name)
        assert st["dash"] in T.DASHES and st["symbol"] == T.FAMILY_SYMBOLS[st["family"]]
    for name in registry.available():
        assert method_style(name)["family"] == registry.get(name).family
    assert len(set(METHOD_COLORS.values())) == len(METHOD_COLORS)
    assert method_color("pcd") == "#d62728"  # PCD keeps its colour
    assert method_style("pcd")["dash"] == "solid"
    assert method_color("no-such-method") == T.UNKNOWN_COLOR


def test_styles_are_unique_within_a_family():
    """(colour, dash, marker) differ for every pair of methods; within a family the dash cycles
    with the position and the marker is the family's, so the colour carries the rest."""
    styles = [(s["color"], s["dash"], s["symbol"]) for s in T.METHOD_STYLES.values()]
    assert len(set(styles)) == len(styles)
    assert len(set(T.FAMILY_SYMBOLS.values())) == len(T.FAMILY_SYMBOLS) == len(registry.FAMILIES)


@pytest.mark.parametrize("vision", VISIONS)
def test_colours_distinct_within_each_family(vision):
    for fam, pal in _palettes().items():
        if 1 < len(pal) <= 6:
            assert _min_distance(pal, vision) >= 9, (fam, vision)
    # B1's nine gradient aggregators arrive: 19 gradient aggregators stay >= 8 apart
    grad = _palettes(extra_gradient=len(B1_NINE))["gradient aggregation"]
    assert len(grad) >= 19
    assert _min_distance(grad, vision) >= 8, vision


@pytest.mark.parametrize("vision", VISIONS)
def test_families_differ(vision):
    pals = _palettes(extra_gradient=len(B1_NINE))
    centroid = {f: T.lab(p, vision).mean(axis=0) for f, p in pals.items()}
    for a, b in itertools.combinations(pals, 2):
        assert np.linalg.norm(centroid[a] - centroid[b]) >= 15, (a, b, vision)
        if vision == "normal":  # disjoint bands: every method of one family is apart from the other's
            d = np.linalg.norm(T.lab(pals[a])[:, None] - T.lab(pals[b])[None], axis=-1)
            assert d.min() >= 9, (a, b)


@pytest.mark.parametrize("vision", VISIONS)
def test_method_colours_keep_away_from_the_objective_colours(vision):
    """g1, g2, g3 are drawn next to the methods' directions (pages 00 and 01): no method looks like one."""
    methods = [c for p in _palettes(extra_gradient=len(B1_NINE)).values() for c in p]
    d = np.linalg.norm(T.lab(methods, vision)[:, None] - T.lab(T.OBJECTIVE_COLORS[:3], vision)[None], axis=-1)
    assert d.min() >= T.RESERVED_DISTANCE == 15.0


def test_colours_readable_on_white():
    hexes = [s["color"] for s in T.METHOD_STYLES.values()]  # the methods (not the dark reference ink)
    L = T.lab(hexes)[:, 0]
    assert L.min() >= 30 and L.max() <= 75


def test_palette_sequence_does_not_depend_on_the_family_size():
    """A new method takes the next point of its family's sequence: the others keep their colours."""
    for fam in registry.FAMILIES:
        assert T.family_palette(fam, 25)[:12] == T.family_palette(fam, 12)
    with pytest.raises(ValueError, match="method family"):
        T.family_palette("symmetric", 3)


def test_a_method_registered_later_gets_its_familys_next_style(monkeypatch):
    """What the merge of B1's nine does, with no entry in the theme: the style comes from the family."""
    class Late(Method):
        name = "zz-late-test"
        family = "gradient aggregation"

    monkeypatch.setitem(registry._REGISTRY, Late.name, Late)
    n = len(registry.families()["gradient aggregation"])
    st = method_style(Late.name)
    assert st["color"] == T.family_palette("gradient aggregation", n)[n - 1]
    assert st["color"] not in METHOD_COLORS.values()
    assert st["dash"] == T.DASHES[(n - 1) % len(T.DASHES)] and st["symbol"] == "square"


def test_picker_helpers_group_and_label_by_family():
    assert T.by_family(["ws", "unpruned", "lagrangian", "uw", "mgda", "pcd"]) == \
        ["pcd", "mgda", "ws", "uw", "lagrangian", "unpruned"]
    assert T.method_option_label("uw") == "◆ UW" and T.method_option_label("pcd") == "● PCD"
    assert T.method_option_label("unpruned") == "Unpruned (primary only)"  # a reference: no family
    legend = T.family_legend(["stch", "pcd"]).split("  \n")
    assert legend == ["● hierarchical: PCD", "◆ loss weighting: STCH"]
