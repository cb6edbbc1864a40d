"""DFL's soft targets, their aggregation (6), the KL term of (7) and the ratio (10)."""

from __future__ import annotations

import math

import pytest
import torch
from torch import nn

from netfl.learning.distill import (
    aggregate_soft_targets,
    dynamic_ratio,
    kl_to_soft_targets,
    soft_targets,
    uniform_soft_targets,
)


def test_soft_targets_are_label_wise_softmax_averages():
    model = nn.Linear(2, 3, bias=False)
    w = torch.tensor([[1.0, 0.0], [0.0, 1.0], [0.0, 0.0]])
    x = torch.tensor([[1.0, 0.0], [0.0, 2.0], [3.0, 0.0]])
    y = torch.tensor([0, 0, 2])
    rows, counts = soft_targets(model, {"weight": w}, x, y, 3, temperature=1.0)
    p = torch.softmax(x @ w.T, dim=1)
    assert torch.allclose(rows[0], (p[0] + p[1]) / 2)
    assert torch.allclose(rows[2], p[2])
    assert torch.equal(rows[1], torch.zeros(3))  # label 1 not held
    assert counts.tolist() == [2, 0, 1]
    held = counts > 0
    assert torch.allclose(rows[held].sum(dim=1), torch.ones(int(held.sum())))  # row-stochastic
    hot, _ = soft_targets(model, {"weight": w}, x, y, 3, temperature=10.0)
    assert hot[0].max() < rows[0].max()  # a higher temperature flattens


def test_aggregation_weights_rows_by_label_counts_and_keeps_unreported_rows():
    prev = uniform_soft_targets(3)
    a = torch.tensor([[0.8, 0.1, 0.1], [0, 0, 0], [0, 0, 0]])
    b = torch.tensor([[0.2, 0.4, 0.4], [0.1, 0.8, 0.1], [0, 0, 0]])
    new = aggregate_soft_targets(
        prev, [(a, torch.tensor([3.0, 0, 0])), (b, torch.tensor([1.0, 2.0, 0]))]
    )
    assert torch.allclose(new[0], (3 * a[0] + 1 * b[0]) / 4)
    assert torch.allclose(new[1], b[1])
    assert torch.equal(new[2], prev[2])


def test_kl_term_is_the_formula_and_zero_at_the_target():
    logits = torch.tensor([[2.0, 0.0, -1.0]])
    targets = torch.tensor([[0.5, 0.3, 0.2], [1 / 3] * 3, [1 / 3] * 3])
    p = torch.softmax(logits, dim=1)[0]
    want = float((p * (p / targets[0]).log()).sum())
    assert float(kl_to_soft_targets(logits, torch.tensor([0]), targets)) == pytest.approx(want)
    exact = torch.log(targets[0]).unsqueeze(0)
    assert float(kl_to_soft_targets(exact, torch.tensor([0]), targets)) == pytest.approx(
        0, abs=1e-6
    )


def test_kl_direction_by_hand():
    """KL(f ‖ Y[y]) (as (7) is written) and KL(Y[y] ‖ f) on a 3-class row, by hand."""
    logits = torch.tensor([[2.0, 0.0, -1.0]])
    targets = torch.tensor([[0.6, 0.1, 0.3], [1 / 3] * 3, [1 / 3] * 3])
    p = [math.exp(v) for v in (2.0, 0.0, -1.0)]
    p = [v / sum(p) for v in p]
    q = [0.6, 0.1, 0.3]
    forward = sum(a * math.log(a / b) for a, b in zip(p, q, strict=True))
    reverse = sum(b * math.log(b / a) for a, b in zip(p, q, strict=True))
    label = torch.tensor([0])
    assert float(kl_to_soft_targets(logits, label, targets)) == pytest.approx(forward, rel=1e-6)
    got = kl_to_soft_targets(logits, label, targets, direction="targets_to_model")
    assert float(got) == pytest.approx(reverse, rel=1e-6)
    assert abs(forward - reverse) > 1e-2
    with pytest.raises(ValueError, match="kl_direction"):
        kl_to_soft_targets(logits, label, targets, direction="both")


@pytest.mark.parametrize("threshold", [0.0, 0.3, 0.6, 1.0])
def test_dynamic_ratio_is_eq10(threshold):
    rounds = 50
    rho = [dynamic_ratio(r, rounds, threshold) for r in range(rounds)]
    assert rho == [max(1 - r / rounds, threshold) for r in range(rounds)]
    assert all(a >= b for a, b in zip(rho, rho[1:], strict=False))  # never increases
    assert min(rho) >= threshold and rho[0] == 1.0
    assert math.isclose(rho[-1], max(1 / rounds, threshold))
