"""The geometry of a network's links to its BSs (issue 23): the sites and their images
nearest to a UE (wrap-around), the sector antenna's gain summed over a link's TR 38.901
departure rays, spatially consistent fields and coupling losses along a moving UE's
path. A part the network radio composes
(:class:`~netfl.radio.multicell_radio.MultiCellRadio`): it holds the deployment, the
antenna, the cellular path-loss law and its caches; the network asks it through the
methods below (its interface, :data:`INTERFACE`)."""

from __future__ import annotations

import math
import zlib
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from channel_models.bs_antenna import sector_gain_db, site_gains_db
from channel_models.departure_rays import LinkRays, draw_link_rays, median_asd_deg
from channel_models.pathloss import los_distance_m
from channel_models.site_layouts import nearest_image_offsets
from netfl.core.nodes import Node
from netfl.radio.along_path import AlongPathFields
from netfl.radio.path_gains import ray_gains_db_along

if TYPE_CHECKING:
    from netfl.radio.cell_radio import CellRadio

__all__ = ["INTERFACE", "RAY_STATES", "SiteGeometry"]

RAY_STATES = ("los", "nlos", "o2i")
#: a moving UE's measurement instants per aligned segment (the handover control's)
SEGMENT_INSTANTS = 32
#: what the network radio uses of its geometry (tested)
INTERFACE = (
    "site_xy",
    "cell_site",
    "boresight",
    "wrap",
    "mobile",
    "directional",
    "offsets_m",
    "antenna_gains_db",
    "link_rays",
    "mean_coupling_db",
    "all_site_fields",
    "coupling_along",
    "follow",
)


