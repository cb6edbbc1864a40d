"""Moving devices' shadowing along their paths (issue 53): the default ``along_path``
AR(1) update (ns-3's ThreeGppPropagationLossModel, TR 38.901 §7.4.4) and the
``spatially_consistent`` fields agree in marginal σ, in the autocorrelation
exp(−Δd/d_corr) along a straight leg, and in the handover rate over 200 paths (within
10 %); a path's values do not depend on how it is cut into calls."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

from netfl.loading.scenarios import parse_scenario
from netfl.radio.along_path import AlongPathFields
from netfl.sim.world import World
from tests.conftest import tiny_scenario

NR = {"link": {"mode": "ofdma", "channel_profile": "nr_fr1_uma"}}
STEP_M = 0.5  # (metres between measurement instants on the straight leg)
SEGMENT = 32


@pytest.fixture(scope="module")
def geometry():
    world = World(
        parse_scenario(tiny_scenario(cell=NR, network={"sites": 7, "sectors": 3, "isd_m": 500}))
    )
    yield world.radio.geometry
    world.close()


def _straight(ks) -> np.ndarray:
    ks = np.asarray(ks, dtype=float)
    return np.stack([-900.0 + ks * STEP_M, np.full(len(ks), 37.0)], axis=1)


def _chain(geometry) -> AlongPathFields:
    return AlongPathFields(
        lambda xy: geometry.all_site_normals(np.asarray(xy)[None])[0],
        geometry.law.decorrelation_m,
        geometry.link_seed,
        SEGMENT,
    )


def _autocorr(x: np.ndarray, lag: int) -> float:
    """Mean over sites of the lag-``lag`` correlation of ``x`` (points, sites)."""
    return float(np.mean([np.corrcoef(x[:-lag, s], x[lag:, s])[0, 1] for s in range(x.shape[1])]))


def test_both_models_have_unit_normals_correlated_as_exp_of_the_distance(geometry):
    """64,000 instants (32 km) along a straight leg, every site: the shadowing and
    LOS-state normals of both models have σ = 1 (χ² interval over the 7 sites' 64,000
    points, thinned to one per decorrelation distance) and lag correlations
    exp(−Δd/d_corr) at 5, 20 and 50 m (within 0.05: about 3 standard errors)."""
    from scipy.special import ndtri

    n = SEGMENT * 2000
    xy = _straight(np.arange(n))
    u, z = _chain(geometry).fields("mover", 0, xy, _straight)
    along = {"shadowing": z, "los": ndtri(np.clip(u, 1e-15, 1 - 1e-15))}
    v = geometry.all_site_normals(xy, SEGMENT)
    consistent = {"los": v[:, :, 0], "shadowing": v[:, :, 1]}
    d_los, d_sf = geometry.law.decorrelation_m
    for model in (along, consistent):
        for field, d in (("los", d_los), ("shadowing", d_sf)):
            x = model[field]
            thin = x[:: int(d / STEP_M)].ravel()  # (about independent samples)
            lo, hi = stats.chi2.ppf([0.0005, 0.9995], len(thin)) / len(thin)
            assert lo < np.mean(thin**2) < hi, (field, np.mean(thin**2))
            for lag_m in (5.0, 20.0, 50.0):
                got = _autocorr(x, int(lag_m / STEP_M))
                assert got == pytest.approx(np.exp(-lag_m / d), abs=0.05), (field, lag_m)


def test_a_paths_values_do_not_depend_on_how_it_is_cut_into_calls(geometry):
    """The same path asked for at once, or segment by segment, or with a jump ahead
    (the skipped segments run first) and then back: the same values."""
    n = SEGMENT * 12
    xy = _straight(np.arange(n))
    whole = _chain(geometry).fields("mover", 0, xy, _straight)
    cut = _chain(geometry)
    later = cut.fields("mover", SEGMENT * 8, xy[SEGMENT * 8 :], _straight)
    parts = [cut.fields("mover", k, xy[k : k + SEGMENT], _straight) for k in range(0, n, SEGMENT)]
    for i in range(2):
        np.testing.assert_array_equal(np.concatenate([p[i] for p in parts]), whole[i])
        np.testing.assert_array_equal(later[i], whole[i][SEGMENT * 8 :])
    # (the start is the fields' value there)
    np.testing.assert_array_equal(whole[1][0], geometry.all_site_normals(xy[:1])[0][:, 1])


def _handovers_per_km(shadowing: str, paths: int = 200, seconds: float = 60.0) -> float:
    world = World(
        parse_scenario(
            tiny_scenario(
                cell=NR,
                network={
                    "sites": 7,
                    "sectors": 1,
                    "antenna": "omni",
                    "isd_m": 500,
                    "mobility": {"shadowing": shadowing},
                },
                devices={
                    "count": paths,
                    "mobility": {"model": "constant_velocity", "speed_kmh": 45.0},
                },
            )
        )
    )
    try:
        control = world.radio.handover
        for device in world.devices:
            control.track(device, 0.0, seconds)
        km = paths * 45.0 * seconds / 3600.0
        return len(control.handovers) / km
    finally:
        world.close()


def test_both_models_hand_over_as_often_over_200_straight_paths():
    """200 devices at 45 km/h for a minute each on a 7-site network (omni sites: the
    handovers are the path loss's and the shadowing's), the A3 rule along every path:
    handovers per km within 10 % between the two models."""
    along, consistent = _handovers_per_km("along_path"), _handovers_per_km("spatially_consistent")
    assert along > 1.0 and consistent > 1.0
    assert along == pytest.approx(consistent, rel=0.10), (along, consistent)


def test_the_chain_is_the_ar1_recursion_step_by_step(geometry):
    """Against a plain loop over the instants with the same keyed innovations, on a path
    that pauses (Δd = 0) and turns, over 7 segments: v_k = R_k·v_{k−1} + √(1 − R_k²)·ε_k,
    R_k = exp(−Δd_k / d_corr), v_0 the fields' normals at the start."""
    import zlib

    from scipy.special import ndtr

    rng = np.random.default_rng(4)
    steps = rng.uniform(0.0, 2.0, (SEGMENT * 7, 2)) * (rng.random((SEGMENT * 7, 1)) > 0.2)
    steps[0] = 0.0
    xy = np.cumsum(steps, axis=0) + np.array([120.0, -40.0])
    chain = _chain(geometry)
    u, z = chain.fields("walker", 0, xy, lambda ks: xy[np.asarray(ks, dtype=int)])
    d = np.asarray(geometry.law.decorrelation_m)
    v = geometry.all_site_normals(xy[:1])[0]  # (sites, 2)
    want = [v]
    for k in range(1, len(xy)):
        eps = np.random.default_rng([chain.seed, zlib.crc32(b"walker"), k // SEGMENT, 0xA3]).normal(
            size=(SEGMENT, v.shape[0], 2)
        )[k % SEGMENT]
        r = np.exp(-np.hypot(*(xy[k] - xy[k - 1])) / d)
        v = r * v + np.sqrt(1.0 - r**2) * eps
        want.append(v)
    want = np.array(want)
    np.testing.assert_allclose(z, want[:, :, 1], rtol=0, atol=1e-12)
    np.testing.assert_allclose(u, ndtr(want[:, :, 0]), rtol=0, atol=1e-12)


def test_a_chain_keeps_a_bounded_number_of_states(geometry):
    """A long path keeps at most KEEP_SEGMENTS segment states; asked again for an early
    segment it runs the chain from the start: the same values."""
    from netfl.radio.along_path import KEEP_SEGMENTS

    n = SEGMENT * (KEEP_SEGMENTS + 40)
    xy = _straight(np.arange(n))
    chain = _chain(geometry)
    whole = chain.fields("mover", 0, xy, _straight)
    assert len(chain._tails["mover"]) == KEEP_SEGMENTS
    early = chain.fields("mover", SEGMENT * 3, xy[SEGMENT * 3 : SEGMENT * 4], _straight)
    np.testing.assert_array_equal(early[1], whole[1][SEGMENT * 3 : SEGMENT * 4])
