"""The radio access network as SimPy processes: ``transfer`` and ``broadcast``.

:class:`Radio` owns the mechanism common to every link mode (direction,
record, radio energy by state, BS energy, tables); a link mode supplies
:meth:`Radio._deliver` (unicast) and :meth:`Radio._deliver_multicast`, the
processes that end when the bits have arrived (the ``fixed_rate`` mode:
:mod:`netfl.radio.fixed_rate_radio`).
"""

from __future__ import annotations

import itertools
import math
from abc import ABC, abstractmethod
from collections.abc import Callable, Generator, Sequence
from dataclasses import dataclass
from typing import Any

import pandas as pd
import simpy

from netfl.core.activity import Activities, DeviceCut, TransferCut, quiet_cut
from netfl.core.nodes import Node
from netfl.core.records import Recorder, TransferRecord
from netfl.radio.radio_energy import BsPowerModel, BsRadioMeter, UeRadioStates

#: a multicast's progress so far: its bits delivered and its accounting fields
#: (``airtime_s``; on OFDMA links ``rb_subframes`` too)
Progress = Callable[[], tuple[float, dict[str, float]]]

__all__ = ["COVERAGE_COLUMNS", "LinkRadio", "Radio", "UplinkGrant", "direction_of"]


@dataclass(frozen=True)
class UplinkGrant:
    """What a resource policy grants a device's uplink for a round (:meth:`Radio.grant`).

    ``share``: the most of the uplink's bandwidth its transfers may hold, in (0, 1] (an
    OFDMA carrier: a cap of ``share`` × its data RBs; a fixed-rate link: ``share`` × the
    link's rate, or × the BS's capacity where links share it); None: as without a policy.
    ``power_w``: its transmit power [W], at most its power class (OFDMA links only: the
    SNR scales by ``power_w`` / the class's power; under open-loop power control it is
    the most the device may transmit); None: its power class.
    """

    share: float | None = None
    power_w: float | None = None


