"""Local SGD and evaluation (pure torch)."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass

import torch
from torch import nn

from netfl.learning.tasks import TrainConfig

__all__ = [
    "TrainConfig",
    "augment_batch",
    "TrainResult",
    "train_local",
    "evaluate",
    "evaluate_batches",
    "combine_scores",
    "resolve_device",
    "batch_bounds",
    "minibatches",
    "cpu_state",
    "sgd",
]

State = dict[str, torch.Tensor]
CPU = torch.device("cpu")


@dataclass
class TrainResult:
    """Outcome of one local training job: new parameters (on the CPU) and statistics."""

    state: State
    num_samples: int
    num_steps: int
    mean_loss: float


def resolve_device(name: str) -> torch.device:
    """``"cpu"``, ``"cuda"`` or ``"auto"`` (cuda when available) → ``torch.device``."""
    if name == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    if name.startswith("cuda") and not torch.cuda.is_available():
        raise RuntimeError("learning.device is 'cuda' but torch finds no CUDA device")
    return torch.device(name)


def sgd(params, config: TrainConfig) -> torch.optim.SGD:
    """The local optimiser of every training job: SGD with the config's lr, momentum, decay."""
    return torch.optim.SGD(
        params, lr=config.lr, momentum=config.momentum, weight_decay=config.weight_decay
    )


def batch_bounds(n: int, batch_size: int) -> list[tuple[int, int]]:
    """``(start, end)`` of each mini-batch of one epoch over ``n`` samples.

    A trailing batch of a single sample joins the one before it (when there is
    one): BatchNorm cannot normalise one sample in training mode, and a
    one-sample step is noise anyway.
    """
    bounds = [(s, min(s + batch_size, n)) for s in range(0, n, batch_size)]
    if len(bounds) > 1 and bounds[-1][1] - bounds[-1][0] == 1:
        bounds[-2:] = [(bounds[-2][0], n)]
    return bounds


def train_local(
    model: nn.Module,
    state: State,
    x: torch.Tensor,
    y: torch.Tensor,
    config: TrainConfig,
    seed: int,
    loss_fn: Callable[[torch.Tensor, torch.Tensor], torch.Tensor],
    device: torch.device = CPU,
    extra_loss: Callable[[nn.Module, torch.Tensor, torch.Tensor, torch.Tensor], torch.Tensor]
    | None = None,
) -> TrainResult:
    """Run ``config.epochs`` epochs of mini-batch SGD from ``state`` on ``(x, y)``.

    Batches are drawn by a permutation from ``torch.Generator().manual_seed(seed)``
    each epoch, so a job's result depends only on its inputs, never on which
    worker runs it or in what order. ``extra_loss(model, xb, yb, logits)``, if
    given, is added to the loss (e.g. a proximal or distillation term).
    """
    model.load_state_dict(state)
    model.to(device)
    model.train()
    opt = sgd(model.parameters(), config)
    x, y = x.to(device), y.to(device)
    total_loss = torch.zeros((), device=device)
    steps = 0
    for xb, yb in minibatches(x, y, config, seed):
        opt.zero_grad(set_to_none=True)
        logits = model(xb)
        loss = loss_fn(logits, yb)
        if extra_loss is not None:
            loss = loss + extra_loss(model, xb, yb, logits)
        loss.backward()
        opt.step()
        total_loss += loss.detach()
        steps += 1
    return TrainResult(cpu_state(model), len(y), steps, float(total_loss) / max(steps, 1))


def minibatches(
    x: torch.Tensor, y: torch.Tensor, config: TrainConfig, seed: int
) -> Iterator[tuple[torch.Tensor, torch.Tensor]]:
    """The mini-batches of ``config.epochs`` epochs over ``(x, y)``: each epoch in the
    order of a permutation from ``torch.Generator().manual_seed(seed)``, cut by
    :func:`batch_bounds` (a job's batches depend only on its inputs)."""
    gen = torch.Generator().manual_seed(seed)
    n = len(y)
    for _ in range(config.epochs):
        perm = torch.randperm(n, generator=gen).to(x.device)
        for start, end in batch_bounds(n, config.batch_size):
            idx = perm[start:end]
            xb = x[idx]
            if config.augment:
                xb = augment_batch(xb, config.augment, gen)
            yield xb, y[idx]


def augment_batch(xb: torch.Tensor, augment: tuple[str, ...], gen: torch.Generator) -> torch.Tensor:
    """``xb`` augmented on the fly: ``hflip`` mirrors each image (N, C, H, W) left-right
    with probability 1/2, one draw per image from ``gen`` (the job's generator, after
    its permutation: a job's batches still depend only on its inputs)."""
    for name in augment:
        if name != "hflip":
            raise ValueError(f"training.augment: {name!r} (valid: hflip)")
        if xb.ndim != 4:
            raise ValueError(
                f"training.augment: hflip needs image batches (N, C, H, W), got {tuple(xb.shape)}"
            )
        flip = torch.rand(len(xb), generator=gen) < 0.5
        xb = torch.where(flip.to(xb.device)[:, None, None, None], xb.flip(-1), xb)
    return xb


def cpu_state(model: nn.Module) -> State:
    """A copy of ``model``'s state on the CPU (detached: a job's result)."""
    return {k: v.detach().to("cpu", copy=True) for k, v in model.state_dict().items()}


@torch.no_grad()
def evaluate_batches(
    model: nn.Module,
    state: State,
    x: torch.Tensor,
    y: torch.Tensor,
    loss_fn: Callable[[torch.Tensor, torch.Tensor], torch.Tensor],
    batch_size: int = 1000,
    device: torch.device = CPU,
) -> list[tuple[int, float]]:
    """``(correct predictions, summed loss)`` of ``state`` on each batch of ``(x, y)``."""
    model.load_state_dict(state)
    model.to(device)
    model.eval()
    scores = []
    for start in range(0, len(y), batch_size):
        xb = x[start : start + batch_size].to(device)
        yb = y[start : start + batch_size].to(device)
        logits = model(xb)
        scores.append(
            (int((logits.argmax(dim=1) == yb).sum()), float(loss_fn(logits, yb)) * len(yb))
        )
    return scores


def combine_scores(scores: list[tuple[int, float]], n: int) -> tuple[float, float]:
    """Accuracy and mean loss over ``n`` samples from per-batch scores, summed in batch
    order (the same floats however the batches were shared out)."""
    correct, loss_sum = 0, 0.0
    for c, loss in scores:
        correct += c
        loss_sum += loss
    return correct / n, loss_sum / n


def evaluate(
    model: nn.Module,
    state: State,
    x: torch.Tensor,
    y: torch.Tensor,
    loss_fn: Callable[[torch.Tensor, torch.Tensor], torch.Tensor],
    batch_size: int = 1000,
    device: torch.device = CPU,
) -> tuple[float, float]:
    """Accuracy in [0, 1] and mean loss of ``state`` on ``(x, y)``."""
    return combine_scores(evaluate_batches(model, state, x, y, loss_fn, batch_size, device), len(y))
