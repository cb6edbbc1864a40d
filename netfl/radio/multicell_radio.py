"""A multi-cell OFDMA network (issue 23): one :class:`CellRadio` per cell, RSRP
association, interference from the other cells, and the backhaul to the FL server.

Each cell is an :class:`~netfl.radio.ofdma_radio.OfdmaRadio` with its own uplink and
downlink carriers, scheduler, BS power meter and CUEs. Its links to its own BS see
the network's geometry — the BS at its site's image nearest to the UE (wrap-around),
the sector antenna's gain (:func:`channel_models.bs_antenna.sector_gain_db`, summed over
the link's departure rays on TR 38.901 UMa/UMi links, :mod:`channel_models.departure_rays`)
and an indoor UE's O2I loss (its links shadowed with the O2I σ_SF, 7 dB) — co-located
sectors sharing a link's LOS state, shadowing and rays (TR 38.901's per-site large-scale
parameters) — and the other cells, each on air on a share η_c of its RBs:

- downlink SINR of UE u served by cell s:
  P·g_us / (N_UE + Σ_{c≠s} η_c·P·g_uc), i.e. the SNR over 1 + Σ_{c≠s} η_c·SNR_c(u);
- uplink SINR at cell c: the UE's SNR over 1 + Σ_{c'≠c} η_c'·I_c'c/N_RB, with I_c'c
  the mean over the UEs and CUEs attached to c' of p_RB(x)·g_xc — their per-RB power
  the open-loop PSD target (capped at P_max/M_x; M_x a CUE's demand, a device's equal
  share of its cell's uplink RBs) or, under full-carrier power control, P_max spread
  over the carrier.

η_c is the carrier's occupancy now (``activity``: sessions and flows held over its
RBs, re-rating the other cells' active flows whenever it changes — an event that
already happens, never a new one), a constant ``load`` (``load_factor``), or 0.

- D2D SINR of a pair sent in cell s (on RBs of s's uplink no CUE of s holds): the SNR
  over 1 + Σ_{c≠s} η_c·J_c(v), J_c(v) the mean over the UEs and CUEs attached to c
  (but v) of p_RB(x)·g_xv / N_RB at the receiver v — the other cells' uplinks on the
  same band — with g_xv the D2D law's mean loss (no shadowing) at the wrap-around
  distance.

The geometry terms (SNR_c(u), I_c'c, J_c(v)) are computed when devices are (re-)dropped;
a multicast keeps the SINRs of its start. A moving device's unicast with the server follows it in flight
(:meth:`MovingTransfers.carry`).

A transfer between a device and the FL server (``world.bs``) is an access hop over the
device's serving cell plus, unless the server sits at that cell's site, a
``backhaul`` hop (recorded as its own transfer, direction ``backhaul``): the site's
backhaul link, processor-shared per direction at ``capacity``, then its latency.
Downlink goes backhaul first; a multicast sends one backhaul copy per cell and
multicasts in each cell.
"""

from __future__ import annotations

import contextlib
import math
from collections.abc import Callable, Generator, Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd
import simpy

from channel_models.channel_profiles import ChannelProfile
from netfl.core.activity import TransferCut
from netfl.core.nodes import Node
from netfl.core.records import Recorder, TransferRecord
from netfl.radio.backhaul import Backhaul
from netfl.radio.cell_radio import CellRadio
from netfl.radio.handover import HandoverControl
from netfl.radio.interference import Interference
from netfl.radio.moving_transfers import MovingTransfers
from netfl.radio.radio import COVERAGE_COLUMNS, Radio, direction_of
from netfl.radio.radio_energy import BsPowerModel
from netfl.radio.site_geometry import SiteGeometry

__all__ = ["CellRadio", "DEFAULT_HANDOVER", "MultiCellRadio"]

#: handover settings of a network built without them (the scenario's defaults are
#: :class:`netfl.scenario.network_section.Handover`'s)
DEFAULT_HANDOVER = {
    "hysteresis_db": 3.0,
    "ttt_s": 0.16,
    "interruption_s": 0.03,
    "sample_s": 0.04,
    "filter_k": 4,
}


