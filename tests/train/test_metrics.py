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
    assert mt.param_sparsity(m) == pytest.approx(100 * (5 * per_filter - 1) / total_w)


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
