"""Association and interference of a multi-cell network (issue 23, item 2): RSRP
association of devices and CUEs, the per-drop geometry terms (downlink SNR from every
BS, uplink interference at every BS, D2D interference at every device), the SINR factor
of a link now, the re-rating of active flows when another cell's occupancy changes, and
the SINR factors a moving UE's link has along its path. A part the network radio
composes (:class:`~netfl.radio.multicell_radio.MultiCellRadio`): it holds the CUEs'
cells, the per-drop terms and each cell's share of RBs on air; the network asks it
through its interface (:data:`INTERFACE`); the model is described in that module's
docstring."""

from __future__ import annotations

import math
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import Any

import numpy as np
import simpy

from channel_models.site_layouts import nearest_image_offsets
from channel_models.units import dbm_to_w, linear_to_db
from netfl.core.nodes import Node

__all__ = ["INTERFACE", "Interference"]

#: what the network radio uses of its interference (tested)
INTERFACE = (
    "model",
    "cue_positions_m",
    "cue_cells",
    "attach_cues",
    "drop",
    "moved",
    "inr",
    "uplink_inr_without",
    "snr_scale",
    "d2d_inr",
    "path_scales",
    "downlink_snrs",
    "at_full_load",
    "mean_uplink_inr_db",
)


class Interference:
    """The other cells' interference in a network.

    Parameters
    ----------
    cells
        The network's cell radios; ``geometry`` its :class:`SiteGeometry`; ``serving``
        its association (device name → cell), read only: the handover control's
        (:attr:`HandoverControl.serving`), which keeps it.
    model
        ``"load_factor"`` (each cell on air on ``load`` of its RBs), ``"activity"`` (on
        its carriers' occupancy now) or ``"none"``.
    """

    def __init__(
        self,
        env: simpy.Environment,
        cells: list[Any],
        geometry: Any,
        profile: Any,
        serving: Mapping[str, int],
        model: str = "load_factor",
        load: float = 1.0,
    ):
        self.env, self.cells, self.geometry, self.profile = env, cells, geometry, profile
        self.serving = serving
        self.model, self.load = model, float(load)
        n_cells = len(cells)
        #: each cell's share of RBs on air, per direction: ``load`` (load_factor), 0
        #: (none), or its carriers' occupancy now (activity)
        eta0 = self.load if model == "load_factor" else 0.0
        self.eta = {d: np.full(n_cells, eta0) for d in ("uplink", "downlink")}
        self._snr_dl: dict[str, np.ndarray] = {}  # device → SNR from every cell's BS
        self._d2d_rx: dict[str, np.ndarray] = {}  # device → J_c(v) of every cell (D2D)
        self._d2d_stale: set[str] = set()  # moved since their J_c(v) was found
        self._ul_rx = np.zeros((n_cells, n_cells))  # [c', c]: mean UE of c' at BS c / N_RB
        # the uplink interference over noise at every BS, integrated over time (and the
        # instant it is integrated to): its mean over the run, :meth:`mean_uplink_inr_db`
        self._inr_integral, self._inr_t = np.zeros(n_cells), env.now
        self._stale: set[str] = set()
        self._rerate_pending = False
        self.cue_positions_m = np.zeros((0, 2))
        self.cue_cells = np.zeros(0, dtype=int)
        self._cue_loss = np.zeros((0, n_cells))
        if model == "activity" and n_cells > 1:
            for c, cell in enumerate(cells):
                for d, carrier in cell.carriers.items():
                    carrier.listen(lambda c=c, d=d: self._on_activity(c, d))

    def attach_cues(self, positions_m: np.ndarray, demand_rbs: float = 1.0) -> np.ndarray:
        """Attach CUEs at ``positions_m`` (each holding ``demand_rbs`` RBs in a session)
        to their best cells (mean coupling loss); the cell of each, also kept for the
        uplink interference."""
        self._cue_demand_rbs = float(demand_rbs)
        self.cue_positions_m = np.asarray(positions_m, dtype=float).reshape(-1, 2)
        self.cue_cells = (
            np.argmin(self.geometry.mean_coupling_db(self.cue_positions_m), axis=1)
            if len(self.cue_positions_m)
            else np.zeros(0, dtype=int)
        )
        self._cue_loss = (
            self.geometry.mean_coupling_db(self.cue_positions_m)
            if len(self.cue_positions_m)
            else np.zeros((0, len(self.cells)))
        )
        return self.cue_cells

    def drop(self, devices: Sequence[Node], loss: np.ndarray, serving: np.ndarray) -> None:
        """The terms of a drop: ``devices`` with their coupling losses ``loss`` (UEs,
        cells) attached to ``serving``."""
        devices = list(devices)
        p = self.profile
        n_cells = len(self.cells)
        # downlink: each device's SNR from every cell's BS (the interferers' at full power)
        snr_dl, _ = self.cells[0].snr_terms(loss, True, False)
        self._snr_dl = {d.name: np.asarray(snr_dl[k], dtype=float) for k, d in enumerate(devices)}
        # uplink: [c', c] = mean over the UEs and CUEs attached to c' of p_RB(x)·g_xc / N_RB
        self._integrate_inr()  # (up to this drop, at the devices before it)
        self._ul_rx = np.zeros((n_cells, n_cells))
        self._d2d_rx = {}
        self._d2d_stale: set[str] = set()
        if self.model == "none" or n_cells == 1:
            return
        counts = np.bincount(serving, minlength=n_cells) if devices else np.zeros(n_cells)
        all_loss = np.concatenate([loss, self._cue_loss])
        all_cell = np.concatenate([serving, self.cue_cells]).astype(int)
        if not len(all_loss):
            return
        rbs = self.cells[0].carriers["uplink"].num_rbs
        m = np.concatenate(
            [
                rbs / np.maximum(counts[serving], 1),
                np.full(len(self.cue_cells), self._cue_demand_rbs),
            ]
        )
        own = all_loss[np.arange(len(all_loss)), all_cell]
        p_rb = self._per_rb_power_w(own, m)
        noise_rb = p.noise_w("bs", p.rb_bandwidth_hz)
        rx = p_rb[:, None] * 10.0 ** (-all_loss / 10.0) / noise_rb  # (UEs, cells)
        for c2 in range(n_cells):
            members = all_cell == c2
            if members.any():
                self._ul_rx[c2] = rx[members].mean(axis=0)
        np.fill_diagonal(self._ul_rx, 0.0)
        self._d2d_terms(devices, all_cell, p_rb)

    def _d2d_terms(self, devices: list[Node], all_cell: np.ndarray, p_rb: np.ndarray) -> None:
        """J_c(v) of every device v: the mean over cell c's uplink members x ≠ v (devices,
        then CUEs, in ``all_cell`` order, transmitting ``p_rb`` W per RB) of p_RB(x)·g_xv
        over the UE's noise per RB, g_xv the D2D law's mean loss at the wrap-around
        distance (the devices' heights left at the law's)."""
        self._d2d_power = (devices, p_rb)
        terms = self._d2d_rows(np.arange(len(devices)))
        self._d2d_rx = {d.name: terms[k] for k, d in enumerate(devices)}

    def _d2d_rows(self, receivers: np.ndarray) -> np.ndarray:
        """``(len(receivers), cells)`` J_c of the devices at indices ``receivers`` of this
        drop's list, every member at its position and serving cell now."""
        devices, p_rb = self._d2d_power
        p = self.profile
        xy = np.array([d.position_m for d in devices], dtype=float).reshape(-1, 2)
        all_xy = np.concatenate([xy, self.cue_positions_m])
        all_cell = np.concatenate([[self.serving[d.name] for d in devices], self.cue_cells]).astype(
            int
        )
        off = nearest_image_offsets(
            xy[receivers], all_xy, self.geometry.wrap
        )  # (receivers, members, 2)
        dist = np.maximum(np.hypot(off[..., 0], off[..., 1]), 1.0)
        law = self.cells[0].d2d_pathloss
        gain = 10.0 ** (-law.mean_loss_db(dist.reshape(-1)).reshape(dist.shape) / 10.0)
        rx = p_rb[None, :] * gain / p.noise_w("ue", p.rb_bandwidth_hz)
        rx[np.arange(len(receivers)), receivers] = 0.0  # (not from itself)
        terms = np.zeros((len(receivers), len(self.cells)))
        own = all_cell[receivers]
        for c in range(len(self.cells)):
            members = all_cell == c
            count = members.sum() - (own == c)  # (v is not its own)
            terms[:, c] = rx[:, members].sum(axis=1) / np.maximum(count, 1)
        return terms

    def moved(self, ue: Node, loss: np.ndarray) -> None:
        """``ue`` moved (or handed over), with coupling losses ``loss`` to every cell now:
        its downlink SNR from every BS, and — as a D2D receiver — its J_c found again at
        its position when next needed (:meth:`d2d_row`), the other members at theirs
        then."""
        self._snr_dl[ue.name] = np.asarray(self.cells[0].snr_terms(loss, True, False)[0])
        if ue.name in self._d2d_rx:
            self._d2d_stale.add(ue.name)

    def d2d_row(self, name: str) -> np.ndarray | None:
        """J_c of every cell at device ``name`` (its position now)."""
        if name in self._d2d_stale:
            self._d2d_stale.discard(name)
            devices, _ = self._d2d_power
            k = next(i for i, d in enumerate(devices) if d.name == name)
            self._d2d_rx[name] = self._d2d_rows(np.array([k]))[0]
        return self._d2d_rx.get(name)

    _cue_demand_rbs = 1.0

    def _per_rb_power_w(self, own_loss_db: np.ndarray, rbs: np.ndarray) -> np.ndarray:
        """A UE's transmit power per RB [W] at coupling loss ``own_loss_db`` to its cell
        holding ``rbs`` RBs: open loop min(P_max/M, P0·2^μ·PL^α); full carrier P_max/N."""
        p = self.profile
        pc = p.uplink_power_control
        if pc["model"] == "full_carrier":
            n = self.cells[0].carriers["uplink"].num_rbs
            return np.full(len(own_loss_db), p.ue_tx_power_w / n)
        psd_dbm = pc["p0_dbm"] + 10.0 * math.log10(2.0**p.numerology) + pc["alpha"] * own_loss_db
        return np.minimum(p.ue_tx_power_w / np.maximum(rbs, 1.0), dbm_to_w(psd_dbm))

    def inr(self, cell: int, ue: Node, uplink: bool) -> float:
        """Interference over noise of ``ue``'s link with ``cell`` now (linear): uplink
        Σ_{c'≠c} η_c'·[mean UE of c' at BS c]/N_RB, downlink Σ_{c'≠c} η_c'·SNR_c'(ue),
        with η the other cells' share of RBs on air (``eta``)."""
        if self.model == "none" or len(self.cells) == 1:
            return 0.0
        if uplink:
            return float(self.eta["uplink"] @ self._ul_rx[:, cell])
        row = self._snr_dl.get(ue.name)
        if row is None:
            return 0.0
        eta = self.eta["downlink"]
        return float(eta @ row - eta[cell] * row[cell])

    def uplink_inr_without(self, cell: int, quiet: Sequence[int]) -> float:
        """Uplink interference over noise at ``cell``'s BS now from the other cells but
        the ``quiet`` ones (linear): Σ_{c' ∉ quiet} η_c'·I_c'c (an analog slot's own
        transmitters are counted by it, :mod:`netfl.algorithms.over_the_air`)."""
        if self.model == "none" or len(self.cells) == 1:
            return 0.0
        eta = self.eta["uplink"].copy()
        eta[list(quiet)] = 0.0
        return float(eta @ self._ul_rx[:, cell])

    def snr_scale(self, cell: int, link: tuple) -> float:
        """SINR/SNR of a link ``(src, dst)`` of cell ``cell`` now."""
        src, dst = link
        if src.is_device and dst.is_device:
            return 1.0 / (1.0 + self.d2d_inr(cell, dst))
        return 1.0 / (1.0 + self.inr(cell, src if src.is_device else dst, dst.is_device is False))

    def d2d_inr(self, cell: int, receiver: Node) -> float:
        """Interference over noise at ``receiver`` of a D2D pair sent on cell ``cell``'s
        uplink: Σ_{c≠cell} η_c·J_c(receiver) (the other cells' uplinks on the band)."""
        if self.model == "none" or len(self.cells) == 1:
            return 0.0
        row = self.d2d_row(receiver.name)
        if row is None:
            return 0.0
        eta = self.eta["uplink"]
        return float(eta @ row - eta[cell] * row[cell])

    def path_scales(
        self, cell: int, uplink: bool, loss: np.ndarray, snr: np.ndarray | None = None
    ) -> np.ndarray:
        """SINR/SNR of a moving UE's link with ``cell`` at each of its measurements
        ``loss`` (instants, cells) with the interference now (:meth:`inr`); ``snr``: the
        downlink SNRs of those losses from every cell, when the caller keeps them
        (:meth:`downlink_snrs`)."""
        scale = np.ones(len(loss))
        if self.model == "none" or len(self.cells) == 1:
            return scale
        if uplink:
            scale[:] = 1.0 / (1.0 + float(self.eta["uplink"] @ self._ul_rx[:, cell]))
            return scale
        if snr is None:
            snr = self.downlink_snrs(loss)
        eta = self.eta["downlink"]
        return 1.0 / (1.0 + snr @ eta - eta[cell] * snr[:, cell])

    def downlink_snrs(self, loss: np.ndarray) -> np.ndarray | None:
        """``(instants, cells)`` downlink SNR from each cell at coupling losses ``loss``
        (None where no other cell interferes: :meth:`path_scales` needs none)."""
        if self.model == "none" or len(self.cells) == 1:
            return None
        return self.cells[0].snr_terms(loss, True, False)[0]

    @contextmanager
    def at_full_load(self) -> Iterator[None]:
        """Within it, every other cell is on air on all its RBs (coverage is judged so:
        a device in coverage then never stalls on interference)."""
        eta = self.eta
        self.eta = {d: np.ones(len(self.cells)) for d in eta}
        try:
            yield
        finally:
            self.eta = eta

    def uplink_inr_db(self, cell: int) -> float:
        """Uplink interference over noise at ``cell``'s BS now [dB]."""
        return float(linear_to_db(max(self.eta["uplink"] @ self._ul_rx[:, cell], 1e-30)))

    def _integrate_inr(self) -> None:
        """Bring the time integral of the uplink INR up to now (before η or the
        devices' mean coupling changes)."""
        now = self.env.now
        if now > self._inr_t:
            self._inr_integral += (now - self._inr_t) * (self.eta["uplink"] @ self._ul_rx)
            self._inr_t = now

    def mean_uplink_inr_db(self, cell: int) -> float:
        """Uplink interference over noise at ``cell``'s BS averaged over the run so far
        (linear mean, in dB): under ``activity`` the other cells' uplink occupancy
        comes and goes — the value at the run's end, when every carrier is idle, says
        nothing (−300 dB, the floor); with a load factor, the constant one."""
        self._integrate_inr()
        if self._inr_t <= 0.0:
            return self.uplink_inr_db(cell)
        return float(linear_to_db(max(self._inr_integral[cell] / self._inr_t, 1e-30)))

    def _on_activity(self, cell: int, direction: str) -> None:
        """``interference: activity``: cell ``cell``'s ``direction`` carrier changed its
        occupancy. When its share of RBs on air moved, the other cells' active FL flows
        of that direction are re-rated — once per instant, after every change of that
        instant (a round's transfers start together in every cell): no time passes in
        between, so no bit is carried at a stale SINR."""
        carrier = self.cells[cell].carriers[direction]
        background, fl = carrier.held()
        eta = min((background + fl) / carrier.num_rbs, 1.0)
        if abs(eta - self.eta[direction][cell]) <= 1e-12:
            return
        if direction == "uplink":
            self._integrate_inr()
        self.eta[direction][cell] = eta
        self._stale.add(direction)
        if not self._rerate_pending:
            self._rerate_pending = True
            self.env.timeout(0.0).callbacks.append(self._rerate)

    def _rerate(self, _event: simpy.Event | None = None) -> None:
        """Every active FL unicast (D2D pairs on the uplink too) of a direction whose η
        changed, at its SINR now."""
        self._rerate_pending = False
        stale, self._stale = sorted(self._stale), set()
        for direction in stale:
            for k, cell in enumerate(self.cells):
                carrier = cell.carriers[direction]
                flows = [
                    f for f in carrier.flows if f.link is not None and f.multicast_snrs is None
                ]
                if not flows:
                    continue
                scales = np.array([self.snr_scale(k, f.link) for f in flows])
                moved = np.abs(scales - np.array([f.snr_scale for f in flows])) > 1e-12 * scales
                if not moved.any():
                    continue  # (e.g. only this cell's own share changed)
                along = [f for f, m in zip(flows, moved, strict=True) if m and f.path is not None]
                for f, sc in zip(flows, scales, strict=True):
                    if f.path is not None:
                        f.snr_scale = float(sc)
                carrier.refresh_paths(along)  # (moving UEs: their path's terms, from now on)
                fixed = moved & np.array([f.path is None for f in flows])
                if fixed.any():
                    carrier.rescale_snr(
                        [f for f, m in zip(flows, fixed, strict=True) if m], scales[fixed]
                    )
