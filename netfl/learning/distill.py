"""Label-wise soft targets and the distillation loss (DFL and FD; pure torch).

T. Liu et al., "Efficient Federated Learning for AIoT Applications Using
Knowledge Distillation", IEEE IoT Journal (arXiv 2111.14347).

- Soft targets Y: an N_cls × N_cls matrix; row y is the average softmax
  prediction (at a temperature, default 1) over the samples labelled y.
- Aggregation (6): row y of the new Y is the average of the devices' rows y
  weighted by how many samples of label y each device holds (the per-label
  rule the paper asks for when label sets differ); a label no device
  reported keeps its previous row.
- Local objective (7): ρ·CE(f(x), y) + (1 − ρ)·KL(f(x) ‖ Y[y]), with the
  dynamic ratio (10) ρ = max(1 − r/R, T).
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import nn

from netfl.learning.train import CPU, State, TrainConfig, train_local

__all__ = [
    "uniform_soft_targets",
    "soft_targets",
    "aggregate_soft_targets",
    "kl_to_soft_targets",
    "dynamic_ratio",
    "DistillResult",
    "train_distill",
]


def uniform_soft_targets(num_classes: int) -> torch.Tensor:
    """The initial Y: every row uniform."""
    return torch.full((num_classes, num_classes), 1.0 / num_classes)


@torch.no_grad()
def soft_targets(
    model: nn.Module,
    state: State,
    x: torch.Tensor,
    y: torch.Tensor,
    num_classes: int,
    temperature: float = 1.0,
    batch_size: int = 1000,
    device: torch.device = CPU,
) -> tuple[torch.Tensor, torch.Tensor]:
    """A device's label-wise soft targets Y_k and its per-label sample counts.

    Rows of labels the device does not hold are zero (their count is 0).
    """
    model.load_state_dict(state)
    model.to(device)
    model.eval()
    sums = torch.zeros(num_classes, num_classes, dtype=torch.float64)
    for start in range(0, len(y), batch_size):
        xb = x[start : start + batch_size].to(device)
        probs = F.softmax(model(xb) / temperature, dim=1).double().cpu()
        sums.index_add_(0, y[start : start + batch_size], probs)
    counts = torch.bincount(y, minlength=num_classes).double()
    rows = torch.where(counts[:, None] > 0, sums / counts.clamp_min(1)[:, None], 0.0)
    return rows.float(), counts


def aggregate_soft_targets(
    previous: torch.Tensor, reports: list[tuple[torch.Tensor, torch.Tensor]]
) -> torch.Tensor:
    """(6) with per-label weights: row y = Σ_k n_{k,y}·Y_k[y] / Σ_k n_{k,y}; rows nobody
    reported keep ``previous``."""
    num = torch.zeros_like(previous, dtype=torch.float64)
    den = torch.zeros(previous.shape[0], dtype=torch.float64)
    for rows, counts in reports:
        num += counts[:, None] * rows.double()
        den += counts
    new = torch.where(den[:, None] > 0, num / den.clamp_min(1e-300)[:, None], previous.double())
    return new.float()


def kl_to_soft_targets(
    logits: torch.Tensor,
    labels: torch.Tensor,
    targets: torch.Tensor,
    temperature: float = 1.0,
    direction: str = "model_to_targets",
) -> torch.Tensor:
    """The KL term of (7), averaged over the batch, with p = softmax(f(x)/τ) and q = Y[y]
    (clamped away from 0): ``model_to_targets`` KL(f(x) ‖ Y[y]) = Σ p·(log p − log q), as
    (7) is written; ``targets_to_model`` KL(Y[y] ‖ f(x)) = Σ q·(log q − log p), the
    direction of standard distillation (the paper does not say which it means)."""
    log_p = F.log_softmax(logits / temperature, dim=1)
    q = targets.to(logits.device)[labels].clamp_min(1e-12)
    if direction == "model_to_targets":
        return (log_p.exp() * (log_p - q.log())).sum(dim=1).mean()
    if direction == "targets_to_model":
        return (q * (q.log() - log_p)).sum(dim=1).mean()
    raise ValueError(f"kl_direction: {direction!r} (valid: model_to_targets, targets_to_model)")


def dynamic_ratio(round_index: int, total_rounds: int, threshold: float) -> float:
    """(10): ρ = max(1 − r/R, T)."""
    return max(1.0 - round_index / total_rounds, threshold)


@dataclass
class DistillResult:
    """A device's round: new weights, its soft targets and per-label counts."""

    state: State
    num_samples: int
    num_steps: int
    mean_loss: float
    soft_targets: torch.Tensor
    label_counts: torch.Tensor


def train_distill(
    model: nn.Module,
    state: State,
    x: torch.Tensor,
    y: torch.Tensor,
    targets: torch.Tensor,
    ce_weight: float,
    kl_weight: float,
    config: TrainConfig,
    seed: int,
    num_classes: int,
    temperature: float = 1.0,
    device: torch.device = CPU,
    kl_direction: str = "model_to_targets",
) -> DistillResult:
    """Local SGD on ce_weight·CE + kl_weight·KL (``kl_direction``: KL(f(x) ‖ Y[y]) as (7)
    writes it, or KL(Y[y] ‖ f(x))), then the device's soft targets. With kl_weight = 0
    and ce_weight = 1 the steps are exactly FedAvg's."""
    ce = nn.CrossEntropyLoss()

    def loss_fn(logits, yb):
        return ce(logits, yb) if ce_weight == 1.0 else ce_weight * ce(logits, yb)

    extra = None
    if kl_weight != 0.0:

        def extra(_model, _xb, yb, logits):
            return kl_weight * kl_to_soft_targets(logits, yb, targets, temperature, kl_direction)

    res = train_local(model, state, x, y, config, seed, loss_fn, device, extra_loss=extra)
    rows, counts = soft_targets(model, res.state, x, y, num_classes, temperature, device=device)
    return DistillResult(res.state, res.num_samples, res.num_steps, res.mean_loss, rows, counts)
