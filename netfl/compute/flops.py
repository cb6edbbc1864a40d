"""FLOPs of a torch model, measured once with ``torch.utils.flop_counter``.

``FlopCounterMode`` counts the FLOPs of matrix multiplications and
convolutions (2 per multiply-accumulate), forward and backward; element-wise
operations are not counted. Results are cached per model key.

PyTorch's counter has no formula for the CPU LSTM kernel
(``aten.mkldnn_rnn_layer``); :func:`custom_formulas` adds the standard one:
a layer of hidden size H on inputs of size I does two matrix products per
time step, ``2 · 4H · (I + H)`` FLOPs per sample and step forward, and twice
that backward (input/hidden gradients plus weight gradients). Its formula for a
convolution's backward pass counts a grouped convolution's weight gradient as if it
had one group; :func:`_conv_backward_flops` counts it per group.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable
from dataclasses import dataclass
from functools import cache
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import torch

__all__ = ["ModelFlops", "measure_flops", "measure_input_grad_flops", "clear_flops_cache"]

_CACHE: dict[Hashable, ModelFlops | float] = {}


def _lstm_layer_flops(input_shape, w_ih_shape, w_hh_shape, *args, **kwargs) -> int:
    """Forward FLOPs of one LSTM layer: 2 · (T·N) · 4H · (I + H)."""
    steps_x_batch = 1
    for d in input_shape[:-1]:
        steps_x_batch *= d
    four_h, in_features = w_ih_shape
    hidden = w_hh_shape[1]
    return 2 * steps_x_batch * four_h * (in_features + hidden)


def _lstm_layer_backward_flops(input_shape, w_ih_shape, w_hh_shape, *args, **kwargs) -> int:
    return 2 * _lstm_layer_flops(input_shape, w_ih_shape, w_hh_shape)


def _conv_backward_flops(
    grad_out_shape,
    x_shape,
    w_shape,
    _bias,
    _stride,
    _padding,
    _dilation,
    transposed,
    _output_padding,
    groups,
    output_mask,
    out_shape=None,
    **kwargs,
) -> int:
    """A convolution's backward FLOPs: torch's formula (the input gradient as the
    transposed convolution, the weight gradient as a convolution of the input with the
    output gradient), with the weight gradient of a grouped convolution counted per
    group — torch's counts it as if there were one group, ``groups``× too many (a
    depthwise convolution's C×: MobileNetV2's training FLOPs were 6.9× its own)."""
    from torch.utils.flop_counter import conv_flop_count

    def t(shape):
        return [shape[1], shape[0], *shape[2:]]

    flops = 0
    if output_mask[0]:
        flops += conv_flop_count(grad_out_shape, w_shape, out_shape[0], not transposed)
    if output_mask[1]:
        if transposed:  # (the weight gradient of a transposed convolution: conv(grad_out, x))
            weight = conv_flop_count(t(grad_out_shape), t(x_shape), t(out_shape[1]), False)
        else:  # (conv(x, grad_out))
            weight = conv_flop_count(t(x_shape), t(grad_out_shape), t(out_shape[1]), False)
        flops += weight // groups
    return flops


@cache
def custom_formulas() -> dict[Any, Callable[..., int]]:
    """The formulas torch's counter lacks or miscounts, by ATen op (torch is imported
    here, on first use: this module's types are needed by runs that count nothing)."""
    import torch

    aten = torch.ops.aten
    return {
        aten.mkldnn_rnn_layer: _lstm_layer_flops,
        aten.mkldnn_rnn_layer_backward: _lstm_layer_backward_flops,
        aten.convolution_backward: _conv_backward_flops,
    }


@dataclass(frozen=True)
class ModelFlops:
    """Per-sample FLOPs of one model.

    ``inference_per_sample``: one forward pass; ``train_per_sample``: forward +
    backward (parameter and input gradients) of one sample.
    """

    inference_per_sample: float
    train_per_sample: float


def measure_flops(
    key: Hashable,
    build: Callable[[], torch.nn.Module],
    input_shape: tuple[int, ...],
    loss_fn: Callable[[torch.Tensor, torch.Tensor], torch.Tensor],
    num_classes: int,
    batch_size: int = 4,
    input_grad: bool = False,
) -> ModelFlops:
    """Count FLOPs per sample of ``build()`` on inputs of ``input_shape`` (no batch dim).

    The count runs on a batch of ``batch_size`` random samples on the CPU and is
    divided by the batch size; it is cached under ``key``. ``input_grad``: the
    backward pass also computes the gradient of the input (a split model's
    server part, whose input gradient goes back to the device).
    """
    if key in _CACHE:
        return _CACHE[key]
    import torch
    from torch.utils.flop_counter import FlopCounterMode

    model = build()
    model.train()
    gen = torch.Generator().manual_seed(0)
    x = torch.randn((batch_size, *input_shape), generator=gen)
    y = torch.randint(0, num_classes, (batch_size,), generator=gen)
    with FlopCounterMode(display=False, custom_mapping=custom_formulas()) as fwd_counter:
        with torch.no_grad():
            model(x)
    if input_grad:
        x.requires_grad_(True)
    with FlopCounterMode(display=False, custom_mapping=custom_formulas()) as train_counter:
        loss = loss_fn(model(x), y)
        loss.backward()
    result = ModelFlops(
        inference_per_sample=fwd_counter.get_total_flops() / batch_size,
        train_per_sample=train_counter.get_total_flops() / batch_size,
    )
    _CACHE[key] = result
    return result


def measure_input_grad_flops(
    key: Hashable,
    build: Callable[[], torch.nn.Module],
    input_shape: tuple[int, ...],
    batch_size: int = 4,
) -> float:
    """FLOPs per sample of a forward pass plus a backward pass to the *input* only
    (parameters frozen): what a frozen teacher costs when a generator learns
    through it (FedZKT's generator step). Cached under ``("input_grad", key)``."""
    cache_key = ("input_grad", key)
    if cache_key in _CACHE:
        return float(_CACHE[cache_key])  # type: ignore[arg-type]
    import torch
    from torch.utils.flop_counter import FlopCounterMode

    model = build()
    model.train()
    model.requires_grad_(False)
    x = torch.randn((batch_size, *input_shape), generator=torch.Generator().manual_seed(0))
    x.requires_grad_(True)
    with FlopCounterMode(display=False, custom_mapping=custom_formulas()) as counter:
        model(x).sum().backward()
    flops = counter.get_total_flops() / batch_size
    _CACHE[cache_key] = flops
    return flops


def clear_flops_cache() -> None:
    _CACHE.clear()
