import numpy as np
import pytest

from channel_models.link_budget import (
    CQI_TABLE_38214_5_2_2_1_2,
    cqi_efficiency,
    cqi_from_snr,
    min_snr_for_outage,
    noise_power_w,
    outage_probability,
    shannon_efficiency,
    snr_linear,
)
from channel_models.units import dbm_to_w, w_to_dbm


def test_noise_power():
    # -174 dBm/Hz over 20 MHz = -100.99 dBm
    assert w_to_dbm(noise_power_w(20e6)) == pytest.approx(-174 + 10 * np.log10(20e6))
    assert w_to_dbm(noise_power_w(1.0, noise_figure_db=9)) == pytest.approx(-165.0)


def test_snr_and_shannon():
    snr = snr_linear(dbm_to_w(23), 100.0, 1.0, noise_power_w(20e6))
    assert 10 * np.log10(snr) == pytest.approx(23 - 100 + 174 - 10 * np.log10(20e6))
    assert shannon_efficiency(3.0) == 2.0
    assert shannon_efficiency(1e6, max_bps_per_hz=6.0) == 6.0


def test_cqi_table_values_and_mapping():
    # TS 38.214 Table 5.2.2.1-2: CQI 1 = QPSK 78/1024 (0.1523), CQI 15 = 64QAM 948/1024 (5.5547)
    t = CQI_TABLE_38214_5_2_2_1_2
    assert t.shape == (15, 3)
    assert tuple(t[0]) == (2, 78, 0.1523) and tuple(t[-1]) == (6, 948, 5.5547)
    np.testing.assert_allclose(t[:, 2], t[:, 0] * t[:, 1] / 1024, atol=6e-4)
    snr = np.logspace(-3, 4, 500)
    cqi = cqi_from_snr(snr)
    assert np.all(np.diff(cqi) >= 0) and cqi[0] == 0 and cqi[-1] == 15
    eff = cqi_efficiency(snr)
    assert np.all(eff <= shannon_efficiency(snr) + 1e-12)  # never above capacity


def test_outage_formula_matches_monte_carlo():
    """FedDif (A.1): P(log2(1 + SNR̄|h|²) < R) with |h|² ~ Exp(1), within 1 %."""
    rng = np.random.default_rng(7)
    h2 = rng.exponential(1.0, 2_000_000)
    for rate, snr_db in ((1.0, 10.0), (2.0, 15.0), (0.5, 3.0)):
        mean_snr = 10 ** (snr_db / 10)
        mc = np.mean(np.log2(1 + mean_snr * h2) < rate)
        assert outage_probability(rate, mean_snr) == pytest.approx(mc, rel=0.01)


def test_min_snr_for_outage_inverts_formula():
    snr = min_snr_for_outage(1.0, 0.05)
    assert outage_probability(1.0, snr) == pytest.approx(0.05)
