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

from channel_models.bs_antenna import sector_gain_db, site_gains_db
from channel_models.departure_rays import LinkRays
from channel_models.multicell import nearest_image_offsets
from channel_models.pathloss import los_distance_m
from netfl.core.nodes import Node
from netfl.core.records import TransferRecord
from netfl.errors import UserError
from netfl.radio.ofdma import OfdmaFlow
from netfl.radio.uplink_mac import cut_flows, flows_accounting, harq_tail

__all__ = ["COVERAGE_WAIT_LIMIT_S", "HandoverMixin", "path_anchors"]

#: how long a moving device may wait for coverage before the run stops [s]
COVERAGE_WAIT_LIMIT_S = 600.0
#: largest change of the azimuth and of the zenith [deg] from any site between two points
#: where a moving UE's antenna gains are evaluated over its rays (:func:`path_anchors`)
ANCHOR_AZIMUTH_DEG = 1.0
ANCHOR_ZENITH_DEG = 0.25
#: ... and of the log of the distance (the rays' spreads and offsets follow it)
ANCHOR_LOG_DISTANCE = 0.01
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
        scale = np.ones(len(ks))
        if net.interference != "none" and len(net.cells) > 1:
            if self.uplink:
                scale[:] = 1.0 / (1.0 + float(net.eta["uplink"] @ net._ul_rx[:, self.cell]))
            else:
                snr = net.cells[0].snr_terms(loss, True, False)[0]  # (instants, cells)
                eta = net.eta["downlink"]
                scale = 1.0 / (1.0 + snr @ eta - eta[self.cell] * snr[:, self.cell])
        return psd * scale, np.broadcast_to(total, psd.shape) * scale


def path_anchors(site_offsets_m: np.ndarray, dz_m: np.ndarray) -> np.ndarray:
    """Indices of the points of a path (``site_offsets_m``: (points, sites, 2) from each
    site, ``dz_m``: (sites,) UE − BS height) at which the BS antenna gains are evaluated
    exactly: the first, the last, and each point where the azimuth or zenith the UE is
    seen under from some site, or the log of its distance, has moved by more than
    :data:`ANCHOR_AZIMUTH_DEG` / :data:`ANCHOR_ZENITH_DEG` / :data:`ANCHOR_LOG_DISTANCE`
    since the previous anchor (summed over the steps, so a
    path that turns back counts its way). Between anchors the gains — sums of smooth
    antenna patterns over the link's rays, at smoothly varying angles — are interpolated
    linearly: a few hundredths of a dB from the exact sum, at a fraction of its cost."""
    n = len(site_offsets_m)
    if n <= 2:
        return np.arange(n)
    az = np.unwrap(np.arctan2(site_offsets_m[..., 1], site_offsets_m[..., 0]), axis=0)
    d2 = np.maximum(np.hypot(site_offsets_m[..., 0], site_offsets_m[..., 1]), 1.0)
    zen = np.arctan2(d2, dz_m[None, :])
    step = np.maximum.reduce(
        [
            np.abs(np.diff(np.degrees(az), axis=0)) / ANCHOR_AZIMUTH_DEG,
            np.abs(np.diff(np.degrees(zen), axis=0)) / ANCHOR_ZENITH_DEG,
            np.abs(np.diff(np.log(d2), axis=0)) / ANCHOR_LOG_DISTANCE,
        ]
    ).max(axis=1)
    # greedy: a new anchor once the change since the last one passes 1
    anchors, acc = [0], 0.0
    for k, s in enumerate(step, start=1):
        acc += s
        if acc > 1.0:
            if anchors[-1] != k - 1:
                anchors.append(k - 1)
            acc = s
            if acc > 1.0:
                anchors.append(k)
                acc = 0.0
    if anchors[-1] != n - 1:
        anchors.append(n - 1)
    return np.array(anchors)


