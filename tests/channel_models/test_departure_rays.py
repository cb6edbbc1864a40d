"""Per-link departure rays (TR 38.901 §7.5 steps 4–7) and the antenna gain over them."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

from channel_models.bs_antenna import array_gain_db, element_gain_db, sector_gain_db
from channel_models.departure_rays import (
    RAY_OFFSETS,
    RAY_PARAMS,
    LinkRays,
    departure_spreads_deg,
    draw_link_rays,
    zod_offset_deg,
)
from channel_models.multicell import site_rays


def _gain(t, p):
    return element_gain_db(t, p) + array_gain_db(t)


def _rms_azimuth(r: LinkRays) -> np.ndarray:
    """Power-weighted RMS azimuth spread of each link's rays and direct path [deg]."""
    w = np.concatenate([r.weight, r.direct[:, None]], axis=1)
    a = np.concatenate([r.azimuth_deg, np.zeros((len(r), 1))], axis=1)
    mean = (w * a).sum(1) / w.sum(1)
    return np.sqrt((w * (a - mean[:, None]) ** 2).sum(1) / w.sum(1))


def test_one_ray_and_a_direct_path_by_hand():
    theta, phi = np.array([100.0]), np.array([20.0])
    # one NLOS ray 10° off in azimuth, 0.5 ZSD + 3/8·ZSD·α up in zenith; ZSD 4°, ZoD +2°
    r = LinkRays(
        np.array([[10.0]]),
        np.array([[0.5]]),
        np.array([[0.4]]),
        np.array([[0.25]]),
        np.array([0.75]),
        np.array([1.5]),
    )
    got = r.gain_linear(_gain, theta, phi, np.array([4.0]), np.array([2.0]))
    zsd = 4.0 * 1.5
    t_ray = 100.0 + 2.0 + 0.5 * zsd + 0.375 * 4.0 * 0.4
    want = 0.25 * 10 ** (_gain(t_ray, 30.0) / 10) + 0.75 * 10 ** (_gain(100.0, 20.0) / 10)
    assert got[0] == pytest.approx(want, rel=1e-12)


@pytest.mark.parametrize("scenario", ["uma", "umi"])
@pytest.mark.parametrize("state", ["los", "nlos", "o2i"])
def test_powers_sum_to_one_and_los_leaves_along_the_direct_path(scenario, state):
    rng = np.random.default_rng(1)
    r = draw_link_rays(scenario, state, rng.standard_normal(400), rng, 20.0)
    np.testing.assert_allclose(r.weight.sum(1) + r.direct, 1.0, atol=1e-12)
    p = RAY_PARAMS[(scenario, state)]
    assert r.weight.shape[1] == p.clusters * len(RAY_OFFSETS)
    if state == "los":
        # K [dB] ~ N(μ_K, σ_K) (no correlation with SF in UMa; the direct share K/(K+1))
        k_db = 10 * np.log10(r.direct / (1 - r.direct))
        assert np.mean(k_db) == pytest.approx(p.k_mu_db, abs=4 * p.k_sigma_db / 20)
        # the first cluster leaves along the LOS direction: its rays centre on 0
        first = r.azimuth_deg[:, : len(RAY_OFFSETS)]
        np.testing.assert_allclose(first.mean(1), 0.0, atol=1e-9)
    else:
        assert not r.direct.any()


def test_azimuth_spread_follows_the_lsp_and_its_correlation_with_shadowing():
    """UMa NLOS: lgASD ~ N(log10 ASD, 0.28) correlated −0.6 with SF (gain sense): the
    rays' RMS spread sits near the drawn ASD and shrinks on links with strong SF."""
    rng = np.random.default_rng(2)
    n = 3000
    sf = rng.standard_normal(n)
    r = draw_link_rays("uma", "nlos", sf, rng, 25.0)
    rms = _rms_azimuth(r)
    # 38.901's cluster construction aims at the LSP spread (C_φ); within ±35 % in median
    assert 0.65 * 25.0 < np.median(rms) < 1.35 * 25.0
    rho = stats.spearmanr(sf, np.log10(rms)).statistic
    assert -0.7 < rho < -0.35
    # a bounded spectrum: no ray beyond ~4.5 ASD of the LOS direction's median
    assert np.abs(r.azimuth_deg[r.weight > 0]).max() < 104.0 * 4.5
    # O2I: lgASD median 1.25 and SF correlation +0.2
    o = draw_link_rays("uma", "o2i", sf, rng, 10**1.25)
    assert 0.65 * 10**1.25 < np.median(_rms_azimuth(o)) < 1.35 * 10**1.25
    assert stats.spearmanr(sf, _rms_azimuth(o)).statistic > 0.05


def test_a_links_rays_are_its_generators_and_sectors_of_a_site_share_them():
    a = draw_link_rays("umi", "nlos", np.array([0.5]), np.random.default_rng(7), 30.0)
    b = draw_link_rays("umi", "nlos", np.array([0.5]), np.random.default_rng(7), 30.0)
    np.testing.assert_array_equal(a.azimuth_deg, b.azimuth_deg)
    los = np.array([[True, False], [False, False]])
    indoor = np.array([[False], [True]])
    rays = site_rays("uma", 6e9, los, indoor, np.zeros((2, 2)), np.random.default_rng(3))
    assert len(rays) == 4
    assert rays.direct[0] > 0 and not rays.direct[1:].any()  # the LOS link only
    assert rays.weight.shape[1] == 20 * 20  # padded to UMa NLOS's 20 clusters


