"""Multi-cell deployments (issue 23, first part): hexagonal sites and sectors with
wrap-around, the TR 38.901 BS antenna, TR 38.901 UE drops with indoor users, and the
Phase-1 calibration metrics — coupling loss, RSRP association, geometry SINR.

Pure numpy; the runtime (carriers per cell, interference) builds on it later.

Geometry. Sites sit on a hexagonal grid of inter-site distance ``isd_m``: 1, 7 or 19
sites (0, 1, 2 rings), in axial coordinates (q, r) at ``x = D·(q + r/2)``,
``y = D·(√3/2)·r``. A 1-ring (2-ring) cluster tiles the plane by the six rotations
of axial (3, −1) ((5, −2)), vectors of length √7·D (√19·D); with ``wrap_around`` a UE
sees each site at the nearest of its seven images (TR 36.814 A.2.1.1 / the 3GPP
calibration convention). Three sectors per site point at 30°, 150° and 270°
(TR 38.901 Table 7.8-1's convention), or one omni cell.

Antenna: :mod:`channel_models.bs_antenna`.

Drops (TR 38.901 Table 7.8-1, 7.4.3): ``ues_per_site`` UEs uniform over each site's
hexagon at least ``min_distance_m`` from it; a share ``indoor_fraction`` indoor, on
floor n_fl ~ U{1..N_fl}, N_fl ~ U{4..8}, height 3(n_fl − 1) + 1.5 m, at an indoor
distance min(U(0, 25), U(0, 25)) m; outdoor UEs at 1.5 m. O2I loss (Table 7.4.3-2): half
the indoor UEs behind low-loss, half behind high-loss walls, PL_tw + 0.5·d_2D-in + N(0,
σ_P²) (σ_P 4.4 / 6.5 dB). The LOS state uses the outdoor distance d_2D − d_2D-in;
shadowing is drawn per UE and site (co-located sectors share it), an indoor UE's with
the O2I σ_SF (7 dB, Table 7.5-6).

Coupling loss. A link's antenna gain is its power summed over its own departure rays
(:mod:`channel_models.departure_rays`: TR 38.901 §7.5 steps 4–7 per UE and site, the
LSPs correlated with the link's shadowing) — the RSRP a 3GPP calibration's coupling
loss is defined on.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass

import numpy as np

from channel_models.bs_antenna import (
    sector_gain_db,
    site_gains_db,
)
from channel_models.departure_rays import (
    RAY_PARAMS,
    RAYS_PER_CLUSTER,
    LinkRays,
    draw_link_rays,
    median_asd_deg,
)
from channel_models.pathloss import PathLoss, outdoor_distance_m
from channel_models.pathloss_laws import PATHLOSS_MODELS

__all__ = [
    "HexLayout",
    "SiteList",
    "nearest_image_offsets",
    "axial_hexagons",
    "UeDrop",
    "drop_ues",
    "indoor_states",
    "o2i_loss_db",
    "coupling_loss_db",
    "site_rays",
    "serving_cells",
    "geometry_sinr_db",
]

SQRT3 = math.sqrt(3.0)


def axial_hexagons(rings: int) -> np.ndarray:
    """Axial coordinates (q, r) of the hexagons within ``rings`` rings of the origin,
    the centre first, then ring by ring: 1, 7, 19, ... rows."""
    out = [(0, 0)]
    for k in range(1, rings + 1):
        q, r = 0, -k  # start at the "north-west" corner of ring k, walk its six sides
        for dq, dr in ((1, 0), (0, 1), (-1, 1), (-1, 0), (0, -1), (1, -1)):
            for _ in range(k):
                out.append((q, r))
                q, r = q + dq, r + dr
    return np.array(out, dtype=float)


def _axial_to_xy(axial: np.ndarray, isd_m: float) -> np.ndarray:
    q, r = axial[..., 0], axial[..., 1]
    return np.stack([isd_m * (q + r / 2.0), isd_m * (SQRT3 / 2.0) * r], axis=-1)


@dataclass(frozen=True)
class HexLayout:
    """Sites on a hexagonal grid, each with 1 or 3 sectors (cells)."""

    isd_m: float = 500.0
    rings: int = 2
    sectors: int = 3
    bs_height_m: float = 25.0
    wrap_around: bool = True

    def __post_init__(self) -> None:
        if self.rings not in (0, 1, 2):
            raise ValueError(f"rings: {self.rings} (valid: 0, 1, 2 — 1, 7 or 19 sites)")
        if self.sectors not in (1, 3):
            raise ValueError(f"sectors: {self.sectors} (valid: 1, 3)")
        if not self.isd_m > 0:
            raise ValueError(f"isd_m: {self.isd_m} must be positive")

    @property
    def num_sites(self) -> int:
        return 1 + 3 * self.rings * (self.rings + 1)

    @property
    def num_cells(self) -> int:
        return self.num_sites * self.sectors

    def site_xy(self) -> np.ndarray:
        """``(sites, 2)`` site positions [m], the centre site first."""
        return _site_xy(self.rings, self.isd_m).copy()

    def cell_site(self) -> np.ndarray:
        """The site of each cell, ``(cells,)``: cell c is sector ``c % sectors`` of site
        ``c // sectors``."""
        return np.repeat(np.arange(self.num_sites), self.sectors)

    def cell_boresight_deg(self) -> np.ndarray:
        """Each cell's azimuth boresight [deg] (NaN: omni)."""
        if self.sectors == 1:
            return np.full(self.num_cells, np.nan)
        return np.tile([30.0, 150.0, 270.0], self.num_sites)

    def wrap_vectors(self) -> np.ndarray:
        """The translations of the cluster's images [m], ``(6, 2)`` (none without
        wrap-around or with one site): the six rotations of axial (2R+1, −R)."""
        if not self.wrap_around or self.rings == 0:
            return np.zeros((0, 2))
        return _wrap_vectors(self.rings, self.isd_m).copy()

    def site_offsets(self, ue_xy: np.ndarray) -> np.ndarray:
        """``(UEs, sites, 2)`` vectors from each site to each UE, each site taken at its
        image nearest to the UE (wrap-around)."""
        return nearest_image_offsets(ue_xy, self.site_xy(), self.wrap_vectors())

    def fold(self, xy: np.ndarray) -> np.ndarray:
        """Points ``(n, 2)`` [m] folded into the deployment by the wrap-around
        translations (the network as a torus): each point moved by the lattice vector
        that brings it into the hexagon of one of the cluster's sites, however far it is
        (unchanged without wrap-around). The wrap vectors span a hexagonal lattice with
        basis ``w0, w1``; the nearest lattice point (among the roundings of the point's
        coordinates in that basis and their neighbours) brings it into the cluster's
        lattice cell, which the cluster's hexagons and their first-ring images cover, so
        the nearest site image found there is exact."""
        xy = np.asarray(xy, dtype=float).reshape(-1, 2)
        wraps = self.wrap_vectors()
        if not len(wraps) or not len(xy):
            return xy.copy()
        basis = wraps[:2]  # (2, 2): rows w0, w1
        coeff = np.floor(np.linalg.solve(basis.T, xy.T).T)  # (n, 2)
        steps = np.array([(i, j) for i in (0, 1) for j in (0, 1)], dtype=float)
        lattice = (coeff[:, None, :] + steps[None, :, :]) @ basis  # (n, 4, 2)
        nearest = np.argmin(((xy[:, None, :] - lattice) ** 2).sum(axis=2), axis=1)
        p = xy - lattice[np.arange(len(xy)), nearest]
        sites = self.site_xy()
        off = nearest_image_offsets(p, sites, wraps)  # (n, sites, 2)
        home = np.argmin((off**2).sum(axis=2), axis=1)
        return sites[home] + off[np.arange(len(xy)), home]

    def area_m2(self) -> float:
        """The deployment's area: every site's hexagon, (√3/2)·ISD² each."""
        return self.num_sites * SQRT3 / 2.0 * self.isd_m**2

    def area_offsets(self, n: int, rng: np.random.Generator) -> np.ndarray:
        """``n`` offsets uniform over one site's area (its hexagon)."""
        return _uniform_hexagon(n, self.isd_m, rng)

    def contains(self, xy: np.ndarray) -> np.ndarray:
        """Whether each point lies in the deployment: in some site's hexagon
        (circumradius ISD/√3, flat sides facing the neighbours)."""
        return _in_hexagon(xy[:, None, :] - self.site_xy()[None, :, :], self.isd_m).any(axis=1)

    def drop_uniform(self, n: int, rng: np.random.Generator) -> np.ndarray:
        """``n`` points uniform over the deployment's area (the union of the site
        hexagons; every site's hexagon has the same area, so: a site uniformly, then a
        point uniformly in its hexagon, by rejection)."""
        sites = self.site_xy()
        home = rng.integers(len(sites), size=n)
        return sites[home] + _uniform_hexagon(n, self.isd_m, rng)

    def drop_per_cell(self, n: int, rng: np.random.Generator) -> np.ndarray:
        """``n`` points, cell by cell in turn (cell ``i % cells`` gets point i), each
        uniform over its cell's area: its site's hexagon, or with 3 sectors the third of
        it within ±60° of the sector's boresight (by rejection)."""
        cells = np.arange(n) % self.num_cells
        return _drop_in_cells(self, cells, rng)


