"""``fp16`` and ``bf16``: every value cast to a 16-bit float (IEEE half: 5 exponent and
10 mantissa bits; bfloat16: float32's 8 exponent bits and 7 of mantissa) and back.

16 bits per value, nothing else on air (the tensors' shapes are the model's, known to
both ends). The relative error of a value in range is at most 2⁻¹¹ (fp16, round to
nearest) or 2⁻⁸ (bf16); fp16 overflows to ±inf above 65504.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from netfl.codecs.update_codec import UpdateCodec, register_codec

if TYPE_CHECKING:
    import torch

__all__ = ["BFloat16", "Float16"]


class _Cast(UpdateCodec):
    #: the torch dtype's name
    dtype: str

    def encode(self, x: torch.Tensor, rng: np.random.Generator) -> tuple[torch.Tensor, float]:
        import torch

        return x.to(getattr(torch, self.dtype)).to(torch.float32), 16.0 * x.numel()

    def nominal_bits(self, numel: int) -> float:
        return 16.0 * numel


@register_codec
class Float16(_Cast):
    """IEEE half precision."""

    name = "fp16"
    description = "every value as an IEEE half (16 bits)"
    dtype = "float16"


@register_codec
class BFloat16(_Cast):
    """bfloat16."""

    name = "bf16"
    description = "every value as a bfloat16 (16 bits)"
    dtype = "bfloat16"
