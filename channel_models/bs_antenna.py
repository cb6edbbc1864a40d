"""The TR 38.901 BS antenna (Table 7.3-1) and the gain a link sees through it.

Antenna (TR 38.901 Table 7.3-1): element A(θ, φ) = −min(−(A_V + A_H), 30) dB with
A_V = −min(12((θ − 90°)/65°)², 30), A_H = −min(12(φ/65°)², 30), G_E = 8 dBi, φ from the
sector's boresight, θ the zenith angle; a vertical array of ``rows`` elements
``spacing_wl`` wavelengths apart, phased to the electrical downtilt (zenith
``tilt_zenith_deg``; TR 38.901 Table 7.8-1: 10 × 1, 0.8 λ, 102°) adds the array
factor |Σ_m e^{j2π m d (cos θ − cos θ_tilt)}|²/M.

A link's gain over its departure rays (:mod:`channel_models.departure_rays`) is the
power summed over them; :func:`site_gains_db` evaluates a site's sectors at once (the
rays' zenith angles and the array's gain along them are the site's).
"""

from __future__ import annotations

import math

import numpy as np

from channel_models.departure_rays import LinkRays, departure_spreads_deg, zod_offset_deg

__all__ = [
    "array_gain_db",
    "element_gain_db",
    "ray_power_sums",
    "sector_gain_db",
    "site_gains_db",
]


def element_gain_db(theta_deg: np.ndarray, phi_deg: np.ndarray) -> np.ndarray:
    """TR 38.901 Table 7.3-1 element gain [dBi] at zenith ``theta_deg`` and azimuth
    ``phi_deg`` relative to boresight (wrapped to ±180°): 8 dBi peak, 30 dB floor."""
    phi = (np.asarray(phi_deg, dtype=float) + 180.0) % 360.0 - 180.0
    a_v = -np.minimum(12.0 * ((np.asarray(theta_deg, dtype=float) - 90.0) / 65.0) ** 2, 30.0)
    a_h = -np.minimum(12.0 * (phi / 65.0) ** 2, 30.0)
    return 8.0 - np.minimum(-(a_v + a_h), 30.0)


def array_gain_db(
    theta_deg: np.ndarray, rows: int = 10, spacing_wl: float = 0.8, tilt_zenith_deg: float = 102.0
) -> np.ndarray:
    """Gain of a vertical array of ``rows`` isotropic elements phased to zenith
    ``tilt_zenith_deg`` [dB]: |Σ_m e^{j2π m d (cos θ − cos θ_t)}|² / M (M at the tilt)."""
    if rows == 1:
        return np.zeros_like(np.asarray(theta_deg, dtype=float))
    psi = (
        2.0
        * np.pi
        * spacing_wl
        * (np.cos(np.radians(theta_deg)) - math.cos(math.radians(tilt_zenith_deg)))
    )
    # |Σ_m e^{jmψ}|² = sin²(Mψ/2) / sin²(ψ/2) (M² where sin(ψ/2) = 0)
    den = np.sin(psi / 2.0) ** 2
    small = den < 1e-20
    af2 = np.where(
        small, float(rows) ** 2, np.sin(rows * psi / 2.0) ** 2 / np.where(small, 1.0, den)
    )
    return 10.0 * np.log10(np.maximum(af2 / rows, 1e-12))


