"""Multi-cell deployments (issue 23, first part): TR 38.901 UE drops with indoor users,
the coupling loss of every UE to every cell of a site layout, and the Phase-1
calibration metrics — RSRP association, geometry SINR.

Pure numpy; the runtime (carriers per cell, interference) builds on it later.

Geometry: :mod:`channel_models.site_layouts` (hexagonal sites and sectors with
wrap-around, explicit site lists). Antenna: :mod:`channel_models.bs_antenna`.

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
from channel_models.site_layouts import SQRT3, HexLayout, in_hexagon

__all__ = [
    "UeDrop",
    "drop_ues",
    "indoor_states",
    "o2i_loss_db",
    "coupling_loss_db",
    "site_rays",
    "serving_cells",
    "geometry_sinr_db",
]


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
            inside = in_hexagon(cand, layout.isd_m)
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
