import math

import pytest
import torch

from pcd.train import metrics as mt
from pcd.train.models import build_model, penalized_convs


def test_group_and_param_sparsity_count_exact_zeros():
    m = build_model("smallcnn", in_channels=1)
    convs = [c for _, c in penalized_convs(m)]
    total_filters = sum(c.out_channels for c in convs)
    total_w = sum(c.weight.numel() for c in convs)
    with torch.no_grad():
        convs[1].weight[:5] = 0.0
        convs[1].weight[4, 0, 0, 0] = 5e-5  # filter norm 5e-5 < 1e-4: counts as a zero group
    assert mt.group_sparsity(m) == pytest.approx(100 * 5 / total_filters)
    per_filter = convs[1].weight[0].numel()
    assert mt.param_sparsity(m, 1e-8, relative=False) == pytest.approx(100 * (5 * per_filter - 1) / total_w)


def test_effective_rank_of_orthogonal_and_rank_one_layers():
    m = build_model("smallcnn", in_channels=1)
    with torch.no_grad():
        for _, c in penalized_convs(m):
            w = c.weight.reshape(c.out_channels, -1)
            mr, nc = w.shape
            q, _ = torch.linalg.qr(torch.randn(max(mr, nc), min(mr, nc)))  # equal singular values
            c.weight.copy_((q.T if mr <= nc else q).reshape_as(c.weight))
    eff, red = mt.rank_metrics(m)
    full = [min(c.out_channels, c.weight[0].numel()) for _, c in penalized_convs(m)]
    assert eff == pytest.approx(sum(full) / len(full), rel=1e-4) and red == pytest.approx(0.0)
    with torch.no_grad():
        for _, c in penalized_convs(m):
            u, v = torch.randn(c.out_channels, 1), torch.randn(1, c.weight[0].numel())
            c.weight.copy_((u @ v).reshape_as(c.weight))
    eff, red = mt.rank_metrics(m)
    assert eff == pytest.approx(1.0, abs=1e-3)
    assert red == pytest.approx(1 - sum(1 / f for f in full) / len(full))


def test_accuracy_counts_correct():
    class Fixed(torch.nn.Module):
        def forward(self, x):
            return torch.nn.functional.one_hot(x[:, 0].long(), 3).float()

    x = torch.tensor([[0.0], [1.0], [2.0], [2.0]])
    y = torch.tensor([0, 1, 1, 2])
    acc, loss = mt.accuracy(Fixed(), [(x, y)])
    assert acc == 75.0 and math.isfinite(loss)
    with pytest.raises(ValueError):
        mt.accuracy(Fixed(), [])


def test_k3_measures_thresholds_are_documented_and_used():
    # parameter sparsity counts |w| < PARAM_ZERO * max|W_l| (relative to the weight's own layer: each
    # conv feeds a BatchNorm, so a layer's scale is arbitrary; and under Adam an l1 weight is never 0)
    assert mt.PARAM_ZERO == 1e-3 and mt.SPARSITY_SWEEP == (1e-8, 1e-6, 1e-4, 1e-3, 1e-2)
    assert "1e-3" in mt.__doc__ and "|w| < 0.001 × the largest |w| of their layer" in mt.PARAM_SPARSITY_TEXT
    m = build_model("smallcnn", in_channels=1)
    convs = [c for _, c in penalized_convs(m)]
    total_w = sum(c.weight.numel() for c in convs)
    with torch.no_grad():
        for c in convs:
            c.weight.fill_(0.5)
        flat = convs[1].weight.view(-1)
        flat[0] = -2.0         # this layer's largest |w|: its threshold is 2e-3, the others' 5e-4
        flat[1:11] = 1.9e-3    # below 1e-3 * 2.0
        flat[11:16] = 2e-3     # not below (strict <)
        flat[16:19] = -5e-9    # below every threshold (|w|)
        flat[19:21] = 1e-2     # below 1e-2 * 2.0 only
        convs[0].weight.view(-1)[:4] = 4e-4  # below 1e-3 * 0.5 in the first layer
    assert mt.param_sparsity(m) == pytest.approx(100 * 17 / total_w)
    assert mt.param_sparsity(m, relative=False) == pytest.approx(100 * 7 / total_w)  # absolute |w| < 1e-3
    sweep = mt.param_sparsity_sweep(m)
    assert list(sweep) == ["1e-08", "1e-06", "0.0001", "0.001", "0.01"]
    assert sweep["1e-08"] == pytest.approx(100 * 3 / total_w) and sweep["0.001"] == mt.param_sparsity(m)
    assert sweep["0.01"] == pytest.approx(100 * 24 / total_w)  # 4 + 10 + 5 + 3 + 2 (0.5 is not < 5e-3)
    # scale-free: multiplying a layer by any factor (what its BatchNorm undoes) leaves the count alone
    with torch.no_grad():
        convs[1].weight.mul_(1e-4)
    assert mt.param_sparsity(m) == pytest.approx(100 * 17 / total_w)


def test_zeroed_accuracy_zeroes_only_below_the_threshold_and_restores_the_weights():
    m = build_model("smallcnn", in_channels=1)
    convs = [c for _, c in penalized_convs(m)]
    with torch.no_grad():
        convs[0].weight.fill_(0.3)
        convs[0].weight.view(-1)[:7] = 2e-4  # below 1e-3 * 0.3
    before = [c.weight.detach().clone() for c in convs]
    seen = {}

    class Probe:  # the batches iterable: records the weights the model sees while evaluating
        def __iter__(self):
            seen["w"] = convs[0].weight.detach().clone()
            yield torch.zeros(4, 1, 8, 8), torch.zeros(4, dtype=torch.long)

    mt.zeroed_accuracy(m, Probe())
    assert int((seen["w"] == 0).sum()) == 7 and torch.equal(seen["w"].view(-1)[7:], before[0].view(-1)[7:])
    assert all(torch.equal(c.weight, b) for c, b in zip(convs, before))  # restored


def test_effective_rank_matches_numpy_svd_entropy():
    import numpy as np

    rng = np.random.default_rng(0)
    for shape in [(16, 144), (32, 9), (5, 5)]:
        W = rng.standard_normal(shape) * rng.uniform(0.01, 3.0, shape[1])
        s = np.linalg.svd(W, compute_uv=False)
        p = s / s.sum()
        want = float(np.exp(-(p * np.log(p)).sum()))
        assert mt.effective_rank(torch.from_numpy(W)) == pytest.approx(want, rel=1e-10)
    # exact values: k equal singular values -> k; rank one -> 1; zero matrix -> 0
    assert mt.effective_rank(torch.eye(6)[:, :4] * 3.0) == pytest.approx(4.0)
    assert mt.effective_rank(torch.outer(torch.arange(1.0, 5.0), torch.ones(7))) == pytest.approx(1.0)
    assert mt.effective_rank(torch.zeros(3, 4)) == 0.0
    with pytest.raises(ValueError, match="2-D"):
        mt.effective_rank(torch.zeros(2, 2, 2))
    # the layer average of rank_metrics is this measure per penalized conv [C_out, C_in*k*k]
    m = build_model("smallcnn", in_channels=1)
    per = [mt.effective_rank(c.weight.reshape(c.out_channels, -1)) for _, c in penalized_convs(m)]
    assert mt.rank_metrics(m)[0] == pytest.approx(sum(per) / len(per))
