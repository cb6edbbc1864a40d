"""Choosing a device's modem (issue 54): ``devices.modem_profile`` (or a group's) puts
a measured phone's modem — or any compute profile's — on a device's platform; ``link``
takes the one the device's link or the cell's channel profile names. The modem's
values replace the compute profile's radio values only, overrides still win, the
devices table records the choice, and the energy charged is the modem's."""

from __future__ import annotations

import re
from dataclasses import fields

import numpy as np
import pytest

from netfl.compute import get_compute_profile
from netfl.core.nodes import MODEM_FIELDS, ComputeProfile
from netfl.errors import ScenarioError
from netfl.loading.scenarios import parse_scenario
from netfl.sim.runner import run
from netfl.sim.specs import resolve_run
from tests.conftest import tiny_scenario


def test_with_modem_takes_the_radio_values_and_keeps_the_platform():
    pi, phone = get_compute_profile("raspberry_pi_4"), get_compute_profile("s20u_5g_mmwave")
    both = pi.with_modem(phone)
    for f in fields(ComputeProfile):
        if f.name in MODEM_FIELDS:
            assert getattr(both, f.name) == getattr(phone, f.name), f.name
        elif f.name not in ("sources", "modem_profile"):
            assert getattr(both, f.name) == getattr(pi, f.name), f.name
    assert both.modem_profile == "s20u_5g_mmwave" and both.name == "raspberry_pi_4"
    assert "s20u_5g_mmwave" in both.sources["tx_power_per_mbps_w"]
    assert pi.with_modem(pi) is pi
    # every radio value a profile has is a modem field (nothing radio stays behind)
    radio = {
        f.name
        for f in fields(ComputeProfile)
        if f.name.startswith(("tx_", "rx_", "rrc_", "radio_"))
    }
    assert radio == set(MODEM_FIELDS)


def _computes(data: dict) -> list[ComputeProfile]:
    return [c for c, _ in resolve_run(parse_scenario(data)).devices]


@pytest.mark.parametrize(
    ("cell", "groups", "expected"),
    [
        ({}, [], ["s20u_lte"] * 4),  # fixed rate, 4g_lte
        ({}, [{"count": 2, "link_profile": "5g"}], ["s20u_5g_lowband"] * 2 + ["s20u_lte"] * 2),
        ({"link": {"mode": "ofdma", "channel_profile": "lte_10mhz"}}, [], ["s20u_lte"] * 4),
        ({"link": {"mode": "ofdma", "channel_profile": "nr_lowband"}}, [], ["s20u_5g_lowband"] * 4),
        ({"link": {"mode": "ofdma", "channel_profile": "nr_fr2_umi"}}, [], ["s20u_5g_mmwave"] * 4),
    ],
)
def test_link_takes_the_modem_the_radio_names(cell, groups, expected):
    devices = {"compute_profile": "smartphone", "modem_profile": "link", "groups": groups}
    computes = _computes(tiny_scenario(cell=cell, devices=devices))
    assert [c.modem_profile for c in computes] == expected
    for c, name in zip(computes, expected, strict=True):
        assert c.tx_power_per_mbps_w == get_compute_profile(name).tx_power_per_mbps_w
        assert c.effective_flops_per_s == get_compute_profile("smartphone").effective_flops_per_s


def test_unset_is_the_compute_profiles_own_and_groups_and_overrides_win():
    assert [c.modem_profile for c in _computes(tiny_scenario())] == [""] * 4
    devices = {
        "modem_profile": "link",
        "groups": [{"count": 1, "modem_profile": "huang2012_lte"}],
        "compute_overrides": {"tx_power_w": 2.0},
    }
    computes = _computes(tiny_scenario(devices=devices))
    assert [c.modem_profile for c in computes] == ["huang2012_lte"] + ["s20u_lte"] * 3
    assert {c.tx_power_w for c in computes} == {2.0}
    assert (
        computes[0].tx_power_per_mbps_w == get_compute_profile("huang2012_lte").tx_power_per_mbps_w
    )


@pytest.mark.parametrize(
    ("devices", "cell", "key"),
    [
        ({"link_profile": "3g", "modem_profile": "link"}, {}, "devices.modem_profile"),
        (
            {"groups": [{"count": 1, "link_profile": "wifi", "modem_profile": "link"}]},
            {},
            "devices.groups.0.modem_profile",
        ),
        (
            {"modem_profile": "link"},
            {"link": {"mode": "ofdma", "channel_profile": "nr_fr1_uma"}},
            "devices.modem_profile",
        ),
    ],
)
def test_link_without_a_measured_modem_is_refused_at_its_key(devices, cell, key):
    with pytest.raises(
        ScenarioError, match=re.escape(key) + r": 'link': .* names no measured modem"
    ):
        parse_scenario(tiny_scenario(devices=devices, cell=cell))