@functools.lru_cache(maxsize=64)
def _site_xy(rings: int, isd_m: float) -> np.ndarray:
    return _axial_to_xy(axial_hexagons(rings), isd_m)


@functools.lru_cache(maxsize=64)
def _wrap_vectors(rings: int, isd_m: float) -> np.ndarray:
    q, r = 2 * rings + 1, -rings
    vecs = []
    for _ in range(6):
        vecs.append((q, r))
        q, r = -r, q + r  # 60° rotation in axial coordinates
    return _axial_to_xy(np.array(vecs, dtype=float), isd_m)


def nearest_image_offsets(ue_xy: np.ndarray, sites: np.ndarray, wraps: np.ndarray) -> np.ndarray:
    """``(UEs, sites, 2)`` vectors from each site, at its image (the site plus one of the
    ``wraps`` translations, or none) nearest to each UE, to the UE."""
    images = np.concatenate([np.zeros((1, 2)), wraps])  # (K, 2)
    d = ue_xy[:, None, None, :] - (sites[None, :, None, :] + images[None, None, :, :])
    k = np.argmin(np.einsum("nski,nski->nsk", d, d), axis=2)
    return np.take_along_axis(d, k[:, :, None, None], axis=2)[:, :, 0, :]


def _in_hexagon(offsets: np.ndarray, isd_m: float) -> np.ndarray:
    """Whether offsets ``(..., 2)`` from a site lie in its hexagon of circumradius
    ISD/√3 (pointy top, flat sides facing the six neighbours)."""
    radius = isd_m / SQRT3
    x, y = np.abs(offsets[..., 0]), np.abs(offsets[..., 1])
    tol = 1e-9 * radius
    return (x <= SQRT3 / 2 * radius + tol) & (y <= radius - x / SQRT3 + tol)


