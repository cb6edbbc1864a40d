"""TR 38.901 §7.5 steps 4–7 at the BS end of a link: the departure angles and powers
of a link's clusters and rays, drawn per link, for the antenna gain a multipath
link sees (the BS's sector element and array summed over its rays in power).

The medians of the departure spreads and the NLOS ZoD offset (Tables 7.5-6/7/8:
:func:`departure_spreads_deg`, :func:`median_asd_deg`, :func:`zod_offset_deg`) live
here too. Per link (UE × site; co-located sectors share the link's rays, as they share
its large-scale parameters), for its state ``los``, ``nlos`` or ``o2i`` (Table 7.5-6):

- **Step 4, LSPs.** lgASD ~ N(μ, σ), lgZSD ~ N(μ, σ) and the Ricean K [dB] ~ N(μ_K,
  σ_K) (LOS), cross-correlated with the shadow fading SF by the Cholesky factor of
  Table 7.5-6's coefficients among [SF, K, ASD, ZSD] (the order step 4 prescribes;
  the remaining LSPs — DS, ASA, ZSA — do not shape the BS's gain and are left out,
  which leaves the others' joint law unchanged). SF here is a *gain* (positive:
  stronger), the sign the table's coefficients assume; the link's shadowing in dB of
  *loss* is −σ_SF·z_SF. ASD ≤ 104°, ZSD ≤ 52°.
- **Step 5–6, powers.** N cluster delays τ_n = sort(−r_τ ln X_n) (in units of DS,
  which cancels), powers P'_n = exp(−τ_n (r_τ − 1)/r_τ)·10^(−Z_n/10), Z_n ~ N(0, ζ²),
  normalised; clusters 25 dB below the strongest removed (7.5-5, 7.5-6). On LOS links
  the first cluster carries K_R/(K_R + 1) more (7.5-8).
- **Step 7, departure angles.** φ'_n = 2(ASD/1.4)√(−ln(P_n/max P))/C_φ (7.5-9),
  φ_n = X_n φ'_n + Y_n (X_n = ±1, Y_n ~ N(0, (ASD/7)²)), on LOS links less the first
  cluster's so that it leaves along the LOS direction (7.5-12); rays φ_n + c_ASD α_m
  (7.5-13, the 20 offsets α_m of Table 7.5-3). Zenith likewise: θ'_n = −ZSD
  ln(P_n/max P)/C_θ (7.5-19), θ_n = X_n θ'_n + Y_n (Y_n ~ N(0, (ZSD/7)²)) + μ_offset,ZOD
  on NLOS links (7.5-19, Tables 7.5-7/8), rays θ_n + (3/8)10^{μ_lgZSD} α_m (7.5-20),
  the zenith offsets of a cluster's rays paired at random with its azimuth ones (step
  8). C_φ, C_θ: Tables 7.5-2 / 7.5-4 for N clusters; LOS scales them by the K-factor
  polynomials (7.5-10, 7.5-15).

The BS gain of the link is then Σ_rays P_ray G(θ_ray, φ_ray) + K/(K+1) G(θ_LOS, φ_LOS)
— the channel's power averaged over the rays' random phases (an RSRP, as the 3GPP
calibration's coupling loss is). Azimuth offsets are kept in degrees (ASD does not
depend on distance); zenith offsets in units of the link's ZSD, so a moving UE's
rays follow its distance-dependent ZSD and ZoD offset.

O2I links (indoor UEs) take the O2I column (no direct path, Table 7.5-6's N, r_τ,
ζ, c_ASD and lgASD), the zenith spread, its σ and the ZoD offset of the outdoor
part's LOS state (Table 7.5-7's note); their σ_SF, 7 dB, is the path loss law's
``o2i_shadow_db``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from channel_models.tr38901 import tr38901_table

__all__ = [
    "RayParams",
    "RAY_PARAMS",
    "LinkRays",
    "draw_link_rays",
    "departure_spreads_deg",
    "median_asd_deg",
    "zod_offset_deg",
]

#: Table 7.5-3: ray offset angles within a cluster (unit RMS angle spread)
RAY_OFFSETS = np.array(
    [0.0447, 0.1413, 0.2492, 0.3715, 0.5129, 0.6797, 0.8844, 1.1481, 1.5195, 2.1551]
)
RAY_OFFSETS = np.concatenate([RAY_OFFSETS, -RAY_OFFSETS])
RAYS_PER_CLUSTER = len(RAY_OFFSETS)

#: Table 7.5-2 (C_φ^NLOS) and Table 7.5-4 (C_θ^NLOS) by the number of clusters N
C_PHI = {4: 0.779, 5: 0.860, 8: 1.018, 10: 1.090, 11: 1.123, 12: 1.146, 14: 1.190,
         15: 1.211, 16: 1.226, 19: 1.273, 20: 1.289, 25: 1.358}  # fmt: skip
C_THETA = {8: 0.889, 10: 0.957, 11: 1.031, 12: 1.104, 15: 1.1088, 19: 1.184, 20: 1.178,
           25: 1.282}  # fmt: skip


@dataclass(frozen=True)
class RayParams:
    """One column of TR 38.901 Table 7.5-6 (Part 1), as far as the BS's gain needs."""

    clusters: int
    r_tau: float
    zeta_db: float  # per-cluster shadowing
    c_asd_deg: float  # cluster ASD
    sigma_lg_asd: float
    sigma_lg_zsd: float
    k_mu_db: float  # Ricean K (LOS only)
    k_sigma_db: float
    #: correlation coefficients among [SF, K, ASD, ZSD]: sf_k, sf_asd, sf_zsd, k_asd,
    #: k_zsd, asd_zsd
    corr: tuple[float, float, float, float, float, float]

    def cholesky(self) -> np.ndarray:
        sf_k, sf_asd, sf_zsd, k_asd, k_zsd, asd_zsd = self.corr
        c = np.array(
            [
                [1.0, sf_k, sf_asd, sf_zsd],
                [sf_k, 1.0, k_asd, k_zsd],
                [sf_asd, k_asd, 1.0, asd_zsd],
                [sf_zsd, k_zsd, asd_zsd, 1.0],
            ]
        )
        return np.linalg.cholesky(c)


