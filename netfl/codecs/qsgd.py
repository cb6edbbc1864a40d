"""``qsgd``: stochastic s-level quantisation (Alistarh, Grubic, Li, Tomioka & Vojnovic,
"QSGD: Communication-Efficient SGD via Gradient Quantization and Encoding", NeurIPS
2017).

Per bucket v of d values (§3.1; the whole tensor when ``bucket`` is None):
Q_s(v_i) = ‖v‖₂ · sgn(v_i) · ξ_i(v, s), with ξ_i = (l + 1)/s with probability
|v_i|/‖v‖₂ · s − l and l/s otherwise, l = ⌊|v_i|/‖v‖₂ · s⌋ — unbiased, E[Q_s(v)] = v
(Lemma 3.1), and ‖Q_s(v) − v‖ ≤ ‖v‖₂ · √d / s per bucket in the worst case.

Bits per bucket: the norm as a float32 (32), then

- plain (``elias: false``): every value's sign (1) and level (⌈log2(s + 1)⌉);
- with Elias coding (``elias: true``, §3.2 "Efficient Coding" behind Theorem 3.2): for
  each non-zero level only, the recursive Elias (omega) code of its distance from the
  previous non-zero position, its sign bit and the Elias code of its level — what the
  encoding actually produced, so the size depends on the values (learning mode only).
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
    elias_omega_bits,
    register_codec,
    torch_generator,
)

if TYPE_CHECKING:
    import torch

__all__ = ["QSGD", "QSGDConfig"]


class QSGDConfig(CodecConfig):
    levels: int = Field(16, ge=1, le=2**15, description="s: quantisation levels")
    bucket: int | None = Field(512, ge=1, description="d: values per norm (None: the whole tensor)")
    elias: bool = Field(False, description="Elias-code the non-zero levels (§3.2)")


@register_codec
class QSGD(UpdateCodec):
    """Stochastic s-level quantisation with a norm per bucket."""

    name = "qsgd"
    description = "QSGD: stochastic s-level quantisation, a norm per bucket (Alistarh et al. 2017)"
    Config = QSGDConfig
    config: QSGDConfig

    @property
    def value_dependent(self) -> bool:  # type: ignore[override]
        return self.config.elias

    def _buckets(self, numel: int) -> int:
        d = self.config.bucket
        return 1 if d is None else math.ceil(numel / d)

    def encode(self, x: torch.Tensor, rng: np.random.Generator) -> tuple[torch.Tensor, float]:
        import torch

        n = x.numel()
        if n == 0:
            return x.clone(), 0.0
        s = self.config.levels
        d = n if self.config.bucket is None else self.config.bucket
        pad = (-n) % d
        v = torch.nn.functional.pad(x, (0, pad)).reshape(-1, d)
        norm = torch.linalg.vector_norm(v, dim=1, keepdim=True)
        safe = torch.where(norm > 0, norm, torch.ones_like(norm))
        r = v.abs() / safe * s
        low = torch.floor(r)
        u = torch.rand(r.shape, generator=torch_generator(rng))
        level = (low + (u < r - low).to(r.dtype)).clamp_(0, s)
        out = (norm * torch.sign(v) * level / s).reshape(-1)[:n]
        if not self.config.elias:
            return out, self.nominal_bits(n)
        flat = level.reshape(-1)[:n].to(torch.int64).numpy()
        bits = float(FLOAT_BITS * self._buckets(n))
        starts = np.arange(0, n, d)
        for a in starts:  # (positions restart in each bucket)
            lv = flat[a : a + d]
            nz = np.flatnonzero(lv)
            if nz.size:
                gaps = np.diff(nz, prepend=-1)  # 1 + the zeros skipped
                bits += float(elias_omega_bits(gaps).sum() + nz.size)
                bits += float(elias_omega_bits(lv[nz]).sum())
        return out, bits

    def nominal_bits(self, numel: int) -> float | None:
        if self.config.elias:
            return None
        return self.estimate_bits(numel)

    def estimate_bits(self, numel: int) -> float:
        """The plain encoding's size (Elias coding sends less where most levels are zero,
        more where they are large: not a bound)."""
        per_value = 1 + math.ceil(math.log2(self.config.levels + 1))
        return float(per_value * numel + FLOAT_BITS * self._buckets(numel))
