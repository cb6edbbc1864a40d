"""The ``bler`` LTE link abstraction: ns-3's BLER curves, OLLA's steady state, HARQ."""

from __future__ import annotations

import json
from importlib import resources

import numpy as np
import pytest
from scipy import stats

from channel_models.lte import (
    bler_curve_db,
    dl_tbs_bits,
    lte_amc_efficiency,
    lte_bler_efficiency,
    ul_tbs_bits,
)


def test_the_exported_curves_are_ns3s_own_tbs_and_fall_monotonically():
    data = json.loads(
        resources.files("channel_models").joinpath("data/lte_bler_ns3.json").read_text()
    )
    assert data["prbs"] == [6, 15, 25, 50, 75, 100]
    for direction in ("uplink", "downlink"):
        for prbs in data["prbs"]:
            rows = data["curves"][direction][str(prbs)]
            assert [r["mcs"] for r in rows] == list(range(29))
            for r in rows:
                b = np.array(r["bler"])
                assert b[0] >= 1 - 1e-5 and b[-1] <= 1e-5 and np.all(np.diff(b) <= 1e-12)
    # the TB sizes the curves were computed for are TS 36.213's (ns-3's LteAmc)
    for r in data["curves"]["uplink"]["100"]:
        assert r["tbs_bits"] == ul_tbs_bits(r["mcs"], 100)


def test_a_higher_mcs_needs_more_sinr_for_the_same_bler():
    at_10 = [
        np.interp(
            -0.1,
            -bler_curve_db("uplink", 100, m, np.arange(-12, 32, 0.01)),
            np.arange(-12, 32, 0.01),
        )
        for m in range(29)
    ]
    assert np.all(np.diff(at_10) > 0)
    assert -9.0 < at_10[0] < -5.0 and 17.0 < at_10[28] < 22.0  # QPSK 1/8 ... 64QAM ~0.9


@pytest.mark.parametrize("direction", ["uplink", "downlink"])
@pytest.mark.parametrize("prbs", [25, 100])
def test_olla_holds_the_target_bler_between_the_lowest_and_highest_mcs(direction, prbs):
    e = lte_bler_efficiency(direction, prbs, 180e3, 0.1)
    inside = (e.eff > 0) & (e.bler[28] > 0.1)  # in range, below the top MCS
    assert inside.sum() > 1000
    np.testing.assert_allclose(e.first_bler[inside], 0.1, atol=1e-12)
    # OLLA's mix: the goodput of the two MCSs by their time shares, by hand at one SINR
    i = int(np.flatnonzero(inside)[len(np.flatnonzero(inside)) // 2])
    b = e.bler[:, i]
    m = int(np.flatnonzero(b <= 0.1).max())
    p = (0.1 - b[m]) / (b[m + 1] - b[m])
    table = ul_tbs_bits if direction == "uplink" else dl_tbs_bits
    tbs = table(np.array([m, m + 1]), prbs).astype(float)
    goodput = (1 - p) * tbs[0] * (1 - b[m]) + p * tbs[1] * (1 - b[m + 1])
    assert e.eff[i] == pytest.approx(goodput / (prbs * 180e3 * 1e-3), rel=1e-12)


def test_efficiency_rises_with_sinr_never_falls_below_the_gap_abstraction_and_starves_below_mcs0():
    e = lte_bler_efficiency("uplink", 100)
    gap = lte_amc_efficiency("uplink", 100)
    x = e.thresholds
    assert np.all(np.diff(e(x)) >= -1e-12)
    assert np.all(e(x) >= gap(x) - 1e-12)
    np.testing.assert_array_equal(e.eff == 0, e.bler[0] > 0.1)  # per grid point
    assert e(np.array([1e-3]))[0] == 0.0 and e(np.array([1e4]))[0] == pytest.approx(
        ul_tbs_bits(28, 100) * (1 - e.bler[28, -1]) / (100 * 180e3 * 1e-3)
    )


def test_harq_retransmits_the_last_block_with_olla_s_bler():
    """At an SINR where OLLA dithers, the last block fails with probability 0.1 (binomial
    test), and a retransmission (two copies combined: twice the SINR) almost never fails."""
    e = lte_bler_efficiency("uplink", 100)
    rng = np.random.default_rng(7)
    counts = np.array([e.retransmissions(10.0, rng, 4) for _ in range(20_000)])
    assert stats.binomtest(int((counts > 0).sum()), counts.size, 0.1).pvalue > 1e-3
    assert (counts > 1).mean() < 0.002
    assert np.all(counts <= 3)
    assert all(e.retransmissions(10.0, rng, 1) == 0 for _ in range(100))  # no HARQ


def test_an_mcs_cap_bounds_every_abstraction():
    from channel_models.lte import lte_amc_efficiency
    from channel_models.nr import nr_bler_efficiency

    high = np.array([1e4])
    assert lte_amc_efficiency("uplink", 100, 180e3, None, 10)(high)[0] == pytest.approx(
        ul_tbs_bits(10, 100) / (100 * 180e3 * 1e-3)
    )
    capped = lte_bler_efficiency("uplink", 100, 180e3, 0.1, 10)
    assert capped.mcs.max() == 10 and capped(high)[0] < lte_bler_efficiency("uplink", 100)(high)[0]
    nr = nr_bler_efficiency("downlink", 273, 1, 360e3, 1, 0.1, 15)
    assert nr.mcs.max() == 15
    with pytest.raises(ValueError, match="max_mcs: 29 outside"):
        lte_bler_efficiency("uplink", 100, 180e3, 0.1, 29)