def _drop_in_cells(layout, cells: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """One point per entry of ``cells``, uniform over that cell's area of ``layout``."""
    out = np.zeros((len(cells), 2))
    sites, cell_site = layout.site_xy(), layout.cell_site()
    bore = layout.cell_boresight_deg()
    for c in np.unique(cells):
        idx = (cells == c).nonzero()[0]
        got = np.zeros((0, 2))
        while len(got) < len(idx):
            cand = layout.area_offsets(3 * (len(idx) - len(got)) + 8, rng)
            if np.isfinite(bore[c]):
                off = (np.degrees(np.arctan2(cand[:, 1], cand[:, 0])) - bore[c] + 180) % 360 - 180
                cand = cand[np.abs(off) <= 60.0]
            got = np.concatenate([got, cand])
        out[idx] = sites[cell_site[c]] + got[: len(idx)]
    return out


def _uniform_hexagon(n: int, isd_m: float, rng: np.random.Generator) -> np.ndarray:
    """``n`` offsets uniform over a site's hexagon (rejection from its bounding box)."""
    radius = isd_m / SQRT3
    got = np.zeros((0, 2))
    while len(got) < n:
        cand = rng.uniform(-radius, radius, size=(2 * (n - len(got)) + 8, 2))
        got = np.concatenate([got, cand[_in_hexagon(cand, isd_m)]])
    return got[:n]


@dataclass(frozen=True)
class SiteList:
    """Sites at explicit positions, each with 1 or 3 sectors (the hex grid's sector
    convention); a site serves the disc of ``radius_m`` around it. No wrap-around."""

    positions_m: tuple[tuple[float, float], ...]
    radius_m: float
    sectors: int = 1
    bs_height_m: float = 25.0

    def __post_init__(self) -> None:
        if self.sectors not in (1, 3):
            raise ValueError(f"sectors: {self.sectors} (valid: 1, 3)")
        if not self.positions_m:
            raise ValueError("positions_m: no site")

    num_sites = property(lambda self: len(self.positions_m))
    num_cells = property(lambda self: self.num_sites * self.sectors)
    wrap_around = False

    def site_xy(self) -> np.ndarray:
        return np.array(self.positions_m, dtype=float).reshape(-1, 2)

    cell_site = HexLayout.cell_site
    cell_boresight_deg = HexLayout.cell_boresight_deg

    def wrap_vectors(self) -> np.ndarray:
        return np.zeros((0, 2))

    site_offsets = HexLayout.site_offsets

    def area_m2(self) -> float:
        """The area of the union of the site discs (exact for disjoint discs, else on a
        grid of 1/400 of the radius)."""
        sites = self.site_xy()
        d = np.hypot(*np.moveaxis(sites[:, None, :] - sites[None, :, :], -1, 0))
        if (
            len(sites) == 1
            or (d + 2 * self.radius_m * np.eye(len(sites)) >= 2 * self.radius_m).all()
        ):
            return len(sites) * math.pi * self.radius_m**2
        step = self.radius_m / 400.0
        lo, hi = sites.min(axis=0) - self.radius_m, sites.max(axis=0) + self.radius_m
        xs = np.arange(lo[0] + step / 2, hi[0], step)
        total = 0
        for y in np.arange(lo[1] + step / 2, hi[1], step):
            total += int(self.contains(np.stack([xs, np.full_like(xs, y)], axis=1)).sum())
        return total * step * step

    def contains(self, xy: np.ndarray) -> np.ndarray:
        """Whether each point is within ``radius_m`` of some site."""
        d = np.hypot(*np.moveaxis(xy[:, None, :] - self.site_xy()[None, :, :], -1, 0))
        return (d <= self.radius_m * (1 + 1e-12)).any(axis=1)

    def area_offsets(self, n: int, rng: np.random.Generator) -> np.ndarray:
        """``n`` offsets uniform over one site's disc."""
        r = self.radius_m * np.sqrt(rng.random(n))
        t = rng.uniform(0.0, 2.0 * np.pi, n)
        return np.stack([r * np.cos(t), r * np.sin(t)], axis=1)

    drop_per_cell = HexLayout.drop_per_cell

    def drop_uniform(self, n: int, rng: np.random.Generator) -> np.ndarray:
        """``n`` points uniform over the union of the sites' discs (rejection)."""
        sites = self.site_xy()
        lo, hi = sites.min(axis=0) - self.radius_m, sites.max(axis=0) + self.radius_m
        got = np.zeros((0, 2))
        while len(got) < n:
            cand = rng.uniform(lo, hi, size=(2 * (n - len(got)) + 8, 2))
            got = np.concatenate([got, cand[self.contains(cand)]])
        return got[:n]


@dataclass
class UeDrop:
    """UEs of a drop: positions, heights, indoor state, indoor distance, O2I wall type."""

    xy: np.ndarray  # (N, 2) [m]
    height_m: np.ndarray  # (N,)
    indoor: np.ndarray  # (N,) bool
    d_in_m: np.ndarray  # (N,) indoor distance [m] (0 outdoors)
    high_loss: np.ndarray  # (N,) bool: high-loss building (indoor UEs)
    home_site: np.ndarray  # (N,) the site whose hexagon the UE was dropped in

    def __len__(self) -> int:
        return len(self.xy)


def drop_ues(
    layout: HexLayout,
    ues_per_site: int,
    rng: np.random.Generator,
    indoor_fraction: float = 0.8,
    min_distance_m: float = 35.0,
    high_loss_fraction: float = 0.5,
) -> UeDrop:
    """``ues_per_site`` UEs uniform over each site's hexagon (circumradius ISD/√3),
    ≥ ``min_distance_m`` (2D) from it, with TR 38.901's indoor heights and distances."""
    if not 0.0 <= indoor_fraction <= 1.0:
        raise ValueError(f"indoor_fraction: {indoor_fraction} outside [0, 1]")
    radius = layout.isd_m / SQRT3
    if min_distance_m >= layout.isd_m / 2:
        raise ValueError(f"min_distance_m: {min_distance_m} m leaves no room in the hexagon")
    pts = []
    for site in layout.site_xy():
        got = np.zeros((0, 2))
        while len(got) < ues_per_site:
            cand = rng.uniform(-radius, radius, size=(4 * ues_per_site + 8, 2))
            # the site's Voronoi hexagon: pointy top, flat sides facing its neighbours
            inside = _in_hexagon(cand, layout.isd_m)
            far = np.hypot(cand[:, 0], cand[:, 1]) >= min_distance_m
            got = np.concatenate([got, cand[inside & far]])
        pts.append(site + got[:ues_per_site])
    xy = np.concatenate(pts)
    home = np.repeat(np.arange(layout.num_sites), ues_per_site)
    return indoor_states(xy, rng, indoor_fraction, high_loss_fraction, home)


def indoor_states(
    xy: np.ndarray,
    rng: np.random.Generator,
    indoor_fraction: float = 0.8,
    high_loss_fraction: float = 0.5,
    home_site: np.ndarray | None = None,
) -> UeDrop:
    """TR 38.901 indoor states of UEs at ``xy`` (Table 7.8-1, 7.4.3): indoor with
    probability ``indoor_fraction``, on floor n_fl ~ U{1..N_fl}, N_fl ~ U{4..8}, at
    3(n_fl − 1) + 1.5 m, min(U(0, 25), U(0, 25)) m inside, behind a high-loss wall with
    probability ``high_loss_fraction``; outdoor UEs at 1.5 m."""
    n = len(xy)
    indoor = rng.random(n) < indoor_fraction
    floors = rng.integers(4, 9, n)  # N_fl ~ U{4..8}
    floor = np.floor(rng.random(n) * floors).astype(int) + 1  # n_fl ~ U{1..N_fl}
    height = np.where(indoor, 3.0 * (floor - 1) + 1.5, 1.5)
    d_in = np.where(indoor, np.minimum(rng.uniform(0, 25, n), rng.uniform(0, 25, n)), 0.0)
    high = indoor & (rng.random(n) < high_loss_fraction)
    home = np.zeros(n, dtype=int) if home_site is None else home_site
    return UeDrop(xy, height, indoor, d_in, high, home)


def o2i_loss_db(drop: UeDrop, carrier_hz: float, rng: np.random.Generator) -> np.ndarray:
    """TR 38.901 Table 7.4.3-2 O2I loss per UE [dB] (0 outdoors): low-loss PL_tw =
    5 − 10log10(0.3·10^(−L_glass/10) + 0.7·10^(−L_concrete/10)), high-loss 5 −
    10log10(0.7·10^(−L_IRRglass/10) + 0.3·10^(−L_concrete/10)), L_glass = 2 + 0.2f,
    L_IRRglass = 23 + 0.3f, L_concrete = 5 + 4f (f in GHz); + 0.5·d_2D-in + N(0, σ_P²)."""
    f = carrier_hz / 1e9
    glass, irr, concrete = 2 + 0.2 * f, 23 + 0.3 * f, 5 + 4 * f
    low = 5 - 10 * np.log10(0.3 * 10 ** (-glass / 10) + 0.7 * 10 ** (-concrete / 10))
    high = 5 - 10 * np.log10(0.7 * 10 ** (-irr / 10) + 0.3 * 10 ** (-concrete / 10))
    sigma = np.where(drop.high_loss, 6.5, 4.4)
    tw = np.where(drop.high_loss, high, low)
    loss = tw + 0.5 * drop.d_in_m + sigma * rng.standard_normal(len(drop))
    return np.where(drop.indoor, loss, 0.0)


def coupling_loss_db(
    layout: HexLayout,
    drop: UeDrop,
    carrier_hz: float,
    rng: np.random.Generator,
    scenario: str = "uma",
    rows: int = 10,
    spacing_wl: float = 0.8,
    tilt_zenith_deg: float = 102.0,
    angular_spread: bool = True,
) -> np.ndarray:
    """``(UEs, cells)`` coupling loss [dB]: path loss (TR 38.901 ``scenario``, LOS state
    drawn per UE and site from the outdoor distance, shadowing per UE and site) + O2I −
    the BS antenna gain towards the UE (element + vertical array; UE antenna 0 dBi).

    ``angular_spread``: the antenna gain a link sees is its power summed over its own
    departure rays (:mod:`channel_models.departure_rays`: TR 38.901 §7.5 steps 4–7 per
    UE and site, K, ASD and ZSD correlated with the link's shadowing; co-located sectors
    share the rays) — an indoor UE's links with the O2I column and σ_SF = 7 dB;
    ``False``: the gain in the direct direction only, the path loss's σ_SF."""
    offsets = layout.site_offsets(drop.xy)  # (N, S, 2)
    d2 = np.hypot(offsets[..., 0], offsets[..., 1])
    n, s = d2.shape
    law_cls = PATHLOSS_MODELS[scenario]
    loss = np.empty((n, s))
    std = np.empty((n, s))
    is_los = np.zeros((n, s), dtype=bool)
    u = rng.random((n, s))
    z = rng.standard_normal((n, s))
    for h in np.unique(drop.height_m):
        rows_h = drop.height_m == h
        law: PathLoss = law_cls(carrier_hz, height_tx_m=layout.bs_height_m, shadowing=True)
        law = law.at_heights(layout.bs_height_m, float(h))
        los = u[rows_h] < law.los_probability(
            outdoor_distance_m(d2[rows_h], drop.d_in_m[rows_h, None])
        )
        d = np.maximum(d2[rows_h], 10.0)
        is_los[rows_h] = los
        loss[rows_h] = np.where(los, law.los_loss_db(d), law.nlos_loss_db(d))
        std[rows_h] = np.where(los, law.los_shadow_db, law.nlos_shadow_db)
    indoor = np.broadcast_to(drop.indoor[:, None], (n, s))
    rays = None
    if angular_spread:
        std = np.where(indoor, law_cls.o2i_shadow_db, std)
        rays = site_rays(scenario, carrier_hz, is_los, indoor, z, rng)
    loss = loss + std * z + o2i_loss_db(drop, carrier_hz, rng)[:, None]
    cell_site = layout.cell_site()
    bore = None if layout.sectors == 1 else layout.cell_boresight_deg()
    gain = np.empty((n, len(cell_site)))
    for site in range(s):  # antenna gain of each of the site's cells towards each UE
        cells = np.flatnonzero(cell_site == site)
        args = (offsets[:, site, :], drop.height_m - layout.bs_height_m)
        if rays is None:
            for c in cells:
                gain[:, c] = sector_gain_db(
                    *args, None if bore is None else bore[c], None, scenario, carrier_hz,
                    drop.height_m, layout.bs_height_m, rows, spacing_wl, tilt_zenith_deg,
                )  # fmt: skip
            continue
        gain[:, cells] = site_gains_db(
            *args, None if bore is None else bore[cells], is_los[:, site], scenario,
            carrier_hz, drop.height_m, layout.bs_height_m, rows, spacing_wl,
            tilt_zenith_deg, rays.take(np.arange(n) * s + site),
        )  # fmt: skip
    return loss[:, cell_site] - gain


def site_rays(
    scenario: str,
    carrier_hz: float,
    los: np.ndarray,
    indoor: np.ndarray,
    shadow_z: np.ndarray,
    rng: np.random.Generator,
) -> LinkRays:
    """Departure rays of every link of ``los``'s shape (flattened, C order): LOS and
    NLOS links with their state's column, indoor UEs' links with the O2I one;
    ``shadow_z`` the links' shadowing variates (loss sense) the LSPs correlate with."""
    los, indoor = np.ravel(los), np.ravel(np.broadcast_to(indoor, np.shape(los)))
    z = np.ravel(shadow_z)
    groups = [
        ("los", los & ~indoor, median_asd_deg(scenario, carrier_hz, "los")),
        ("nlos", ~los & ~indoor, median_asd_deg(scenario, carrier_hz, "nlos")),
        ("o2i", indoor, median_asd_deg(scenario, carrier_hz, "o2i")),
    ]
    most = (
        max(RAY_PARAMS[(scenario, g)].clusters for g, m, _ in groups if m.any()) if los.size else 1
    )
    out = LinkRays.empty(los.size, most * RAYS_PER_CLUSTER)
    for state, mask, asd in groups:
        if mask.any():
            out.put(np.flatnonzero(mask), draw_link_rays(scenario, state, -z[mask], rng, asd))
    return out


def serving_cells(coupling_db: np.ndarray) -> np.ndarray:
    """Each UE's serving cell: the highest RSRP, i.e. the lowest coupling loss (equal
    transmit power per cell)."""
    return np.argmin(coupling_db, axis=1)


def geometry_sinr_db(coupling_db: np.ndarray, tx_power_dbm: float, noise_dbm: float) -> np.ndarray:
    """Downlink geometry SINR per UE [dB]: the serving cell's received power over the sum
    of every other cell's (full load) plus noise (no fast fading)."""
    rx_mw = 10.0 ** ((tx_power_dbm - coupling_db) / 10.0)
    serving = rx_mw.max(axis=1)
    interference = rx_mw.sum(axis=1) - serving
    return 10.0 * np.log10(serving / (interference + 10.0 ** (noise_dbm / 10.0)))
