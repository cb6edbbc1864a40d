"""DNN partitioning (EcoFed and the DPFL schemes): split points, activations, 8-bit
activations, the server's replay buffer, and the per-round bytes of Table I.

D. Wu et al., "EcoFed: Efficient Communication for DNN Partitioning-based
Federated Learning", arXiv 2304.05495.

- A model that can be split exposes ``layers()`` (VGG11, ResNet9) or is an
  ``nn.Sequential``; partition point ``PPk`` keeps the first k compute layers
  (with a following pool) on the device (EcoFed Sec. 4.1, its code).
- :func:`split_model` returns the device part w_C and the server part w_S as
  ``nn.Sequential`` views sharing the model's modules.
- :func:`quantize_activations` is EcoFed's compressor: per-tensor ``qint8``
  with scale = max/127 and zero point 0 (activations are post-ReLU),
  through ``torch.quantize_per_tensor``.
- :class:`ReplayBuffer` holds the quantised activations the server trains
  on in the rounds without uploads (activation switch, t mod ρ ≠ 0).
- :func:`round_bytes` is Table I: the bytes one device sends and receives in
  a round under each scheme.
"""

from __future__ import annotations

from collections import OrderedDict
from dataclasses import dataclass
from typing import Literal

import torch
from torch import nn

from channel_models.registry import lookup

__all__ = [
    "PARTITION_POINTS",
    "SCHEMES",
    "Split",
    "split_model",
    "model_layers",
    "QuantizedActivations",
    "quantize_activations",
    "dequantize_activations",
    "quantized_bits",
    "ReplayBuffer",
    "round_bytes",
    "activation_switch",
]

#: partition point → number of leading layers (of ``layers()``) on the device
PARTITION_POINTS: dict[str, dict[str, int]] = {
    # conv64-BN-ReLU, M | conv128-BN-ReLU, M | conv256-BN-ReLU | conv256-BN-ReLU, M
    "vgg11": {"PP1": 4, "PP2": 8, "PP3": 11, "PP4": 15},
    # conv64-BN-ReLU, M | conv128-BN-ReLU, M | residual 256 | residual 512
    "resnet9": {"PP1": 4, "PP2": 8, "PP3": 9, "PP4": 10},
}

#: the four schemes of EcoFed's comparison (Table I)
SCHEMES = ("classic_fl", "vanilla_dpfl", "local_loss_dpfl", "ecofed")
Scheme = Literal["classic_fl", "vanilla_dpfl", "local_loss_dpfl", "ecofed"]


def model_layers(model: nn.Module) -> list[nn.Module]:
    """A splittable model's layers in order (``layers()`` or an ``nn.Sequential``)."""
    if hasattr(model, "layers"):
        return list(model.layers())
    if isinstance(model, nn.Sequential):
        return list(model)
    raise TypeError(f"{type(model).__name__} has no layers() and is not nn.Sequential")


@dataclass
class Split:
    """A model split at a partition point, and what crosses the cut per sample."""

    device: nn.Sequential
    server: nn.Sequential
    activation_shape: tuple[int, ...]

    @property
    def activation_values(self) -> int:
        """Values per sample at the cut, |a_k| / sample (EcoFed Sec. 4.1)."""
        n = 1
        for d in self.activation_shape:
            n *= d
        return n

    @property
    def device_params(self) -> int:
        return sum(t.numel() for t in self.device.state_dict().values())

    @property
    def server_params(self) -> int:
        return sum(t.numel() for t in self.server.state_dict().values())


def split_model(
    model: nn.Module, model_name: str, point: str | int, input_shape: tuple[int, ...]
) -> Split:
    """Split ``model`` at ``point`` (``"PP1"``–``"PP4"`` or a layer count).

    The two parts share the model's modules; the activation shape comes from a
    dry forward pass of one zero sample through the device part.
    """
    layers = model_layers(model)
    if isinstance(point, str):
        k = lookup(
            lookup(PARTITION_POINTS, model_name, "splittable model"), point, "partition point"
        )
    else:
        k = int(point)
    if not 0 < k < len(layers):
        raise ValueError(f"split after {k} layers: {model_name} has {len(layers)}")
    device, server = nn.Sequential(*layers[:k]), nn.Sequential(*layers[k:])
    was_training = model.training
    model.eval()
    with torch.no_grad():
        shape = tuple(device(torch.zeros(1, *input_shape)).shape[1:])
    model.train(was_training)
    return Split(device, server, shape)


@dataclass
class QuantizedActivations:
    """Activations as int8 codes and the float scale of each sample's tensor (zero point
    0; samples quantised together share their scale)."""

    codes: torch.Tensor  # int8
    scales: torch.Tensor  # float32, one per sample

    def __len__(self) -> int:
        return len(self.codes)

    def __getitem__(self, index) -> QuantizedActivations:
        return QuantizedActivations(self.codes[index], self.scales[index])


