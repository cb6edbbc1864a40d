"""NR link adaptation (``nr_bler``): TS 38.214 MCS tables and TBS (exported from Sionna,
checked here by hand), Sionna's BLER curves, OLLA and the ``nr_fr1_uma`` profile."""

from __future__ import annotations

import math

import numpy as np
import pytest

from channel_models.nr import nr_bler_curve_db, nr_bler_efficiency, nr_data, nr_tbs_bits
from channel_models.profile_catalog import get_channel_profile


def _tbs_38214(qm: int, rate: float, prbs: int, re_per_prb: int = 156) -> int:
    """TS 38.214 §5.1.3.2 for N_info > 3824 (steps 4), one layer — by hand."""
    n_info = min(re_per_prb, 156) * prbs * rate * qm
    assert n_info > 3824
    n = math.floor(math.log2(n_info - 24)) - 5
    n_info_q = max(3840, 2**n * round((n_info - 24) / 2**n))
    if rate <= 0.25:
        c = math.ceil((n_info_q + 24) / 3816)
    elif n_info_q > 8424:
        c = math.ceil((n_info_q + 24) / 8424)
    else:
        return 8 * math.ceil((n_info_q + 24) / 8) - 24
    return 8 * c * math.ceil((n_info_q + 24) / (8 * c)) - 24


def test_mcs_tables_are_ts_38214s():
    t1 = nr_data()["tables"]["downlink/table1"]["mcs"]
    t2 = nr_data()["tables"]["downlink/table2"]["mcs"]
    assert (t1[0]["modulation_order"], t1[0]["code_rate"] * 1024) == (2, pytest.approx(120))
    assert (t1[28]["modulation_order"], t1[28]["code_rate"] * 1024) == (6, pytest.approx(948))
    assert (t2[27]["modulation_order"], t2[27]["code_rate"] * 1024) == (8, pytest.approx(948))
    assert len(t1) == 29 and len(t2) == 28


@pytest.mark.parametrize("mcs", [4, 10, 16, 22, 27])
@pytest.mark.parametrize("prbs", [106, 273])
def test_tbs_follows_the_38214_procedure(mcs, prbs):
    row = nr_data()["tables"]["uplink/table1"]["mcs"][mcs]
    expected = _tbs_38214(row["modulation_order"], row["code_rate"], prbs)
    assert nr_tbs_bits("uplink", 1, prbs)[mcs] == expected


def test_small_tbs_comes_from_table_5_1_3_2_1():
    # MCS 0 on 24 PRBs: N_info = 156·24·(120/1024)·2 = 877.5 → N'_info = 872 → 888
    assert nr_tbs_bits("uplink", 1, 24)[0] == 888


def test_sionna_has_no_curve_for_some_mcs_and_they_are_never_chosen():
    assert nr_bler_curve_db("uplink", 1, 273, 0, np.array([0.0])) is None
    e = nr_bler_efficiency("uplink", 273, 1, 360e3, 1)
    assert e.mcs.tolist() == list(range(3, 28))
    assert e(np.array([1e6]))[0] == pytest.approx(
        e.tbs_bits[-1] * (1 - e.bler[-1, -1]) / (273 * 360e3 * 0.5e-3)
    )


@pytest.mark.parametrize(("direction", "table"), [("uplink", 1), ("downlink", 1), ("downlink", 2)])
def test_olla_holds_the_target_and_efficiency_rises(direction, table):
    e = nr_bler_efficiency(direction, 273, 1, 360e3, table)
    inside = (e.eff > 0) & (e.bler[-1] > 0.1)
    np.testing.assert_allclose(e.first_bler[inside], 0.1, atol=1e-12)
    assert np.all(np.diff(e.eff) >= -1e-9)
    np.testing.assert_array_equal(e.eff == 0, e.bler[0] > 0.1)


def test_256qam_table_reaches_further():
    t1 = nr_bler_efficiency("downlink", 273, 1, 360e3, 1)
    t2 = nr_bler_efficiency("downlink", 273, 1, 360e3, 2)
    high = np.array([10**3.0])
    assert t2(high)[0] > 1.2 * t1(high)[0]


def test_nr_fr1_uma_uses_nr_bler_with_harq_of_one_tdd_period():
    p = get_channel_profile("nr_fr1_uma")
    assert p.efficiency["model"] == "nr_bler" and p.harq["rtt_s"] == 0.0025
    snr = np.array([0.1, 1.0, 10.0, 100.0])
    e = nr_bler_efficiency("uplink", 273, 1, 360e3, 1)
    np.testing.assert_array_equal(p.efficiency_bps_per_hz(snr, "uplink"), e(snr))
    assert p.efficiency_for("uplink").bler_model.label == e.label
