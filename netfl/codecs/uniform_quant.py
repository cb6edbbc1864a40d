"""``uniform``: b-bit uniform quantisation with a scale per tensor or per block.

Each block of B values (the whole tensor by default) sends its minimum and maximum as
two float32 (64 bits) and every value as the b-bit integer q = round((x − min) / Δ),
Δ = (max − min) / (2^b − 1); the receiver decodes min + q·Δ. Bits: b·n + 64·⌈n/B⌉.
Rounding to nearest bounds the error by Δ/2; ``stochastic: true`` rounds up with
probability equal to the fraction (unbiased, error below Δ).
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

import numpy as np
from pydantic import Field

from netfl.codecs.update_codec import (
    FLOAT_BITS,
    CodecConfig,
    UpdateCodec,
    register_codec,
    torch_generator,
)

if TYPE_CHECKING:
    import torch

__all__ = ["Uniform", "UniformConfig"]


class UniformConfig(CodecConfig):
    bits: int = Field(8, ge=1, le=16, description="b: bits per value")
    block: int | None = Field(
        None, ge=1, description="values per scale (None: one scale per tensor)"
    )
    stochastic: bool = Field(False, description="stochastic rounding (unbiased)")


@register_codec
class Uniform(UpdateCodec):
    """b bits per value between each block's min and max."""

    name = "uniform"
    description = "b-bit uniform quantisation between each tensor's (or block's) min and max"
    Config = UniformConfig
    config: UniformConfig

    def _blocks(self, numel: int) -> int:
        b = self.config.block
        return 1 if b is None else math.ceil(numel / b)

    def encode(self, x: torch.Tensor, rng: np.random.Generator) -> tuple[torch.Tensor, float]:
        import torch

        n = x.numel()
        if n == 0:
            return x.clone(), 0.0
        size = n if self.config.block is None else self.config.block
        pad = (-n) % size
        blocks = torch.nn.functional.pad(x, (0, pad), value=float(x[-1])).reshape(-1, size)
        lo = blocks.min(dim=1, keepdim=True).values
        hi = blocks.max(dim=1, keepdim=True).values
        levels = 2**self.config.bits - 1
        step = (hi - lo) / levels
        safe = torch.where(step > 0, step, torch.ones_like(step))
        r = (blocks - lo) / safe
        if self.config.stochastic:
            u = torch.rand(r.shape, generator=torch_generator(rng))
            q = torch.floor(r) + (u < r - torch.floor(r)).to(r.dtype)
        else:
            q = torch.round(r)
        q = q.clamp_(0, levels)
        out = (lo + q * step).reshape(-1)[:n]
        return out, self.nominal_bits(n)

    def nominal_bits(self, numel: int) -> float:
        return float(self.config.bits * numel + 2 * FLOAT_BITS * self._blocks(numel))
