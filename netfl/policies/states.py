"""What an algorithm or a resource policy may know of each device now.

:class:`DeviceStates` is the round context's ``states`` (docs/policies.md): per device
and direction the mean SNR, the expected rate for a share of the bandwidth, the expected
time to move N bits now, the last measured transfer, the compute speed and what a
compute step would cost, and the energy spent so far. It asks the radio and the compute
engine; every radio answers with what it can know:

=================  ===================================================================
fixed-rate links   no SNR (NaN); rates are the link profile's (× a share; where the
                   BS's capacity is shared, what a transfer gets alone)
OFDMA cell         the mean SNR as ``coverage`` reports it — the allocation SNR of one
                   RB at full power (:class:`~netfl.algorithms.context.LinkStates`) —
                   and γ̃·M·B_RB·f for M = share × the carrier's data RBs; the current
                   block's SNR where fading is drawn per link
network            the same over the device's serving cell, with the interference now
                   (``coverage`` reports it at full load under ``interference:
                   activity``: what the device gets whatever the others do)
=================  ===================================================================

Expected rates and times are means over the fading, before any queueing behind other
transfers, an LTE grant's cycles, HARQ round trips, an RRC promotion or a backhaul hop:
what a planner can know before the transfer runs (the transfer's record then has what
happened). No battery is modelled: :meth:`DeviceStates.battery_j` is NaN.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from collections.abc import Callable

    from netfl.compute.engine import ComputeEngine
    from netfl.core.nodes import Node
    from netfl.radio.radio import Radio

__all__ = ["DeviceStates", "MeasuredTransfer"]


@dataclass(frozen=True)
class MeasuredTransfer:
    """A device's last transfer of one direction, as it happened."""

    #: its bits delivered over its duration [bit/s]
    rate_bps: float
    #: from its start (queueing included) to its last bit [s]
    duration_s: float
    #: when it ended [s of simulated time]
    end_s: float
    #: bits delivered [bit]
    bits: float
    #: its SNR averaged over its airtime [dB] (NaN on fixed-rate links)
    mean_snr_db: float = math.nan


class DeviceStates:
    """The state of every device now, for a decision (:mod:`netfl.policies.states`).

    Parameters
    ----------
    radio : Radio
        The run's radio.
    compute : ComputeEngine
        The run's compute engine.
    server_of : callable
        ``device → Node``: the node its uplink goes to (the BS, or its edge).
    """

    def __init__(self, radio: Radio, compute: ComputeEngine, server_of: Callable[[Node], Node]):
        self.radio = radio
        self.compute = compute
        self._server_of = server_of

    def _link(self, device: Node, direction: str) -> tuple[Node, Node]:
        if direction not in ("uplink", "downlink"):
            raise ValueError(f"direction must be 'uplink' or 'downlink', got {direction!r}")
        server = self._server_of(device)
        return (device, server) if direction == "uplink" else (server, device)

    # -- the channel ---------------------------------------------------------------
    def mean_snr_db(self, device: Node, direction: str = "uplink") -> float:
        """Mean SNR of ``device``'s link [dB]: the ``coverage`` table's
        ``uplink_snr_db`` / ``downlink_snr_db`` (large-scale loss, no fading, the whole
        power in one RB; a network: the SINR with the interference now); NaN on
        fixed-rate links."""
        return self.radio.mean_snr_db(*self._link(device, direction))

    def block_snr_db(self, device: Node, direction: str = "uplink") -> float:
        """SNR of ``device``'s link in the current fading block [dB]: :meth:`mean_snr_db`
        plus the block's gain ``10·log10 |h|²`` — a sounding: a transfer on the link
        starting now has that gain in its first block (its per-RB SNR the sounding where
        its power is not spread over more RBs, docs/policies.md). Known where fading is drawn per link
        (``cell.link.fading_draw: per_link``); NaN otherwise and on fixed-rate links."""
        return self.radio.block_snr_db(*self._link(device, direction))

    def expected_rate_bps(
        self,
        device: Node,
        direction: str = "uplink",
        share: float = 1.0,
        power_w: float | None = None,
    ) -> float:
        """What one transfer of ``device`` holding ``share`` of the direction's bandwidth
        carries on average now [bit/s] (``power_w``: the uplink at that transmit power
        [W]; None: its power class). See :meth:`netfl.radio.radio.Radio.expected_rate_bps`."""
        if not 0.0 < share <= 1.0:
            raise ValueError(f"share must be in (0, 1], got {share!r}")
        return self.radio.expected_rate_bps(*self._link(device, direction), share, power_w)

    def expected_time_s(
        self,
        device: Node,
        bits: float,
        direction: str = "uplink",
        share: float = 1.0,
        power_w: float | None = None,
    ) -> float:
        """Time to move ``bits`` [bit] now at :meth:`expected_rate_bps` [s] (inf: no
        rate)."""
        if bits <= 0:
            return 0.0
        rate = self.expected_rate_bps(device, direction, share, power_w)
        return bits / rate if rate > 0 else math.inf

    def shares_bandwidth(self, direction: str = "uplink") -> bool:
        """Whether concurrent transfers of ``direction`` divide one bandwidth (OFDMA, a
        shared fixed-rate BS) or each have a dedicated link of their own."""
        return self.radio.shares_bandwidth(direction)

    def power_class_w(self, device: Node) -> float:
        """The most ``device`` may transmit [W] (NaN on fixed-rate links)."""
        return self.radio.power_class_w(device)

    def last_transfer(self, device: Node, direction: str = "uplink") -> MeasuredTransfer | None:
        """``device``'s last transfer of ``direction`` (``"uplink"``, ``"downlink"`` or
        ``"d2d"``, sent or received), cut ones included; None before its first."""
        record = self.radio.last_transfers.get((device.name, direction))
        if record is None:
            return None
        return MeasuredTransfer(
            record.mean_rate_bps,
            record.duration_s,
            record.end_s,
            record.delivered_bits,
            record.mean_snr_db,
        )

    # -- compute and energy --------------------------------------------------------
    def frequency_hz(self, device: Node) -> float:
        """``device``'s CPU frequency now [Hz] (NaN: its profile has no DVFS)."""
        return self.compute.frequency_hz(device)

    def compute_flops_per_s(self, device: Node) -> float:
        """``device``'s training speed now [FLOP/s]: its profile's effective FLOP/s, or
        under DVFS its current frequency over its cycles per FLOP."""
        return 1.0 / self.compute.step_time_s(device, 1.0)

    def compute_time_s(
        self,
        device: Node,
        flops: float,
        samples: float | None = None,
        frequency_hz: float | None = None,
    ) -> float:
        """How long a compute step of ``flops`` (``samples``) would take on ``device``
        once it has a free slot [s] (``frequency_hz``: at that CPU frequency)."""
        return self.compute.step_time_s(device, flops, samples, frequency_hz)

    def compute_energy_j(
        self,
        device: Node,
        flops: float,
        samples: float | None = None,
        frequency_hz: float | None = None,
    ) -> float:
        """The energy that step would cost [J]."""
        return self.compute.step_energy_j(device, flops, samples, frequency_hz)

    def energy_spent_j(self, device: Node) -> float:
        """``device``'s compute and modem energy since the run began [J] (its platform's
        idle power is accounted per round apart: ``rounds.csv``)."""
        return device.energy.total_j

    def battery_j(self, device: Node) -> float:
        """Energy left in ``device``'s battery [J]: NaN, no battery is modelled."""
        return math.nan
