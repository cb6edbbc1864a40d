"""An algorithm's update codecs at work: the options and the part that applies them.

:class:`CodedConfig` adds ``uplink_codec`` and ``downlink_codec`` (docs/codecs.md) to an
algorithm's options; :class:`UpdateCoding` is the part an algorithm *has* (FedAvg's
client round, FedAsync/FedBuff's slots) that encodes a download once per key (a round,
a version), an upload against the model its client trained from, keeps each device's
error-feedback memory, and says what a copy costs before it is encoded.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from pydantic import Field, model_validator

from netfl.algorithms.algorithm import AlgorithmConfig
from netfl.codecs import UpdateCodec, build_codec, encode_state, nominal_bits
from netfl.scenario.codec_section import CodecSection

if TYPE_CHECKING:
    from netfl.algorithms.context import RoundContext
    from netfl.core.nodes import Node

__all__ = ["CodedConfig", "UpdateCoding", "check_directions"]

#: downloads kept encoded (FedAsync/FedBuff: the versions devices still train from)
_KEPT_DOWNLOADS = 16


class CodedConfig(AlgorithmConfig):
    """Options of an algorithm that applies update codecs."""

    uplink_codec: CodecSection = Field(
        default_factory=CodecSection,
        description="how each client's update goes on air (docs/codecs.md): none, fp16, "
        "bf16, uniform, qsgd, topk, randk, sign, or a plugin's; the server decodes it",
    )
    downlink_codec: CodecSection = Field(
        default_factory=CodecSection,
        description="how the global model goes on air (docs/codecs.md): none, fp16, bf16, "
        "uniform, qsgd, or a plugin's; the clients train from what they decode",
    )

    @model_validator(mode="after")
    def _codec_directions(self) -> CodedConfig:
        check_directions(self)
        return self

    @staticmethod
    def coding(world: RoundContext, config: Any, full_bits: Any) -> UpdateCoding:
        """The :class:`UpdateCoding` of ``config``'s ``uplink_codec`` and
        ``downlink_codec`` (a config without them: no codec)."""
        return UpdateCoding(
            world,
            getattr(config, "uplink_codec", None),
            getattr(config, "downlink_codec", None),
            full_bits,
        )


def check_directions(config: Any) -> None:
    """Every ``*_codec`` field of ``config`` names a codec for its direction (a
    ValueError naming the key)."""
    for key in type(config).model_fields:
        if not key.endswith("_codec"):
            continue
        codec = getattr(config, key)
        direction = "uplink" if "uplink" in key else "downlink"
        if direction not in codec.directions():
            raise ValueError(
                f"{key}: codec {codec.name!r} compresses an update; the downlink "
                "carries the model itself (none, fp16, bf16, uniform, qsgd)"
            )


class UpdateCoding:
    """The codecs of one run's algorithm, and the devices' error-feedback memory.

    Parameters
    ----------
    world : RoundContext
        The round context (its random streams; its model for the shapes).
    uplink, downlink : CodecSection or None
        The codec of each direction (None: ``none``).
    full_bits : callable
        ``device or None → bits`` of one copy without a codec (FedAvg's
        ``model_bits``).
    beside_bits : callable, optional
        ``device or None → bits`` that travel beside the encoded tensors whatever the
        codec (DFL's soft targets beside its model; none by default).
    shapes : callable, optional
        ``() → [(numel, is_float, bits per integer value)]`` of the tensors encoded
        (default: the global model's state).
    raw : callable, optional
        ``() → names`` of floating tensors that go as they are (default: the global
        model's buffers, e.g. BatchNorm statistics: a lossy codec could make a variance
        negative, and they are statistics, not an update).
    """

    def __init__(
        self,
        world: RoundContext,
        uplink: CodecSection | None,
        downlink: CodecSection | None,
        full_bits: Callable[[Node | None], float],
        beside_bits: Callable[[Node | None], float] | None = None,
        shapes: Callable[[], list[tuple[int, bool, int]]] | None = None,
        raw: Callable[[], frozenset[str]] | None = None,
    ):
        self.world = world
        self._raw_of = raw
        self._raw: frozenset[str] | None = None
        self.beside_bits = beside_bits or (lambda _device: 0.0)
        self._shapes_of = shapes
        up, down = uplink, downlink
        #: the codecs (None: ``none``, the model as it is)
        self.uplink: UpdateCodec | None = build_codec(up.name, up.options) if up else None
        self.downlink: UpdateCodec | None = build_codec(down.name, down.options) if down else None
        self.full_bits = full_bits
        #: each device's error-feedback memory (device state: in checkpoints)
        self.memory: dict[str, dict[str, Any]] = {}
        self._downloads: OrderedDict[tuple, tuple[float, dict | None]] = OrderedDict()
        self._shapes: list[tuple[int, bool, int]] | None = None

    @property
    def vote(self) -> bool:
        """Whether the server aggregates the uplink by majority vote."""
        return self.uplink is not None and self.uplink.vote

    def download(
        self, key: tuple[int, ...], state: dict | None, device: Node | None
    ) -> tuple[float, dict | None]:
        """The model ``state`` on its way to ``device`` (None: a multicast): its bits on
        air and what the client decodes — without a codec ``full_bits(device)`` and
        ``state``; with one, ``state`` encoded once per ``key`` (the ``codec_down``
        stream of the key), its size from the shapes where no state exists."""
        codec = self.downlink
        if codec is None:
            return self.full_bits(device), state
        beside = self.beside_bits(device)
        if state is None:  # (timing mode, or a resume's replay: no values)
            return nominal_bits(codec, self.shapes()) + beside, None
        got = self._downloads.get(key)
        if got is None:
            rng = self.world.streams.generator("codec_down", *key)
            encoded = encode_state(codec, state, rng, raw=self.raw_keys())
            got = self._downloads[key] = (encoded.bits, encoded.decoded)
            while len(self._downloads) > _KEPT_DOWNLOADS:
                self._downloads.popitem(last=False)
        return got[0] + beside, got[1]

    def upload(
        self,
        key: tuple[int, ...],
        device: Node,
        trained: dict | None,
        start: dict | None,
        base: dict | None,
    ) -> tuple[float, dict | None]:
        """Client ``device``'s model ``trained`` from ``start`` on its way up: its bits on
        air and what the server reconstructs. Without a codec ``full_bits(device)`` and
        ``trained``; with one, Δ = trained − start encoded (the ``codec_up`` stream of
        ``key``; the device's memory added and kept under error feedback) and the
        server's ``base`` + Δ̂ (integer tensors as sent); no state: the size from the
        shapes."""
        codec = self.uplink
        if codec is None:
            return self.full_bits(device), trained
        beside = self.beside_bits(device)
        if trained is None or start is None or base is None:
            return nominal_bits(codec, self.shapes()) + beside, None
        import torch

        if not all(
            bool(torch.isfinite(v).all()) for v in trained.values() if v.is_floating_point()
        ):
            # (a diverged update: dropped at the server, never into the memory)
            return nominal_bits(codec, self.shapes(), estimate=True) + beside, trained
        raw = self.raw_keys()

        def coded(k: str, v: Any) -> bool:
            return v.is_floating_point() and k not in raw

        delta = {k: (v - start[k]) if coded(k, v) else v for k, v in trained.items()}
        rng = self.world.streams.generator("codec_up", *key)
        encoded = encode_state(codec, delta, rng, self.memory.get(device.name), raw)
        if encoded.memory is not None:
            self.memory[device.name] = encoded.memory
        state = {k: (base[k] + d) if coded(k, d) else d for k, d in encoded.decoded.items()}
        return encoded.bits + beside, state

    def raw_keys(self) -> frozenset[str]:
        """The floating tensors sent as they are (built once)."""
        if self._raw is None:
            if self._raw_of is not None:
                self._raw = frozenset(self._raw_of())
            else:
                import torch

                world = self.world
                with torch.random.fork_rng(devices=[]):
                    model = world.model.spec.build(
                        world.dataset.input_shape, world.dataset.num_classes
                    )
                self._raw = frozenset(k for k, b in model.named_buffers() if b.is_floating_point())
        return self._raw

    def forget(self, device: Node) -> None:
        """``device`` left mid-round: its memory went with its state."""
        self.memory.pop(device.name, None)

    def estimated_bits(self, direction: str, device: Node | None) -> float:
        """A copy's size before it is encoded: ``full_bits(device)`` without a codec,
        else the codec's size from the shapes (its stated bound where the size depends
        on the values)."""
        codec = self.uplink if direction == "uplink" else self.downlink
        if codec is None:
            return self.full_bits(device)
        return nominal_bits(codec, self.shapes(), estimate=True) + self.beside_bits(device)

    def shapes(self) -> list[tuple[int, bool, int]]:
        """``(numel, is_float, bits per integer value)`` of every tensor of the global
        model's state (built once)."""
        if self._shapes is None and self._shapes_of is not None:
            self._shapes = self._shapes_of()
        if self._shapes is None:
            state, raw = self.world.init_model_state(), self.raw_keys()
            self._shapes = [
                (t.numel(), t.is_floating_point() and k not in raw, t.element_size() * 8)
                for k, t in state.items()
            ]
        return self._shapes

    def state_dict(self) -> dict[str, Any]:
        from netfl.learning.params import clone_state

        return {d: clone_state(m) for d, m in self.memory.items()}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self.memory = dict(state)
