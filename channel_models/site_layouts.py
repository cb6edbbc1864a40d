"""Multi-cell deployments' site layouts: where the sites and their sectors (cells) stand.

:class:`HexLayout`: sites on a hexagonal grid of inter-site distance ``isd_m``: 1, 7 or
19 sites (0, 1, 2 rings), in axial coordinates (q, r) at ``x = D·(q + r/2)``,
``y = D·(√3/2)·r``. A 1-ring (2-ring) cluster tiles the plane by the six rotations of
axial (3, −1) ((5, −2)), vectors of length √7·D (√19·D); with ``wrap_around`` a UE sees
each site at the nearest of its seven images (TR 36.814 A.2.1.1 / the 3GPP calibration
convention), and a point anywhere folds into the deployment (:meth:`HexLayout.fold`: the
network as a torus). Three sectors per site point at 30°, 150° and 270° (TR 38.901
Table 7.8-1's convention), or one omni cell. :class:`SiteList`: sites at explicit
positions, each serving a disc, with the same interface. Both drop points uniformly
over the deployment or cell by cell.

Pure numpy; the drops and coupling losses on a layout are :mod:`channel_models.multicell`.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass

import numpy as np

__all__ = [
    "SQRT3",
    "HexLayout",
    "SiteList",
    "axial_hexagons",
    "in_hexagon",
    "nearest_image_offsets",
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
        if not self.wrap_around or self.rings == 0 or not len(xy):
            return xy.copy()
        basis, to_coeff, images, sites = _fold_frame(self.rings, self.isd_m)
        coeff = np.floor(xy @ to_coeff)  # (n, 2): the point in the basis w0, w1
        lattice = (coeff[:, None, :] + _CORNERS[None, :, :]) @ basis  # (n, 4, 2)
        gap = xy[:, None, :] - lattice
        nearest = np.argmin(np.einsum("nki,nki->nk", gap, gap), axis=1)
        p = gap[np.arange(len(xy)), nearest]
        # (nearest_image_offsets, inlined: the site images nearest to p)
        d = p[:, None, :] - images[None, :, :]  # (n, sites · K, 2)
        k = np.argmin(np.einsum("nji,nji->nj", d, d), axis=1)
        return sites[k] + d[np.arange(len(xy)), k]

    def area_m2(self) -> float:
        """The deployment's area: every site's hexagon, (√3/2)·ISD² each."""
        return self.num_sites * SQRT3 / 2.0 * self.isd_m**2

    def area_offsets(self, n: int, rng: np.random.Generator) -> np.ndarray:
        """``n`` offsets uniform over one site's area (its hexagon)."""
        return _uniform_hexagon(n, self.isd_m, rng)

    def contains(self, xy: np.ndarray) -> np.ndarray:
        """Whether each point lies in the deployment: in some site's hexagon
        (circumradius ISD/√3, flat sides facing the neighbours)."""
        return in_hexagon(xy[:, None, :] - self.site_xy()[None, :, :], self.isd_m).any(axis=1)

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


#: the four lattice points around a point's floor in the wrap basis (:meth:`HexLayout.fold`)
_CORNERS = np.array([(0.0, 0.0), (0.0, 1.0), (1.0, 0.0), (1.0, 1.0)])


@functools.lru_cache(maxsize=64)
def _fold_frame(rings: int, isd_m: float) -> tuple[np.ndarray, ...]:
    """What :meth:`HexLayout.fold` needs of a wrap-around layout, computed once: the
    lattice basis (rows w0, w1), the map from a point to its coordinates in it, every
    site image (each site plus each wrap vector or none, ``(sites · K, 2)``) and the
    site each image is of."""
    wraps = _wrap_vectors(rings, isd_m)
    basis = wraps[:2].copy()
    sites = _site_xy(rings, isd_m)
    shifts = np.concatenate([np.zeros((1, 2)), wraps])  # (K, 2)
    images = (sites[:, None, :] + shifts[None, :, :]).reshape(-1, 2)
    home = np.repeat(sites, len(shifts), axis=0)
    return basis, np.linalg.inv(basis.T).T, images, home


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


def in_hexagon(offsets: np.ndarray, isd_m: float) -> np.ndarray:
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
        got = np.concatenate([got, cand[in_hexagon(cand, isd_m)]])
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
