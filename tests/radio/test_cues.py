"""Background CUEs: spatial PPP and Poisson sessions."""

from __future__ import annotations

import numpy as np
import pytest
import simpy
from scipy import stats

from channel_models.fading import NoFading
from channel_models.link_budget import shannon_efficiency
from netfl.radio.cues import CueTraffic, CueTrafficConfig
from netfl.radio.ofdma import OfdmaCarrier

ALPHA = 1e-3


def carriers(env, n_rbs=100):
    return {
        d: OfdmaCarrier(env, d, n_rbs, 180e3, NoFading(1e-3), shannon_efficiency)
        for d in ("uplink", "downlink")
    }


def test_ppp_count_is_poisson_and_positions_area_uniform():
    radius, density = 300.0, 500.0
    lam = density * np.pi * (radius / 1e3) ** 2  # ≈ 141.4
    counts, radii = [], []
    for seed in range(400):
        env = simpy.Environment()
        cues = CueTraffic(
            env,
            carriers(env),
            CueTrafficConfig(density_per_km2=density, session_rate_per_s=0.0),
            radius,
            np.random.default_rng(seed),
        )
        counts.append(cues.num_cues)
        radii.append(np.hypot(*cues.positions_m.T))
    counts = np.array(counts)
    assert counts.mean() == pytest.approx(lam, rel=0.02)
    assert counts.var() == pytest.approx(lam, rel=0.2)  # Poisson: variance = mean
    # chi-square goodness of fit of the counts against Poisson(λA), binned by quantiles
    edges = stats.poisson(lam).ppf([0, 0.1, 0.3, 0.5, 0.7, 0.9, 1.0])
    edges[0], edges[-1] = -1, np.inf
    observed = np.histogram(counts, bins=edges)[0]
    expected = np.diff(stats.poisson(lam).cdf(edges)) * len(counts)
    assert stats.chisquare(observed, expected * observed.sum() / expected.sum()).pvalue > ALPHA
    r = np.concatenate(radii)
    assert stats.kstest(r, lambda x: (x / radius) ** 2).pvalue > ALPHA


def test_concurrent_sessions_follow_littles_law():
    """M/M/∞: time-average number of sessions = M·a·E[D]; starts stationary."""
    env = simpy.Environment()
    cfg = CueTrafficConfig(
        density_per_km2=4000,
        session_rate_per_s=0.05,
        mean_session_s=4.0,
        demand_rbs=0.01,
        uplink_fraction=1.0,
    )
    car = carriers(env)
    cues = CueTraffic(env, car, cfg, 200.0, np.random.default_rng(3))
    samples = []

    def sampler():
        while True:
            samples.append(cues.active)
            yield env.timeout(0.5)

    env.process(sampler())
    env.run(until=2000.0)
    samples = np.array(samples)
    assert samples.mean() == pytest.approx(cues.mean_concurrent, rel=0.03)
    # stationary from t = 0: the first 20 s look like the rest
    assert samples[:40].mean() == pytest.approx(cues.mean_concurrent, rel=0.15)
    # the stationary count is Poisson: variance ≈ mean
    assert samples.var() == pytest.approx(cues.mean_concurrent, rel=0.15)


def test_cue_sessions_slow_fl_transfers():
    def delivery(density):
        env = simpy.Environment()
        car = carriers(env, n_rbs=50)
        CueTraffic(
            env, car, CueTrafficConfig(density, 0.2, 5.0, 2.0, 1.0), 250.0, np.random.default_rng(1)
        )
        f = car["uplink"].send(20e6, 3.0, np.random.default_rng(2))
        env.run(until=f.done)
        return env.now

    assert delivery(0.0) == pytest.approx(20e6 / (50 * 180e3 * 2.0))
    assert delivery(2000.0) > delivery(500.0) > delivery(0.0)


def test_size_based_sessions_are_background_transfers():
    """Sized sessions are CUE transfers: capped at their RB demand, counted as CUE
    occupancy, delivered completely, and they slow FL transfers."""
    from channel_models.profile_catalog import get_channel_profile
    from netfl.core.records import Recorder
    from netfl.radio.ofdma_radio import OfdmaRadio

    def setup(density):
        env = simpy.Environment()
        radio = OfdmaRadio(
            env,
            Recorder(),
            get_channel_profile("feddif"),
            "round_robin",
            lambda k: np.random.default_rng(k),
        )
        cfg = CueTrafficConfig(density, 0.5, 1.0, 3.0, 1.0, mean_session_bits=2e5)
        cues = CueTraffic(
            env, radio.carriers, cfg, 200.0, np.random.default_rng(4), mean_snr=radio.cue_mean_snr
        )
        return env, radio, cues

    env, radio, cues = setup(2000.0)
    env.run(until=20.0)
    assert cues.sessions_started > 100
    occ = np.array(radio.carriers["uplink"].occupancy)
    carrier = radio.carriers["uplink"]
    assert np.all(occ[:, 2] == 0.0)  # no FL flow: everything is CUE traffic
    assert np.all(occ[:, 1] <= 106 + 1e-9)
    assert all(f.background and f.share <= 3.0 + 1e-9 for f in carrier.flows)
    finished = cues.sessions_started - cues.active
    assert finished > 0.8 * cues.sessions_started  # most sessions have been delivered

    times = []
    for density in (0.0, 3000.0):
        env, radio, _ = setup(density)
        f = radio.carriers["uplink"].send(3e7, 10.0, np.random.default_rng(9))
        env.run(until=f.done)
        times.append(env.now)
    assert times[1] > times[0]
