"""The radio access network as SimPy processes: ``transfer(src, dst, bits, kind)``.

:class:`Radio` owns the mechanism common to every link mode (direction,
record, radio energy); a link mode supplies :meth:`Radio._deliver`, the
process that ends when the bits have arrived.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Generator
from typing import Any

import simpy

from netfl.nodes import Node
from netfl.radio.sharing import ProcessorSharing
from netfl.records import Recorder, TransferRecord

__all__ = ["Radio", "FixedRateRadio", "direction_of"]


def direction_of(src: Node, dst: Node) -> str:
    """``"uplink"`` (UE → BS), ``"downlink"`` (BS → UE) or ``"d2d"`` (UE → UE)."""
    if src.is_device and not dst.is_device:
        return "uplink"
    if not src.is_device and dst.is_device:
        return "downlink"
    if src.is_device and dst.is_device:
        return "d2d"
    raise ValueError(f"no radio link from {src.name} to {dst.name}")


class Radio(ABC):
    """Base of the link modes."""

    mode: str = ""

    def __init__(self, env: simpy.Environment, recorder: Recorder):
        self.env = env
        self.recorder = recorder

    def transfer(
        self, src: Node, dst: Node, size_bits: float, kind: str, num_models: int = 0
    ) -> simpy.Process:
        """Send ``size_bits`` from ``src`` to ``dst``.

        Returns a process that ends when the last bit is delivered; its value is
        the :class:`~netfl.records.TransferRecord` it appended. ``kind`` labels
        the payload (``"model_down"``, ``"model_up"``, ...); ``num_models`` is
        the number of model copies carried.
        """
        if size_bits < 0:
            raise ValueError(f"negative transfer size for {kind!r}")
        return self.env.process(self._transfer(src, dst, float(size_bits), kind, num_models))

    def _transfer(
        self, src: Node, dst: Node, size_bits: float, kind: str, num_models: int
    ) -> Generator[simpy.Event, Any, TransferRecord]:
        direction = direction_of(src, dst)
        start = self.env.now
        extra = yield from self._deliver(src, dst, size_bits, direction)
        duration = self.env.now - start
        tx_j = src.compute.tx_power_w * duration
        rx_j = dst.compute.rx_power_w * duration
        src.energy.tx_s += duration
        src.energy.tx_j += tx_j
        dst.energy.rx_s += duration
        dst.energy.rx_j += rx_j
        record = TransferRecord(
            round=self.recorder.round,
            src=src.name,
            dst=dst.name,
            kind=kind,
            direction=direction,
            size_bits=size_bits,
            start_s=start,
            end_s=self.env.now,
            num_models=num_models,
            tx_energy_j=tx_j,
            rx_energy_j=rx_j,
            **(extra or {}),
        )
        self.recorder.transfers.append(record)
        return record

    @abstractmethod
    def _deliver(
        self, src: Node, dst: Node, size_bits: float, direction: str
    ) -> Generator[simpy.Event, Any, dict[str, float] | None]:
        """Yield until ``size_bits`` have been delivered from ``src`` to ``dst``.

        May return extra accounting fields of the transfer record.
        """


def _own_rate_bps(src: Node, dst: Node, direction: str) -> float:
    """A device's own fixed rate for a transfer [bit/s].

    Uplink: the sender's uplink rate; downlink: the receiver's downlink rate;
    D2D: the smaller of the sender's uplink and the receiver's downlink.
    """
    if direction == "uplink":
        return src.link.uplink_bps
    if direction == "downlink":
        return dst.link.downlink_bps
    return min(src.link.uplink_bps, dst.link.downlink_bps)


class FixedRateRadio(Radio):
    """``fixed_rate`` link mode: per-device rates from link profiles.

    With ``shared=False`` every device has a dedicated link at its profile's
    rate (EcoFed's tc-emulated testbed): a transfer of S bits takes exactly
    ``S / rate``. With ``shared=True`` the BS capacity of each direction is
    shared by processor sharing (max-min fair, each transfer capped by its
    device's own rate) among concurrent transfers, event-driven. D2D transfers
    do not pass through the BS and are never shared.
    """

    mode = "fixed_rate"

    def __init__(
        self,
        env: simpy.Environment,
        recorder: Recorder,
        shared: bool = False,
        uplink_capacity_bps: float | None = None,
        downlink_capacity_bps: float | None = None,
    ):
        super().__init__(env, recorder)
        self.shared = shared
        self._media: dict[str, ProcessorSharing] = {}
        if shared:
            if uplink_capacity_bps is None or downlink_capacity_bps is None:
                raise ValueError("shared fixed_rate links need uplink and downlink capacities")
            self._media = {
                "uplink": ProcessorSharing(env, uplink_capacity_bps),
                "downlink": ProcessorSharing(env, downlink_capacity_bps),
            }

    def _deliver(
        self, src: Node, dst: Node, size_bits: float, direction: str
    ) -> Generator[simpy.Event, Any, dict[str, float] | None]:
        rate_bps = _own_rate_bps(src, dst, direction)
        medium = self._media.get(direction)
        if medium is None:
            yield self.env.timeout(size_bits / rate_bps)
        else:
            yield medium.send(size_bits, cap_bps=rate_bps)
        return None

    def __repr__(self) -> str:
        return f"FixedRateRadio(shared={self.shared})"