def quantize_activations(
    x: torch.Tensor, batch_sizes: list[int] | None = None
) -> QuantizedActivations:
    """EcoFed's 8-bit compressor: per-tensor symmetric int8, scale = max|x|/127,
    zero point 0 (its code uses ``qint8`` with these parameters; torch's quantized
    tensors are deprecated in 2.14, so the codes are a plain int8 tensor).

    ``batch_sizes`` cuts ``x`` (in order) into the tensors that travel, each with its own
    scale — one per charged batch (:func:`quantized_bits` charges a 32-bit scale per
    tensor); default: one tensor. Post-ReLU activations are ≥ 0, so [0, max] maps
    onto 0..127; the error of each element is at most its scale/2.
    """
    x = x.detach().float()
    sizes = [len(x)] if batch_sizes is None else list(batch_sizes)
    if sum(sizes) != len(x):
        raise ValueError(f"batch sizes sum to {sum(sizes)}, not the {len(x)} samples")
    codes, scales = [], []
    for chunk in torch.split(x, sizes) if len(x) else []:
        peak = float(chunk.abs().max()) if chunk.numel() else 0.0
        scale = peak / 127.0 if peak > 0 else 1.0
        codes.append(torch.clamp(torch.round(chunk / scale), -128, 127).to(torch.int8))
        scales.append(torch.full((len(chunk),), scale, dtype=torch.float32))
    if not codes:
        return QuantizedActivations(x.to(torch.int8), torch.ones(0))
    return QuantizedActivations(torch.cat(codes), torch.cat(scales))


def dequantize_activations(q: QuantizedActivations) -> torch.Tensor:
    """The server's float copy of quantised activations."""
    shape = (len(q.scales),) + (1,) * (q.codes.ndim - 1)
    return q.codes.float() * q.scales.reshape(shape)


def quantized_bits(num_values: int, num_tensors: int = 1) -> float:
    """Bits on air of ``num_values`` 8-bit activations plus a 32-bit scale per tensor."""
    return 8.0 * num_values + 32.0 * num_tensors


class ReplayBuffer:
    """The server's activation store (EcoFed Algorithm 1): per device, the latest
    uploaded (quantised) activations and labels.

    ``capacity_samples`` caps the samples held over all devices (None: no cap);
    when an upload would exceed it, the oldest devices' entries are evicted
    first (first in, first out), and an upload larger than the whole capacity
    keeps its newest samples.
    """

    def __init__(self, capacity_samples: int | None = None):
        if capacity_samples is not None and capacity_samples < 1:
            raise ValueError("capacity_samples must be at least 1")
        self.capacity = capacity_samples
        self._entries: OrderedDict[int, tuple[torch.Tensor, torch.Tensor]] = OrderedDict()

    def __len__(self) -> int:
        return sum(len(y) for _, y in self._entries.values())

    def __contains__(self, device: int) -> bool:
        return device in self._entries

    def put(self, device: int, activations: torch.Tensor, labels: torch.Tensor) -> None:
        """Store ``device``'s upload (replacing its previous one)."""
        self._entries.pop(device, None)
        if self.capacity is not None and len(labels) > self.capacity:
            activations, labels = activations[-self.capacity :], labels[-self.capacity :]
        self._entries[device] = (activations, labels)
        if self.capacity is not None:
            while len(self) > self.capacity:
                self._entries.popitem(last=False)

    def get(self, device: int) -> tuple[torch.Tensor, torch.Tensor] | None:
        return self._entries.get(device)

    def devices(self) -> list[int]:
        return list(self._entries)

    def state_dict(self) -> dict:
        """Plain tensors only (a checkpoint loads with ``weights_only``): quantised
        activations as their codes and scales."""
        entries = []
        for device, (acts, labels) in self._entries.items():
            if isinstance(acts, QuantizedActivations):
                acts = {"codes": acts.codes, "scales": acts.scales}
            entries.append((device, acts, labels))
        return {"capacity": self.capacity, "entries": entries}

    def load_state_dict(self, state: dict) -> None:
        """Also an earlier checkpoint's ``(device, (activations, labels))`` entries."""
        self.capacity = state["capacity"]
        entries = [e if len(e) == 3 else (e[0], *e[1]) for e in state["entries"]]
        self._entries = OrderedDict(
            (device, (QuantizedActivations(**acts) if isinstance(acts, dict) else acts, labels))
            for device, acts, labels in entries
        )


def activation_switch(round_index: int, rho: int) -> bool:
    """EcoFed's activation switch: devices upload activations in round t iff t mod ρ = 0."""
    if rho < 1:
        raise ValueError("rho must be at least 1")
    return round_index % rho == 0


def round_bytes(
    scheme: Scheme,
    model_bits: float,
    device_bits: float,
    num_samples: int,
    activation_values: int,
    bits_per_value: float = 32.0,
    aux_bits: float = 0.0,
    upload_activations: bool = True,
    first_round: bool = False,
    quantized: bool = True,
    num_batches: int = 1,
) -> dict[str, float]:
    """Bits one device sends (``up``) and receives (``down``) in a round (Table I).

    ``model_bits`` = |w|, ``device_bits`` = |w_C|, ``num_samples`` = |D_k|,
    ``activation_values`` = values of a_k per sample; ``aux_bits`` is the
    local-loss auxiliary head (aggregated with w_C). Gradients have the
    activations' size. EcoFed sends 8-bit activations (+ a 32-bit scale per
    batch) when ``upload_activations`` (t mod ρ = 0) and downloads w_C once,
    in the first round.
    """
    acts = float(num_samples * activation_values * bits_per_value)
    if scheme == "classic_fl":
        return {"up": model_bits, "down": model_bits}
    if scheme == "vanilla_dpfl":
        return {"up": device_bits + acts, "down": device_bits + acts}
    if scheme == "local_loss_dpfl":
        return {"up": device_bits + aux_bits + acts, "down": device_bits + aux_bits}
    if scheme == "ecofed":
        up = 0.0
        if upload_activations:
            up = quantized_bits(num_samples * activation_values, num_batches) if quantized else acts
        return {"up": up, "down": device_bits if first_round else 0.0}
    raise KeyError(f"unknown scheme {scheme!r} (valid: {', '.join(SCHEMES)})")