#: the columns of a radio's coverage frame (:meth:`Radio.coverage`)
COVERAGE_COLUMNS = [
    "device",
    "uplink_snr_db",
    "downlink_snr_db",
    "uplink_starved",
    "downlink_starved",
    "starved",
]


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
    """Base of the link modes.

    Parameters
    ----------
    bs : Node, optional
        The base station; with it, the BS is charged by ``bs_power`` while it
        carries FL traffic (:class:`~netfl.radio.radio_energy.BsRadioMeter`).
    bs_power : BsPowerModel, optional
        Load-dependent BS power model (default: EARTH macro values).
    """

    mode: str = ""

    def __init__(
        self,
        env: simpy.Environment,
        recorder: Recorder,
        bs: Node | None = None,
        bs_power: BsPowerModel | None = None,
    ):
        self.env = env
        self.recorder = recorder
        self.ue_states = UeRadioStates(env)
        self._active_downlink = 0
        #: multicast group ids (a multi-cell radio's cells share one counter)
        self.group_ids = itertools.count(1)
        #: called with a transfer's nodes when it starts (moving devices: the world
        #: brings their positions up to now), or None
        self.mover: Callable[[Sequence[Node]], None] | None = None
        #: the devices' running activities (a departure or a deadline cuts a transfer
        #: there: :mod:`netfl.core.activity`); None: transfers are never cut
        self.activities: Activities | None = None
        self.bs_meter = (
            BsRadioMeter(env, bs, bs_power or BsPowerModel(), self.downlink_load)
            if bs is not None
            else None
        )
        #: the uplink grants in force, by device name (:meth:`grant`; a network's cells
        #: share their network's)
        self.grants: dict[str, UplinkGrant] = {}
        #: each device's last transfer by direction: ``(device name, direction)`` → its
        #: record (a network's cells share their network's)
        self.last_transfers: dict[tuple[str, str], TransferRecord] = {}

    # -- API -------------------------------------------------------------------
    def transfer(
        self, src: Node, dst: Node, size_bits: float, kind: str, num_models: int = 0
    ) -> simpy.Process:
        """Send ``size_bits`` from ``src`` to ``dst``.

        Returns a process that ends when the last bit is delivered; its value is
        the :class:`~netfl.core.records.TransferRecord` it appended. ``kind`` labels
        the payload (``"model_down"``, ``"model_up"``, ...); ``num_models`` is
        the number of model copies carried.
        """
        if not size_bits >= 0:
            raise ValueError(f"transfer size of {kind!r} must be >= 0 (got {size_bits})")
        return quiet_cut(self.env.process(self.carry(src, dst, float(size_bits), kind, num_models)))

    def broadcast(
        self,
        src: Node,
        receivers: Sequence[Node],
        size_bits: float,
        kind: str,
        num_models: int = 0,
    ) -> simpy.Process:
        """Multicast ``size_bits`` from the BS to every receiver at once.

        One transmission at the rate of the weakest receiver (fixed rate: the
        smallest downlink rate; OFDMA: the smallest SNR in every fading block).
        The process's value is one :class:`~netfl.core.records.TransferRecord` per
        receiver (same interval, same ``multicast_group``); each counts
        ``num_models`` model copies, the bits on air count once.
        """
        receivers = list(receivers)
        if not size_bits >= 0:
            raise ValueError(f"broadcast size of {kind!r} must be >= 0 (got {size_bits})")
        if not receivers:
            raise ValueError(f"broadcast {kind!r} has no receivers")
        for r in receivers:
            if direction_of(src, r) != "downlink":
                raise ValueError(f"broadcast goes from the BS to UEs, not {src.name} → {r.name}")
        return self.env.process(
            self.carry_multicast(src, receivers, float(size_bits), kind, num_models)
        )

    # -- state and grants (docs/policies.md) -------------------------------------------
    def grant(self, device: Node, grant: UplinkGrant | None) -> None:
        """Put ``grant`` in force on ``device``'s uplink transfers that start from now
        (None: withdraw it); ``ValueError`` where :meth:`check_grant` finds it wrong."""
        if grant is None or (grant.share is None and grant.power_w is None):
            self.grants.pop(device.name, None)
            return
        self.check_grant(device, grant)
        self.grants[device.name] = grant

    def check_grant(self, device: Node, grant: UplinkGrant) -> None:
        """``ValueError`` for a share outside (0, 1] or a power above the device's class
        (:meth:`power_class_w`) or on a link without one."""
        if grant.share is not None and not 0.0 < grant.share <= 1.0:
            raise ValueError(
                f"{device.name}: an uplink share must be in (0, 1], got {grant.share!r}"
            )
        if grant.power_w is not None:
            limit = self.power_class_w(device)
            if math.isnan(limit):
                raise ValueError(f"{device.name}: a {self.mode} link has no transmit power to set")
            if not 0.0 < grant.power_w <= limit * (1.0 + 1e-12):
                raise ValueError(
                    f"{device.name}: transmit power {grant.power_w!r} W is outside "
                    f"(0, {limit:g}] W, its power class"
                )

    def power_class_w(self, device: Node) -> float:
        """The most ``device`` may transmit [W] (NaN: its links model no power)."""
        return math.nan

    def shares_bandwidth(self, direction: str) -> bool:
        """Whether concurrent transfers of ``direction`` divide one bandwidth (an OFDMA
        carrier, a BS's shared capacity) rather than each having its own link."""
        return True

    def uplink_pool(self, device: Node) -> int:
        """The uplink whose bandwidth ``device``'s shares divide (one cell: 0; a network:
        its serving cell)."""
        return 0

    def mean_snr_db(self, src: Node, dst: Node) -> float:
        """The link's mean SNR [dB] as ``coverage`` reports it: the allocation SNR of one
        RB (:class:`~netfl.algorithms.context.LinkStates`), at full power; NaN where links
        have fixed rates."""
        return math.nan

    def block_snr_db(self, src: Node, dst: Node) -> float:
        """The link's SNR [dB] in the current fading block: :meth:`mean_snr_db` × the
        block's gain ``|h|²`` (a transfer on it starting now has that gain in its first
        block; its per-RB SNR also depends on how its power spreads over its RBs); NaN where no fading state exists between transfers (fixed rates, or fading drawn
        per transfer: ``cell.link.fading_draw: per_link`` gives one,
        :mod:`netfl.radio.link_fading`)."""
        return math.nan

    @abstractmethod
    def expected_rate_bps(
        self, src: Node, dst: Node, share: float = 1.0, power_w: float | None = None
    ) -> float:
        """What a transfer ``src → dst`` holding ``share`` of its direction's bandwidth
        would carry on average now [bit/s] (at ``power_w``, or its class's power), before
        any queueing: a fixed rate's link rate (× ``share``), an OFDMA carrier's
        ``γ̃ · M · B_RB · f`` with M = ``share`` × its data RBs (capped as its transfers
        are) and γ̃ the fading's mean efficiency at the allocation SNR of M RBs."""

    def watch(self, activities: Activities) -> None:
        """Register every transfer's devices in ``activities`` while their bits are on
        air, so that a departure or a deadline cuts the transfer there."""
        self.activities = activities

    def downlink_load(self) -> float:
        """Share of downlink resources FL transfers hold now (fixed rate: 1 while any)."""
        return 1.0 if self._active_downlink else 0.0

    def settle(self) -> None:
        """Charge pending RRC tails and the BS meter up to now (called at round ends)."""
        self.ue_states.settle()
        if self.bs_meter is not None:
            self.bs_meter.update()

    def tables(self) -> dict[str, pd.DataFrame]:
        """Further tables of the run written beside the transfers (none for fixed rate)."""
        return {}

    def server_aliases(self) -> dict[str, str]:
        """Nodes whose transfers reach the FL server itself, by name → the server's name
        (a network's cells at the server's site; none in one cell, whose BS is it)."""
        return {}

    def coverage(self, bs: Node, devices: Sequence[Node]) -> pd.DataFrame:
        """Per device: ``device``, mean uplink/downlink SNR [dB], whether each direction
        is starved (no rate) and ``starved``: either is (fixed-rate links serve every
        device)."""
        nan = [math.nan] * len(devices)
        return pd.DataFrame(
            {
                "device": [d.name for d in devices],
                "uplink_snr_db": nan,
                "downlink_snr_db": nan,
                "uplink_starved": [False] * len(devices),
                "downlink_starved": [False] * len(devices),
                "starved": [False] * len(devices),
            }
        )

    # -- mechanism ---------------------------------------------------------------
    def begin(self, nodes: Sequence[Node], direction: str) -> None:
        self.ue_states.start(nodes)
        self._active_downlink += direction == "downlink"
        if self.bs_meter is not None and direction != "d2d":
            self.bs_meter.active += 1
            self.bs_meter.update()

    def end(self, nodes: Sequence[Node], direction: str) -> None:
        self.ue_states.end(nodes)
        self._active_downlink -= direction == "downlink"
        if self.bs_meter is not None and direction != "d2d":
            self.bs_meter.active -= 1
            self.bs_meter.update()

    def transmit_power_w(self, device: Node, direction: str) -> float:
        """What ``device`` radiates on a transfer of ``direction`` [W]: its uplink grant's
        power, else its power class (NaN: its links have none)."""
        grant = self.grants.get(device.name) if direction == "uplink" else None
        if grant is not None and grant.power_w is not None:
            return grant.power_w
        return self.power_class_w(device)

    @staticmethod
    def _charge(
        node: Node,
        role: str,
        duration_s: float,
        airtime_s: float,
        bits: float = 0.0,
        radiated_w: float = math.nan,
    ) -> float:
        """A UE's radio energy of one transfer: tx/rx power × airtime + wait power ×
        queueing; the tx/rx power P = β + α·R grows with the throughput on air R = bits /
        airtime [Mbit/s] where the profile has a slope α (Huang et al. 2012), and the tx
        power by ``tx_power_per_w`` × the power radiated (``radiated_w``; NaN: none)."""
        if not node.is_device:
            return 0.0  # the BS is charged by its power model (BsRadioMeter)
        wait_s = max(duration_s - airtime_s, 0.0)
        c = node.compute
        p, slope = (
            (c.tx_power_w, c.tx_power_per_mbps_w)
            if role == "tx"
            else (c.rx_power_w, c.rx_power_per_mbps_w)
        )
        if role == "tx" and c.tx_power_per_w and radiated_w == radiated_w:
            p += c.tx_power_per_w * radiated_w
        if slope and airtime_s > 0:
            p += slope * bits / airtime_s / 1e6
        e = node.energy
        if role == "tx":
            e.tx_s += airtime_s
            e.tx_j += p * airtime_s
        else:
            e.rx_s += airtime_s
            e.rx_j += p * airtime_s
        e.wait_s += wait_s
        e.wait_j += node.compute.radio_wait_power_w * wait_s
        return p * airtime_s + node.compute.radio_wait_power_w * wait_s

    def record(
        self,
        src: Node,
        dst: Node,
        kind: str,
        direction: str,
        size_bits: float,
        start_s: float,
        num_models: int,
        extra: dict[str, float],
        group: int = -1,
        cut: TransferCut | None = None,
        radiated_w: float | None = None,
        analog: bool = False,
    ) -> TransferRecord:
        """Append the record of a transfer that ends now (``cut``: cut short, with the
        bits it delivered) and charge its UEs' radio energy (the sender's at
        ``radiated_w``, what it radiated from the transfer's start; None: its grant or
        power class now; ``analog``: analog symbols, no digital rate on air, so no
        throughput term of the modem's power)."""
        if cut is not None:
            extra = {**extra, "delivered_bits": cut.delivered_bits, "outcome": cut.cause.reason}
        duration = self.env.now - start_s
        airtime = float(extra.pop("airtime_s", duration))
        delivered = float(extra.get("delivered_bits", size_bits))
        record = TransferRecord(
            round=self.recorder.round,
            src=src.name,
            dst=dst.name,
            kind=kind,
            direction=direction,
            size_bits=size_bits,
            start_s=start_s,
            end_s=self.env.now,
            num_models=num_models,
            tx_energy_j=self._charge(
                src,
                "tx",
                duration,
                airtime,
                0.0 if analog else delivered,
                self.transmit_power_w(src, direction) if radiated_w is None else radiated_w,
            )
            if src.is_device
            else 0.0,
            rx_energy_j=self._charge(dst, "rx", duration, airtime, delivered),
            airtime_s=airtime,
            multicast_group=group,
            **extra,
        )
        self.recorder.transfers.append(record)
        for node in (src, dst):
            if node.is_device:
                self.last_transfers[(node.name, direction)] = record
        return record

    def promote(self, nodes: Sequence[Node]) -> Generator[simpy.Event, Any, None]:
        """Wait until the devices among ``nodes`` are RRC connected: an idle one (no
        transfer, its tail over) with a promotion in its profile is promoted now, and
        charged for it (:meth:`UeRadioStates.promote`)."""
        until = max((self.ue_states.promote(n) for n in nodes if n.is_device), default=0.0)
        if until > self.env.now:
            yield self.env.timeout(until - self.env.now)

    def enter(self, nodes: Sequence[Node]) -> object:
        """Register the running process as the devices' activity (fails with the
        :class:`~netfl.core.activity.DeviceCut` of one that is cut); returns its key."""
        key = self.env.active_process
        if self.activities is not None:
            self.activities.enter(nodes, key)
        return key

    def leave(self, nodes: Sequence[Node], key: object) -> None:
        if self.activities is not None:
            self.activities.leave(nodes, key)

    @abstractmethod
    def carry(
        self, src: Node, dst: Node, size_bits: float, kind: str, num_models: int
    ) -> Generator[simpy.Event, Any, TransferRecord | None]:
        """The steps of :meth:`transfer` (a composing radio yields from a part's): yield
        until the bits have arrived, append the record(s), return the transfer's."""

    @abstractmethod
    def carry_multicast(
        self, src: Node, receivers: list[Node], size_bits: float, kind: str, num_models: int
    ) -> Generator[simpy.Event, Any, list[TransferRecord]]:
        """The steps of :meth:`broadcast`: one record per receiver."""


