"""On-the-fly augmentation of training batches (``training.augment``)."""

from __future__ import annotations

import pytest
import torch


def test_hflip_is_applied_on_the_fly_seeded_and_only_to_images():
    """``augment: hflip``: each sample of a batch is its image or the mirrored image, about
    half of each; the same seed gives the same flips; without it the batches are the
    plain ones; a non-image input is refused."""
    from netfl.learning.train import TrainConfig, minibatches

    g = torch.Generator().manual_seed(0)
    x = torch.randn(400, 1, 4, 5, generator=g)
    y = torch.arange(400)
    plain = TrainConfig(batch_size=50, epochs=1)
    flip = TrainConfig(batch_size=50, epochs=1, augment=("hflip",))
    flips = 0
    for (xp, yp), (xf, yf) in zip(
        minibatches(x, y, plain, 3), minibatches(x, y, flip, 3), strict=True
    ):
        assert torch.equal(yp, yf)  # the same permutation
        same = (xf == xp).flatten(1).all(1)
        mirrored = (xf == xp.flip(-1)).flatten(1).all(1)
        assert bool((same | mirrored).all())
        flips += int(mirrored.sum())
    assert 150 < flips < 250
    again = [xb for xb, _ in minibatches(x, y, flip, 3)]
    assert all(
        torch.equal(a, b) for a, (b, _) in zip(again, minibatches(x, y, flip, 3), strict=True)
    )
    with pytest.raises(ValueError, match="needs image batches"):
        next(minibatches(torch.randn(10, 3), torch.arange(10), TrainConfig(augment=("hflip",)), 0))