def sector_gain_db(
    offsets_m: np.ndarray,
    dz_m: np.ndarray,
    boresight_deg: np.ndarray | float | None,
    los: np.ndarray | None,
    scenario: str,
    carrier_hz: float,
    h_ut_m: np.ndarray,
    h_bs_m: float,
    rows: int = 10,
    spacing_wl: float = 0.8,
    tilt_zenith_deg: float = 102.0,
    rays: LinkRays | None = None,
) -> np.ndarray:
    """A cell's antenna gain towards UEs [dB]: ``offsets_m`` (..., 2) from the site to
    each UE (wrap-around applied), ``dz_m`` UE height − BS height, the cell's azimuth
    ``boresight_deg`` (``None``: omni, the array only). With ``rays`` (one link per
    element, C order) and the links' outdoor LOS states ``los``: the power summed
    over the links' departure rays (:func:`site_gains_db`); without: the gain in the
    direct direction."""
    if rays is not None:
        if los is None:
            raise ValueError("sector_gain_db: rays need the links' LOS states")
        shape = np.broadcast_shapes(offsets_m.shape[:-1], np.shape(dz_m), np.shape(los))
        flat = lambda x: np.broadcast_to(x, shape).ravel()  # noqa: E731
        off = np.broadcast_to(offsets_m, (*shape, 2)).reshape(-1, 2)
        bore = None if boresight_deg is None else [float(np.ravel(boresight_deg)[0])]
        if boresight_deg is not None and np.unique(boresight_deg).size > 1:
            raise ValueError("sector_gain_db with rays: one boresight per call")
        return site_gains_db(
            off, flat(dz_m), bore, flat(los), scenario, carrier_hz, flat(h_ut_m), h_bs_m,
            rows, spacing_wl, tilt_zenith_deg, rays,
        )[:, 0].reshape(shape)  # fmt: skip
    dx, dy = offsets_m[..., 0], offsets_m[..., 1]
    theta = np.degrees(np.arctan2(np.hypot(dx, dy), dz_m))  # zenith angle from the BS
    gain = array_gain_db(theta, rows, spacing_wl, tilt_zenith_deg)
    if boresight_deg is None:
        return gain
    return gain + element_gain_db(theta, np.degrees(np.arctan2(dy, dx)) - boresight_deg)


def site_gains_db(
    offsets_m: np.ndarray,
    dz_m: np.ndarray,
    boresights_deg: list[float] | np.ndarray | None,
    los: np.ndarray,
    scenario: str,
    carrier_hz: float,
    h_ut_m: np.ndarray,
    h_bs_m: float,
    rows: int,
    spacing_wl: float,
    tilt_zenith_deg: float,
    rays: LinkRays,
    split: bool = False,
) -> np.ndarray | tuple[np.ndarray, np.ndarray]:
    """``(L, K)`` gains [dB] of one site's K sectors (azimuths ``boresights_deg``;
    ``None``: one omni cell) towards L UEs over their links' departure ``rays``
    (:class:`LinkRays`): ``offsets_m`` (L, 2) from the site, ``dz_m`` (L,) UE − BS
    height, ``los`` (L,) the links' outdoor LOS states (their median ZSD and NLOS ZoD
    offset, Tables 7.5-6/7/8). The rays' zenith angles and the array's gain along them
    are the site's, computed once for its sectors. ``split``: the two terms of the
    power sum apart, linear — ``(Σ_rays P·G, G_direct)``, the second per unit of the
    links' direct-path weight (``rays.direct``) — so a caller may treat the smooth ray
    sum and the sharp direct pattern differently (moving UEs along their paths)."""
    dx, dy = offsets_m[:, 0], offsets_m[:, 1]
    d2c = np.hypot(dx, dy)
    theta = np.degrees(np.arctan2(d2c, dz_m))
    phi = np.degrees(np.arctan2(dy, dx))
    h_ut = np.broadcast_to(h_ut_m, d2c.shape)
    spreads = departure_spreads_deg(scenario, carrier_hz, d2c, h_ut, h_bs_m)
    zsd = np.where(los, spreads["los"][1], spreads["nlos"][1])
    offset = np.where(los, 0.0, zod_offset_deg(scenario, carrier_hz, d2c, h_ut))
    t = rays.zenith_deg(theta, zsd, offset)
    sectors = [None] if boresights_deg is None else list(boresights_deg)
    array_direct = array_gain_db(theta, rows, spacing_wl, tilt_zenith_deg)
    if split:  # (the rays in single precision, linear: :func:`ray_power_sums`)
        out = ray_power_sums(t, phi, rays, sectors, rows, spacing_wl, tilt_zenith_deg)
        direct = np.empty_like(out)
        for k, bore in enumerate(sectors):
            az = 0.0 if bore is None else element_gain_db(theta, phi - bore)
            direct[:, k] = 10.0 ** ((array_direct + az) / 10.0)
        return out, direct
    array_rays = array_gain_db(t, rows, spacing_wl, tilt_zenith_deg)
    out = np.empty((len(theta), len(sectors)))
    for k, bore in enumerate(sectors):
        if bore is None:
            ray_db, direct_db = array_rays, array_direct
        else:
            az = phi - bore
            ray_db = array_rays + element_gain_db(t, az[:, None] + rays.azimuth_deg)
            direct_db = array_direct + element_gain_db(theta, az)
        out[:, k] = 10.0 * np.log10(rays.power_sum(ray_db, direct_db))
    return out


