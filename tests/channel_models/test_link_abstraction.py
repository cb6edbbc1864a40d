"""Link abstraction options: RMa, 256QAM CQI table, SNR gap, cap, PHY overhead, TDD, PC."""

from __future__ import annotations

import math

import numpy as np
import pytest

from channel_models.duplex import tdd_time_fraction
from channel_models.link_budget import (
    CQI_TABLE_38214_5_2_2_1_3,
    cqi_efficiency,
    shannon_efficiency,
)
from channel_models.power_control import per_rb_snr, pusch_power_dbm
from channel_models.profile_catalog import get_channel_profile
from channel_models.tr38901 import RMa
from tests.channel_models.plain_formulas import rma_los_db, rma_nlos_db

FC = 3.5e9


@pytest.mark.parametrize("d", [10.0, 50.0, 300.0, 1500.0, 5000.0])
def test_rma_matches_a_plain_implementation(d):
    assert RMa(FC, los=True).mean_loss_db(np.array([d]))[0] == pytest.approx(rma_los_db(d, FC))
    assert RMa(FC, los=False).mean_loss_db(np.array([d]))[0] == pytest.approx(rma_nlos_db(d, FC))
    p = RMa(FC).los_probability(np.array([d]))[0]
    assert p == pytest.approx(1.0 if d <= 10 else math.exp(-(d - 10) / 1000))


def test_rma_breakpoint_is_continuous():
    law = RMa(FC, los=True)
    bp = law.breakpoint_m()
    below, above = law.mean_loss_db(np.array([bp - 1e-6, bp + 1e-6]))
    assert above == pytest.approx(below, abs=1e-4)


def test_256qam_table_reaches_7_4_and_shares_the_low_end():
    assert CQI_TABLE_38214_5_2_2_1_3[-1, 2] == 7.4063
    assert cqi_efficiency(np.array([1e6]), table="256qam")[0] == 7.4063
    assert cqi_efficiency(np.array([1e6]), table="64qam")[0] == 5.5547
    snr = 10 ** (np.linspace(-10, 30, 81) / 10)
    se = cqi_efficiency(snr, table="256qam")
    assert np.all(np.diff(se) >= 0)  # monotone in SNR
    assert np.all(se <= np.log2(1 + snr))  # never above Shannon
    assert np.all(se[snr > 10**2.5] > cqi_efficiency(snr[snr > 10**2.5], table="64qam"))


def test_snr_gap_and_cap():
    snr = np.array([1.0, 10.0, 1000.0])
    gap = 10 ** (3 / 10)
    assert shannon_efficiency(snr, gap_db=3.0) == pytest.approx(np.log2(1 + snr / gap))
    assert shannon_efficiency(snr, 4.0).max() == 4.0


def test_profile_applies_overhead_per_direction():
    p = get_channel_profile("nr_fr1_uma").with_overrides(  # its CQI-table variant
        efficiency={"model": "cqi", "table": "64qam", "gap_db": 0.0, "max_bps_per_hz": None},
        phy_overhead={"uplink": 0.08, "downlink": 0.14},
        overheads={},
    )
    snr = np.array([100.0])
    raw = cqi_efficiency(snr)[0]
    assert p.efficiency_bps_per_hz(snr, "uplink")[0] == pytest.approx(raw * (1 - 0.08))
    assert p.efficiency_bps_per_hz(snr, "downlink")[0] == pytest.approx(raw * (1 - 0.14))


def test_tdd_fractions_of_dddsu():
    assert tdd_time_fraction("DDDSU", "uplink", (10, 2, 2)) == pytest.approx(16 / 70)
    assert tdd_time_fraction("DDDSU", "downlink", (10, 2, 2)) == pytest.approx(52 / 70)
    with pytest.raises(ValueError, match="add up to 14"):
        tdd_time_fraction("DDDSU", "uplink", (10, 2, 1))
    with pytest.raises(ValueError, match="D, S and U"):
        tdd_time_fraction("DDXU", "uplink")


def test_open_loop_power_control_formula():
    # below P_CMAX: P0 + 10log10(2^mu M) + alpha PL
    assert pusch_power_dbm(4, 100.0, 23.0, -90.0, 0.8, 1)[()] == pytest.approx(
        -90 + 10 * math.log10(8) + 80
    )
    assert pusch_power_dbm(100, 140.0, 23.0, -90.0, 0.8, 1)[()] == 23.0
    # per-RB SNR independent of M below the limit, ∝ 1/M at it
    noise = 1e-15
    s = per_rb_snr(np.array([1.0, 2.0]), 100.0, 23.0, -90.0, 0.8, 1, noise)
    assert s[0] == pytest.approx(s[1])
    s = per_rb_snr(np.array([50.0, 100.0]), 140.0, 23.0, -90.0, 0.8, 1, noise)
    assert s[0] == pytest.approx(2 * s[1])


def test_noise_figure_per_receiver():
    p = get_channel_profile("nr_fr1_uma")
    assert 10 * np.log10(p.noise_w("ue") / p.noise_w("bs")) == pytest.approx(4.0)
