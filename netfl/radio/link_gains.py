"""The geometry of a network's links to its BSs (issue 23): each site's image nearest to
a UE, the sector antenna's gain summed over the link's TR 38.901 departure rays, and
the coupling losses association uses. A mixin of
:class:`~netfl.radio.multicell_radio.MultiCellRadio`, which holds the state these
methods use (the cells, the deployment's sites, boresights and wrap vectors, the
antenna, the moving devices and the caches ``_gain_cache`` and ``_rays``)."""

from __future__ import annotations

import math
import zlib
from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np

from channel_models.bs_antenna import sector_gain_db, site_gains_db
from channel_models.departure_rays import LinkRays, draw_link_rays, median_asd_deg
from channel_models.multicell import nearest_image_offsets
from channel_models.pathloss import los_distance_m
from netfl.core.nodes import Node

if TYPE_CHECKING:
    from netfl.radio.multicell_radio import CellRadio

__all__ = ["LinkGainsMixin", "RAY_STATES"]

RAY_STATES = ("los", "nlos", "o2i")


class LinkGainsMixin:
    def offsets_m(self, xy: np.ndarray, cell: int) -> np.ndarray:
        """``(P, 2)`` vectors from cell ``cell``'s site (its image nearest to each point,
        wrap-around) to the points ``xy``."""
        site = self.site_xy[self.cell_site[cell]]
        return nearest_image_offsets(xy, site[None, :], self.wrap)[:, 0, :]

    def antenna_gains_db(self, ues: Sequence[Node], cell: CellRadio) -> np.ndarray:
        """Cell ``cell``'s antenna gain towards each UE [dB], kept per UE position: the
        sector element and array summed over the link's departure rays on TR 38.901
        UMa/UMi links (:meth:`link_rays`; the LOS state and shadowing the link's own
        draws), else in the direct direction."""
        keys = [
            (u.name, u.position_m.tobytes(), u.height_m, u.o2i_loss_db > 0, cell.cell) for u in ues
        ]
        missing = [k for k, key in enumerate(keys) if key not in self._gain_cache]
        if missing:
            if len(self._gain_cache) > 500_000:
                self._gain_cache.clear()
            miss = [ues[k] for k in missing]
            xy = np.array([u.position_m for u in miss], dtype=float)
            off = self.offsets_m(xy, cell.cell)
            law = cell.pathloss
            h_ut = np.array([u.height_m for u in miss], dtype=float)
            h_ut = np.where(np.isfinite(h_ut), h_ut, law.height_rx_m)
            if self._scenario is not None and law.draws_los:
                d2 = np.hypot(off[:, 0], off[:, 1])
                u, z = cell.link_variates(miss, [cell.node], xy, cell.node.position_m[None, :])
                p_los = np.empty(len(miss))
                inside = np.array([m.o2i_inside_m if m.o2i_loss_db > 0 else 0.0 for m in miss])
                for h in np.unique(h_ut):
                    sel = h_ut == h
                    at = cell.law_at(law, self.bs_height_m, float(h))
                    p_los[sel] = at.los_probability(los_distance_m(d2[sel], inside[sel]))
                los = u[:, 0] < p_los
                site = int(self.cell_site[cell.cell])
                rays = self.link_rays(miss, site, los, z[:, 0])
                # the site's other sectors see the same rays: their gains too, at once
                cells = np.flatnonzero(self.cell_site == site)
                bores = self.boresight[cells]
                gains = site_gains_db(
                    off,
                    h_ut - self.bs_height_m,
                    None if self.antenna == "omni" or not np.isfinite(bores).all() else bores,
                    los,
                    self._scenario,
                    self.profile.carrier_hz,
                    h_ut,
                    self.bs_height_m,
                    self.array_rows,
                    0.8,
                    self.tilt_zenith_deg,
                    rays,
                )
                for j, c in enumerate(cells if gains.shape[1] == len(cells) else [cell.cell]):
                    for k, g in zip(missing, gains[:, j], strict=True):
                        self._gain_cache[keys[k][:-1] + (int(c),)] = float(g)
                return np.array([self._gain_cache[key] for key in keys])
            bore = self.boresight[cell.cell]
            gain = sector_gain_db(
                off[:, None, :],
                (h_ut - self.bs_height_m)[:, None],
                None if self.antenna == "omni" or not math.isfinite(bore) else np.array([[bore]]),
                None,
                self._scenario or "uma",
                self.profile.carrier_hz,
                h_ut[:, None],
                self.bs_height_m,
                self.array_rows,
                tilt_zenith_deg=self.tilt_zenith_deg,
            )[:, 0]
            for k, g in zip(missing, gain, strict=True):
                self._gain_cache[keys[k]] = float(g)
        return np.array([self._gain_cache[key] for key in keys])

    def link_rays(
        self, ues: Sequence[Node], site: int, los: np.ndarray, shadow_z: np.ndarray
    ) -> LinkRays:
        """The departure rays of each UE's link to ``site`` (TR 38.901 §7.5 steps 4–7,
        :mod:`channel_models.departure_rays`) in its state (LOS, NLOS, or O2I for an
        indoor UE), correlated with its shadowing ``shadow_z`` (loss sense). Each link's
        rays come from its own generator — keyed by the link seed, the UE's name, the
        site, the state and (static UEs) the position — so they are the same whatever
        order links are evaluated in and shared by the site's sectors; a moving UE keeps
        its rays per site and state along its path (kept here, not re-drawn)."""
        states = [
            "o2i" if u.o2i_loss_db > 0 else ("los" if lo else "nlos")
            for u, lo in zip(ues, los, strict=True)
        ]
        seed = int(self.cells[0].link_seed)
        drawn = []
        for u, state, z in zip(ues, states, shadow_z, strict=True):
            mobile = u.name in self.mobile
            key = (u.name, site, state)
            got = self._rays.get(key) if mobile else None
            if got is None:
                where = () if mobile else tuple(int(v) for v in u.position_m.view(np.uint64))
                rng = np.random.default_rng(
                    [seed, zlib.crc32(u.name.encode()), site, RAY_STATES.index(state), *where]
                )
                asd = median_asd_deg(self._scenario, self.profile.carrier_hz, state)
                got = draw_link_rays(self._scenario, state, np.array([-z]), rng, asd)
                if mobile:
                    self._rays[key] = got
            drawn.append(got)
        return LinkRays.stack(drawn)

    def coupling_loss_db(self, ues: Sequence[Node]) -> np.ndarray:
        """``(UEs, cells)`` coupling loss [dB]: each cell's path loss, shadowing and LOS
        draw towards each UE, less its antenna gain."""
        return np.stack(
            [c.link_loss_matrix_db([c.node], ues)[0] for c in self.cells], axis=1
        ).reshape(len(ues), len(self.cells))

    def _mean_coupling_db(self, xy: np.ndarray) -> np.ndarray:
        """``(points, cells)`` coupling loss without shadowing (mean path loss at the
        wrap-around distance, less the direct-direction antenna gain): CUE association."""
        law = self.cells[0].pathloss
        out = np.empty((len(xy), len(self.cells)))
        if not len(xy):
            return out
        offs = nearest_image_offsets(xy, self.site_xy, self.wrap)[:, self.cell_site, :]  # (P, C, 2)
        d2 = np.hypot(offs[..., 0], offs[..., 1])
        pl = law.mean_loss_db(d2.reshape(-1)).reshape(d2.shape)
        bore = self.boresight[None, :]
        gain = sector_gain_db(
            offs,
            np.full(d2.shape, law.height_rx_m - self.bs_height_m),
            None if self.antenna == "omni" or not np.isfinite(bore).all() else bore,
            None,
            self._scenario or "uma",
            self.profile.carrier_hz,
            np.full(d2.shape, law.height_rx_m),
            self.bs_height_m,
            self.array_rows,
            tilt_zenith_deg=self.tilt_zenith_deg,
        )
        out[:] = pl - gain
        return out
