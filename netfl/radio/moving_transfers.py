"""Transfers of moving devices in a multi-cell network (issue 23, item 3; issue 34):
the UE moves on while its bits flow, hands over in flight, waits out interruptions and
coverage holes. A part the network radio composes
(:class:`~netfl.radio.multicell_radio.MultiCellRadio`); it works through the network's
public members (its cells' transfer API, its handover control and interference, its
backhaul hops)."""

from __future__ import annotations

import math
from collections.abc import Generator, Sequence
from typing import Any

import numpy as np
import simpy

from netfl.core.nodes import Node
from netfl.core.records import TransferRecord
from netfl.errors import UserError
from netfl.radio.handover import CAP_STEP, PLAN_SAMPLES, MovingLink
from netfl.radio.ofdma_flow import OfdmaFlow
from netfl.radio.uplink_mac import cut_flows, flows_accounting, harq_tail

__all__ = ["COVERAGE_WAIT_LIMIT_S", "FIRST_LOOK_SAMPLES", "INTERFACE", "MovingTransfers"]

#: what the network radio uses of its moving transfers (tested)
INTERFACE = ("carry", "wait_handover", "wait_coverage")

#: a moving transfer's first look ahead [measurement instants]; each next looks twice
#: as far, up to :data:`~netfl.radio.handover.PLAN_SAMPLES`
FIRST_LOOK_SAMPLES = 32
#: how long a moving device may wait for coverage before the run stops [s]
COVERAGE_WAIT_LIMIT_S = 600.0