def _ray_params() -> dict[tuple[str, str], RayParams]:
    """Table 7.5-6 Part 1 (UMa, UMi street canyon) by scenario and link state, and the
    median lgASD of O2I links, from ``data/tr38901.json``."""
    out = {}
    for scenario, row in tr38901_table()["scenarios"].items():
        for state, p in row.get("large_scale", {}).items():
            out[(scenario, state)] = RayParams(
                p["clusters"],
                p["r_tau"],
                p["zeta_db"],
                p["c_asd_deg"],
                p["sigma_lg_asd"],
                p["sigma_lg_zsd"],
                p["k_mu_db"],
                p["k_sigma_db"],
                tuple(p["corr_sf_k_sf_asd_sf_zsd_k_asd_k_zsd_asd_zsd"]),
            )
    return out


#: TR 38.901 Table 7.5-6 Part 1 (UMa, UMi-street canyon), by link state
RAY_PARAMS: dict[tuple[str, str], RayParams] = _ray_params()

#: median lgASD of O2I links (Table 7.5-6, UMa and UMi)
O2I_LG_ASD = tr38901_table()["scenarios"]["uma"]["o2i_lg_asd_median"]


def departure_spreads_deg(
    scenario: str, carrier_hz: float, d2d_m: np.ndarray, h_ut_m: np.ndarray, h_bs_m: float
) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """Median azimuth and zenith spreads of departure [deg] (TR 38.901 Table 7.5-6,
    10^μ of lgASD and lgZSD) for ``"los"`` and ``"nlos"`` links."""
    f = max(carrier_hz / 1e9, 6.0) if scenario == "uma" else carrier_hz / 1e9
    if scenario == "uma":
        asd = {"los": 1.06 + 0.1114 * math.log10(f), "nlos": 1.5 - 0.1144 * math.log10(f)}
        base = -2.1 * d2d_m / 1000.0 - 0.01 * (h_ut_m - 1.5)
        zsd = {"los": np.maximum(-0.5, base + 0.75), "nlos": np.maximum(-0.5, base + 0.9)}
    elif scenario == "umi":
        asd = {
            "los": -0.05 * math.log10(1 + f) + 1.21,
            "nlos": -0.23 * math.log10(1 + f) + 1.53,
        }
        zsd = {
            "los": np.maximum(
                -0.21, -14.8 * d2d_m / 1000.0 + 0.01 * np.abs(h_ut_m - h_bs_m) + 0.83
            ),
            "nlos": np.maximum(
                -0.5, -3.1 * d2d_m / 1000.0 + 0.01 * np.maximum(h_ut_m - h_bs_m, 0) + 0.2
            ),
        }
    else:
        raise ValueError(f"departure spreads of scenario {scenario!r} (valid: uma, umi)")
    return {k: (np.full_like(d2d_m, 10.0 ** asd[k]), 10.0 ** zsd[k]) for k in ("los", "nlos")}


def median_asd_deg(scenario: str, carrier_hz: float, state: str) -> float:
    """10^μ_lgASD [deg] of ``los``, ``nlos`` or ``o2i`` links (Table 7.5-6; ASD does not
    depend on distance)."""
    if state == "o2i":
        return 10.0**O2I_LG_ASD
    return float(
        departure_spreads_deg(scenario, carrier_hz, np.zeros(1), np.ones(1), 25.0)[state][0][0]
    )


