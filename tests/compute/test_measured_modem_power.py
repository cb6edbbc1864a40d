"""Modem profiles held to measured phones (issue 54): the Galaxy S20 Ultra profiles
fitted to the SIGCOMM 2021 artifact (``validation/sigcomm21/fit_modem_power.py``;
aggregated figures in ``tests/reference/sigcomm21_modem_power.json``, no raw log)
predict every well-sampled median of the phone's power within ±15 %, and a transfer's
energy as netfl charges it within ±15 % of the measured power × its time; the profiles
carry the fit's coefficients, and the fit re-run on the artifact reproduces them."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from netfl.compute import get_compute_profile
from netfl.core.nodes import Node
from netfl.radio.radio import Radio

FIXTURE = Path(__file__).resolve().parents[1] / "reference" / "sigcomm21_modem_power.json"
PROFILES = {"lte": "s20u_lte", "5g_lowband": "s20u_5g_lowband", "5g_mmwave": "s20u_5g_mmwave"}
DIRECTIONS = {
    "uplink": ("tx_power_w", "tx_power_per_mbps_w"),
    "downlink": ("rx_power_w", "rx_power_per_mbps_w"),
}


@pytest.fixture(scope="module")
def measured() -> dict:
    return json.loads(FIXTURE.read_text())


def _cases(measured, network, direction):
    return [
        f
        for f in measured["figures"]
        if f["network"] == network and f["direction"] == direction and f["well_sampled"]
    ]


@pytest.mark.parametrize("network", sorted(PROFILES))
@pytest.mark.parametrize("direction", sorted(DIRECTIONS))
def test_each_profile_predicts_every_well_sampled_median(measured, network, direction):
    """The phone's power at each well-sampled target: its baseline plus the profile's
    modem power at the median throughput, within ±15 % of the measured median."""
    profile = get_compute_profile(PROFILES[network])
    beta, alpha = (getattr(profile, k) for k in DIRECTIONS[direction])
    cases = _cases(measured, network, direction)
    assert len(cases) >= 5
    base = measured["baseline_mw"] / 1e3
    for f in cases:
        predicted = base + beta + alpha * f["throughput_mbps"]
        assert predicted == pytest.approx(f["power_mw"] / 1e3, rel=0.15), f


@pytest.mark.parametrize("network", sorted(PROFILES))
@pytest.mark.parametrize("direction", sorted(DIRECTIONS))
def test_a_transfers_energy_is_the_measured_power_times_its_time(measured, network, direction):
    """Three transfers (1, 10 and 100 Mbit) at the slowest, a middle and the fastest
    well-sampled rate, charged by the radio's energy model: the phone's energy over each
    (its baseline plus what netfl charges its modem) within ±15 % of the measured median
    power × the transfer's time."""
    profile = get_compute_profile(PROFILES[network])
    cases = sorted(_cases(measured, network, direction), key=lambda f: f["throughput_mbps"])
    picks = [cases[0], cases[len(cases) // 2], cases[-1]]
    role = "tx" if direction == "uplink" else "rx"
    for f, mbit in zip(picks, (1.0, 10.0, 100.0), strict=True):
        node = Node("ue0", "device", 0, np.zeros(2), profile)
        seconds = mbit / f["throughput_mbps"]
        modem_j = Radio._charge(node, role, seconds, seconds, mbit * 1e6)
        phone_j = modem_j + measured["baseline_mw"] / 1e3 * seconds
        assert phone_j == pytest.approx(f["power_mw"] / 1e3 * seconds, rel=0.15), f


def test_the_profiles_carry_the_fit(measured):
    for network, name in PROFILES.items():
        profile = get_compute_profile(name)
        for direction, (beta_key, alpha_key) in DIRECTIONS.items():
            fit = measured["fit"][f"{network}/{direction}"]
            assert getattr(profile, beta_key) == fit["beta_w"]
            assert getattr(profile, alpha_key) == fit["alpha_w_per_mbps"]
            assert fit["max_rel_error"] < 0.15
        assert "Narayanan et al., SIGCOMM 2021" in profile.sources["tx_power_w"]


def test_the_fit_rerun_on_the_artifact_reproduces_the_fixture(
    tmp_path, measured, sigcomm21_artifact
):
    """Where the artifact is at hand (the fetch tool's snapshot of
    github.com/SIGCOMM21-5G/artifact), the fit script writes the committed figures and
    coefficients again."""
    from validation.sigcomm21 import fit_modem_power

    out = tmp_path / "fit.json"
    assert fit_modem_power.main(["--artifact", str(sigcomm21_artifact), "--out", str(out)]) == 0
    again = json.loads(out.read_text())
    assert again["fit"] == measured["fit"]
    assert again["figures"] == measured["figures"]
    assert again["baseline_mw"] == measured["baseline_mw"]
