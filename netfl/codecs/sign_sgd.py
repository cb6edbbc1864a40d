"""``sign``: one bit per value (Bernstein, Zhao, Azizzadenesheli & Anandkumar, "signSGD
with Majority Vote is Communication Efficient and Fault Tolerant", ICLR 2019).

The device sends sign(x_i) (a zero as +) and the tensor's mean magnitude ‖x‖₁/n as a
float32: n + 32 bits; the receiver decodes (‖x‖₁/n)·sign(x). With ``vote`` (the
default) the server applies the majority vote, w ← w + ā·sign(Σ_k sign(Δ_k)) with ā
the devices' mean magnitude (their Algorithm 1 with a step of ā); without it, the
decoded updates are averaged as FedAvg's. ``error_feedback`` keeps what the sign did not
carry (Karimireddy et al.'s EF-signSGD). Update-side only.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
from pydantic import Field

from netfl.codecs.update_codec import FLOAT_BITS, CodecConfig, UpdateCodec, register_codec

if TYPE_CHECKING:
    import torch

__all__ = ["MajorityVote", "Sign", "SignConfig"]


class SignConfig(CodecConfig):
    vote: bool = Field(True, description="majority vote at the server (else: averaged)")
    error_feedback: bool = Field(False, description="keep what the sign did not carry")


@register_codec
class Sign(UpdateCodec):
    """A sign per value and a magnitude per tensor."""

    name = "sign"
    description = "signSGD: one bit per value and a magnitude per tensor; majority vote"
    Config = SignConfig
    config: SignConfig
    directions = frozenset({"uplink"})

    def encode(self, x: torch.Tensor, rng: np.random.Generator) -> tuple[torch.Tensor, float]:
        import torch

        n = x.numel()
        if n == 0:
            return x.clone(), 0.0
        scale = x.abs().mean()
        signs = torch.where(x >= 0, 1.0, -1.0)
        return scale * signs, self.nominal_bits(n)

    def nominal_bits(self, numel: int) -> float:
        return float(numel + FLOAT_BITS) if numel else 0.0


class MajorityVote:
    """The server's majority vote over a round's sign updates (an aggregator of
    ``FedAvg``'s kind): each arriving state w_k = w + a_k·sign(Δ_k) adds sign(Δ_k) to a
    vote and a_k to the magnitudes; the result is w + ā·sign(vote) per floating tensor
    (a tie: no step). Tensors sent as they are (``raw``: BatchNorm statistics) are
    averaged, integer buffers taken from the last arrival. The sign is read back as
    sign(w_k − w): a step below w's float resolution is lost (|a_k| ≪ 1e-7·|w|)."""

    def __init__(self, base: dict[str, torch.Tensor], raw: frozenset[str] = frozenset()):

        self.base = base
        self.raw = raw
        self._sum: dict[str, torch.Tensor] = {}
        self._vote: dict[str, torch.Tensor] = {}
        self._scale: dict[str, float] = {}
        self._last: dict[str, torch.Tensor] = {}
        self.count = 0

    def add(self, index: int, state: dict[str, torch.Tensor]) -> None:
        import torch

        self.count += 1
        for name, w in state.items():
            if not w.is_floating_point():
                self._last[name] = w
                continue
            if name in self.raw:
                self._sum[name] = self._sum.get(name, 0) + w.to(torch.float32)
                continue
            step = w.to(torch.float32) - self.base[name].to(torch.float32)
            self._vote[name] = self._vote.get(name, 0) + torch.sign(step)
            self._scale[name] = self._scale.get(name, 0.0) + float(step.abs().mean())

    def drop(self, index: int) -> None:
        """An update that will not arrive adds nothing."""

    def result(self) -> dict[str, torch.Tensor] | None:
        import torch

        if not self.count:
            return None
        out = {}
        for name, w in self.base.items():
            if name in self._vote:
                a = self._scale[name] / self.count
                out[name] = (w.to(torch.float32) + a * torch.sign(self._vote[name])).to(w.dtype)
            elif name in self._sum:
                out[name] = (self._sum[name] / self.count).to(w.dtype)
            else:
                out[name] = self._last.get(name, w)
        return out
