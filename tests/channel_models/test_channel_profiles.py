import numpy as np
import pytest

from channel_models.numerology import num_resource_blocks
from channel_models.profile_catalog import channel_profiles, get_channel_profile


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


#: LTE transmission bandwidth configuration N_RB per channel bandwidth (TS 36.101 Table 5.6-1)
LTE_NRB = {1.4e6: 6, 3e6: 15, 5e6: 25, 10e6: 50, 15e6: 75, 20e6: 100}


def test_every_profile_builds_and_is_consistent():
    for p in channel_profiles().values():
        if p.efficiency["model"] == "lte_amc":
            assert p.num_rbs == LTE_NRB[p.bandwidth_hz] and p.numerology == 0
        else:
            assert p.num_rbs == num_resource_blocks(p.bandwidth_hz, p.numerology, p.carrier_hz)
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


def test_lte_profiles_spread_power_over_their_prbs_and_carry_a_grant_cycle():
    p = get_channel_profile("lte_20mhz")
    assert p.spread_bandwidth_hz == 100 * 180e3 and p.power_spread == "rbs"
    assert get_channel_profile("feddif").spread_bandwidth_hz == 20e6  # FedDif eq. (9)
    assert get_channel_profile("lte_5mhz").num_rbs == 25
    assert p.uplink_grant == {
        "startup_delay_s": 0.011,
        "bsr_max_bytes": 150000,
        "cycle_gap_s": 0.017,
    }
    # noise over 18 MHz at the eNB's 5 dB figure
    assert 10 * np.log10(p.noise_w("bs") * 1e3) == pytest.approx(-174 + 10 * np.log10(18e6) + 5)


def test_lte_amc_efficiency_is_the_tbs_per_hz_of_ns3s_mcs():
    from channel_models.lte import cqi_from_sinr, mcs_from_cqi, ul_tbs_bits

    p = get_channel_profile("lte_20mhz")
    snr = 10 ** (np.array([-10.0, 0.0, 5.0, 14.0, 30.0]) / 10)
    eff = p.efficiency_bps_per_hz(snr, "uplink")
    mcs = mcs_from_cqi(cqi_from_sinr(snr))
    expected = np.where(cqi_from_sinr(snr) > 0, ul_tbs_bits(mcs, 100) / (100 * 180e3 * 1e-3), 0)
    # (the uplink reports the SINR in 1/8 dB first: these SINRs are not near a threshold)
    np.testing.assert_array_equal(eff, expected)
    assert eff[0] == 0.0 and eff[-1] == pytest.approx(75376 / 18e3)


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"efficiency": {"model": "turbo"}}, r"efficiency.model: 'turbo'"),
        ({"uplink_grant": {"startup_delay_s": 0.01}}, r"uplink_grant: needs exactly"),
        (
            {"uplink_grant": {"startup_delay_s": -1, "bsr_max_bytes": 1, "cycle_gap_s": 0}},
            r"uplink_grant.startup_delay_s: -1",
        ),
        ({"power_spread": "band"}, r"power_spread: 'band'"),
        ({"efficiency": {"model": "lte_amc", "reference_prbs": 200}}, r"reference_prbs: 200"),
    ],
)
def test_bad_profile_values_are_named(change, message):
    from dataclasses import replace

    with pytest.raises(ValueError, match=message):
        replace(get_channel_profile("lte_20mhz"), **change)
