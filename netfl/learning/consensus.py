"""FedMD's public-data consensus (pure torch).

D. Li, J. Wang, "FedMD: Heterogenous Federated Learning via Model
Distillation", NeurIPS 2019 FL workshop (arXiv 1910.03581), Sec. 2:
transfer learning (train on the labelled public set, then on the private
set), then per round: class scores (logits) on an alignment subset of the
public set, consensus = their average, *digest* (train each model to approach
the consensus on the subset, ℓ1 on the logits) and *revisit* (a few epochs on
the private set).
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

from netfl.learning.train import CPU, State, TrainConfig, TrainResult, train_local

__all__ = ["adapt_images", "class_scores", "logit_l1", "digest_and_revisit"]


def adapt_images(x: torch.Tensor, shape: tuple[int, ...]) -> torch.Tensor:
    """Public images ``(N, C', H', W')`` in the private data's ``shape`` ``(C, H, W)``:
    bilinear resize, channel mean (C = 1) or repeat (C' = 1), then standardised per
    channel again (as every data set here is)."""
    c, h, w = shape
    if x.shape[2:] != (h, w):
        x = F.interpolate(x, size=(h, w), mode="bilinear", align_corners=False)
    if x.shape[1] != c:
        if c == 1:
            x = x.mean(dim=1, keepdim=True)
        elif x.shape[1] == 1:
            x = x.repeat(1, c, 1, 1)
        else:
            raise ValueError(f"cannot map {x.shape[1]} channels onto {c}")
    mean = x.mean(dim=(0, 2, 3), keepdim=True)
    std = x.std(dim=(0, 2, 3), keepdim=True) + 1e-8
    return ((x - mean) / std).contiguous()


@torch.no_grad()
def class_scores(
    model: nn.Module, state: State, x: torch.Tensor, device: torch.device = CPU
) -> torch.Tensor:
    """A model's class scores (logits) ``(N, classes)`` on ``x`` (on the CPU)."""
    model.load_state_dict(state)
    model.to(device).eval()
    return torch.cat([model(x[i : i + 1000].to(device)).cpu() for i in range(0, len(x), 1000)])


def logit_l1(logits: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
    """Digest loss: ‖f(x) − consensus(x)‖₁ per sample, mean over the batch."""
    return (logits - targets).abs().sum(dim=1).mean()


def digest_and_revisit(
    model: nn.Module,
    state: State,
    public_x: torch.Tensor,
    consensus: torch.Tensor,
    digest_epochs: int,
    private_x: torch.Tensor,
    private_y: torch.Tensor,
    config: TrainConfig,
    seed: int,
    loss_fn: nn.Module,
    device: torch.device = CPU,
) -> TrainResult:
    """Digest (``digest_epochs`` on the consensus, :func:`logit_l1`), then revisit
    (``config.epochs`` on the private data). The result's loss is the revisit's."""
    from dataclasses import replace

    if digest_epochs > 0:
        state = train_local(
            model,
            state,
            public_x,
            consensus,
            replace(config, epochs=digest_epochs),
            seed,
            logit_l1,
            device,
        ).state
    return train_local(model, state, private_x, private_y, config, seed + 1, loss_fn, device)
