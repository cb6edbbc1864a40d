"""LTE link adaptation (channel_models.lte): the TS 36.213 tables against the
specification by hand, the properties of ns-3's mapping, and ns-3's own choices —
every UE's MCS and every starved UE of the ns-3 LTE uplink fixture
(``tests/reference/ns3_lte_uplink.json``, written by ``validation/ns3/lte_uplink.py``)
— reproduced from netfl's path-loss law, power control and noise."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest

from channel_models.channel_profiles import build_pathloss
from channel_models.link_budget import noise_power_w
from channel_models.lte import (
    ber_gap_db,
    cqi_from_sinr,
    dl_tbs_bits,
    lte_tables,
    mcs_from_cqi,
    reported_sinr_db,
    ul_tbs_bits,
)

FIXTURE = Path(__file__).resolve().parents[1] / "reference" / "ns3_lte_uplink.json"


def test_tbs_entries_by_hand_from_ts_36213():
    # Table 7.1.7.2.1-1: I_TBS 0 on 1 PRB, I_TBS 26 on 1, 20 and 100 PRBs (the 75.376
    # Mbit/s of a 20 MHz single-layer carrier); UL MCS 0 and 28 are I_TBS 0 and 26
    assert ul_tbs_bits(0, 1) == 16
    assert ul_tbs_bits(28, 1) == 712
    assert ul_tbs_bits(28, 20) == 14688
    assert ul_tbs_bits(28, 100) == 75376
    assert dl_tbs_bits(28, 100) == 75376  # DL MCS 28 is I_TBS 26 too


def test_uplink_mcs_to_itbs_repeats_where_the_modulation_changes():
    """Table 8.6.1-1: UL MCS 10 and 11 share I_TBS 10, MCS 20 and 21 share I_TBS 19."""
    ul = lte_tables().ul_tbs_bits
    np.testing.assert_array_equal(ul[10], ul[11])
    np.testing.assert_array_equal(ul[20], ul[21])
    assert not np.array_equal(ul[11], ul[12])


def test_tbs_grows_with_mcs_and_prbs():
    for table in (lte_tables().ul_tbs_bits, lte_tables().dl_tbs_bits):
        assert (np.diff(table, axis=0) >= 0).all() and (np.diff(table, axis=1) >= 0).all()
        assert (table[:, -1] > table[:, 0]).all()


def test_reported_sinr_truncates_toward_zero_in_eighths_of_a_db():
    np.testing.assert_array_equal(
        reported_sinr_db([13.85, 13.75, -3.49, 0.124, 5000.0]),
        [13.75, 13.75, -3.375, 0.0, 4095.875],
    )


def test_the_gap_of_ns3s_ber_target():
    assert ber_gap_db() == pytest.approx(10 * math.log10(-math.log(2.5e-4) / 1.5))
    assert ber_gap_db() == pytest.approx(7.43, abs=0.005)


def test_cqi_is_monotone_in_sinr_and_strictly_below_at_thresholds():
    sinr_db = np.linspace(-20, 40, 6001)
    cqi = cqi_from_sinr(10 ** (sinr_db / 10))
    assert (np.diff(cqi) >= 0).all() and cqi[0] == 0 and cqi[-1] == 15
    mcs = mcs_from_cqi(cqi)
    assert (np.diff(mcs) >= 0).all()
    eff, gap = lte_tables().cqi_efficiency, 10 ** (ber_gap_db() / 10)
    for c in range(1, 16):  # at exactly efficiency(c) the CQI is c - 1 (ns-3: '<')
        at = gap * (2.0 ** eff[c] - 1.0)
        assert cqi_from_sinr(at * (1 - 1e-9)) == c - 1
        assert cqi_from_sinr(at * (1 + 1e-9)) == c


def _srs_sinr(distance_m: np.ndarray, cell: dict) -> np.ndarray:
    """The SINR of one RB of ns-3's sounding signal as its MAC sees it: open-loop
    power (TS 36.213 §5.1.3: P_SRS_OFFSET 0 dB, M_SRS = all 100 RBs, P0, α·PL), capped
    at 23 dBm, spread over the 100 RBs; 180 kHz of noise at the eNB's noise figure;
    reported in 1/8 dB (truncated)."""
    pl = cell["pathloss"]
    law = build_pathloss(
        {
            "model": "log_distance",
            "beta0_db": -pl["reference_loss_db"],
            "kappa": pl["exponent"],
            "d0_m": pl["reference_distance_m"],
            "height_tx_m": cell["bs_height_m"],
            "height_rx_m": cell["ue_height_m"],
        },
        2.0e9,
    )
    loss_db = law.mean_loss_db(distance_m)
    pc = cell["uplink_power_control"]
    rbs = cell["bandwidth_rbs"]
    power_dbm = np.minimum(
        cell["ue_tx_power_dbm"], 10 * np.log10(rbs) + pc["p0_dbm"] + pc["alpha"] * loss_db
    )
    per_rb_w = 10 ** ((power_dbm - 30) / 10) / rbs
    noise_w = noise_power_w(180e3, cell["bs_noise_figure_db"])
    sinr_db = 10 * np.log10(per_rb_w * 10 ** (-loss_db / 10) / noise_w)
    return 10 ** (reported_sinr_db(sinr_db) / 10)


def test_mcs_and_starvation_of_every_ue_match_ns3():
    fixture = json.loads(FIXTURE.read_text())
    cell = fixture["cell"]
    checked = starved = 0
    for run in fixture["runs"]:
        ues = run["ues"]
        sinr = _srs_sinr(np.array([u["distance_m"] for u in ues]), cell)
        cqi = cqi_from_sinr(sinr)
        for ue, c in zip(ues, cqi, strict=True):
            where = f"{run['geometry']} {run['scheduler']} {ue['distance_m']} m"
            if c == 0:
                assert ue["grants"] == 0 and ue["received_bytes"] == 0, where
                starved += 1
            else:
                assert ue["complete"], where
                assert ue["mode_mcs"] == mcs_from_cqi(c), where
            checked += 1
    assert checked >= 100 and starved >= 6


@pytest.mark.parametrize("direction", ["uplink", "downlink"])
def test_the_threshold_lookup_equals_the_rule_at_every_float(direction):
    from channel_models.lte import LteAmcEfficiency

    amc = LteAmcEfficiency(direction, 100)
    dense = 10 ** (np.linspace(-20, 40, 400_001) / 10)
    edges = np.concatenate(
        [np.nextafter(amc.thresholds, 0), amc.thresholds, np.nextafter(amc.thresholds, np.inf)]
    )
    for x in (dense, edges):
        np.testing.assert_array_equal(amc(x), amc.by_cqi[amc.cqi_of(x)])
    # each threshold is where its CQI starts: the float below still has the CQI before
    assert (amc.cqi_of(amc.thresholds) == np.arange(1, 16)).all()
    assert (amc.cqi_of(np.nextafter(amc.thresholds, 0)) == np.arange(0, 15)).all()
