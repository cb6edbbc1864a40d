"""Moving devices in a multi-cell network (issue 23, item 3): the A3 rule along their
paths, spatially consistent fields for their losses, transfers that follow the UE as it
moves and hand over in flight, handover interruptions and waits for coverage. A mixin of :class:`~netfl.radio.multicell_radio.MultiCellRadio`, which holds
the state these methods use (``mobile``, ``handover``, ``handovers``, ``serving``, the
cells and the geometry)."""

from __future__ import annotations

import math
from collections.abc import Generator, Sequence
from typing import Any

import numpy as np
import pandas as pd
import simpy

from netfl.core.nodes import Node
from netfl.core.records import TransferRecord
from netfl.errors import UserError
from netfl.radio.ofdma import OfdmaFlow
from netfl.radio.uplink_mac import cut_flows, flows_accounting, harq_tail

__all__ = ["CAP_STEP", "COVERAGE_WAIT_LIMIT_S", "HandoverMixin", "MovingLink", "PLAN_SAMPLES"]

#: how long a moving device may wait for coverage before the run stops [s]
COVERAGE_WAIT_LIMIT_S = 600.0
#: a moving UE's measurement instants evaluated at once, ahead of the clock
PLAN_SAMPLES = 128
#: a moving power-limited flow's cap is re-set when its usable RBs change by this factor
#: (1 dB) along its path
CAP_STEP = 10.0**0.1