class SiteGeometry:
    """Sites, sector antennas and fields of a network.

    Parameters
    ----------
    deployment
        :class:`channel_models.site_layouts.HexLayout` or ``SiteList``.
    law
        The cellular path-loss law (the cells'); ``law_at(law, h_tx, h_rx)`` the law at
        other antenna heights (kept by the cells).
    carrier_hz, link_seed
        The profile's carrier frequency and the links' keyed-hash seed.
    antenna, array_rows, tilt_zenith_deg
        ``"tr38901"`` (sector element and vertical array) or ``"omni"``.
    """

    def __init__(
        self,
        deployment: Any,
        law: Any,
        law_at: Callable[[Any, float, float], Any],
        carrier_hz: float,
        link_seed: int,
        antenna: str = "tr38901",
        array_rows: int = 10,
        tilt_zenith_deg: float = 102.0,
        shadowing: str = "along_path",
    ):
        self.site_xy = deployment.site_xy()
        self.cell_site = deployment.cell_site()
        self.boresight = deployment.cell_boresight_deg()
        self.wrap = deployment.wrap_vectors()
        self.law, self.law_at = law, law_at
        self.scenario = law.scenario
        self.bs_height_m = float(law.height_tx_m)
        self.carrier_hz = float(carrier_hz)
        self.link_seed = int(link_seed)
        self.antenna = antenna
        self.array_rows = int(array_rows) if antenna == "tr38901" else 1
        self.tilt_zenith_deg = float(tilt_zenith_deg)
        #: devices that move (their rays are kept per site and state along the path)
        self.mobile: set[str] = set()
        #: where each moving device's path starts: its rays to a site, in each state,
        #: are correlated with the shadowing there (:meth:`coupling_along`)
        self.path_origins: dict[str, np.ndarray] = {}
        self._origin_z: dict[str, np.ndarray] = {}
        self._gain_cache: dict[tuple, float] = {}
        self._rays: dict[tuple, LinkRays] = {}
        self._fields: dict[Any, tuple] = {}
        #: moving devices' shadowing: ``along_path`` (AR(1) chains from the fields'
        #: values where each path starts, :mod:`netfl.radio.along_path`) or
        #: ``spatially_consistent`` (the fields along the whole path)
        self.shadowing = shadowing
        self.along = (
            AlongPathFields(
                lambda xy: self.all_site_normals(np.asarray(xy)[None])[0],
                law.decorrelation_m,
                self.link_seed,
                SEGMENT_INSTANTS,
            )
            if shadowing == "along_path"
            else None
        )

    def follow(self, origins: dict[str, np.ndarray]) -> None:
        """Devices (name → where its path starts) that move: their rays are kept per site
        and state along the path, correlated with the shadowing at its start."""
        self.mobile = set(origins)
        self.path_origins = {n: np.asarray(xy, dtype=float) for n, xy in origins.items()}
        self._origin_z.clear()
        self._rays = {k: r for k, r in self._rays.items() if k[0] not in origins}
        if self.along is not None:
            self.along.forget()

    @property
    def directional(self) -> bool:
        """Whether the BS antenna has a pattern (else an omni element, one row)."""
        return not (self.antenna == "omni" and self.array_rows == 1)

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
            if self.scenario is not None and law.draws_los:
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
                    self.scenario,
                    self.carrier_hz,
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
                self.scenario or "uma",
                self.carrier_hz,
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
        its rays per site and state along its path (kept here, not re-drawn), correlated
        with the shadowing where its path starts (:attr:`path_origins`), so they do not
        depend on which of its points are evaluated first."""
        states = [
            "o2i" if u.o2i_loss_db > 0 else ("los" if lo else "nlos")
            for u, lo in zip(ues, los, strict=True)
        ]
        seed = int(self.link_seed)
        drawn = []
        for u, state, z in zip(ues, states, shadow_z, strict=True):
            mobile = u.name in self.mobile
            key = (u.name, site, state)
            got = self._rays.get(key) if mobile else None
            if got is None:
                if mobile and u.name in self.path_origins:
                    z = self._origin_shadow(u.name)[site]
                where = () if mobile else tuple(int(v) for v in u.position_m.view(np.uint64))
                rng = np.random.default_rng(
                    [seed, zlib.crc32(u.name.encode()), site, RAY_STATES.index(state), *where]
                )
                asd = median_asd_deg(self.scenario, self.carrier_hz, state)
                got = draw_link_rays(self.scenario, state, np.array([-z]), rng, asd)
                if mobile:
                    self._rays[key] = got
            drawn.append(got)
        return drawn[0] if len(drawn) == 1 else LinkRays.stack(drawn)

    def _origin_shadow(self, name: str) -> np.ndarray:
        """``(sites,)`` shadowing normals where moving device ``name``'s path starts."""
        z = self._origin_z.get(name)
        if z is None:
            z = self._origin_z[name] = self.all_site_fields(self.path_origins[name][None])[1][0]
        return z

    def mean_coupling_db(self, xy: np.ndarray) -> np.ndarray:
        """``(points, cells)`` coupling loss without shadowing (mean path loss at the
        wrap-around distance, less the direct-direction antenna gain): CUE association."""
        law = self.law
        out = np.empty((len(xy), len(self.cell_site)))
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
            self.scenario or "uma",
            self.carrier_hz,
            np.full(d2.shape, law.height_rx_m),
            self.bs_height_m,
            self.array_rows,
            tilt_zenith_deg=self.tilt_zenith_deg,
        )
        out[:] = pl - gain
        return out

    def site_fields(self, site: int, xy: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Site ``site``'s spatially consistent LOS uniform and shadowing normal at points
        ``xy`` (TR 38.901 §7.6.3: exponential correlation over the LOS-state and the
        NLOS shadowing decorrelation distances of the profile's scenario)."""
        from scipy.special import ndtr

        from channel_models.mobility import ShadowField

        fields = self._fields.get(site)
        if fields is None:
            d_los, d_sf = self.law.decorrelation_m
            base = int(self.link_seed) % (2**31)
            fields = self._fields[site] = (
                ShadowField(d_los, seed=base + 2 * site + 1, num_waves=512),
                ShadowField(d_sf, seed=base + 2 * site + 2, num_waves=512),
            )
        return ndtr(fields[0].values(xy)), fields[1].values(xy)

    def all_site_fields(
        self, xy: np.ndarray, segment: int | None = None
    ) -> tuple[np.ndarray, np.ndarray]:
        """:meth:`site_fields` of every site at once: ``(points, sites)`` uniforms and
        normals (one product with all the sites' waves stacked). ``segment``: the
        points are consecutive segments of this many (see :meth:`coupling_along`)."""
        from scipy.special import ndtr

        v = self.all_site_normals(xy, segment)
        return ndtr(v[:, :, 0]), v[:, :, 1]

    def all_site_normals(self, xy: np.ndarray, segment: int | None = None) -> np.ndarray:
        """``(points, sites, 2)``: the normals of every site's LOS-state and shadowing
        fields at ``xy`` (:meth:`all_site_fields` before the LOS one's Φ)."""
        stacked = self._fields.get("stacked")
        if stacked is None:
            n_sites = len(self.site_xy)
            for site in range(n_sites):
                self.site_fields(site, self.site_xy[:1])  # (builds the fields)
            fields = [self._fields[site][k] for site in range(n_sites) for k in (0, 1)]
            waves = [f._waves() for f in fields]
            omega = np.concatenate([w[0] for w in waves])  # (2·sites·M, 2)
            stacked = self._fields["stacked"] = (
                omega,
                np.concatenate([w[1] for w in waves]),
                fields[0].num_waves,
                np.ascontiguousarray(omega.T, dtype=np.float32),
            )
        omega, phase, m, omega32 = stacked
        xy = np.asarray(xy, dtype=float).reshape(-1, 2)
        # the phases at each segment's first point in double precision (reduced to
        # [0, 2π)), the changes along the path from it in single: single-precision
        # cosines are vectorised an order of magnitude faster, and a path's points lie
        # metres apart, so the phases keep ~1e-5 rad
        seg = segment or max(len(xy), 1)
        starts = np.arange(0, len(xy), seg)
        base = xy[starts] @ omega.T + phase
        base -= (2.0 * math.pi) * np.floor(base * (0.5 / math.pi))
        base = base.astype(np.float32)
        if len(xy) % seg:  # (a last segment cut short)
            first = np.repeat(starts, np.diff(np.append(starts, len(xy))))
            arg = (xy - xy[first]).astype(np.float32) @ omega32
            arg += base[first // seg]
        else:  # (whole segments: each segment's phases added to its points at once)
            rel = xy.reshape(len(starts), seg, 2) - xy[starts][:, None, :]
            arg = (rel.astype(np.float32) @ omega32).reshape(len(starts), seg, -1)
            arg += base[:, None, :]
        # (the sums of 512 waves in single precision: ~1e-6 of a unit normal)
        v = np.cos(arg, out=arg).reshape(len(xy), -1, 2, m).sum(-1).astype(np.float64)
        v *= math.sqrt(2.0 / m)
        return v

    def coupling_along(
        self,
        ue: Node,
        xy: np.ndarray,
        segment: int | None = None,
        k0: int | None = None,
        positions: Callable[[np.ndarray], np.ndarray] | None = None,
    ) -> np.ndarray:
        """``(points, cells)`` coupling loss [dB] of ``ue`` were it at each of ``xy``:
        path loss at the wrap-around distance with the sites' fields (a moving UE's
        measurement instants k0, k0 + 1, … under ``along_path`` shadowing: their AR(1)
        chains, :mod:`netfl.radio.along_path`; ``positions(ks)`` its path), its O2I loss, less
        the antenna gain — on TR 38.901 UMa/UMi links summed over the link's departure
        rays in the LOS state the field gives at each point (:meth:`link_rays`, kept per
        site and state along the path): the RSRP the A3 rule compares is the one the
        link budget and the association use (under ``along_path`` shadowing, at the
        drop: then the chains take over, :mod:`netfl.radio.along_path`).

        ``segment``: the points are consecutive segments of this many, each evaluated
        on its own (its fields' phases from its first point, its gain anchors from its
        first to its last point), so a path evaluated in aligned segments gives the same
        values however its segments are grouped into calls (None: one segment)."""
        law0 = self.law
        h_ut = ue.height_m if math.isfinite(ue.height_m) else law0.height_rx_m
        law = self.law_at(law0, self.bs_height_m, h_ut)
        site_offs = nearest_image_offsets(xy, self.site_xy, self.wrap)  # (points, sites, 2)
        offs = site_offs[:, self.cell_site, :]
        d2 = np.hypot(offs[..., 0], offs[..., 1])  # (points, cells)
        if self.along is not None and k0 is not None and ue.name in self.mobile:
            u_site, z_site = self.along.fields(ue.name, k0, xy, positions)
        else:
            u_site, z_site = self.all_site_fields(xy, segment)
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
        if self.scenario is None or not law.draws_los:
            return (
                out
                + ue.o2i_loss_db
                - sector_gain_db(  # (the direct direction)
                    offs,
                    np.full(d2.shape, h_ut - self.bs_height_m),
                    None if omni else bore,
                    None,
                    self.scenario or "uma",
                    self.carrier_hz,
                    np.full(d2.shape, h_ut),
                    self.bs_height_m,
                    self.array_rows,
                    tilt_zenith_deg=self.tilt_zenith_deg,
                )
            )
        site_d2 = los_distance_m(np.hypot(site_offs[..., 0], site_offs[..., 1]), inside)
        los = u_site < law.los_probability(site_d2)  # (points, sites), as loss_db_given
        # a (site, state)'s rays: kept for a moving UE (:meth:`link_rays`), else drawn
        # correlated with the shadowing at the first point in that state
        names = ("o2i", "o2i") if ue.o2i_loss_db > 0 else ("nlos", "los")
        kept = self._rays if ue.name in self.mobile else {}
        rays = {}
        for state, there in ((True, los.any(axis=0)), (False, (~los).any(axis=0))):
            for site in there.nonzero()[0].tolist():
                got = kept.get((ue.name, site, names[state]))
                if got is None:
                    k = np.flatnonzero(los[:, site] == state)[:1]
                    got = self.link_rays([ue], site, los[k, site], z_site[k, site])
                rays[site, state] = got
        out -= ray_gains_db_along(
            site_offs,
            los,
            rays,
            None if omni else self.boresight.reshape(len(self.site_xy), -1),
            h_ut - self.bs_height_m,
            h_ut,
            self.scenario,
            self.carrier_hz,
            self.bs_height_m,
            self.array_rows,
            self.tilt_zenith_deg,
            segment,
        )
        return out + ue.o2i_loss_db
