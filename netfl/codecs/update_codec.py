"""The update-codec protocol and registry, and a whole update encoded with it.

An :class:`UpdateCodec` says how one flat float tensor goes on air: what the receiver
decodes and the exact number of bits it took (values, indices, scales, headers —
counted from the encoding, not assumed). :func:`encode_state` applies it to every
floating tensor of an update (integer buffers go as they are, at their width), with
error feedback where the codec asks for it (Stich, Cordonnier & Jaggi, NeurIPS 2018:
send C(m + g), keep m ← m + g − C(m + g)). :func:`nominal_bits` is the size from the
shapes alone (timing mode: no values exist) for codecs whose size does not depend on
the values. docs/codecs.md is the guide; the built-ins are one module each
(:mod:`netfl.codecs`).
"""

from __future__ import annotations

import math
from abc import ABC, abstractmethod
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar

import numpy as np
from pydantic import BaseModel, ConfigDict

from channel_models.registry import register_class
from netfl.core.usercode import user_code_error
from netfl.errors import RegistrationError

if TYPE_CHECKING:
    import torch

__all__ = [
    "CODECS",
    "CodecConfig",
    "Encoded",
    "UpdateCodec",
    "build_codec",
    "elias_omega_bits",
    "encode_state",
    "nominal_bits",
    "register_codec",
    "torch_generator",
]

#: bits of one float32 value (a scale, a norm, a kept value)
FLOAT_BITS = 32


class CodecConfig(BaseModel):
    """A codec's options (``algorithm.uplink_codec.options``): a subclass per codec."""

    model_config = ConfigDict(extra="forbid")


class UpdateCodec(ABC):
    """How one flat float tensor goes on air (:mod:`netfl.codecs.update_codec`)."""

    #: ``algorithm.uplink_codec.name`` / ``downlink_codec.name``
    name: ClassVar[str]
    description: ClassVar[str] = ""
    #: its options, or None
    Config: ClassVar[type[CodecConfig] | None] = None
    #: the directions it may encode: a sparsifier or a sign compresses an update, the
    #: downlink carries the model itself
    directions: ClassVar[frozenset[str]] = frozenset({"uplink", "downlink"})
    #: its size depends on the values (QSGD with Elias coding): no nominal size, so a
    #: run in timing mode cannot use it
    value_dependent: ClassVar[bool] = False
    #: bits once per update (e.g. random-k's shared seed)
    update_header_bits: ClassVar[float] = 0.0

    def __init__(self, config: CodecConfig | None = None):
        self.config = config

    @property
    def error_feedback(self) -> bool:
        """Whether the device keeps what was not sent and adds it to its next update."""
        return bool(getattr(self.config, "error_feedback", False))

    @property
    def vote(self) -> bool:
        """Whether the server aggregates by majority vote (signSGD)."""
        return bool(getattr(self.config, "vote", False))

    @abstractmethod
    def encode(self, x: torch.Tensor, rng: np.random.Generator) -> tuple[torch.Tensor, float]:
        """``(decoded, bits)``: what the receiver reconstructs from flat float32 ``x``
        (same shape) and the encoding's size [bit]; stochastic codecs draw from ``rng``."""

    @abstractmethod
    def nominal_bits(self, numel: int) -> float | None:
        """The size of a tensor of ``numel`` values from its shape alone [bit] (None:
        it depends on the values)."""

    def estimate_bits(self, numel: int) -> float:
        """What a planner may assume before encoding [bit]: :meth:`nominal_bits`, or for
        a value-dependent codec an estimate it states."""
        b = self.nominal_bits(numel)
        if b is None:
            raise user_code_error(
                type(self),
                f"codec {self.name!r}: its size depends on the values and it gives no "
                "estimate_bits() for a planner",
            )
        return b


#: every codec by name (built-ins: :mod:`netfl.codecs`; plugins add theirs)
CODECS: dict[str, type[UpdateCodec]] = {}


def register_codec(cls: type[UpdateCodec]) -> type[UpdateCodec]:
    """Add a codec class to :data:`CODECS` (a class decorator; a plugin's:
    ``netfl.register_codec``)."""
    try:
        return register_class(CODECS, cls, UpdateCodec, "update codec", CodecConfig)
    except ValueError as err:
        raise RegistrationError(str(err)) from None


