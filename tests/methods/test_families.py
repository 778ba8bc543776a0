"""Method families in the contract: every registered method declares one of ``FAMILIES``
(checked at ``register``, the one place), and ``families()`` groups the registry by family in
display order (what the method picker shows)."""
import pytest

import pcd.methods as registry
from pcd.methods.base import Method, register


def test_every_method_declares_a_known_family():
    for name in registry.available():
        cls = registry.get(name)
        assert cls.family in registry.FAMILIES, name
        # the hierarchical family is the asymmetric one (the claim is checked by the shared claims test)
        if cls.family == "hierarchical":
            assert cls.hierarchical, name
        # a loss-weighting method of this issue reads the losses (the weighted sum's are fixed)
        if cls.family == "loss weighting" and name != "ws":
            assert cls.needs_losses, name


def test_families_partition_the_registry_in_display_order():
    fams = registry.families()
    assert list(fams) == list(registry.FAMILIES)
    flat = [n for names in fams.values() for n in names]
    assert sorted(flat) == sorted(registry.available())
    order = registry.available()
    for names in fams.values():
        assert names == sorted(names, key=order.index)
    assert fams["hierarchical"][:2] == ["pcd", "dbgd"]
    assert {"ws", "famo", "uw", "dwa", "gls", "stch"} <= set(fams["loss weighting"])
    assert {"mgda", "upgrad", "pcgrad"} <= set(fams["gradient aggregation"])


def test_register_refuses_a_missing_or_unknown_family_in_one_line():
    for fam in ("", "symmetric"):
        cls = type("Bad", (Method,), {"name": "zz-bad-family", "family": fam})
        with pytest.raises(ValueError, match=r"^zz-bad-family: family must be one of hierarchical, "):
            register(cls)
    assert "zz-bad-family" not in registry.available()
