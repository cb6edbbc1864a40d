"""The training math of DNN-partitioned FL (pure torch; EcoFed, arXiv 2304.05495).

- Vanilla DPFL (SplitFed V1): per batch the device forwards its part, the
  server forwards and back-propagates its copy, the gradient at the cut goes
  back and the device back-propagates its part. The weights after a device's
  round equal whole-model SGD on its data, so the math is
  :func:`netfl.learning.train.train_local` on the whole model; only the
  transfers differ (the algorithm charges them per batch).
- Local-loss DPFL: :func:`train_local_loss` — the device trains its part and
  an auxiliary head on a local loss; the server trains its part on the
  device's (detached) activations of the same batches.
- EcoFed: the device part is frozen, so :func:`device_activations` is a
  forward pass (eval mode), and :func:`train_server_part` trains the server
  part on activations — fresh (possibly quantised) or replayed from the
  buffer.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace

import torch
from torch import nn

from netfl.learning.train import (
    CPU,
    State,
    TrainConfig,
    TrainResult,
    augment_batch,
    batch_bounds,
    cpu_state,
    minibatches,
    sgd,
    train_local,
)

__all__ = [
    "aux_head",
    "device_activations",
    "train_server_part",
    "train_local_loss",
    "LocalLossResult",
]


def aux_head(activation_shape: tuple[int, ...], num_classes: int) -> nn.Sequential:
    """Local-loss DPFL's auxiliary network: one FC from the flattened activation to C
    (EcoFed Sec. 4.1, after Han et al.)."""
    n = 1
    for d in activation_shape:
        n *= d
    return nn.Sequential(nn.Flatten(), nn.Linear(n, num_classes))


@torch.no_grad()
def device_activations(
    device_part: nn.Module,
    state: State,
    x: torch.Tensor,
    batch_size: int = 256,
    device: torch.device = CPU,
    augment: tuple[str, ...] = (),
    seed: int = 0,
) -> torch.Tensor:
    """Activations of a frozen device part (eval mode: BatchNorm uses its stored
    statistics), computed in the training batches of ``batch_size``
    (:func:`~netfl.learning.train.batch_bounds`: the batches a device forwards, uploads
    and is charged for — a BatchNorm without stored statistics normalises each over
    its own samples); on the CPU. With ``augment`` (EcoFed's horizontal
    flips) the device's images are augmented first, one draw per image from
    ``torch.Generator().manual_seed(seed)``: a fresh upload sees new flips, a replayed
    activation keeps those it was computed with."""
    device_part.load_state_dict(state)
    device_part.to(device)
    device_part.eval()
    if augment:
        x = augment_batch(x, augment, torch.Generator().manual_seed(seed))
    out = [device_part(x[a:b].to(device)).cpu() for a, b in batch_bounds(len(x), batch_size)]
    return torch.cat(out) if out else torch.empty(0)


def train_server_part(
    server_part: nn.Module,
    state: State,
    activations: torch.Tensor,
    labels: torch.Tensor,
    config: TrainConfig,
    seed: int,
    loss_fn: Callable[[torch.Tensor, torch.Tensor], torch.Tensor],
    device: torch.device = CPU,
) -> TrainResult:
    """SGD of the server part on activations (EcoFed: fresh or from the replay buffer);
    never augmented — augmentation acts on images, before the device part."""
    config = replace(config, augment=())
    return train_local(server_part, state, activations, labels, config, seed, loss_fn, device)


@dataclass
class LocalLossResult:
    """A local-loss DPFL device round: new device, auxiliary and server-copy states."""

    device_state: State
    aux_state: State
    server_state: State
    num_samples: int
    num_steps: int
    mean_local_loss: float
    mean_server_loss: float

    @property
    def mean_loss(self) -> float:
        """The device's training loss (its local loss)."""
        return self.mean_local_loss


def train_local_loss(
    device_part: nn.Module,
    aux: nn.Module,
    server_part: nn.Module,
    device_state: State,
    aux_state: State,
    server_state: State,
    x: torch.Tensor,
    y: torch.Tensor,
    config: TrainConfig,
    seed: int,
    loss_fn: Callable[[torch.Tensor, torch.Tensor], torch.Tensor],
    device: torch.device = CPU,
) -> LocalLossResult:
    """One device's round of local-loss DPFL: per batch (one seeded permutation per
    epoch, as :func:`train_local`) the device steps on loss(aux(a), y) and the
    server steps on loss(server(a.detach()), y); no gradient crosses the cut."""
    parts = (device_part, aux, server_part)
    for part, st in zip(parts, (device_state, aux_state, server_state), strict=True):
        part.load_state_dict(st)
        part.to(device)
        part.train()

    opt_dev = sgd([*device_part.parameters(), *aux.parameters()], config)
    opt_srv = sgd(server_part.parameters(), config)
    x, y = x.to(device), y.to(device)
    local_sum = torch.zeros((), device=device)
    server_sum = torch.zeros((), device=device)
    steps = 0
    for xb, yb in minibatches(x, y, config, seed):
        opt_dev.zero_grad(set_to_none=True)
        a = device_part(xb)
        local = loss_fn(aux(a), yb)
        local.backward()
        opt_dev.step()
        opt_srv.zero_grad(set_to_none=True)
        remote = loss_fn(server_part(a.detach()), yb)
        remote.backward()
        opt_srv.step()
        local_sum += local.detach()
        server_sum += remote.detach()
        steps += 1
    return LocalLossResult(
        cpu_state(device_part),
        cpu_state(aux),
        cpu_state(server_part),
        len(y),
        steps,
        float(local_sum) / max(steps, 1),
        float(server_sum) / max(steps, 1),
    )
