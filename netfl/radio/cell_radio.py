"""One cell of a multi-cell network (issue 23): an OFDMA radio whose links to its own
BS see the network's geometry (the BS at its site's image nearest to the UE, the sector
antenna over the link's rays, an indoor UE's O2I loss, a moving UE's spatially consistent
fields) and the other cells' interference, both asked of the network that composes it
(:class:`~netfl.radio.multicell_radio.MultiCellRadio`)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from netfl.core.nodes import Node
from netfl.radio.ofdma_radio import OfdmaRadio

__all__ = ["CellRadio", "INTERFACE"]

#: what the network radio, its parts, the builder (its CUEs) and an analog slot use of a
#: cell (tested where the radio uses it)
INTERFACE = (
    "cell",
    "node",
    "carriers",
    "pathloss",
    "law_at",
    "link_seed",
    "d2d_pathloss",
    "d2d_free_bandwidth_hz",
    "link_loss_matrix_db",
    "link_variates",
    "link_at_positions",
    "link_states",
    "allocation_states",
    "expected_efficiency",
    "snr_terms",
    "forget_links",
    "max_rbs_per_transfer",
    "promote",
    "begin",
    "send",
    "end",
    "record",
    "carry",
    "carry_multicast",
    "settle",
    "coverage",
    "watch",
    "tables",
    "cues",
    "cue_mean_snr",
    "mean_snr_db",
    "block_snr_db",
    "expected_rate_bps",
    "grants",
    "last_transfers",
    # (and over-the-air aggregation's slot, netfl.algorithms.over_the_air)
    "link_fading",
    "link_now",
)


class CellRadio(OfdmaRadio):
    """One cell of a :class:`MultiCellRadio`: an OFDMA radio whose links to its BS see
    the network's geometry (wrap-around, sector antenna) and interference."""

    def __init__(self, *args: Any, network: Any, cell: int, **kw: Any):
        super().__init__(*args, **kw)
        self.network = network
        self.cell = cell
        self.node: Node = kw["bs"]
        self.group_ids = network.group_ids  # (multicast ids unique over the network)
        #: a device's RRC state is its own, not a cell's: one over the network (a
        #: handover keeps it connected; its tail and promotion are charged once)
        self.ue_states = network.ue_states

    def _node_key(self, node: Node) -> np.uint64:
        """A BS's key is its site's (the first sector's node): co-located sectors share
        their links' LOS states and shadowing, as TR 38.901's large-scale parameters
        are per site."""
        return super()._node_key(self.network.site_node.get(node.name, node))

    def _cellular(self, srcs: Sequence[Node], dsts: Sequence[Node]) -> np.ndarray:
        return np.array([[(s is self.node) != (d is self.node) for d in dsts] for s in srcs])

    def _distances_m(self, srcs, dsts, a, b) -> np.ndarray:
        dist = super()._distances_m(srcs, dsts, a, b)
        if self.network.geometry.wrap.size:  # (the BS at its image nearest to the UE)
            rows, cols = self._cellular(srcs, dsts).nonzero()
            if rows.size:
                ues = self._ues(srcs, dsts, rows, cols)
                off = self.network.geometry.offsets_m(
                    np.array([u.position_m for u in ues]), self.cell
                )
                dist[rows, cols] = np.hypot(off[:, 0], off[:, 1])
        return dist

    def link_variates(self, srcs, dsts, a, b):
        """The keyed-hash draws, except on a moving UE's links to a BS: the spatially
        consistent fields of the BS's site at the UE's position (TR 38.901 §7.6.3)."""
        u, z = super().link_variates(srcs, dsts, a, b)
        net = self.network
        if not net.handover.mobile:
            return u, z
        links = []
        for m, sn in enumerate(srcs):
            for i, dn in enumerate(dsts):
                ue, bs = (sn, dn) if sn.is_device else (dn, sn)
                if ue.is_device and not bs.is_device and ue.name in net.handover.mobile:
                    c = net.cell_index(bs)
                    if c is not None:
                        links.append((m, i, ue, int(net.geometry.cell_site[c])))
        if links:  # (every site's fields at the UEs at once, as along their paths)
            rows, cols, ues, sites = zip(*links, strict=True)
            fu, fz = net.geometry.all_site_fields(np.array([ue.position_m for ue in ues]), 1)
            at = np.arange(len(links))
            u[rows, cols], z[rows, cols] = fu[at, sites], fz[at, sites]
        return u, z

    def _ues(self, srcs, dsts, rows, cols) -> list[Node]:
        return [
            dsts[i] if srcs[m] is self.node else srcs[m] for m, i in zip(rows, cols, strict=True)
        ]

    def link_loss_matrix_db(self, srcs: Sequence[Node], dsts: Sequence[Node]) -> np.ndarray:
        """:meth:`OfdmaRadio.link_loss_matrix_db` plus an indoor UE's O2I loss, less the
        sector antenna's gain, on this cell's links (coupling loss)."""
        out = super().link_loss_matrix_db(srcs, dsts)
        rows, cols = self._cellular(srcs, dsts).nonzero()
        if not rows.size:
            return out
        ues = self._ues(srcs, dsts, rows, cols)
        o2i = np.array([u.o2i_loss_db for u in ues])
        if o2i.any():
            out[rows, cols] += o2i
        if self.network.geometry.directional:
            out[rows, cols] -= self.network.geometry.antenna_gains_db(ues, self)
        return out

    def link_now(self, src: Node, dst: Node) -> tuple[float, float, float]:
        """``(loss, SINR per RB, SINR of all power in one RB)`` with the interference now."""
        loss, psd, total = self.network.link_terms(self, (src, dst))
        scale = self.network.snr_scale(self.cell, (src, dst))
        return loss, psd * scale, total * scale

    def send(self, carrier, size_bits, psd, total, rng=None, **kw):
        """A flow at its link's SINR at this instant (an upload's later grant cycles start
        at the interference of their own start), tagged with its SINR factor."""
        link = kw.get("link")
        if link is not None and kw.get("multicast_snrs") is None:
            _, psd, total = self.network.link_terms(self, link)
            kw["snr_scale"] = scale = self.network.snr_scale(self.cell, link)
            psd, total = psd * scale, total * scale
        return super().send(carrier, size_bits, psd, total, rng, **kw)