def test_rays_blur_the_beam_peak_and_fill_the_arrays_nulls():
    rng = np.random.default_rng(4)
    n = 200
    r = draw_link_rays("uma", "nlos", np.zeros(n), rng, 25.0)
    # the 10 × 0.8 λ array's first null above its 102° tilt: cos θ = cos 102° + 1/8
    null = math.degrees(math.acos(math.cos(math.radians(102.0)) + 1 / 8))
    for theta, sign in ((102.0, -1), (null, 1)):
        got = 10 * np.log10(
            r.gain_linear(_gain, np.full(n, theta), np.zeros(n), np.full(n, 3.0), np.zeros(n))
        )
        assert sign * (np.median(got) - _gain(theta, 0.0)) > 1.0


def test_sector_gain_over_rays_uses_the_los_states_zenith_spread_and_offset():
    off = np.array([[60.0, 35.0], [120.0, -80.0]])
    dz = np.full(2, 1.5 - 25.0)
    h = np.full(2, 1.5)
    los = np.array([True, False])
    r = draw_link_rays("uma", "o2i", np.zeros(2), np.random.default_rng(5), 10**1.25)
    got = sector_gain_db(off, dz, 30.0, los, "uma", 6e9, h, 25.0, rays=r)
    d2 = np.hypot(off[:, 0], off[:, 1])
    theta = np.degrees(np.arctan2(d2, dz))
    phi = np.degrees(np.arctan2(off[:, 1], off[:, 0])) - 30.0
    sp = departure_spreads_deg("uma", 6e9, d2, h, 25.0)
    zsd = np.where(los, sp["los"][1], sp["nlos"][1])
    mu = np.where(los, 0.0, zod_offset_deg("uma", 6e9, d2, h))
    want = 10 * np.log10(r.gain_linear(_gain, theta, phi, zsd, mu))
    np.testing.assert_allclose(got, want, atol=1e-12)
    # without rays: the direct direction
    np.testing.assert_allclose(
        sector_gain_db(off, dz, 30.0, None, "uma", 6e9, h, 25.0), _gain(theta, phi), atol=1e-12
    )
    with pytest.raises(ValueError, match="LOS states"):
        sector_gain_db(off, dz, 30.0, None, "uma", 6e9, h, 25.0, rays=r)


def test_unknown_state_is_an_error():
    with pytest.raises(ValueError, match="valid: uma, umi"):
        draw_link_rays("rma", "los", np.zeros(1), np.random.default_rng(0), 10.0)
    assert math.isfinite(RAY_PARAMS[("umi", "los")].cholesky().sum())


@pytest.mark.parametrize("state", ["los", "nlos", "o2i"])
@pytest.mark.parametrize("rows", [1, 10])
def test_single_precision_ray_sums_are_the_antenna_tables(state, rows):
    """:func:`ray_power_sums` (linear, single precision, the element's zenith factor
    shared by the sectors) against Σ P·10^(G/10) with G from :func:`element_gain_db` +
    :func:`array_gain_db` in double precision: within 1e-5 for 200 links × 3 sectors
    at every azimuth (wrapped from ±540°) and zenith from 60° to 150°, omni too."""
    from channel_models.bs_antenna import ray_power_sums

    rng = np.random.default_rng(4)
    r = draw_link_rays("uma", state, rng.standard_normal(200), rng, 20.0)
    theta = rng.uniform(60.0, 150.0, 200)
    phi = rng.uniform(-540.0, 540.0, 200)
    t = r.zenith_deg(theta, np.full(200, 8.0), rng.uniform(-5.0, 5.0, 200))
    sectors = [30.0, 150.0, -90.0, None]
    got = ray_power_sums(t, phi, r, sectors, rows, 0.8, 102.0)
    array = array_gain_db(t, rows)
    for k, bore in enumerate(sectors):
        db = array + (
            0.0 if bore is None else element_gain_db(t, phi[:, None] - bore + r.azimuth_deg)
        )
        want = (r.weight * 10.0 ** (db / 10.0)).sum(axis=1)
        np.testing.assert_allclose(got[:, k], want, rtol=1e-5)
    assert got[:, :3].max() / got[:, :3].min() > 300  # (from the main lobe to the floor)


def test_single_precision_ray_sums_in_the_tilt_direction_have_the_arrays_full_gain():
    """A ray exactly along the electrical tilt (there the array factor's ratio is 0/0):
    the array's full gain M (10 dB for 10 rows), as :func:`array_gain_db` says."""
    from channel_models.bs_antenna import ray_power_sums

    t = np.array([[65.0]])  # (cos 65° − cos 65° is exactly 0 in single precision)
    r = LinkRays(t * 0, t * 0, t * 0, np.ones((1, 1)), np.zeros(1), np.ones(1))
    got = ray_power_sums(t, np.array([0.0]), r, [None], 10, 0.8, 65.0)[0, 0]
    assert got == pytest.approx(10.0 ** (array_gain_db(t, 10, 0.8, 65.0)[0, 0] / 10.0))
    assert got == pytest.approx(10.0)