class HandoverMixin:
    """A3 handovers, spatially consistent fields and coverage waits of moving devices."""

    def site_fields(self, site: int, xy: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Site ``site``'s spatially consistent LOS uniform and shadowing normal at points
        ``xy`` (TR 38.901 §7.6.3: exponential correlation over the LOS-state and the
        NLOS shadowing decorrelation distances of the profile's scenario)."""
        from scipy.special import ndtr

        from channel_models.mobility import ShadowField

        fields = self._fields.get(site)
        if fields is None:
            d_los, d_sf = self.cells[0].pathloss.decorrelation_m
            base = int(self.cells[0].link_seed) % (2**31)
            fields = self._fields[site] = (
                ShadowField(d_los, seed=base + 2 * site + 1, num_waves=512),
                ShadowField(d_sf, seed=base + 2 * site + 2, num_waves=512),
            )
        return ndtr(fields[0].values(xy)), fields[1].values(xy)

    def _all_site_fields(self, xy: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """:meth:`site_fields` of every site at once: ``(points, sites)`` uniforms and
        normals (one product with all the sites' waves stacked)."""
        from scipy.special import ndtr

        stacked = self._fields.get("stacked")
        if stacked is None:
            n_sites = len(self.site_xy)
            for site in range(n_sites):
                self.site_fields(site, self.site_xy[:1])  # (builds the fields)
            fields = [self._fields[site][k] for site in range(n_sites) for k in (0, 1)]
            waves = [f._waves() for f in fields]
            stacked = self._fields["stacked"] = (
                np.concatenate([w[0] for w in waves]),  # (2·sites·M, 2)
                np.concatenate([w[1] for w in waves]),
                fields[0].num_waves,
            )
        omega, phase, m = stacked
        xy = np.asarray(xy, dtype=float).reshape(-1, 2)
        # the phases at the first point in double precision (reduced to [0, 2π)), the
        # changes along the path from it in single: single-precision cosines are
        # vectorised an order of magnitude faster, and a path's points lie metres
        # apart, so the phases keep ~1e-5 rad
        x0 = xy[0]
        base = np.remainder(omega @ x0 + phase, 2.0 * math.pi).astype(np.float32)
        arg = (xy - x0).astype(np.float32) @ omega.T.astype(np.float32)
        arg += base
        v = np.cos(arg, out=arg).reshape(len(xy), -1, 2, m).sum(-1, dtype=np.float64)
        v *= math.sqrt(2.0 / m)
        return ndtr(v[:, :, 0]), v[:, :, 1]

    def coupling_along(self, ue: Node, xy: np.ndarray) -> np.ndarray:
        """``(points, cells)`` coupling loss [dB] of ``ue`` were it at each of ``xy``:
        path loss at the wrap-around distance with the sites' fields, its O2I loss, less
        the antenna gain — on TR 38.901 UMa/UMi links summed over the link's departure
        rays in the LOS state the field gives at each point (:meth:`link_rays`, kept per
        site and state along the path): the RSRP the A3 rule compares is the one the
        link budget and the association use."""
        law0 = self.cells[0].pathloss
        h_ut = ue.height_m if math.isfinite(ue.height_m) else law0.height_rx_m
        law = self.cells[0].law_at(law0, self.bs_height_m, h_ut)
        site_offs = nearest_image_offsets(xy, self.site_xy, self.wrap)  # (points, sites, 2)
        offs = site_offs[:, self.cell_site, :]
        d2 = np.hypot(offs[..., 0], offs[..., 1])  # (points, cells)
        u_site, z_site = self._all_site_fields(xy)
        u, z = u_site[:, self.cell_site], z_site[:, self.cell_site]
        indoor = np.full(d2.shape, ue.o2i_loss_db > 0) if ue.o2i_loss_db > 0 else None
        inside = ue.o2i_inside_m if indoor is not None else None
        out = law.loss_db_given(
            d2, u if law.random else None, z if law.random else None, indoor, inside
        )
        if self.antenna == "omni" and self.array_rows == 1:
            return out + ue.o2i_loss_db
        bore = self.boresight[None, :]
        omni = self.antenna == "omni" or not np.isfinite(bore).all()
        if self._scenario is None or not law.draws_los:
            return (
                out
                + ue.o2i_loss_db
                - sector_gain_db(  # (the direct direction)
                    offs,
                    np.full(d2.shape, h_ut - self.bs_height_m),
                    None if omni else bore,
                    None,
                    self._scenario or "uma",
                    self.profile.carrier_hz,
                    np.full(d2.shape, h_ut),
                    self.bs_height_m,
                    self.array_rows,
                    tilt_zenith_deg=self.tilt_zenith_deg,
                )
            )
        site_d2 = los_distance_m(np.hypot(site_offs[..., 0], site_offs[..., 1]), inside)
        los = u_site < law.los_probability(site_d2)  # (points, sites), as loss_db_given
        n_pts, n_sites = los.shape
        # a (site, state)'s rays are drawn at its first point (kept for the UE's path)
        for site in range(n_sites):
            for state in (True, False):
                hit = np.flatnonzero(los[:, site] == state)
                if hit.size:
                    k = hit[:1]
                    self.link_rays([ue], site, los[k, site], z_site[k, site])
        # each site's gains over the rays at anchor points, linear between them (they
        # are smooth in the direction the UE is seen from: :func:`path_anchors`); the
        # LOS path's sharp pattern at every point
        dz = h_ut - self.bs_height_m
        bores = self.boresight.reshape(n_sites, -1)
        k_sec = bores.shape[1]
        same = omni or bool((bores == bores[:1]).all())
        idx = np.arange(n_pts)
        anchors = [path_anchors(site_offs[:, s : s + 1, :], np.full(1, dz)) for s in range(n_sites)]
        for state in (True, False):
            sites = [s for s in range(n_sites) if (los[:, s] == state).any()]
            if not sites:
                continue
            rays = [self.link_rays([ue], s, np.array([state]), np.zeros(1)) for s in sites]
            counts = [len(anchors[s]) for s in sites]
            off = np.concatenate([site_offs[anchors[s], s, :] for s in sites])
            which = np.repeat(np.arange(len(sites)), counts)
            stacked = LinkRays.stack(rays).take(which)
            groups = (
                [np.arange(len(off))]
                if same
                else np.split(np.arange(len(off)), np.cumsum(counts)[:-1])
            )
            ray_sum = np.empty((len(off), k_sec))
            for g, first in zip(groups, [sites[0]] if same else sites, strict=True):
                ray_sum[g], _ = site_gains_db(
                    off[g],
                    np.full(len(g), dz),
                    None if omni else bores[first],
                    np.full(len(g), state),
                    self._scenario,
                    self.profile.carrier_hz,
                    np.full(len(g), h_ut),
                    self.bs_height_m,
                    self.array_rows,
                    0.8,
                    self.tilt_zenith_deg,
                    stacked.take(g),
                    split=True,
                )
            ray_db = np.log10(np.maximum(ray_sum, 1e-300))
            starts = np.concatenate([[0], np.cumsum(counts)[:-1]])
            for i, s in enumerate(sites):
                rows = (los[:, s] == state).nonzero()[0]
                a = anchors[s]
                j = np.clip(np.searchsorted(a, idx[rows], side="right") - 1, 0, max(len(a) - 2, 0))
                nxt = np.minimum(j + 1, len(a) - 1)
                w = ((idx[rows] - a[j]) / np.maximum(a[nxt] - a[j], 1))[:, None]
                db = ray_db[starts[i] : starts[i] + counts[i]]
                gain = 10.0 ** ((1.0 - w) * db[j] + w * db[nxt])
                if rays[i].direct[0] > 0:
                    direct_db = sector_gain_db(
                        site_offs[rows, s, None, :],
                        np.full((len(rows), 1), dz),
                        None if omni else bores[s][None, :],
                        None,
                        self._scenario,
                        self.profile.carrier_hz,
                        np.full((len(rows), 1), h_ut),
                        self.bs_height_m,
                        self.array_rows,
                        tilt_zenith_deg=self.tilt_zenith_deg,
                    )
                    gain = gain + rays[i].direct[0] * 10.0 ** (direct_db / 10.0)
                cells = s * k_sec + np.arange(k_sec)
                out[np.ix_(rows, cells)] -= 10.0 * np.log10(gain)
        return out + ue.o2i_loss_db

    def follow(self, paths: dict[str, Any]) -> None:
        """Devices (name → trajectory: ``positions(t)``) that move along known paths:
        measured along them, handed over by the A3 rule, followed in flight."""
        self.mobile = set(paths)
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
                self.coupling_along(ue, path.positions(np.arange(a, min(a + 512, last + 1)) * step))
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
        self._snr_dl[ue.name] = np.asarray(
            self.cells[0].snr_terms(self.measurement(ue), True, False)[0]
        )
        self.refresh_d2d(ue)

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
                    if len(self.wrap)  # (a wrap-around network keeps every device inside)
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
            full = self.eta  # (judged at full load, as coverage is: no stall later)
            self.eta = {d: np.ones(len(self.cells)) for d in full}
            try:
                scale = self.snr_scale(c, link)
            finally:
                self.eta = full
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
        elif self.cell_site[cell] != self.cell_site[edge]:
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