class MovingLink:
    """The SNR terms of a moving UE's link with cell ``cell`` along its path
    (:class:`~netfl.radio.ofdma.LinkPath`), for a flow started at ``start_s``: the
    fading block starting at t is rated at the UE's last measurement at
    max(start, t) — the link adaptation following its reports, every ``sample_s`` —
    with the interference now (:meth:`~netfl.radio.interference.InterferenceMixin.inr`
    at each measurement's SNRs from every cell). When ``sample_s`` is a multiple of
    the fading block (the profiles' 1 and 5 ms under the 40 ms default), this is the
    re-rating at every measurement instant exactly."""

    def __init__(
        self, network: Any, ue: Node, cell: int, direction: str, start_s: float, block_s: float
    ):
        self.network, self.ue, self.cell = network, ue, cell
        self.uplink = direction == "uplink"
        self.start_s, self.block_s = float(start_s), float(block_s)

    def terms(self, blocks: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        step = self.network.handover["sample_s"]
        at = np.maximum(self.start_s, np.asarray(blocks) * self.block_s)
        return self.sample_terms(np.floor(at / step + 1e-9).astype(int))

    def sample_terms(self, ks: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """``(per-RB SINR, SINR of all power in one RB)`` at measurement instants ``ks``."""
        net = self.network
        lo, hi = int(ks.min()), int(ks.max())
        loss = net.measured(self.ue, lo, hi)[ks - lo]  # (instants, cells)
        psd, total = net.cells[self.cell].snr_terms(
            loss[:, self.cell], not self.uplink, self.uplink
        )
        scale = net.interference.path_scales(self.cell, self.uplink, loss)
        return psd * scale, np.broadcast_to(total, psd.shape) * scale


class HandoverMixin:
    """A3 handovers, spatially consistent fields and coverage waits of moving devices."""

    def follow(self, paths: dict[str, Any]) -> None:
        """Devices (name → trajectory: ``positions(t)``) that move along known paths:
        measured along them, handed over by the A3 rule, followed in flight."""
        self.mobile = self.geometry.mobile = set(paths)
        self.paths = paths

    def measured(self, ue: Node, k_lo: int, k_hi: int) -> np.ndarray:
        """``(k_hi − k_lo + 1, cells)`` coupling losses [dB] of moving ``ue`` at the
        measurement instants k·``sample_s``, k_lo ≤ k ≤ k_hi, on its path: evaluated
        ahead of the clock, :data:`PLAN_SAMPLES` instants at a time (one vectorised
        :meth:`coupling_along`), and kept until the clock has passed them."""
        k0, rows = self._plans.get(ue.name, (k_lo, np.zeros((0, len(self.cells)))))
        end = k0 + len(rows)
        if k_lo < k0 or k_hi >= end:
            if k_lo < k0 or k_lo > end:  # (not contiguous: afresh)
                k0, rows, end = k_lo, rows[:0], k_lo
            last = max(k_hi, end + PLAN_SAMPLES - 1)
            step = self.handover["sample_s"]
            path = self.paths[ue.name]
            new = [
                self.geometry.coupling_along(
                    ue, path.positions(np.arange(a, min(a + 512, last + 1)) * step)
                )
                for a in range(end, last + 1, 512)
            ]
            drop = max(k_lo - k0 - 1, 0)  # (the instants before are never asked again)
            rows = np.concatenate([rows[drop:], *new])
            k0 += drop
            self._plans[ue.name] = (k0, rows)
        return rows[k_lo - k0 : k_hi - k0 + 1]

    def measurement(self, ue: Node) -> np.ndarray:
        """Moving ``ue``'s coupling loss to every cell [dB] at its last measurement
        instant (now or the one before): what its reports tell the network."""
        k = math.floor(self.env.now / self.handover["sample_s"] + 1e-9)
        return self.measured(ue, k, k)[0]

    def link_terms(self, cell: Any, link: tuple[Node, Node]) -> tuple[float, float, float]:
        """``(loss, SNR per RB, SNR of all power in one RB)`` of ``link`` of cell ``cell``
        without interference: a moving UE's cellular link at its last measurement
        (:meth:`measurement`; the link adaptation follows its reports), any other link
        at the nodes' positions."""
        src, dst = link
        ue = src if src.is_device else dst
        if ue.name in self.mobile and not (src.is_device and dst.is_device):
            loss = float(self.measurement(ue)[cell.cell])
            psd, total = cell.snr_terms(loss, not src.is_device, not dst.is_device)
            return loss, float(psd), float(total)
        return cell.link_at_positions(src, dst)

    def track(self, ue: Node, t0_s: float, t1_s: float) -> None:
        """Apply the A3 rule to ``ue``'s RSRP measured every ``sample_s`` along its path
        over (t0, t1] (equal BS powers: RSRP = P − coupling loss; :meth:`measured`),
        carrying the layer-3 filter and a pending time-to-trigger across calls; record
        each handover and move the UE."""
        from channel_models.mobility import a3_handovers

        step = self.handover["sample_s"]
        k0, k1 = math.floor(t0_s / step + 1e-9) + 1, math.floor(t1_s / step + 1e-9)
        if k1 < k0:
            return
        t = np.arange(k0, k1 + 1) * step
        rsrp = -self.measured(ue, k0, k1)
        serving = self.serving[ue.name]
        events = a3_handovers(
            t,
            rsrp,
            serving,
            self.handover["hysteresis_db"],
            self.handover["ttt_s"],
            self._a3.setdefault(ue.name, {}),
            self.handover.get("filter_k", 0),
        )
        for when, src, dst in events:
            self.handovers.append((when, ue.name, src, dst))
            self.serving[ue.name] = dst
            self._busy_until[ue.name] = when + self.handover["interruption_s"]

    def refresh(self, ue: Node) -> None:
        """``ue`` moved: its downlink SNR from every BS at its last measurement (the
        interference terms) and, as a D2D receiver, the other cells' uplinks it hears
        (``refresh_d2d``)."""
        self.interference.moved(ue, self.measurement(ue))

    def handover_table(self) -> pd.DataFrame:
        return pd.DataFrame(self.handovers, columns=["time_s", "device", "from_cell", "to_cell"])

    def _wait_handover(self, devices: Sequence[Node]) -> Generator[simpy.Event, Any, None]:
        """Move the devices up to now; wait out a handover interruption."""
        if self.mover is not None:
            self.mover(devices)
        busy = max((self._busy_until.get(d.name, 0.0) for d in devices), default=0.0)
        if busy > self.env.now:
            yield self.env.timeout(busy - self.env.now)

    def _wait_coverage(self, device: Node, direction: str) -> Generator[simpy.Event, Any, None]:
        """A moving device with no rate to its cell where it is now (a coverage hole, a
        busy neighbourhood) waits, measuring every 100 ms, until it has one; after
        :data:`COVERAGE_WAIT_LIMIT_S` without one the run stops with a
        :class:`~netfl.errors.UserError` (e.g. a constant-velocity device that drove off a
        deployment without wrap-around never comes back)."""
        if device.name not in self.mobile:
            return
        since = self.env.now
        while True:
            if self.activities is not None:  # (a device that left waits no more)
                self.activities.check([device])
            if self.env.now - since > COVERAGE_WAIT_LIMIT_S:
                x, y = device.position_m
                why = (
                    "it is in a coverage hole of the network (a lower speed, a smaller "
                    "network.isd_m or cell.cues load, or a higher UE power closes it)"
                    if len(self.geometry.wrap)  # (a wrap-around network keeps every device inside)
                    else "it left the network's coverage; keep moving devices inside it "
                    "(network.wrap_around on a hexagonal grid, or random_waypoint)"
                )
                raise UserError(
                    f"{device.name} has had no {direction} rate for "
                    f"{COVERAGE_WAIT_LIMIT_S:g} s of simulated time (at x = {x:.0f} m, "
                    f"y = {y:.0f} m): {why}"
                )
            c = self.serving[device.name]
            cell = self.cells[c]
            link = (device, cell.node) if direction == "uplink" else (cell.node, device)
            _, psd, total = self.link_terms(cell, link)
            with self.interference.at_full_load():  # (as coverage is: no stall later)
                scale = self.snr_scale(c, link)
            if cell.carriers[direction].reachable(psd * scale, total * scale):
                return
            yield self.env.timeout(0.1)
            yield from self._wait_handover([device])

    def _relay(
        self, cell: int, edge: int | None, direction: str, bits: float, kind: str, models: int
    ) -> Generator[simpy.Event, Any, None]:
        """The wired part of a moving device's transfer between its serving cell ``cell``
        and its far end: the FL server (``edge`` None: that site's backhaul), or the edge
        server at cell ``edge`` (nothing when on the same site; else through the core,
        up one site's backhaul and down the other's)."""
        if edge is None:
            yield from self._backhaul(cell, direction, bits, kind, models)
        elif self.geometry.cell_site[cell] != self.geometry.cell_site[edge]:
            first, second = (cell, edge) if direction == "uplink" else (edge, cell)
            yield from self._backhaul(first, "uplink", bits, kind, models)
            yield from self._backhaul(second, "downlink", bits, kind, models)

    def look_ahead(
        self, device: Node, path: MovingLink, carrier: Any, requested_cap: float
    ) -> tuple[float, float]:
        """When a moving device's transfer must next look at it, and its flow's cap until
        then [RBs]. Its measurements ahead (:meth:`measured`, :data:`PLAN_SAMPLES`
        instants) give the first of: a handover (the A3 rule run on a copy of its state),
        a measurement out of coverage, the end of the instants looked at, and — for a
        power-limited flow — a change of its usable RBs by more than
        :data:`CAP_STEP`; the cap until then is the least of its usable RBs at the
        instants before it (so its per-RB SNR never falls below the lowest usable
        efficiency on the way). The carrier rates every block at the path's SINR in
        between (:class:`MovingLink`): no event per measurement."""
        from channel_models.mobility import a3_handovers

        step = self.handover["sample_s"]
        k_now = math.floor(self.env.now / step + 1e-9)
        ks = np.arange(k_now, k_now + PLAN_SAMPLES + 1)
        wake = float(ks[-1] * step)
        events = a3_handovers(
            ks[1:] * step,
            -self.measured(device, k_now + 1, int(ks[-1])),
            self.serving[device.name],
            self.handover["hysteresis_db"],
            self.handover["ttt_s"],
            dict(self._a3.get(device.name, {})),  # (a copy: the rule runs ahead)
            self.handover.get("filter_k", 0),
        )
        if events:
            wake = min(wake, events[0][0])
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

    def _moving_transfer(
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
        the same way. The events this costs are one per measurement instant while the
        transfer is in flight, none while the device idles. One record: from the first to
        the last bit on air, between the device and the cell that carried the last bit.
        ``edge``: the far end is the edge server of that cell (HierFAVG) rather than the
        FL server; when the device is served elsewhere, the bits cross the core
        (:meth:`_relay`)."""
        env = self.env
        uplink = direction == "uplink"
        c = self.serving[device.name]
        if not uplink:
            yield from self._relay(c, edge, "downlink", size_bits, kind, num_models)

        def link_of(cell: int) -> tuple[Node, Node]:
            bs = self.cell_nodes[cell]
            return (device, bs) if uplink else (bs, device)

        grant = self.profile.uplink_grant if uplink else None
        chunk = 8.0 * grant["bsr_max_bytes"] if grant is not None else math.inf
        start = env.now
        key = self._enter([device])
        self.cells[c].begin(link_of(c), direction)
        begun = True  # (between cells in a handover: False)
        flows: list[OfdmaFlow] = []
        left, on_air = float(size_bits), None
        try:
            if grant is not None and grant["startup_delay_s"] > 0:
                yield env.timeout(grant["startup_delay_s"])
            while True:
                self.mover([device])  # (a no-op when its position is up to date)
                if self.serving[device.name] != c:  # handed over: the rest via the new cell
                    self.cells[c].end(link_of(c), direction)
                    begun = False
                    yield from self._wait_handover([device])
                    c = self.serving[device.name]
                    if not uplink:
                        yield from self._relay(c, edge, "downlink", left, kind, 0)
                    self.cells[c].begin(link_of(c), direction)
                    begun = True
                    continue  # (the interruption took time: move again first)
                waited = env.now
                yield from self._wait_coverage(device, direction)  # (it drove into a hole)
                if env.now > waited:
                    continue
                cell, link = self.cells[c], link_of(c)
                carrier = cell.carriers[direction]
                path = MovingLink(self, device, c, direction, env.now, carrier.block_s)
                wake, cap = self.look_ahead(device, path, carrier, cell.max_rbs_per_transfer)
                flow = on_air = cell.send(
                    carrier, min(left, chunk), 0.0, 0.0, link=link, path=path, cap_rbs=cap
                )
                while not flow.done.triggered:
                    yield flow.done | env.timeout(max(wake - env.now, 0.0))
                    if flow.done.triggered:
                        break
                    self.mover([device])
                    if self.serving[device.name] != c:
                        left -= flow.size_bits - carrier.withdraw(flow)
                        break
                    _, psd, total = self.link_terms(cell, link)
                    scale = self.snr_scale(c, link)
                    if not carrier.reachable(psd * scale, total * scale):  # out of coverage
                        left -= flow.size_bits - carrier.withdraw(flow)
                        break
                    wake, cap = self.look_ahead(device, path, carrier, cell.max_rbs_per_transfer)
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
            cell = self.cells[c]
            yield from harq_tail(env, self.profile.harq, carrier.efficiency, extra, flows[-1].rng)
        except simpy.Interrupt as stop:  # (the device left, or the deadline passed)
            carrier = self.cells[c].carriers[direction]
            cut = cut_flows(carrier, flows + ([on_air] if on_air else []), stop.cause)
            if begun:
                self.cells[c].end(link_of(c), direction)
            self.cells[c].record(
                *link_of(c), kind, direction, size_bits, start, num_models, cut.extra, cut=cut
            )
            raise cut.cause from None
        self._leave([device], key)
        cell.end(link_of(c), direction)
        if size_bits <= 0:
            extra["airtime_s"] = env.now - start
        record = cell.record(*link_of(c), kind, direction, size_bits, start, num_models, extra)
        if uplink:
            yield from self._relay(c, edge, "uplink", size_bits, kind, num_models)
        return record