#: the element's peak gain and floor (TR 38.901 Table 7.3-1), linear
_PEAK, _FLOOR = 10.0**0.8, 10.0**-2.2
#: 12 dB per (65°)² of the element's pattern, as a natural exponent
_NEPER_PER_HPBW2 = 1.2 * math.log(10.0)


def ray_power_sums(
    zenith_deg: np.ndarray,
    phi_deg: np.ndarray,
    rays: LinkRays,
    sectors: list[float | None],
    rows: int,
    spacing_wl: float,
    tilt_zenith_deg: float,
) -> np.ndarray:
    """``(L, K)`` Σ_rays P·G of L links (the rays' zenith angles ``zenith_deg`` (L, R),
    the links' LOS azimuths ``phi_deg`` (L,), ``rays``' azimuth offsets and powers) for
    K sectors (boresights; ``None``: omni): :func:`element_gain_db` and
    :func:`array_gain_db` evaluated in linear terms and single precision — the element
    is 10^0.8·e^(−1.2 ln10·(((θ−90)/65)² + (φ/65)²)) down to its 30 dB floor, so its
    zenith factor is the rays' for every sector and only the azimuth factor is per
    sector. Within 1e-4 of the double-precision dB evaluation (1e-5 tested on random
    links; an array null seen by rays of a tiny spread, and the 1e-12 floor, are less
    exact in relative terms, nothing in dB) at a sixth of its cost: a moving UE's
    gains along its path are sums of thousands of these."""
    t = zenith_deg.astype(np.float32)
    weight = rays.weight.astype(np.float32)
    if rows > 1:  # the array factor |Σ_m e^{jmψ}|²/M = sin²(Mψ/2) / (M sin²(ψ/2))
        half = np.cos(np.radians(t))
        half -= np.float32(math.cos(math.radians(tilt_zenith_deg)))
        half *= np.float32(math.pi * spacing_wl)
        den = np.sin(half) ** 2
        num = np.sin(half * np.float32(rows)) ** 2
        small = den < np.float32(1e-30)
        af = np.where(small, np.float32(rows * rows), num / np.where(small, np.float32(1.0), den))
        af *= np.float32(1.0 / rows)
        np.maximum(af, np.float32(1e-12), out=af)
        weight = weight * af
    out = np.empty((len(t), len(sectors)))
    if any(b is None for b in sectors):  # (omni: the array alone)
        out[:, [b is None for b in sectors]] = weight.sum(axis=1, dtype=np.float64)[:, None]
        if all(b is None for b in sectors):
            return out
    v = (t - np.float32(90.0)) * np.float32(1.0 / 65.0)
    peak = weight * np.exp(v * v * np.float32(-_NEPER_PER_HPBW2))
    peak *= np.float32(_PEAK)
    floor = weight * np.float32(_FLOOR)
    az = rays.azimuth_deg.astype(np.float32)
    for k, bore in enumerate(sectors):
        if bore is None:
            continue
        a = az + (phi_deg - bore).astype(np.float32)[:, None]
        a -= np.float32(360.0) * np.rint(a * np.float32(1.0 / 360.0))  # (to ±180°)
        a *= np.float32(1.0 / 65.0)
        h = np.exp(a * a * np.float32(-_NEPER_PER_HPBW2))
        h *= peak
        out[:, k] = np.maximum(h, floor).sum(axis=1, dtype=np.float64)
    return out
