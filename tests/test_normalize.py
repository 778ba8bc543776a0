import numpy as np
import pytest

from pcd import EMANormalizer


def test_bias_corrected_first_step_is_unit_scale():
    n = EMANormalizer(beta=0.999, eps=0.0)
    s = n.update([4.0, 0.25, 100.0])
    assert np.allclose(s, [0.5, 2.0, 0.1])


def test_matches_recurrence():
    rng = np.random.default_rng(0)
    beta, eps = 0.9, 1e-8
    n = EMANormalizer(beta, eps)
    v = np.zeros(3)
    for t in range(1, 20):
        sq = rng.uniform(0.1, 10, size=3)
        v = beta * v + (1 - beta) * sq
        expected = 1 / np.sqrt(v / (1 - beta**t) + eps)
        assert np.allclose(n.update(sq), expected, rtol=1e-14)


def test_scaling_a_loss_scales_its_s_inversely():
    a, b = EMANormalizer(0.99, 0.0), EMANormalizer(0.99, 0.0)
    rng = np.random.default_rng(1)
    for _ in range(10):
        sq = rng.uniform(0.5, 2, size=2)
        sa = a.update(sq)
        sb = b.update(sq * np.array([1.0, 1e12]))  # loss 2 multiplied by 1e6
    assert np.allclose(sb, sa * np.array([1.0, 1e-6]), rtol=1e-12)


def test_state_dict_round_trip():
    n = EMANormalizer(0.95, 1e-6)
    for sq in ([1.0, 2.0], [3.0, 0.5]):
        n.update(sq)
    m = EMANormalizer()
    m.load_state_dict(n.state_dict())
    assert np.array_equal(m.update([0.7, 0.9]), n.update([0.7, 0.9]))


def test_invalid():
    with pytest.raises(ValueError, match="beta"):
        EMANormalizer(beta=1.0)
    with pytest.raises(ValueError, match="eps"):
        EMANormalizer(eps=-1)
    with pytest.raises(ValueError, match="finite"):
        EMANormalizer().update([1.0, np.nan])
    with pytest.raises(ValueError, match="before"):
        EMANormalizer().scales()
    n = EMANormalizer(eps=0.0)
    assert np.array_equal(n.update([0.0, 1.0]), [0.0, 1.0])  # an always-zero gradient gets s = 0
