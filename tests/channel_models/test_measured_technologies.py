"""The 5G radios a phone's modem power was measured on (issue 54): ``nr_lowband``
(850 MHz, band n5) and ``nr_fr2_umi`` (28 GHz, band n261, beamformed). Their one-layer
peak rates are held against the highest throughputs Narayanan et al. measured on the
same phone and networks (``tests/reference/sigcomm21_modem_power.json``), and a
serving link's beamforming gain enters the link budget of BS–UE links only."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest

from channel_models.profile_catalog import get_channel_profile
from channel_models.units import dbm_to_w
from netfl.loading.scenarios import parse_scenario
from netfl.sim.world import World
from tests.conftest import tiny_scenario

FIXTURE = Path(__file__).resolve().parents[1] / "reference" / "sigcomm21_modem_power.json"
#: each profile and the network it was measured on; the measured maximum over the
#: peak must lie within these factors (the phones used more layers and carriers on the
#: downlink, fewer carriers and less power on the uplink: stated in the profiles' sources)
MEASURED = {
    "nr_lowband": ("5g_lowband", {"downlink": (1.0, 2.0), "uplink": (0.3, 1.0)}),
    "nr_fr2_umi": ("5g_mmwave", {"downlink": (1.0, 2.5), "uplink": (0.3, 1.0)}),
    "lte_20mhz": ("lte", {"downlink": (0.5, 1.5), "uplink": (0.2, 1.0)}),
}


def peak_rate_bps(name: str, direction: str) -> float:
    """One UE holding every data RB at an SNR past the top MCS."""
    p = get_channel_profile(name)
    se = float(p.efficiency_bps_per_hz(np.array([1e6]), direction)[0])
    return se * p.data_rbs(direction) * p.rb_bandwidth_hz * p.time_fraction(direction)


@pytest.mark.parametrize("name", sorted(MEASURED))
@pytest.mark.parametrize("direction", ["downlink", "uplink"])
def test_the_peak_rate_brackets_what_the_phone_measured(name, direction):
    network, bounds = MEASURED[name]
    figures = json.loads(FIXTURE.read_text())["figures"]
    measured = max(
        f["throughput_mbps"]
        for f in figures
        if f["network"] == network and f["direction"] == direction
    )
    ratio = measured * 1e6 / peak_rate_bps(name, direction)
    lo, hi = bounds[direction]
    assert lo <= ratio <= hi, (name, direction, ratio)


def test_the_profiles_are_the_measured_bands():
    low, mm = get_channel_profile("nr_lowband"), get_channel_profile("nr_fr2_umi")
    assert 0.869e9 <= low.carrier_hz <= 0.894e9  # (n5 downlink; uplink 824–849 MHz)
    assert low.duplex == "fdd" and low.num_rbs == 106 and low.numerology == 0
    assert 27.5e9 <= mm.carrier_hz <= 28.35e9 and mm.duplex == "tdd"
    assert mm.numerology == 3 and mm.num_rbs == 4 * 66  # four 100 MHz carriers at 120 kHz
    assert (low.modem_profile, mm.modem_profile) == ("s20u_5g_lowband", "s20u_5g_mmwave")
    assert get_channel_profile("lte_5mhz").modem_profile == "s20u_lte"
    assert get_channel_profile("nr_fr1_uma").modem_profile is None  # (no mid-band phone)


def test_the_beamforming_gain_is_in_every_bs_link_and_no_d2d_link():
    """``antenna_gain_db`` G lowers a BS–UE link's loss by G in the link budget — on
    the downlink, and on the uplink's open-loop power control too (its path-loss
    estimate is the coupling loss) — and leaves D2D links alone."""
    world = World(
        parse_scenario(
            tiny_scenario(
                cell={"radius_m": 100, "link": {"mode": "ofdma", "channel_profile": "nr_fr2_umi"}}
            )
        )
    )
    try:
        radio, p = world.radio, world.radio.profile
        g, loss = p.antenna_gain_db, 120.0
        assert g == 32.0
        beta = 10.0 ** (-(loss - g) / 10.0)
        down, _ = radio.snr_terms(loss, from_bs=True, to_bs=False)
        assert down == pytest.approx(p.bs_tx_power_w * beta / p.noise_w("ue"), rel=1e-12)
        up, total = radio.snr_terms(loss, from_bs=False, to_bs=True)
        pc = p.uplink_power_control
        psd_dbm = pc["p0_dbm"] + 10 * math.log10(2**p.numerology) + pc["alpha"] * (loss - g)
        noise_rb = p.noise_w("bs", p.rb_bandwidth_hz)
        assert up == pytest.approx(dbm_to_w(psd_dbm) * beta / noise_rb, rel=1e-12)
        assert total == pytest.approx(p.ue_tx_power_w * beta / noise_rb, rel=1e-12)
        d2d, _ = radio.snr_terms(loss, from_bs=False, to_bs=False)
        no_gain = dbm_to_w(pc["p0_dbm"] + 10 * math.log10(8) + pc["alpha"] * loss)
        assert d2d == pytest.approx(
            no_gain * 10 ** (-loss / 10) / p.noise_w("ue", p.rb_bandwidth_hz)
        )
        # the world's own links: a device's downlink SNR is its coupling loss less G
        ue = world.devices[0]
        loss_db, psd, _ = radio.link_now(world.bs, ue)
        expected = p.bs_tx_power_w * 10 ** (-(loss_db - g) / 10) / p.noise_w("ue")
        assert psd == pytest.approx(expected, rel=1e-12)
    finally:
        world.close()


def test_a_network_refuses_a_serving_link_gain():
    from netfl.errors import ScenarioError

    data = tiny_scenario(
        cell={"link": {"mode": "ofdma", "channel_profile": "nr_fr2_umi"}},
        network={"sites": 1},
    )
    with pytest.raises(ScenarioError, match=r"cell\.link\.channel_profile: .*antenna_gain_db 32"):
        parse_scenario(data)


def test_a_mmwave_run_writes_a_directory_that_reads_back(tmp_path):
    """A run on the 120 kHz carrier (μ = 3) records its resolved scenario, which must
    validate again when the run directory is read (the scenario's numerology bound)."""
    from netfl.output.rundir import read_run, write_run
    from netfl.sim.runner import run

    cell = {"radius_m": 100, "link": {"mode": "ofdma", "channel_profile": "nr_fr2_umi"}}
    result = run(parse_scenario(tiny_scenario(cell=cell, devices={"count": 2})))
    back = read_run(write_run(result, tmp_path / "mm", figures=False))
    assert back.scenario.cell.link.channel_profile == "nr_fr2_umi"
    assert len(back.rounds) == 2 and (back.transfers["delivered_bits"] > 0).all()


def test_a_network_built_without_the_loader_refuses_the_gain_too():
    """A Scenario validated directly (not through ``parse_scenario``'s cross-checks)
    still cannot run a network on a serving-link gain: the run's resolution refuses it."""
    from netfl.scenario.schema import Scenario
    from netfl.sim.specs import resolve_run

    data = tiny_scenario(
        cell={"link": {"mode": "ofdma", "channel_profile": "nr_fr2_umi"}},
        network={"sites": 1},
    )
    with pytest.raises(ValueError, match=r"antenna_gain_db 32"):
        resolve_run(Scenario.model_validate(data))