class MovingTransfers:
    """The transfers of a network's moving devices (``network``: the radio composing
    this part)."""

    def __init__(self, network: Any):
        self.network = network
        self.env = network.env

    def wait_handover(self, devices: Sequence[Node]) -> Generator[simpy.Event, Any, None]:
        """Move the devices up to now; wait out a handover interruption."""
        net = self.network
        if net.mover is not None:
            net.mover(devices)
        busy = net.handover.busy_until(devices)
        if busy > self.env.now:
            yield self.env.timeout(busy - self.env.now)

    def wait_coverage(self, device: Node, direction: str) -> Generator[simpy.Event, Any, None]:
        """A moving device with no rate to its cell where it is now (a coverage hole, a
        busy neighbourhood) waits, measuring every 100 ms, until it has one; after
        :data:`COVERAGE_WAIT_LIMIT_S` without one the run stops with a
        :class:`~netfl.errors.UserError` (e.g. a constant-velocity device that drove off a
        deployment without wrap-around never comes back)."""
        if device.name not in self.network.handover.mobile:
            return
        since = self.env.now
        while True:
            if self.network.activities is not None:  # (a device that left waits no more)
                self.network.activities.check([device])
            if self.env.now - since > COVERAGE_WAIT_LIMIT_S:
                x, y = device.position_m
                why = (
                    "it is in a coverage hole of the network (a lower speed, a smaller "
                    "network.isd_m or cell.cues load, or a higher UE power closes it)"
                    if len(
                        self.network.geometry.wrap
                    )  # (a wrap-around network keeps every device inside)
                    else "it left the network's coverage; keep moving devices inside it "
                    "(network.wrap_around on a hexagonal grid, or random_waypoint)"
                )
                raise UserError(
                    f"{device.name} has had no {direction} rate for "
                    f"{COVERAGE_WAIT_LIMIT_S:g} s of simulated time (at x = {x:.0f} m, "
                    f"y = {y:.0f} m): {why}"
                )
            c = self.network.serving[device.name]
            cell = self.network.cells[c]
            link = (device, cell.node) if direction == "uplink" else (cell.node, device)
            _, psd, total = self.network.link_terms(cell, link)
            with self.network.interference.at_full_load():  # (as coverage is: no stall later)
                scale = self.network.snr_scale(c, link)
            if cell.carriers[direction].reachable(psd * scale, total * scale):
                return
            yield self.env.timeout(0.1)
            yield from self.wait_handover([device])

    def relay(
        self, cell: int, edge: int | None, direction: str, bits: float, kind: str, models: int
    ) -> Generator[simpy.Event, Any, None]:
        """The wired part of a moving device's transfer between its serving cell ``cell``
        and its far end: the FL server (``edge`` None: that site's backhaul), or the edge
        server at cell ``edge`` (nothing when on the same site; else through the core,
        up one site's backhaul and down the other's)."""
        if edge is None:
            yield from self.network.backhaul_hop(cell, direction, bits, kind, models)
        elif self.network.geometry.cell_site[cell] != self.network.geometry.cell_site[edge]:
            first, second = (cell, edge) if direction == "uplink" else (edge, cell)
            yield from self.network.backhaul_hop(first, "uplink", bits, kind, models)
            yield from self.network.backhaul_hop(second, "downlink", bits, kind, models)

    def look_ahead(
        self,
        device: Node,
        path: MovingLink,
        carrier: Any,
        requested_cap: float,
        window: int = PLAN_SAMPLES,
    ) -> tuple[float, float]:
        """When a moving device's transfer must next look at it, and its flow's cap until
        then [RBs]. Its measurements over the next ``window`` instants
        (:meth:`HandoverControl.measured`; a transfer looks :data:`FIRST_LOOK_SAMPLES`
        ahead first, twice as far at each look after, up to :data:`PLAN_SAMPLES`) give
        the first of: a handover (:meth:`HandoverControl.predict`), a measurement out of
        coverage, the end of the instants looked at, and — for a
        power-limited flow — a change of its usable RBs by more than
        :data:`CAP_STEP`; the cap until then is the least of its usable RBs at the
        instants before it (so its per-RB SNR never falls below the lowest usable
        efficiency on the way). The carrier rates every block at the path's SINR in
        between (:class:`MovingLink`): no event per measurement."""
        step = self.network.handover.settings["sample_s"]
        k_now = math.floor(self.env.now / step + 1e-9)
        ks = np.arange(k_now, k_now + window + 1)
        wake = float(ks[-1] * step)
        handover = self.network.handover.predict(device, k_now + 1, int(ks[-1]))
        if handover is not None:
            wake = min(wake, handover)
        psd, total = path.sample_terms(ks)
        lost = np.flatnonzero(~carrier.reachable_all(psd[1:], total[1:]))
        if lost.size:
            wake = min(wake, float(ks[1 + lost[0]] * step))
        caps = carrier.usable_caps(requested_cap, total)
        with np.errstate(invalid="ignore"):
            moved = (caps[1:] < caps[0] / CAP_STEP) | (caps[1:] > caps[0] * CAP_STEP)
        end = len(caps) if not moved.any() else 1 + int(np.argmax(moved))
        if end < len(caps):
            wake = min(wake, float(ks[end] * step))
        last = min(int(math.floor(wake / step + 1e-9)) - k_now, end)  # (instants until the wake)
        return wake, float(caps[: max(last, 1)].min())

    def carry(
        self,
        device: Node,
        direction: str,
        size_bits: float,
        kind: str,
        num_models: int,
        edge: int | None = None,
    ) -> Generator[simpy.Event, Any, TransferRecord]:
        """A cellular unicast between a moving ``device`` and the FL server (or an edge
        server): the UE moves on while its bits flow. At every measurement instant
        (multiples of ``sample_s``) its position, A3 state and link are brought up to date,
        and its flow is re-rated at the SINR where it now is (link adaptation following the
        UE's reports; :meth:`OfdmaCarrier.relink`). On a handover the flow leaves the old
        cell's carrier with the bits it has not delivered (:meth:`OfdmaCarrier.withdraw`);
        they resume on the new cell's carrier after the interruption (a UE that drives out
        of coverage is taken off the same way and resumes once it has a rate again) — a
        downlink's remaining bits first forwarded to the new site (a recorded hop, no
        model counted). An
        uplink of a buffer-status MAC keeps its grant cycles, each cycle's flow followed
        the same way. The events this costs are a few per transfer (its looks ahead,
        handovers, coverage holes, a dB of change in a power-limited flow's usable RBs),
        none while the device idles. One record: from the first to
        the last bit on air, between the device and the cell that carried the last bit.
        ``edge``: the far end is the edge server of that cell (HierFAVG) rather than the
        FL server; when the device is served elsewhere, the bits cross the core
        (:meth:`_relay`)."""
        env = self.env
        uplink = direction == "uplink"
        c = self.network.serving[device.name]
        if not uplink:
            yield from self.relay(c, edge, "downlink", size_bits, kind, num_models)

        def link_of(cell: int) -> tuple[Node, Node]:
            bs = self.network.cell_nodes[cell]
            return (device, bs) if uplink else (bs, device)

        grant = self.network.profile.uplink_grant if uplink else None
        chunk = 8.0 * grant["bsr_max_bytes"] if grant is not None else math.inf
        yield from self.network.cells[c].promote([device])  # (its RRC state: the network's)
        start = env.now
        key = self.network.enter([device])
        self.network.cells[c].begin(link_of(c), direction)
        begun = True  # (between cells in a handover: False)
        flows: list[OfdmaFlow] = []
        left, on_air = float(size_bits), None
        try:
            if grant is not None and grant["startup_delay_s"] > 0:
                yield env.timeout(grant["startup_delay_s"])
            delay = 0.0 if uplink else self.network.profile.downlink_delay_s
            if delay > 0 and size_bits > 0:
                yield env.timeout(delay)
            while True:
                self.network.mover([device])  # (a no-op when its position is up to date)
                if self.network.serving[device.name] != c:  # handed over: the rest via the new cell
                    # (the device stays RRC connected across the handover: held, so
                    # leaving the old cell starts no tail — the interruption is part of
                    # the transfer, charged as its wait)
                    self.network.ue_states.start([device])
                    self.network.cells[c].end(link_of(c), direction)
                    begun = False
                    yield from self.wait_handover([device])
                    old, c = c, self.network.serving[device.name]
                    site = self.network.geometry.cell_site
                    if not uplink and site[c] != site[old]:  # (a sector of the same site
                        # has the rest already: it crossed that site's backhaul once)
                        yield from self.relay(c, edge, "downlink", left, kind, 0)
                    self.network.cells[c].begin(link_of(c), direction)
                    self.network.ue_states.end([device])
                    begun = True
                    continue  # (the interruption took time: move again first)
                waited = env.now
                yield from self.wait_coverage(device, direction)  # (it drove into a hole)
                if env.now > waited:
                    continue
                cell, link = self.network.cells[c], link_of(c)
                carrier = cell.carriers[direction]
                path = MovingLink(
                    self.network.handover,
                    cell,
                    self.network.interference,
                    device,
                    direction,
                    env.now,
                    carrier.fading.coherence_time_s,  # (path flows: one block a column)
                )
                window = FIRST_LOOK_SAMPLES
                wake, cap = self.look_ahead(
                    device, path, carrier, cell.max_rbs_per_transfer, window
                )
                flow = on_air = cell.send(
                    carrier, min(left, chunk), 0.0, 0.0, link=link, path=path, cap_rbs=cap
                )
                while not flow.done.triggered:
                    yield flow.done | env.timeout(max(wake - env.now, 0.0))
                    if flow.done.triggered:
                        break
                    self.network.mover([device])
                    if self.network.serving[device.name] != c:
                        left -= flow.size_bits - carrier.withdraw(flow)
                        break
                    _, psd, total = self.network.link_terms(cell, link)
                    scale = self.network.snr_scale(c, link)
                    if not carrier.reachable(psd * scale, total * scale):  # out of coverage
                        left -= flow.size_bits - carrier.withdraw(flow)
                        break
                    window = min(2 * window, PLAN_SAMPLES)
                    wake, cap = self.look_ahead(
                        device, path, carrier, cell.max_rbs_per_transfer, window
                    )
                    carrier.set_cap(flow, cap)
                flows.append(flow)
                on_air = None
                if not flow.done.triggered:
                    continue  # (withdrawn)
                left -= flow.size_bits
                if left <= 0:
                    break
                if grant is not None and grant["cycle_gap_s"] > 0:
                    yield env.timeout(grant["cycle_gap_s"])
            extra = flows_accounting(flows)
            cell = self.network.cells[c]
            yield from harq_tail(
                env, self.network.profile.harq, carrier.efficiency, extra, flows[-1].rng
            )
        except simpy.Interrupt as stop:  # (the device left, or the deadline passed)
            carrier = self.network.cells[c].carriers[direction]
            cut = cut_flows(carrier, flows + ([on_air] if on_air else []), stop.cause)
            if begun:
                self.network.cells[c].end(link_of(c), direction)
            else:  # (cut within a handover: the hold ends, the tail starts)
                self.network.ue_states.end([device])
            self.network.cells[c].record(
                *link_of(c), kind, direction, size_bits, start, num_models, cut.extra, cut=cut
            )
            raise cut.cause from None
        self.network.leave([device], key)
        cell.end(link_of(c), direction)
        if size_bits <= 0:
            extra["airtime_s"] = env.now - start
        record = cell.record(*link_of(c), kind, direction, size_bits, start, num_models, extra)
        if uplink:
            yield from self.relay(c, edge, "uplink", size_bits, kind, num_models)
        return record