def zod_offset_deg(
    scenario: str, carrier_hz: float, d2d_m: np.ndarray, h_ut_m: np.ndarray
) -> np.ndarray:
    """μ_offset,ZOD of NLOS links [deg] (TR 38.901 Tables 7.5-7 and 7.5-8): the mean
    zenith of departure relative to the LOS direction (negative: towards the zenith)."""
    if scenario == "uma":
        b = max(carrier_hz / 1e9, 6.0)
        e = (0.208 * math.log10(max(b, 0.25)) - 0.782) * np.log10(np.maximum(25.0, d2d_m))
        e = e + (-0.13 * math.log10(max(b, 0.25)) + 2.03) - 0.07 * (h_ut_m - 1.5)
        return 7.66 * math.log10(b) - 5.96 - 10.0**e
    if scenario == "umi":
        return -(10.0 ** (-1.5 * np.log10(np.maximum(10.0, d2d_m)) + 3.3))
    raise ValueError(f"ZoD offset of scenario {scenario!r} (valid: uma, umi)")


@dataclass
class LinkRays:
    """Departure rays of L links, R rays each (padded with zero weights).

    ``azimuth_deg`` (L, R): offset from the LOS azimuth; ``zenith_units`` (L, R): the
    cluster's zenith offset in units of the link's ZSD; ``zenith_ray`` (L, R): the
    ray's offset α_m (× 3/8 of the median ZSD); ``weight`` (L, R): ray powers;
    ``direct`` (L,): the direct path's share K/(K+1) (0 without one); ``zsd_factor``
    (L,): the link's ZSD over the median, 10^(σ z)."""

    azimuth_deg: np.ndarray
    zenith_units: np.ndarray
    zenith_ray: np.ndarray
    weight: np.ndarray
    direct: np.ndarray
    zsd_factor: np.ndarray

    def __len__(self) -> int:
        return len(self.direct)

    @classmethod
    def empty(cls, n: int, rays: int) -> LinkRays:
        shape = (n, rays)
        return cls(
            np.zeros(shape),
            np.zeros(shape),
            np.zeros(shape),
            np.zeros(shape),
            np.zeros(n),
            np.ones(n),
        )

    @classmethod
    def stack(cls, items: list[LinkRays]) -> LinkRays:
        """The links of ``items`` in order, padded to the most rays."""
        out = cls.empty(sum(len(r) for r in items), max(r.weight.shape[1] for r in items))
        start = 0
        for r in items:
            out.put(np.arange(start, start + len(r)), r)
            start += len(r)
        return out

    def put(self, index: np.ndarray, other: LinkRays) -> None:
        """Write ``other``'s links at rows ``index`` (its rays first, the rest zero)."""
        r = other.weight.shape[1]
        for name in ("azimuth_deg", "zenith_units", "zenith_ray", "weight"):
            getattr(self, name)[index, :r] = getattr(other, name)
        self.direct[index] = other.direct
        self.zsd_factor[index] = other.zsd_factor

    def take(self, index) -> LinkRays:
        return LinkRays(
            self.azimuth_deg[index],
            self.zenith_units[index],
            self.zenith_ray[index],
            self.weight[index],
            self.direct[index],
            self.zsd_factor[index],
        )

    def zenith_deg(
        self, theta_deg: np.ndarray, zsd_median_deg: np.ndarray, zod_offset_deg: np.ndarray
    ) -> np.ndarray:
        """(L, R) the rays' zenith angles [deg] for links whose LOS zenith from the BS is
        ``theta_deg``, with the median ZSD and the clusters' ZoD offset (0 on LOS)."""
        zsd = np.minimum(zsd_median_deg * self.zsd_factor, 52.0)
        t = (theta_deg + zod_offset_deg)[:, None] + self.zenith_units * zsd[:, None]
        return np.clip(t + 0.375 * zsd_median_deg[:, None] * self.zenith_ray, 0.0, 180.0)

    def power_sum(self, ray_gain_db: np.ndarray, direct_gain_db: np.ndarray) -> np.ndarray:
        """(L,) Σ_rays P·G + direct·G: the gains [dB] of the rays (L, R) and of the LOS
        direction (L,) summed in power."""
        out = (self.weight * 10.0 ** (ray_gain_db / 10.0)).sum(1)
        if self.direct.any():
            out = out + self.direct * 10.0 ** (direct_gain_db / 10.0)
        return out

    def gain_linear(
        self,
        gain_db_fn,
        theta_deg: np.ndarray,
        phi_deg: np.ndarray,
        zsd_median_deg: np.ndarray,
        zod_offset_deg: np.ndarray,
    ) -> np.ndarray:
        """(L,) Σ_rays P G + direct·G(LOS direction) for links whose LOS direction from
        the BS is (``theta_deg``, ``phi_deg``) [deg, φ from the boresight]; ``gain_db_fn(θ,
        φ)`` the antenna's gain [dB]."""
        t = self.zenith_deg(theta_deg, zsd_median_deg, zod_offset_deg)
        return self.power_sum(
            gain_db_fn(t, phi_deg[:, None] + self.azimuth_deg), gain_db_fn(theta_deg, phi_deg)
        )


