"""The ``fixed_rate`` link mode: every device at its link profile's rates.

:class:`FixedRateRadio` is a :class:`~netfl.radio.radio.LinkRadio` whose delivery is a
timer (a dedicated link: ``S / rate``) or a flow of processor sharing (the BS's capacity
of each direction shared max-min fair, each flow capped by its device's own rate).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Generator
from typing import Any

import simpy

from netfl.core.activity import TransferCut
from netfl.core.nodes import Node
from netfl.core.records import Recorder
from netfl.radio.radio import LinkRadio, Progress, direction_of
from netfl.radio.radio_energy import BsPowerModel
from netfl.radio.sharing import ProcessorSharing

__all__ = ["FixedRateRadio"]


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


class FixedRateRadio(LinkRadio):
    """``fixed_rate`` link mode: per-device rates from link profiles.

    With ``shared=False`` every device has a dedicated link at its profile's
    rate (EcoFed's tc-emulated testbed): a transfer of S bits takes exactly
    ``S / rate``. With ``shared=True`` the BS capacity of each direction is
    shared by processor sharing (max-min fair, each transfer capped by its
    device's own rate) among concurrent transfers, event-driven. D2D transfers
    do not pass through the BS and are never shared. A multicast runs at the
    smallest downlink rate of its receivers.
    """

    mode = "fixed_rate"

    def __init__(
        self,
        env: simpy.Environment,
        recorder: Recorder,
        shared: bool = False,
        uplink_capacity_bps: float | None = None,
        downlink_capacity_bps: float | None = None,
        bs: Node | None = None,
        bs_power: BsPowerModel | None = None,
    ):
        super().__init__(env, recorder, bs, bs_power)
        self.shared = shared
        self._media: dict[str, ProcessorSharing] = {}
        if shared:
            if uplink_capacity_bps is None or downlink_capacity_bps is None:
                raise ValueError("shared fixed_rate links need uplink and downlink capacities")
            self._media = {
                "uplink": ProcessorSharing(env, uplink_capacity_bps),
                "downlink": ProcessorSharing(env, downlink_capacity_bps),
            }

    def _send(
        self, size_bits: float, rate_bps: float, direction: str
    ) -> tuple[simpy.Event, Progress, Callable[[], float]]:
        """Start sending: the event of the last bit, its :data:`Progress` so far, and a
        withdrawal (takes the bits off the medium; returns those delivered)."""
        medium = self._media.get(direction)
        start = self.env.now
        if medium is None:

            def sent() -> tuple[float, dict[str, float]]:
                airtime = self.env.now - start
                return min(rate_bps * airtime, size_bits), {"airtime_s": airtime}

            return self.env.timeout(size_bits / rate_bps), sent, lambda: sent()[0]
        flow = medium.add(size_bits, cap_bps=rate_bps)

        def shared() -> tuple[float, dict[str, float]]:
            bits, airtime = medium.progress(flow)
            return bits, {"airtime_s": airtime}

        return flow.done, shared, lambda: flow.size_bits - medium.withdraw(flow)

    def expected_rate_bps(
        self, src: Node, dst: Node, share: float = 1.0, power_w: float | None = None
    ) -> float:
        """The link's rate at ``share`` [bit/s]: ``share`` × its own rate on a dedicated
        link; where the BS's capacity C is shared, ``min(own rate, share · C)`` (what it
        gets alone; concurrent transfers split C max-min fair)."""
        direction = direction_of(src, dst)
        own = _own_rate_bps(src, dst, direction)
        medium = self._media.get(direction)
        if medium is None:
            return share * own
        return min(own, share * medium.capacity)

    def shares_bandwidth(self, direction: str) -> bool:
        return direction in self._media

    def _granted_rate_bps(self, src: Node, dst: Node, direction: str) -> float:
        """The cap of a transfer: its own rate, or its uplink grant's share of it."""
        grant = self.grants.get(src.name) if direction == "uplink" else None
        if grant is None or grant.share is None:
            return _own_rate_bps(src, dst, direction)
        return self.expected_rate_bps(src, dst, grant.share)

    def _deliver(
        self, src: Node, dst: Node, size_bits: float, direction: str
    ) -> Generator[simpy.Event, Any, dict[str, float] | None]:
        done, _, withdraw = self._send(
            size_bits, self._granted_rate_bps(src, dst, direction), direction
        )
        try:
            yield done
        except simpy.Interrupt as stop:
            raise TransferCut(stop.cause, withdraw()) from None
        return None

    def _deliver_multicast(
        self, src: Node, receivers: list[Node], size_bits: float, progress: list[Progress]
    ) -> Generator[simpy.Event, Any, dict[str, float] | None]:
        rate = min((r.link.downlink_bps for r in receivers), default=math.inf)
        done, sent, withdraw = self._send(size_bits, rate, "downlink")
        progress.append(sent)
        try:
            yield done
        except simpy.Interrupt as stop:  # (every receiver left)
            raise TransferCut(stop.cause, withdraw()) from None
        return None

    def __repr__(self) -> str:
        return f"FixedRateRadio(shared={self.shared})"
