"""User-defined channel profiles from a YAML file: they run like the built-in ones, the
run records the file, and a bad file is a one-line error naming the profile and key."""

from __future__ import annotations

import pytest
import yaml

from channel_models.profile_catalog import channel_profiles
from netfl.errors import ScenarioError
from netfl.loading.scenarios import load_scenario, parse_scenario, resolved
from netfl.sim.runner import run
from tests.conftest import tiny_scenario

PROFILE = {
    "description": "a 10 MHz LTE cell of my own",
    "carrier_hz": 1.95e9,
    "bandwidth_hz": 10e6,
    "numerology": 0,
    "num_rbs": 50,
    "pathloss": {"model": "log_distance", "beta0_db": -30.0, "kappa": 3.5, "height_tx_m": 20.0},
    "d2d_pathloss": {"model": "log_distance", "beta0_db": -30.0, "kappa": 3.5},
    "fading": {"model": "none", "coherence_time_s": 1e-3},
    "noise_dbm_per_hz": -174.0,
    "noise_figure_ue_db": 9.0,
    "noise_figure_bs_db": 5.0,
    "ue_tx_power_dbm": 23.0,
    "bs_tx_power_dbm": 43.0,
    "efficiency": {"model": "lte_amc"},
    "power_spread": "rbs",
}


def _files(tmp_path, profile: dict, name: str = "my_lte"):
    (tmp_path / "cells.yaml").write_text(yaml.safe_dump({"profiles": {name: profile}}))
    data = tiny_scenario(
        cell={
            "radius_m": 200,
            "link": {
                "mode": "ofdma",
                "channel_profile": name,
                "channel_profile_file": "cells.yaml",
            },
        }
    )
    path = tmp_path / "s.yaml"
    path.write_text(yaml.safe_dump(data))
    return path


def test_a_profile_from_a_file_runs_and_the_run_records_the_file(tmp_path):
    scenario = load_scenario(_files(tmp_path, PROFILE))
    profile = scenario.cell.link.channel_profile_resolved()
    assert profile.name == "my_lte" and profile.num_rbs == 50
    assert profile.spread_bandwidth_hz == 50 * 180e3
    result = run(scenario)
    assert len(result.transfers) > 0
    data = resolved(scenario)
    assert data["cell"]["link"]["channel_profile_file"] == str((tmp_path / "cells.yaml").resolve())
    assert parse_scenario(data).cell.link.channel_profile_resolved() == profile
    assert "my_lte" not in channel_profiles()  # the built-in registry is untouched


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"num_rb": 50}, r"profiles\.my_lte: unknown key num_rb"),
        (
            {"pathloss": {"model": "log_distance", "kapa": 3}},
            r"profiles\.my_lte: unknown parameter kapa",
        ),
        ({"efficiency": {"model": "turbo"}}, r"profiles\.my_lte: efficiency\.model: 'turbo'"),
        ({"num_rbs": 500}, r"profiles\.my_lte: num_rbs: 500 RBs"),
    ],
)
def test_a_bad_profile_is_one_line_naming_the_profile_and_key(tmp_path, change, message):
    path = _files(tmp_path, {**PROFILE, **change})
    with pytest.raises(
        ScenarioError, match=r"cell\.link: channel_profile_file: .*" + message
    ) as err:
        load_scenario(path)
    assert len(err.value.lines()) == 1


def test_a_missing_file_and_an_unknown_name_are_one_line_errors(tmp_path):
    path = _files(tmp_path, PROFILE)
    (tmp_path / "cells.yaml").unlink()
    with pytest.raises(ScenarioError, match=r"channel_profile_file: .*cells\.yaml: file not found"):
        load_scenario(path)
    path = _files(tmp_path, PROFILE)
    with pytest.raises(ScenarioError, match=r"unknown channel profile 'nope'.*my_lte"):
        load_scenario(path, ["cell.link.channel_profile=nope"])