def draw_link_rays(
    scenario: str,
    state: str,
    sf_gain_z: np.ndarray,
    rng: np.random.Generator,
    asd_median_deg: float,
) -> LinkRays:
    """Rays of ``len(sf_gain_z)`` links in ``state`` (``los``/``nlos``/``o2i``) whose
    shadow fading (gain sense, standard normal) is ``sf_gain_z``; K, ASD and ZSD drawn
    conditionally on it (step 4's Cholesky factor, SF first)."""
    try:
        p = RAY_PARAMS[(scenario, state)]
    except KeyError:
        raise ValueError(
            f"departure rays of {scenario!r}/{state!r} (valid: uma, umi × los, nlos, o2i)"
        ) from None
    sf = np.asarray(sf_gain_z, dtype=float)
    n, nc, m = len(sf), p.clusters, RAYS_PER_CLUSTER
    eps = rng.standard_normal((n, 4))
    eps[:, 0] = sf
    w = eps @ p.cholesky().T  # w[:, 0] = sf (lower triangular, unit first row)
    los = state == "los"
    k_db = p.k_mu_db + p.k_sigma_db * w[:, 1]
    k = 10.0 ** (k_db / 10.0) if los else np.zeros(n)
    asd = np.minimum(asd_median_deg * 10.0 ** (p.sigma_lg_asd * w[:, 2]), 104.0)
    zsd_factor = 10.0 ** (p.sigma_lg_zsd * w[:, 3])
    # steps 5–6: cluster powers (delays in units of DS)
    tau = -p.r_tau * np.log(1.0 - rng.random((n, nc)))
    tau = np.sort(tau - tau.min(axis=1, keepdims=True), axis=1)
    pw = np.exp(-tau * (p.r_tau - 1.0) / p.r_tau) * 10.0 ** (
        -p.zeta_db * rng.standard_normal((n, nc)) / 10.0
    )
    pw /= pw.sum(axis=1, keepdims=True)
    pw = np.where(pw >= pw.max(axis=1, keepdims=True) * 10.0**-2.5, pw, 0.0)
    pw /= pw.sum(axis=1, keepdims=True)
    # step 7: angles from the powers with the direct path (7.5-8)
    pa = pw / (k + 1.0)[:, None]
    pa[:, 0] += k / (k + 1.0)
    ratio = np.where(pa > 0.0, pa / pa.max(axis=1, keepdims=True), 1.0)
    c_phi, c_theta = np.full(n, C_PHI[nc]), np.full(n, C_THETA[nc])
    if los:
        c_phi = c_phi * (1.1035 - 0.028 * k_db - 0.002 * k_db**2 + 0.0001 * k_db**3)
        c_theta = c_theta * (1.3086 + 0.0339 * k_db - 0.0077 * k_db**2 + 0.0002 * k_db**3)
    phi = 2.0 * (asd / 1.4)[:, None] * np.sqrt(-np.log(ratio)) / c_phi[:, None]
    theta = -np.log(ratio) / c_theta[:, None]  # in units of ZSD
    phi = rng.choice([-1.0, 1.0], (n, nc)) * phi + rng.standard_normal((n, nc)) * (asd / 7)[:, None]
    theta = rng.choice([-1.0, 1.0], (n, nc)) * theta + rng.standard_normal((n, nc)) / 7.0
    if los:
        phi, theta = phi - phi[:, :1], theta - theta[:, :1]
    order_a = np.argsort(rng.random((n, nc, m)), axis=-1)
    order_z = np.argsort(rng.random((n, nc, m)), axis=-1)
    az = (phi[..., None] + p.c_asd_deg * RAY_OFFSETS[order_a]).reshape(n, nc * m)
    zu = np.repeat(theta, m, axis=1)
    zr = RAY_OFFSETS[order_z].reshape(n, nc * m)
    weight = np.repeat(pw / (k + 1.0)[:, None] / m, m, axis=1)
    return LinkRays(az, zu, zr, weight, k / (k + 1.0), zsd_factor)
