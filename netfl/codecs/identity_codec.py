"""``none``: the model or update as it is — ``model.size_bits`` on air (FedAvg's
``model_bits``), the values untouched. A run without a codec section uses it; it is
registered so that ``netfl list codecs`` shows it and a plugin cannot take its name."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from netfl.codecs.update_codec import FLOAT_BITS, UpdateCodec, register_codec

if TYPE_CHECKING:
    import torch

__all__ = ["NoCodec"]


@register_codec
class NoCodec(UpdateCodec):
    """No encoding (what an algorithm sends without a codec)."""

    name = "none"
    description = "the values as they are (model.size_bits on air)"

    def encode(self, x: torch.Tensor, rng: np.random.Generator) -> tuple[torch.Tensor, float]:
        return x.clone(), float(FLOAT_BITS * x.numel())

    def nominal_bits(self, numel: int) -> float:
        return float(FLOAT_BITS * numel)