class MultiCellRadio(Radio):
    """Cells with their own carriers, RSRP association, interference and backhaul.

    Parameters
    ----------
    deployment
        :class:`channel_models.site_layouts.HexLayout` or ``SiteList``.
    cell_nodes : list of Node
        One BS node per cell (cell c is sector ``c % sectors`` of site ``c // sectors``).
    server : Node
        The FL server (``world.bs``); ``server_site`` its site (``None``: the cloud).
    shadowing
        Moving devices' shadowing along their paths: ``along_path`` or
        ``spatially_consistent`` (:mod:`netfl.radio.along_path`).
    """

    mode = "ofdma"

    def __init__(
        self,
        env: simpy.Environment,
        recorder: Recorder,
        profile: ChannelProfile,
        scheduler: str,
        deployment: Any,
        cell_nodes: list[Node],
        server: Node,
        server_site: int | None,
        rng_for_transfer: Callable[[int], np.random.Generator],
        rng_for_link: Callable[[int], np.random.Generator],
        interference: str = "load_factor",
        load: float = 1.0,
        antenna: str = "tr38901",
        array_rows: int = 10,
        tilt_zenith_deg: float = 102.0,
        shadowing: str = "along_path",
        backhaul_bps: float = 1e9,
        backhaul_latency_s: float = 0.005,
        max_rbs_per_transfer: float = math.inf,
        scheduler_options: Mapping[str, Any] | None = None,
        bs_power: BsPowerModel | None = None,
        handover: dict[str, float] | None = None,
        aggregate_above_flows: int = 0,
        fading_draw: str = "per_transfer",
    ):
        super().__init__(env, recorder)
        self.profile = profile
        self.deployment = deployment
        self.cell_nodes = cell_nodes
        self.server = server
        self.server_site = server_site
        self._rng_for_transfer = rng_for_transfer
        self._count = 0
        cell_site = deployment.cell_site()
        first = {}
        for c, site in enumerate(cell_site):
            first.setdefault(int(site), cell_nodes[c])
        #: each BS node's site representative (its site's first sector)
        self.site_node = {n.name: first[int(cell_site[c])] for c, n in enumerate(cell_nodes)}
        self.cells = [
            CellRadio(
                env,
                recorder,
                profile,
                scheduler,
                # (one counter over the network: a one-cell network draws as one cell)
                rng_for_transfer=lambda _k: self.next_fading_rng(),
                rng_for_link=rng_for_link,
                max_rbs_per_transfer=max_rbs_per_transfer,
                scheduler_options=scheduler_options,
                aggregate_above_flows=aggregate_above_flows,
                fading_draw=fading_draw,
                bs=node,
                bs_power=bs_power,
                network=self,
                cell=c,
            )
            for c, node in enumerate(cell_nodes)
        ]
        for cell in self.cells:  # (a policy's grants hold in whichever cell serves)
            cell.grants, cell.last_transfers = self.grants, self.last_transfers
        #: the sites, sector antennas and fields (a part: :mod:`netfl.radio.site_geometry`)
        self.geometry = SiteGeometry(
            deployment,
            self.cells[0].pathloss,
            self.cells[0].law_at,
            profile.carrier_hz,
            self.cells[0].link_seed,
            antenna,
            array_rows,
            tilt_zenith_deg,
            shadowing,
        )
        self.backhaul = Backhaul(env, len(self.geometry.site_xy), backhaul_bps, backhaul_latency_s)
        #: the association, moving devices' measurements and their A3 rule (a part:
        #: :mod:`netfl.radio.handover`)
        self.handover = HandoverControl(
            env, self.geometry, len(cell_nodes), {**DEFAULT_HANDOVER, **(handover or {})}
        )
        #: the other cells' interference (a part: :mod:`netfl.radio.interference`)
        self.interference = Interference(
            env, self.cells, self.geometry, profile, self.handover.serving, interference, load
        )
        #: their transfers (a part: :mod:`netfl.radio.moving_transfers`)
        self.moving = MovingTransfers(self)

    @property
    def serving(self) -> Mapping[str, int]:
        """Each device's serving cell (device name → cell; read only: the handover
        control's, set at a drop and by the A3 rule)."""
        return self.handover.serving

    # -- geometry ------------------------------------------------------------------
    def next_fading_rng(self) -> np.random.Generator:
        """The next transfer's fading generator (one counter over the network, so a
        one-cell network draws what a single cell draws)."""
        rng = self._rng_for_transfer(self._count)
        self._count += 1
        return rng

    def follow(self, paths: dict[str, Any]) -> None:
        """Devices (name → trajectory: ``positions(t)``) that move along known paths:
        measured along them, handed over by the A3 rule, followed in flight."""
        self.handover.follow(paths)

    def track(self, ue: Node, t0_s: float, t1_s: float) -> None:
        """Apply the A3 rule along ``ue``'s path over (t0, t1] (:meth:`HandoverControl.track`)."""
        self.handover.track(ue, t0_s, t1_s)

    def refresh(self, ue: Node) -> None:
        """``ue`` moved: the interference terms at its last measurement."""
        self.interference.moved(ue, self.handover.measurement(ue))

    def link_terms(self, cell: CellRadio, link: tuple[Node, Node]) -> tuple[float, float, float]:
        """``(loss, SNR per RB, SNR of all power in one RB)`` of ``link`` of cell ``cell``
        without interference: a moving UE's cellular link at its last measurement
        (:meth:`HandoverControl.measurement`; the link adaptation follows its reports),
        any other link at the nodes' positions."""
        src, dst = link
        ue = src if src.is_device else dst
        if ue.name in self.handover.mobile and not (src.is_device and dst.is_device):
            loss = float(self.handover.measurement(ue)[cell.cell])
            psd, total = cell.snr_terms(loss, not src.is_device, not dst.is_device)
            return loss, float(psd), float(total)
        return cell.link_at_positions(src, dst)

    def coupling_loss_db(self, ues: Sequence[Node]) -> np.ndarray:
        """``(UEs, cells)`` coupling loss [dB]: each cell's path loss, shadowing and LOS
        draw towards each UE, less its antenna gain (the cells' link budgets)."""
        return np.stack(
            [cell.link_loss_matrix_db([cell.node], ues)[0] for cell in self.cells], axis=1
        ).reshape(len(ues), len(self.cells))

    def attach_cues(self, positions_m: np.ndarray, demand_rbs: float = 1.0) -> np.ndarray:
        """Attach CUEs at ``positions_m`` to their best cells (mean coupling loss); the
        cell of each (:meth:`Interference.attach_cues`)."""
        return self.interference.attach_cues(positions_m, demand_rbs)

    def attach(self, devices: Sequence[Node]) -> None:
        """(Re-)associate every device with its highest-RSRP cell and recompute the
        interference terms of this drop."""
        devices = list(devices)
        loss = self.coupling_loss_db(devices) if devices else np.zeros((0, len(self.cells)))
        serving = np.argmin(loss, axis=1) if devices else np.zeros(0, dtype=int)
        self.handover.associate({d.name: int(c) for d, c in zip(devices, serving, strict=True)})
        for cell in self.cells:
            cell.forget_links()
        self.interference.drop(devices, loss, serving)

    def snr_scale(self, cell: int, link: tuple) -> float:
        """SINR/SNR of a link ``(src, dst)`` of cell ``cell`` now."""
        return self.interference.snr_scale(cell, link)

    def link_states(
        self, srcs: Sequence[Node], dsts: Sequence[Node]
    ) -> tuple[np.ndarray, np.ndarray]:
        """FedDif's D2D link planning on a network: ``(mean SINR, expected spectral
        efficiency)`` of every pair ``srcs[m] → dsts[i]`` (devices), each on its sender's
        cell's uplink with the interference now (:meth:`d2d_inr`); 0 on the diagonal."""
        if not all(n.is_device for n in (*srcs, *dsts)):
            raise ValueError("a network plans D2D links only (devices to devices)")
        snr = np.zeros((len(srcs), len(dsts)))
        for m, src in enumerate(srcs):
            c = self.serving[src.name]
            row, _ = self.cells[c].link_states([src], dsts)
            scale = np.array([1.0 / (1.0 + self.interference.d2d_inr(c, d)) for d in dsts])
            snr[m] = row[0] * scale
        return snr, self.cells[0].expected_efficiency(snr, "d2d")

    def allocation_states(
        self, srcs: Sequence[Node], dsts: Sequence[Node], num_rbs: float = 1.0
    ) -> tuple[np.ndarray, np.ndarray]:
        """:meth:`OfdmaRadio.allocation_states` of D2D pairs on a network: each on its
        sender's cell's uplink with the interference now (an SINR [linear], as
        :meth:`link_states`); 0 on the diagonal."""
        if not all(n.is_device for n in (*srcs, *dsts)):
            raise ValueError("a network plans D2D links only (devices to devices)")
        snr = np.zeros((len(srcs), len(dsts)))
        for m, src in enumerate(srcs):
            c = self.serving[src.name]
            snr[m] = self.cells[c].allocation_states([src], dsts, num_rbs)[0][0]
        return snr, self.cells[0].expected_efficiency(snr, "d2d")

    def analog_uplink_inr(self, senders: Sequence[Node], mean_power_w: np.ndarray) -> np.ndarray:
        """Over-the-air slots at once in every cell serving one of ``senders``
        (:mod:`netfl.algorithms.over_the_air`): the uplink interference over noise at
        each such cell's BS (linear, per cell; 0 at the others) — the other cells'
        senders, each at its mean radiated power ``mean_power_w`` spread over the
        carrier's RBs and its coupling gain to that BS, summed (all transmit on every RB
        at once), plus the interference model's share of the cells serving none
        (:meth:`Interference.uplink_inr_without`); 0 under ``none``."""
        out = np.zeros(len(self.cells))
        if self.interference.model == "none" or not len(senders):
            return out
        serving = np.array([self.serving[s.name] for s in senders])
        p = self.profile
        rbs = self.cells[0].carriers["uplink"].num_rbs
        gain = 10.0 ** (-self.coupling_loss_db(senders) / 10.0)  # (senders, cells)
        rx = np.asarray(mean_power_w)[:, None] / rbs * gain / p.noise_w("bs", p.rb_bandwidth_hz)
        busy = sorted({int(c) for c in serving})
        for c in busy:
            out[c] = rx[serving != c, c].sum() + self.interference.uplink_inr_without(c, busy)
        return out

    def d2d_budget(self, senders: Sequence[Node]) -> tuple[np.ndarray, np.ndarray]:
        """One pool per cell (a pair uses its sender's cell's uplink): each sender's cell
        and the uplink bandwidth no CUE holds in each cell [Hz]."""
        pool = np.array([self.serving[s.name] for s in senders], dtype=int)
        return pool, np.array([cell.d2d_free_bandwidth_hz() for cell in self.cells])

    def cell_of(self, device: Node) -> CellRadio:
        return self.cells[self.serving[device.name]]

    def power_class_w(self, device: Node) -> float:
        return float(self.profile.ue_tx_power_w)

    def uplink_pool(self, device: Node) -> int:
        return self.serving[device.name]

    def check_grant(self, device: Node, grant: Any) -> None:
        """:meth:`Radio.check_grant`; a moving device's transfers (re-rated along its
        path) take no share or power grant yet: ``ValueError``."""
        if device.name in self.handover.mobile:
            if grant.share is not None or grant.power_w is not None:
                raise ValueError(
                    f"{device.name} moves: uplink shares and powers of moving devices on a "
                    "network are not modelled (grant only static devices)"
                )
        super().check_grant(device, grant)

    def _served(self, src: Node, dst: Node) -> tuple[CellRadio, Node, Node]:
        """A device ↔ server (or D2D) link as its serving cell carries it: the cell and
        the link's ends there (the cell's BS node for the server)."""
        if src.is_device and dst.is_device:
            return self.cell_of(src), src, dst
        device = src if src.is_device else dst
        c = self.serving[device.name]
        node = self.cell_nodes[c]
        return (self.cells[c], device, node) if src.is_device else (self.cells[c], node, device)

    def mean_snr_db(self, src: Node, dst: Node) -> float:
        """The link's mean SINR [dB] over its serving cell, with the interference now."""
        cell, a, b = self._served(src, dst)
        return cell.mean_snr_db(a, b)

    def block_snr_db(self, src: Node, dst: Node) -> float:
        """:meth:`OfdmaRadio.block_snr_db` over the serving cell (its mean SINR now)."""
        cell, a, b = self._served(src, dst)
        return cell.block_snr_db(a, b)

    def expected_rate_bps(
        self, src: Node, dst: Node, share: float = 1.0, power_w: float | None = None
    ) -> float:
        """:meth:`OfdmaRadio.expected_rate_bps` over the serving cell, at the interference
        now (the backhaul hop is not in it)."""
        cell, a, b = self._served(src, dst)
        return cell.expected_rate_bps(a, b, share, power_w)

    # -- transfers -----------------------------------------------------------------
    def server_aliases(self) -> dict[str, str]:
        """The cells at the server's site (``server_site``): what reaches them reaches
        the server, with no backhaul hop (none for a cloud server)."""
        return {
            node.name: self.server.name
            for c, node in enumerate(self.cell_nodes)
            if self._site_hosts_server(c) and node is not self.server
        }

    def _site_hosts_server(self, cell: int) -> bool:
        return (
            self.server_site is not None and int(self.geometry.cell_site[cell]) == self.server_site
        )

    def backhaul_hop(
        self, cell: int, direction: str, size_bits: float, kind: str, num_models: int
    ) -> Generator[simpy.Event, Any, TransferRecord | None]:
        """The hop between cell ``cell``'s site and the server, recorded (none when the
        server sits at that site)."""
        if self._site_hosts_server(cell) or self.cell_nodes[cell] is self.server:
            return None
        start = self.env.now
        a, b = self.cell_nodes[cell], self.server
        src, dst = (a, b) if direction == "uplink" else (b, a)
        hop = self.backhaul.start(int(self.geometry.cell_site[cell]), direction, size_bits)
        try:
            yield from hop.wait()
        except simpy.Interrupt as stop:  # (a moving device's transfer cut mid-hop)
            hop.cancel()
            cut = TransferCut(stop.cause, hop.delivered_bits)
            self.record(src, dst, kind, "backhaul", size_bits, start, num_models, {}, cut=cut)
            raise
        extra = {"delivered_bits": hop.delivered_bits}
        return self.record(src, dst, kind, "backhaul", size_bits, start, num_models, extra)

    def watch(self, activities) -> None:
        """(The cells' radios carry the bits: they register the devices too.)"""
        super().watch(activities)
        for cell in self.cells:
            cell.watch(activities)

    def cell_index(self, node: Node) -> int | None:
        """The cell whose BS node ``node`` is (None: not a cell's)."""
        for c, n in enumerate(self.cell_nodes):
            if n is node:
                return c
        return None

    def carry(
        self, src: Node, dst: Node, size_bits: float, kind: str, num_models: int
    ) -> Generator[simpy.Event, Any, TransferRecord | None]:
        yield from self.moving.wait_handover([n for n in (src, dst) if n.is_device])
        if not src.is_device and not dst.is_device:  # a cell's BS ↔ the server
            to_server = dst is self.server
            c = self.cell_index(src if to_server else dst)
            if c is None or (dst if to_server else src) is not self.server:
                raise ValueError(f"no backhaul from {src.name} to {dst.name}")
            direction = "uplink" if to_server else "downlink"
            return (yield from self.backhaul_hop(c, direction, size_bits, kind, num_models))
        bs_end = dst if src.is_device else src
        if bs_end is not self.server and bs_end is not None and not bs_end.is_device:
            c = self.cell_index(bs_end)  # a device ↔ a cell's BS (an edge server)
            if c is None:
                raise ValueError(f"{bs_end.name} is not a cell of the network")
            device = src if src.is_device else dst
            if device.name in self.handover.mobile:  # (over its serving cell, wherever it is)
                yield from self.moving.wait_coverage(device, direction_of(src, dst))
                return (
                    yield from self.moving.carry(
                        device, direction_of(src, dst), size_bits, kind, num_models, edge=c
                    )
                )
            return (yield from self.cells[c].carry(src, dst, size_bits, kind, num_models))
        direction = direction_of(src, dst)
        if direction == "d2d":
            cell = self.cell_of(src)
            return (yield from cell.carry(src, dst, size_bits, kind, num_models))
        device = src if direction == "uplink" else dst
        yield from self.moving.wait_coverage(device, direction)
        if device.name in self.handover.mobile:
            return (yield from self.moving.carry(device, direction, size_bits, kind, num_models))
        c = self.serving[device.name]
        cell, node = self.cells[c], self.cell_nodes[c]
        if direction == "downlink":
            yield from self.backhaul_hop(c, "downlink", size_bits, kind, num_models)
            return (yield from cell.carry(node, device, size_bits, kind, num_models))
        record = yield from cell.carry(device, node, size_bits, kind, num_models)
        yield from self.backhaul_hop(c, "uplink", size_bits, kind, num_models)
        return record

    def carry_multicast(
        self, src: Node, receivers: list[Node], size_bits: float, kind: str, num_models: int
    ) -> Generator[simpy.Event, Any, list[TransferRecord]]:
        yield from self.moving.wait_handover(receivers)
        c = self.cell_index(src)
        if src is not self.server and c is not None:  # a cell's BS to its own UEs
            return (
                yield from self.cells[c].carry_multicast(
                    src, receivers, size_bits, kind, num_models
                )
            )
        by_cell: dict[int, list[Node]] = {}
        for r in receivers:
            by_cell.setdefault(self.serving[r.name], []).append(r)

        def one(c: int, members: list[Node]) -> Generator[simpy.Event, Any, list]:
            yield from self.backhaul_hop(c, "downlink", size_bits, kind, num_models)
            return (
                yield from self.cells[c].carry_multicast(
                    self.cell_nodes[c], members, size_bits, kind, num_models
                )
            )

        procs = [self.env.process(one(c, m)) for c, m in sorted(by_cell.items())]
        yield self.env.all_of(procs)
        return [rec for p in procs for rec in p.value]

    # -- records -------------------------------------------------------------------
    def settle(self) -> None:
        super().settle()
        for cell in self.cells:
            cell.settle()

    def coverage(self, bs: Node, devices: Sequence[Node]) -> pd.DataFrame:
        """Re-attaches the devices (called at every drop), then per device its serving
        ``cell``, mean SINRs [dB] with it and ``starved`` (no rate either way). Under
        ``activity`` the SINRs are those at full load (every other cell on all its RBs):
        a device in coverage then has a rate whatever the others do, so its transfers
        never stall on interference."""
        self.attach(devices)
        frames = []
        judged = (  # (at full load under activity: never stalls later)
            self.interference.at_full_load()
            if self.interference.model == "activity"
            else contextlib.nullcontext()
        )
        with judged:
            for d in devices:
                c = self.serving[d.name]
                f = self.cells[c].coverage(self.cell_nodes[c], [d])
                f.insert(1, "cell", c)
                frames.append(f)
        if not frames:
            return pd.DataFrame(columns=[COVERAGE_COLUMNS[0], "cell", *COVERAGE_COLUMNS[1:]])
        return pd.concat(frames, ignore_index=True)

    def tables(self) -> dict[str, pd.DataFrame]:
        """``occupancy`` (per cell and carrier), ``cues`` (positions and cells) and
        ``cells`` (site, position, boresight, uplink interference over noise, the BS
        radio energy, devices attached at the end)."""
        occ = []
        for c, cell in enumerate(self.cells):
            t = cell.tables()["occupancy"]
            t.insert(0, "cell", c)
            occ.append(t)
        attached = pd.Series(list(self.serving.values()), dtype=int).value_counts()
        cells = pd.DataFrame(
            {
                "cell": range(len(self.cells)),
                "node": [n.name for n in self.cell_nodes],
                "site": self.geometry.cell_site,
                "x_m": self.geometry.site_xy[self.geometry.cell_site, 0],
                "y_m": self.geometry.site_xy[self.geometry.cell_site, 1],
                "boresight_deg": self.geometry.boresight,
                # (the mean over the run: under activity, occupancy comes and goes)
                "uplink_inr_db": [
                    self.interference.mean_uplink_inr_db(c) for c in range(len(self.cells))
                ],
                "devices": [int(attached.get(c, 0)) for c in range(len(self.cells))],
                "bs_radio_energy_j": [n.energy.bs_radio_j for n in self.cell_nodes],
            }
        )
        cues = pd.DataFrame(
            {
                "x_m": self.interference.cue_positions_m[:, 0],
                "y_m": self.interference.cue_positions_m[:, 1],
                "cell": self.interference.cue_cells,
            }
        )
        occupancy = pd.concat(occ, ignore_index=True).astype(
            {"cell": int, "time_s": float, "session_rbs": float, "flow_rbs": float}
        )  # (a cell that never carried anything has an empty, untyped frame)
        tables = {"occupancy": occupancy, "cues": cues, "cells": cells}
        if self.handover.mobile:
            tables["handovers"] = self.handover.table()
        return tables

    def __repr__(self) -> str:
        return (
            f"MultiCellRadio({len(self.geometry.site_xy)} sites, {len(self.cells)} cells, "
            f"{self.profile.name!r}, interference={self.interference.model})"
        )