class LinkRadio(Radio):
    """A radio whose transfers are each one delivery over one link (a single cell's
    fixed-rate or OFDMA links): :meth:`carry` registers the devices, charges their
    radio states and the BS meter around :meth:`_deliver` and records the transfer;
    :meth:`carry_multicast` likewise around :meth:`_deliver_multicast`."""

    def carry(
        self, src: Node, dst: Node, size_bits: float, kind: str, num_models: int
    ) -> Generator[simpy.Event, Any, TransferRecord]:
        if self.mover is not None:
            self.mover((src, dst))
        yield from self.promote((src, dst))
        direction = direction_of(src, dst)
        start = self.env.now
        # (what it radiates is set when it starts: a grant withdrawn at a cut is not)
        radiated = self.transmit_power_w(src, direction) if src.is_device else None
        key = self.enter((src, dst))
        self.begin((src, dst), direction)
        head = (src, dst, kind, direction, size_bits, start, num_models)
        try:
            extra = yield from self._deliver(src, dst, size_bits, direction)
        except TransferCut as cut:  # (a device left, or the deadline passed)
            self.end((src, dst), direction)
            self.record(*head, cut.extra, cut=cut, radiated_w=radiated)
            raise cut.cause from None
        self.leave((src, dst), key)
        self.end((src, dst), direction)
        return self.record(*head, extra or {}, radiated_w=radiated)

    def carry_multicast(
        self, src: Node, receivers: list[Node], size_bits: float, kind: str, num_models: int
    ) -> Generator[simpy.Event, Any, list[TransferRecord]]:
        """One transmission to every receiver; a receiver cut meanwhile (it left, or
        the deadline passed) gets its record at the cut with the bits it had then, the
        others theirs at the end; when the last one is cut the transmission stops there.
        Cut before it starts: no receiver left, no transfer."""
        if self.activities is not None:
            receivers = [r for r in receivers if self.activities.is_cut(r) is None]
            if not receivers:
                return []
        if self.mover is not None:
            self.mover(receivers)
        yield from self.promote(receivers)
        if self.activities is not None:  # (cut while they were promoted: not receivers)
            receivers = [r for r in receivers if self.activities.is_cut(r) is None]
            if not receivers:
                return []
        start = self.env.now
        group = next(self.group_ids)
        progress: list[Progress] = []
        records: dict[str, TransferRecord] = {}
        me = self.env.active_process

        def cut_receiver(r: Node) -> Callable[[DeviceCut], None]:
            def on_cut(cause: DeviceCut) -> None:
                delivered, fields = progress[0]() if progress else (0.0, {"airtime_s": 0.0})
                self.ue_states.end((r,))
                records[r.name] = self.record(
                    src,
                    r,
                    kind,
                    "downlink",
                    size_bits,
                    start,
                    num_models,
                    dict(fields),
                    group=group,
                    cut=TransferCut(cause, delivered),
                )
                if len(records) == len(receivers) and me.is_alive:
                    me.interrupt(cause)  # (nobody listens any more: stop sending)

            return on_cut

        for r in receivers:
            if self.activities is not None:
                self.activities.enter((r,), (group, r.name), cut_receiver(r))
        self.begin((src, *receivers), "downlink")
        try:
            extra = yield from self._deliver_multicast(src, receivers, size_bits, progress)
        except (TransferCut, simpy.Interrupt):  # (in the HARQ tail: its bits were there)
            extra = None  # (every receiver has its record)
        stayed = [r for r in receivers if r.name not in records]
        for r in stayed:
            self.leave((r,), (group, r.name))
        self.end((src, *stayed), "downlink")  # (the counters once; the cut UEs ended)
        for r in stayed:
            records[r.name] = self.record(
                src, r, kind, "downlink", size_bits, start, num_models, dict(extra or {}), group
            )
        return [records[r.name] for r in receivers]

    @abstractmethod
    def _deliver(
        self, src: Node, dst: Node, size_bits: float, direction: str
    ) -> Generator[simpy.Event, Any, dict[str, float] | None]:
        """Yield until ``size_bits`` have been delivered from ``src`` to ``dst``.

        May return extra accounting fields of the transfer record (``airtime_s``:
        the time it held resources, when less than its duration). Interrupted
        (``simpy.Interrupt`` with a :class:`~netfl.core.activity.DeviceCut`), it takes
        its bits off the medium and raises :class:`~netfl.core.activity.TransferCut`
        with the bits delivered until now.
        """

    @abstractmethod
    def _deliver_multicast(
        self, src: Node, receivers: list[Node], size_bits: float, progress: list[Progress]
    ) -> Generator[simpy.Event, Any, dict[str, float] | None]:
        """Yield until every receiver has ``size_bits`` (one transmission); append to
        ``progress`` a callable giving the bits delivered and airtime so far, for a
        receiver that leaves meanwhile. Interrupted (every receiver left), it takes its
        bits off the medium and raises :class:`~netfl.core.activity.TransferCut`."""
