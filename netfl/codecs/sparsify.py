"""``topk`` and ``randk``: k values of a tensor, with error feedback on the device.

Stich, Cordonnier & Jaggi, "Sparsified SGD with Memory", NeurIPS 2018: the device sends
C(m + g) — top-k: the k values of largest magnitude; random-k: k positions drawn
uniformly without replacement — and keeps m ← m + g − C(m + g) for its next update
(``error_feedback``, on by default; Lin et al.'s Deep Gradient Compression accumulates
the same way). k = max(1, ⌈fraction · n⌉) per tensor, or ``k`` itself. Without error
feedback the values are sent unscaled: random-k's estimate of the update is then biased
by k/n (what a memory makes up for).

Bits per tensor: k float32 values; top-k adds their positions, k·⌈log2 n⌉ bits or an
n-bit map, whichever is smaller; random-k's positions follow from a 64-bit seed sent
once per update. Update-side only: the downlink carries the model, not an update.
"""

from __future__ import annotations

import math
from abc import abstractmethod
from typing import TYPE_CHECKING

import numpy as np
from pydantic import Field, model_validator

from netfl.codecs.update_codec import (
    FLOAT_BITS,
    CodecConfig,
    UpdateCodec,
    index_bits,
    register_codec,
)

if TYPE_CHECKING:
    import torch

__all__ = ["RandK", "SparsifyConfig", "TopK"]


class SparsifyConfig(CodecConfig):
    fraction: float | None = Field(
        None, gt=0.0, le=1.0, description="k / n per tensor (default 0.01 without k)"
    )
    k: int | None = Field(None, ge=1, description="k values per tensor (at most its size)")
    error_feedback: bool = Field(True, description="keep what was not sent (Stich et al.)")

    @model_validator(mode="after")
    def _one_of(self) -> SparsifyConfig:
        if self.fraction is not None and self.k is not None:
            raise ValueError("give fraction or k, not both")
        return self


class _Sparsify(UpdateCodec):
    Config = SparsifyConfig
    config: SparsifyConfig
    directions = frozenset({"uplink"})

    def k(self, numel: int) -> int:
        """Values sent of a tensor of ``numel``: ``k`` (at most ``numel``), or
        max(1, ⌈fraction · numel⌉)."""
        if not numel:
            return 0
        if self.config.k is not None:
            return min(self.config.k, numel)
        fraction = 0.01 if self.config.fraction is None else self.config.fraction
        return max(1, math.ceil(fraction * numel))

    @abstractmethod
    def _positions(self, x: torch.Tensor, k: int, rng: np.random.Generator) -> torch.Tensor:
        """The k positions of ``x`` to send."""

    def encode(self, x: torch.Tensor, rng: np.random.Generator) -> tuple[torch.Tensor, float]:
        import torch

        n = x.numel()
        k = self.k(n)
        out = torch.zeros_like(x)
        if k:
            idx = self._positions(x, k, rng)
            out[idx] = x[idx]
        return out, self.nominal_bits(n)


@register_codec
class TopK(_Sparsify):
    """The k values of largest magnitude and their positions."""

    name = "topk"
    description = "the k largest-magnitude values and their positions, error feedback"

    def _positions(self, x: torch.Tensor, k: int, rng: np.random.Generator) -> torch.Tensor:
        import torch

        return torch.topk(x.abs(), k, sorted=False).indices

    def nominal_bits(self, numel: int) -> float:
        k = self.k(numel)
        where = 0 if k == numel else min(k * index_bits(numel), numel)  # (all: no positions)
        return float(FLOAT_BITS * k + where)


@register_codec
class RandK(_Sparsify):
    """k values at positions drawn from a seed both ends know."""

    name = "randk"
    description = "k values at random positions (a 64-bit seed per update), error feedback"
    update_header_bits = 64.0

    def _positions(self, x: torch.Tensor, k: int, rng: np.random.Generator) -> torch.Tensor:
        import torch

        return torch.from_numpy(rng.choice(x.numel(), size=k, replace=False))

    def nominal_bits(self, numel: int) -> float:
        return float(FLOAT_BITS * self.k(numel))