def test_an_unknown_modem_is_refused_with_the_valid_names():
    with pytest.raises(
        ScenarioError, match=r"devices\.modem_profile: unknown modem profile 'pixel'.*s20u_lte"
    ):
        parse_scenario(tiny_scenario(devices={"modem_profile": "pixel"}))


def test_the_energy_charged_is_the_chosen_modems():
    """A dedicated 4G link (5 Mbit/s up, 20 down): each device's transmit energy is
    (β + α·5) W over its time on air, receive (β + α·20) W, with the fitted phone's
    β and α — and the devices table names the modem."""
    data = tiny_scenario(devices={"compute_profile": "smartphone", "modem_profile": "link"})
    devices = run(parse_scenario(data)).devices
    pues = devices[devices["kind"] == "pue"]
    assert set(pues["modem_profile"]) == {"s20u_lte"}
    assert set(devices.loc[devices["kind"] == "bs", "modem_profile"].fillna("")) == {""}
    m = get_compute_profile("s20u_lte")
    assert (pues["tx_s"] > 0).all() and (pues["rx_s"] > 0).all()
    np.testing.assert_allclose(
        pues["tx_energy_j"], pues["tx_s"] * (m.tx_power_w + m.tx_power_per_mbps_w * 5), rtol=1e-9
    )
    np.testing.assert_allclose(
        pues["rx_energy_j"], pues["rx_s"] * (m.rx_power_w + m.rx_power_per_mbps_w * 20), rtol=1e-9
    )
    assert np.allclose(pues["tail_energy_j"], pues["tail_s"] * m.rrc_tail_power_w)


def test_link_is_checked_against_each_devices_own_link():
    """A group on another link inherits ``link`` from ``devices``: its own link decides.
    A group on 3G under a top-level 4G link is refused (not silently left on its
    compute profile's modem); a top-level 3G link that no device uses is no error."""
    with pytest.raises(
        ScenarioError, match=r"devices\.modem_profile: 'link': link profile '3g_hspa_plus'"
    ):
        parse_scenario(
            tiny_scenario(
                devices={
                    "modem_profile": "link",
                    "groups": [{"count": 2, "link_profile": "3g_hspa_plus"}],
                }
            )
        )
    data = tiny_scenario(
        devices={
            "link_profile": "3g_hspa_plus",
            "modem_profile": "link",
            "groups": [{"count": 4, "link_profile": "5g"}],
        }
    )
    assert {c.modem_profile for c in _computes(data)} == {"s20u_5g_lowband"}


def test_a_user_channel_profile_naming_an_unknown_modem_is_refused(tmp_path):
    import yaml

    from channel_models.profile_catalog import get_channel_profile

    base = {k: v for k, v in vars(get_channel_profile("lte_5mhz")).items() if k not in ("name",)}
    base["modem_profile"] = "bogus_phone"
    base["special_slot_symbols"] = list(base["special_slot_symbols"])
    (tmp_path / "mine.yaml").write_text(yaml.safe_dump({"profiles": {"mine": base}}))
    cell = {
        "link": {
            "mode": "ofdma",
            "channel_profile": "mine",
            "channel_profile_file": str(tmp_path / "mine.yaml"),
        }
    }
    with pytest.raises(
        ScenarioError, match=r"devices\.modem_profile: .*'bogus_phone', which is no compute profile"
    ):
        parse_scenario(tiny_scenario(cell=cell, devices={"modem_profile": "link"}))


def test_an_unset_modem_leaves_the_resolved_scenario_as_before():
    """The resolved scenario (run directory, checkpoint fingerprint) names no
    ``modem_profile`` where none was set, so checkpoints of earlier versions resume."""
    from netfl.loading.scenarios import resolved

    data = resolved(parse_scenario(tiny_scenario(devices={"groups": [{"count": 1}]})))
    assert "modem_profile" not in data["devices"]
    assert "modem_profile" not in data["devices"]["groups"][0]
    data = resolved(parse_scenario(tiny_scenario(devices={"modem_profile": "link"})))
    assert data["devices"]["modem_profile"] == "link"


def test_describe_and_list_name_the_modems(tmp_path, capsys):
    import yaml

    from netfl.cli.app import main

    cell = {"link": {"mode": "ofdma", "channel_profile": "nr_fr2_umi"}}
    groups = [{"count": 1, "modem_profile": "huang2012_lte"}]
    data = tiny_scenario(cell=cell, devices={"modem_profile": "link", "groups": groups})
    (tmp_path / "s.yaml").write_text(yaml.safe_dump(data))
    assert main(["describe", str(tmp_path / "s.yaml")]) == 0
    out = capsys.readouterr().out
    assert "modems: 1 × huang2012_lte, 3 × s20u_5g_mmwave (devices.modem_profile: link)" in out
    assert "serving-link beamforming gain 32 dB" in out
    assert main(["list", "channel-profiles"]) == 0
    line = next(x for x in capsys.readouterr().out.splitlines() if "nr_lowband" in x)
    assert "modem s20u_5g_lowband" in line