def build_codec(name: str, options: Mapping[str, Any] | None = None) -> UpdateCodec | None:
    """Codec ``name`` with its ``options`` validated by its ``Config`` (None: ``none``)."""
    if name == "none":
        return None
    kind = CODECS[name]
    config = kind.Config(**(options or {})) if kind.Config is not None else None
    return kind(config)


def torch_generator(rng: np.random.Generator) -> torch.Generator:
    """A torch generator seeded from ``rng`` (one draw)."""
    import torch

    return torch.Generator().manual_seed(int(rng.integers(2**63)))


def elias_omega_bits(k: np.ndarray) -> np.ndarray:
    """Lengths of the Elias omega codes of positive integers ``k`` [bit] — the recursive
    Elias coding QSGD uses (Alistarh et al. 2017, §3.2): 1 for k = 1; otherwise the
    binary of k (⌊log2 k⌋ + 1 bits) prefixed by the code of ⌊log2 k⌋, and a final 0."""
    k = np.asarray(k, dtype=np.int64)
    if k.size and k.min() < 1:
        raise ValueError("Elias omega codes positive integers")
    bits = np.ones(k.shape, dtype=np.int64)  # the terminating 0
    n = k.copy()
    while True:
        more = n > 1
        if not more.any():
            return bits
        width = np.floor(np.log2(np.where(more, n, 1))).astype(np.int64)
        bits += np.where(more, width + 1, 0)
        n = np.where(more, width, 1)


@dataclass(frozen=True)
class Encoded:
    """An update on air: its size [bit], what the receiver decodes (tensor by name, the
    shapes and dtypes of the input) and the sender's error-feedback memory after it
    (None: the codec keeps none)."""

    bits: float
    decoded: dict[str, torch.Tensor]
    memory: dict[str, torch.Tensor] | None


def encode_state(
    codec: UpdateCodec,
    tensors: Mapping[str, torch.Tensor],
    rng: np.random.Generator,
    memory: Mapping[str, torch.Tensor] | None = None,
    raw: frozenset[str] = frozenset(),
) -> Encoded:
    """Encode every floating tensor of ``tensors`` with ``codec`` (integer tensors and
    those named in ``raw`` — a model's buffers, e.g. BatchNorm statistics — go as they
    are, at their width), adding ``memory`` first and keeping what was not sent where the
    codec has error feedback. A codec whose size does not depend on the values must
    encode to its :meth:`~UpdateCodec.nominal_bits` (a plugin that does not: one line
    naming it)."""
    import torch

    bits = float(codec.update_header_bits)
    decoded: dict[str, torch.Tensor] = {}
    kept: dict[str, torch.Tensor] | None = {} if codec.error_feedback else None
    for name, t in tensors.items():
        if not t.is_floating_point() or name in raw:
            decoded[name] = t.detach().clone()
            bits += t.numel() * t.element_size() * 8
            continue
        flat = t.detach().reshape(-1).to(torch.float32)
        if kept is not None and memory is not None and name in memory:
            flat = flat + memory[name]
        out, b = codec.encode(flat, rng)
        nominal = None if codec.value_dependent else codec.nominal_bits(flat.numel())
        if nominal is not None and not math.isclose(float(b), nominal, rel_tol=1e-9):
            raise user_code_error(
                type(codec),
                f"codec {codec.name!r}: encode() gave {b} bits for {flat.numel()} values, "
                f"nominal_bits() {codec.nominal_bits(flat.numel())} (a size that depends "
                "on the values declares value_dependent = True)",
            )
        bits += float(b)
        if kept is not None:
            kept[name] = flat - out
        decoded[name] = out.reshape(t.shape).to(t.dtype)
    return Encoded(bits, decoded, kept)


def nominal_bits(
    codec: UpdateCodec, shapes: Sequence[tuple[int, bool, int]], estimate: bool = False
) -> float:
    """The size of an update from ``(numel, is_float, bits per integer value)`` per
    tensor [bit] (:meth:`UpdateCodec.nominal_bits`; a value-dependent codec: an error —
    or, ``estimate``, :meth:`UpdateCodec.estimate_bits`)."""
    total = float(codec.update_header_bits)
    for numel, is_float, width in shapes:
        if not is_float:
            total += numel * width
            continue
        b = codec.estimate_bits(numel) if estimate else codec.nominal_bits(numel)
        if b is None:
            raise ValueError(f"codec {codec.name!r}: its size depends on the values")
        total += b
    return total


def index_bits(numel: int) -> int:
    """Bits of one index into ``numel`` values (0 for one value)."""
    return math.ceil(math.log2(numel)) if numel > 1 else 0
