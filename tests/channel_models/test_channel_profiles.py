import numpy as np
import pytest

from channel_models.channel_profiles import channel_profiles, get_channel_profile
from channel_models.numerology import num_resource_blocks


def test_feddif_profile_is_the_paper_setup():
    p = get_channel_profile("feddif")
    assert p.bandwidth_hz == 20e6 and p.num_rbs == 106 and p.rb_bandwidth_hz == 180e3
    assert p.num_rbs == num_resource_blocks(p.bandwidth_hz, p.numerology)
    assert p.pathloss == {
        "model": "log_distance",
        "beta0_db": -30.0,
        "kappa": 3.75,
        "d0_m": 1.0,
        "height_tx_m": 23.5,
        "height_rx_m": 0.0,
    }
    assert p.ue_tx_power_dbm == 23.0 and p.bs_tx_power_dbm == 43.0
    assert p.noise_dbm_per_hz == -174.0 and p.fading["model"] == "rayleigh"
    # mean SNR at 100 m ground distance: 23 dBm - PL(sqrt(100² + 23.5²)) + 174 - 10 log10(20e6)
    loss = p.build_pathloss().mean_loss_db(np.array([100.0]))[0]
    snr_db = 10 * np.log10(p.ue_tx_power_w * 10 ** (-loss / 10) / p.noise_w())
    d = np.hypot(100, 23.5)
    assert snr_db == pytest.approx(23 - (30 + 37.5 * np.log10(d)) + 174 - 10 * np.log10(20e6))


def test_every_profile_builds_and_is_consistent():
    for p in channel_profiles().values():
        assert p.num_rbs == num_resource_blocks(p.bandwidth_hz, p.numerology)
        assert p.build_pathloss() is not None and p.build_fading().coherence_time_s > 0
        assert p.source
        assert np.all(p.efficiency_bps_per_hz(np.array([0.0, 1.0, 100.0])) >= 0)


def test_a_carriers_efficiency_function_equals_the_profiles_formula():
    """`efficiency_for` (parameters resolved once, for the carriers' hot path) gives the
    very floats of `efficiency_bps_per_hz`, for every profile, direction and SNR range."""
    from dataclasses import replace

    snr = np.concatenate([[0.0, 1e-9], np.logspace(-3, 6, 2000)])
    profiles = list(channel_profiles().values())
    base = profiles[0]
    profiles += [  # a CQI table with a cap and a gap, and a capped Shannon law with a gap
        replace(
            base,
            efficiency={"model": "cqi", "table": "256qam", "gap_db": 1.5, "max_bps_per_hz": 5.0},
        ),
        replace(base, efficiency={"model": "shannon", "gap_db": 3.0, "max_bps_per_hz": 6.0}),
    ]
    for p in profiles:
        for direction in ("uplink", "downlink"):
            fast = p.efficiency_for(direction)(snr)
            assert np.array_equal(fast, p.efficiency_bps_per_hz(snr, direction)), p.name
