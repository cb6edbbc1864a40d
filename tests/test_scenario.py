"""Scenario validation: every problem names the file and the key path."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest

from netfl.errors import ScenarioError
from netfl.loading.scenarios import load_scenario, parse_scenario, resolved, scenario_schema
from netfl.scenario.files import apply_overrides
from tests.conftest import tiny_scenario


def problems(data, source="s.yaml"):
    with pytest.raises(ScenarioError) as info:
        parse_scenario(data, source)
    return info.value.lines()


def test_defaults_fill_in():
    s = parse_scenario({"name": "x"})
    assert s.devices.count == 10 and s.algorithm.name == "fedavg"
    assert resolved(s)["algorithm"] == {
        "name": "fedavg",
        "fraction": 1.0,
        "min_clients": 1,
        "downlink": "unicast",
        "deadline_s": None,
        "uplink_codec": {"name": "none", "options": None},
        "downlink_codec": {"name": "none", "options": None},
        "aggregation": "digital",
        "over_the_air": {"gain_threshold": 0.1, "noise": True},
    }


def test_unknown_key_names_path_and_valid_keys():
    (line,) = problems({"name": "x", "cell": {"radius": 100}})
    assert line.startswith("s.yaml: cell.radius: unknown key")
    assert "radius_m" in line and "link" in line


def test_bad_value_names_path_and_input():
    (line,) = problems({"name": "x", "devices": {"count": -3}})
    assert line.startswith("s.yaml: devices.count: ") and "greater than 0" in line and "-3" in line


def test_unknown_profile_lists_valid_names():
    (line,) = problems({"name": "x", "devices": {"compute_profile": "rpi"}})
    assert line.startswith("s.yaml: devices.compute_profile: unknown compute profile 'rpi'")
    assert "raspberry_pi_4" in line
    (line,) = problems({"name": "x", "devices": {"groups": [{"count": 1, "link_profile": "6g"}]}})
    assert line.startswith("s.yaml: devices.groups.0.link_profile: unknown link profile '6g'")


def test_choices_listed_for_literals():
    (line,) = problems({"name": "x", "learning": {"mode": "fast"}})
    assert "learning.mode" in line and "'learn'" in line and "'timing'" in line


def test_unknown_algorithm_and_algorithm_options():
    (line,) = problems({"name": "x", "algorithm": {"name": "fedprox"}})
    assert (
        line
        == "s.yaml: algorithm.name: unknown algorithm 'fedprox' (valid: dfl, ecofed, fd, fedasync, fedavg, fedbuff, feddif, fedmd, fedswap, fedzkt, flower, hierfavg, local_loss_dpfl, transfer_test, vanilla_dpfl; your own: `plugins: [my_algorithm.py]`, or an installed package's netfl.algorithms entry point)"
    )
    (line,) = problems({"name": "x", "algorithm": {"name": "fedavg", "fracton": 0.5}})
    assert line.startswith("s.yaml: algorithm.fracton: unknown key") and "fraction" in line
    (line,) = problems({"name": "x", "algorithm": {"fraction": 1.5}})
    assert line.startswith("s.yaml: algorithm.fraction: ")


def test_partition_parameters_must_match_scheme():
    (line,) = problems({"name": "x", "data": {"partition": {"scheme": "iid", "alpha": 0.1}}})
    assert "data.partition" in line and "alpha does not apply to scheme 'iid'" in line


def test_several_problems_each_one_line():
    lines = problems({"name": "x", "seed": -1, "devices": {"count": 0}})
    assert len(lines) == 2 and all("\n" not in ln for ln in lines)


def test_groups_cannot_exceed_count():
    (line,) = problems({"name": "x", "devices": {"count": 2, "groups": [{"count": 3}]}})
    assert "devices: " in line and "groups hold 3 devices but count is 2" in line


def test_yaml_syntax_error_gives_line_and_column(tmp_path):
    f = tmp_path / "bad.yaml"
    f.write_text("name: x\ncell:\n  radius_m: [1, 2\n")
    with pytest.raises(ScenarioError) as info:
        load_scenario(f)
    (line,) = info.value.lines()
    assert line.startswith(f"{f}: YAML syntax error: line ") and "column" in line


def test_missing_file(tmp_path):
    with pytest.raises(ScenarioError, match="file not found"):
        load_scenario(tmp_path / "nope.yaml")


def test_overrides_parse_yaml_values_and_create_sections(tmp_path):
    data = apply_overrides(
        tiny_scenario(),
        [
            "training.rounds=5",
            "learning.mode=learn",
            "cell.link.shared=true",
            "devices.groups=[{count: 1, compute_profile: jetson_nano}]",
            "devices.groups.0.count=2",
        ],
    )
    s = parse_scenario(data)
    assert s.training.rounds == 5 and s.learning.mode == "learn" and s.cell.link.shared is True
    assert s.devices.groups[0].count == 2
    with pytest.raises(ScenarioError, match="key.path=value"):
        apply_overrides({}, ["training.rounds"])


def test_override_errors_point_at_the_overridden_key(tmp_path):
    f = tmp_path / "s.yaml"
    f.write_text("name: x\n")
    with pytest.raises(ScenarioError) as info:
        load_scenario(f, ["training.rouns=3"])
    assert info.value.lines()[0].startswith(f"{f}: training.rouns: unknown key")


def test_schema_lists_algorithm_options():
    schema = scenario_schema()
    variants = schema["$defs"]["AlgorithmSection"]["oneOf"]
    fedavg = next(v for v in variants if v["properties"]["name"]["const"] == "fedavg")
    assert "fraction" in fedavg["properties"]
    assert schema["properties"]["devices"]


@pytest.mark.parametrize(
    "link, fragment",
    [
        ({"bandwidth_hz": 100e6, "numerology": 0}, "no 100 MHz carrier at 15 kHz"),
        ({"num_rbs": 500}, "500 RBs of 180 kHz occupy 90 MHz, more than the 20 MHz carrier"),
        ({"duplex": "tdd", "tdd_pattern": "DDXU"}, "D, S and U"),
        (  # (a direction with no symbol: its transfers would never end)
            {"duplex": "tdd", "tdd_pattern": "DDDS", "special_slot_symbols": [12, 2, 0]},
            "leaves the uplink no symbol",
        ),
        ({"channel_profile": "lte_20mhz", "cqi_table": "256qam"}, "is LTE (TS 36.213 tables)"),
        ({"pathloss": {"model": "log_distance", "beta": 3}}, "unknown parameter beta"),
        ({"pathloss": {"model": "hata"}}, "unknown path loss model 'hata'"),
    ],
)
def test_inconsistent_carrier_is_a_one_line_error(link, fragment):
    data = tiny_scenario(cell={"link": {"mode": "ofdma", "channel_profile": "feddif", **link}})
    with pytest.raises(ScenarioError) as err:
        parse_scenario(data, "cell.yaml")
    lines = err.value.lines()
    assert len(lines) == 1 and lines[0].startswith("cell.yaml: cell.link")
    assert fragment in lines[0]


def test_consistent_carrier_overrides_resolve():
    s = parse_scenario(
        tiny_scenario(
            cell={
                "link": {
                    "mode": "ofdma",
                    "channel_profile": "nr_fr1_uma",
                    "bandwidth_hz": 40e6,
                    "cqi_table": "256qam",
                    "uplink_power_control": {"model": "full_carrier"},
                }
            }
        )
    )
    p = s.cell.link.channel_profile_resolved()
    assert p.num_rbs == 106 and p.efficiency["mcs_table"] == 2
    assert p.uplink_power_control["model"] == "full_carrier" and p.duplex == "tdd"


def test_algorithm_needs_of_the_cell_are_one_line_errors():
    (line,) = problems({"name": "x", "algorithm": {"name": "feddif"}})
    assert line.startswith("s.yaml: cell.link.mode: feddif schedules D2D links")
    (line,) = problems({"name": "x", "algorithm": {"name": "feddif", "epsilon": -1}})
    assert line.startswith("s.yaml: algorithm.epsilon: ")


def test_cqi_table_turns_a_shannon_profile_into_the_cqi_model():
    data = tiny_scenario(
        cell={
            "link": {
                "mode": "ofdma",
                "channel_profile": "feddif",
                "cqi_table": "256qam",
                "snr_gap_db": 2.0,
            }
        }
    )
    profile = parse_scenario(data).cell.link.channel_profile_resolved()
    assert profile.efficiency == {
        "model": "cqi",
        "table": "256qam",
        "gap_db": 2.0,
        "max_bps_per_hz": None,
    }


def test_a_pathloss_override_replaces_the_profiles_law():
    law = {"model": "log_distance", "beta0_db": -30.0, "kappa": 3.75, "height_tx_m": 23.5}
    data = tiny_scenario(
        cell={"link": {"mode": "ofdma", "channel_profile": "lte_20mhz", "pathloss": law}}
    )
    profile = parse_scenario(data).cell.link.channel_profile_resolved()
    assert profile.pathloss == law
    assert profile.build_pathloss().mean_loss_db(100.0) == pytest.approx(
        30 + 37.5 * np.log10(np.hypot(100, 23.5))
    )


def test_the_shadowing_switch():
    def law(profile, shadowing, **link):
        data = tiny_scenario(
            cell={
                "link": {
                    "mode": "ofdma",
                    "channel_profile": profile,
                    "shadowing": shadowing,
                    **link,
                }
            }
        )
        return parse_scenario(data).cell.link.channel_profile_resolved().build_pathloss()

    d, u = np.array([120.0, 120.0]), np.array([0.3, 0.3])
    z = np.array([-2.0, 2.0])  # two shadowing variates: equal losses without shadowing
    off = law("nr_fr1_uma", False).loss_db_given(d, u, z)
    on = law("nr_fr1_uma", True).loss_db_given(d, u, z)
    assert off[0] == off[1] and on[0] != on[1]
    with_std = {"model": "log_distance", "shadowing_std_db": 8.0}
    assert law("feddif", True, pathloss=with_std).random
    assert not law("feddif", False, pathloss=with_std).random
    with pytest.raises(ScenarioError, match="no shadowing_std_db"):
        law("feddif", True)


def test_a_group_may_be_a_fraction_of_the_devices():
    """``fraction: 0.3`` of 20 devices is a group of 6 (the nearest device, at least one);
    the resolved scenario records the count beside it and parses back to itself; a group
    with neither, or a count that is not the fraction, is one line naming the group."""
    from netfl.loading.scenarios import resolved

    def devices(count, groups):
        return parse_scenario(tiny_scenario(devices={"count": count, "groups": groups}))

    s = devices(20, [{"fraction": 0.3, "compute_profile": "smartphone"}])
    assert s.devices.groups[0].count == 6
    world_profiles = [g.compute_profile for g in s.devices.groups]
    assert world_profiles == ["smartphone"]
    assert devices(3, [{"fraction": 0.01}]).devices.groups[0].count == 1
    again = parse_scenario(resolved(s))
    assert resolved(again) == resolved(s)
    for groups, message in (
        ([{"compute_profile": "smartphone"}], "groups.0: give count or fraction"),
        ([{"fraction": 0.3, "count": 5}], "groups.0: count 5 is not fraction 0.3"),
    ):
        with pytest.raises(ScenarioError, match=message):
            devices(20, groups)


_OFDMA = {"link": {"mode": "ofdma"}}
_FEDDIF_CELL = {"link": {"mode": "ofdma", "channel_profile": "feddif"}}
_NR_LINK = {"mode": "ofdma", "channel_profile": "nr_fr1_uma"}


@pytest.mark.parametrize(
    "sections, refused, accepted",
    [
        (  # mobility: keys of another model
            {
                "cell": _OFDMA,
                "devices": {"count": 2, "mobility": {"model": "random_waypoint", "speed_kmh": 9}},
            },
            "devices.mobility: speed_kmh does not apply to model 'random_waypoint'",
            {
                "cell": _OFDMA,
                "devices": {"count": 2, "mobility": {"model": "constant_velocity", "speed_kmh": 9}},
            },
        ),
        (  # a dedicated fixed-rate link runs at each device's link profile
            {"cell": {"link": {"mode": "fixed_rate", "uplink_capacity_mbps": 5}}},
            "cell.link: uplink_capacity_mbps applies only with shared: true",
            {"cell": {"link": {"mode": "fixed_rate", "shared": True, "uplink_capacity_mbps": 5}}},
        ),
        (
            {
                "cell": {
                    "link": {"mode": "ofdma", "channel_profile": "lte_20mhz", "tdd_pattern": "DSU"}
                }
            },
            "cell.link: tdd_pattern applies only with duplex: tdd",
            {
                "cell": {
                    "link": {
                        "mode": "ofdma",
                        "channel_profile": "lte_20mhz",
                        "duplex": "tdd",
                        "tdd_pattern": "DSU",
                    }
                }
            },
        ),
        (
            {"cell": {"link": {"mode": "ofdma", "pf_window_blocks": 50}}},
            "cell.link: pf_window_blocks applies only with scheduler: proportional_fair",
            {
                "cell": {
                    "link": {
                        "mode": "ofdma",
                        "scheduler": "proportional_fair",
                        "pf_window_blocks": 50,
                    }
                }
            },
        ),
        (
            {
                "cell": {
                    "link": {
                        "mode": "ofdma",
                        "scheduler": "fcfs",
                        "downlink_allocation": "rbg_round_robin",
                    }
                }
            },
            "cell.link: downlink_allocation applies only with scheduler: round_robin",
            {"cell": {"link": {"mode": "ofdma", "downlink_allocation": "rbg_round_robin"}}},
        ),
        (
            {"cell": _OFDMA, "devices": {"count": 2, "link_profile": "5g"}},
            "devices.link_profile: a link profile sets a fixed-rate link",
            {"devices": {"count": 2, "link_profile": "5g"}},
        ),
        (
            {"cell": _OFDMA, "network": {"sites": 7, "antenna": "omni", "antenna_rows": 4}},
            "network: antenna_rows does not apply to antenna: omni",
            {"cell": _OFDMA, "network": {"sites": 7, "antenna_rows": 4}},
        ),
        (
            {
                "cell": _OFDMA,
                "network": {"sites": 7, "interference": {"model": "none", "load": 0.3}},
            },
            "network.interference: load does not apply to model 'none'",
            {
                "cell": _OFDMA,
                "network": {"sites": 7, "interference": {"model": "load_factor", "load": 0.3}},
            },
        ),
        (
            {"cell": _OFDMA, "network": {"site_positions_m": [[0, 0], [500, 0]], "isd_m": 300}},
            "network: isd_m does not apply to site_positions_m",
            {"cell": _OFDMA, "network": {"sites": 7, "isd_m": 300}},
        ),
        (
            {"learning": {"executor": "serial", "workers": 2}},
            "learning: workers does not apply to executor 'serial'",
            {"learning": {"executor": "process", "workers": 2}},
        ),
        (
            {"algorithm": {"name": "fd", "threshold": 0.3}},
            "algorithm: threshold does not apply to fd",
            {"algorithm": {"name": "dfl", "threshold": 0.3}},
        ),
        (
            {"algorithm": {"name": "dfl", "ratio": "fixed", "threshold": 0.3}},
            "algorithm: threshold does not apply to ratio 'fixed'",
            {"algorithm": {"name": "dfl", "ratio": "fixed", "fixed_ratio": 0.3}},
        ),
        (
            {"algorithm": {"name": "fedasync", "staleness": "constant", "a": 2}},
            "algorithm: a does not apply to staleness 'constant'",
            {"algorithm": {"name": "fedasync", "staleness": "hinge", "a": 2, "b": 1}},
        ),
        (
            {"cell": _FEDDIF_CELL, "algorithm": {"name": "fedswap", "epsilon": 0.1}},
            "algorithm.epsilon: fedswap diffuses fully",
            {"cell": _FEDDIF_CELL, "algorithm": {"name": "feddif", "epsilon": 0.1}},
        ),
        (
            {"cell": _FEDDIF_CELL, "algorithm": {"name": "feddif", "efficiency_epsilon": 0.1}},
            "algorithm: efficiency_epsilon does not apply to stop 'per_model'",
            {
                "cell": _FEDDIF_CELL,
                "algorithm": {
                    "name": "feddif",
                    "stop": "mean_efficiency",
                    "efficiency_epsilon": 0.1,
                },
            },
        ),
        (
            {"model": {"name": "vgg11"}, "algorithm": {"name": "ecofed", "value_bits": 16}},
            "algorithm: value_bits does not apply with quantize: true",
            {
                "model": {"name": "vgg11"},
                "algorithm": {"name": "ecofed", "value_bits": 16, "quantize": False},
            },
        ),
        (
            {"server": {"compute_overrides": {"idle_power_w": 5}}},
            "server: compute_overrides.idle_power_w does not apply to the server",
            {"server": {"compute_overrides": {"busy_power_w": 5}}},
        ),
        (
            {"data": {"dataset": "digits", "synthetic": {"num_samples": 100}}},
            "data: synthetic.num_samples does not apply to dataset 'digits'",
            {"data": {"dataset": "synthetic", "synthetic": {"num_samples": 100}}},
        ),
        (
            {"data": {"dataset": "mnist5k", "root": "/tmp"}},
            "data: root does not apply to dataset 'mnist5k'",
            {"data": {"dataset": "mnist5k", "test_fraction": 0.3}},
        ),
        (
            {"data": {"dataset": "mnist", "root": "/tmp", "test_fraction": 0.3}},
            "data: test_fraction does not apply to dataset 'mnist'",
            {"data": {"dataset": "mnist", "root": "/tmp"}},
        ),
        (
            {"cell": _OFDMA, "network": {"sites": 7, "high_loss_fraction": 0.2}},
            "network: high_loss_fraction does not apply without indoor devices",
            {
                "cell": _OFDMA,
                "network": {"sites": 7, "indoor_fraction": 0.5, "high_loss_fraction": 0.2},
            },
        ),
        (
            {
                "cell": _FEDDIF_CELL,
                "devices": {"count": 4, "mobility": {"model": "constant_velocity"}},
                "algorithm": {"name": "feddif", "redrop_each_diffusion_round": True},
            },
            "algorithm.redrop_each_diffusion_round: moving devices follow their paths",
            {
                "cell": _FEDDIF_CELL,
                "algorithm": {"name": "feddif", "redrop_each_diffusion_round": True},
            },
        ),
        (
            {"cell": {"link": {"mode": "ofdma", "rbg_configuration": 2}}},
            "cell.link: rbg_configuration applies only with an NR profile's rbg_round_robin",
            {
                "cell": {
                    "link": {
                        "mode": "ofdma",
                        "rbg_configuration": 2,
                        "downlink_allocation": "rbg_round_robin",
                    }
                }
            },
        ),
        (
            {"cell": {"link": {"mode": "ofdma", "fading": "none", "aggregate_above_flows": 64}}},
            "cell.link: aggregate_above_flows applies only with Rayleigh fading",
            {"cell": {"link": {"mode": "ofdma", "aggregate_above_flows": 64}}},
        ),
        (
            {"model": {"name": "logreg", "size_bits": 1e6}, "algorithm": {"name": "fd"}},
            "model.size_bits: fd sends soft targets only",
            {"model": {"name": "logreg", "size_bits": 1e6}, "algorithm": {"name": "dfl"}},
        ),
        (
            {"model": {"name": "vgg11", "size_bits": 1e6}, "algorithm": {"name": "vanilla_dpfl"}},
            "model.size_bits: vanilla_dpfl sizes each part by its parameters",
            {
                "model": {"name": "vgg11", "bits_per_param": 16},
                "algorithm": {"name": "vanilla_dpfl"},
            },
        ),
        (
            {
                "model": {"name": "vgg11"},
                "algorithm": {"name": "ecofed", "pretrain": {"weights_file": "w.pt", "epochs": 5}},
            },
            "algorithm.pretrain: epochs does not apply with weights_file (loaded)",
            {
                "model": {"name": "vgg11"},
                "algorithm": {"name": "ecofed", "pretrain": {"epochs": 5}},
            },
        ),
        (
            {
                "model": {"name": "vgg11"},
                "algorithm": {"name": "ecofed", "pretrain": {"epochs": 0, "lr": 0.1}},
            },
            "algorithm.pretrain: lr does not apply with epochs: 0 (no pre-training)",
            {"model": {"name": "vgg11"}, "algorithm": {"name": "ecofed", "pretrain": {"lr": 0.1}}},
        ),
        (
            {
                "model": {"name": "vgg11"},
                "algorithm": {"name": "ecofed", "pretrain": {"dataset": "digits", "root": "d"}},
            },
            "algorithm.pretrain: root does not apply to dataset 'digits' (shipped with a package)",
            {
                "model": {"name": "vgg11"},
                "algorithm": {"name": "ecofed", "pretrain": {"dataset": "cifar10", "root": "d"}},
            },
        ),
        (
            {"algorithm": {"name": "fedmd", "public_root": "d"}},
            "algorithm: public_root does not apply to public_dataset 'digits' (shipped with",
            {"algorithm": {"name": "fedmd", "public_dataset": "mnist", "public_root": "d"}},
        ),
        (
            {"cell": {"link": {**_NR_LINK, "cqi_sinr": "allocation"}}},
            "cell.link: cqi_sinr applies only with full-carrier uplink power",
            {
                "cell": {
                    "link": {
                        **_NR_LINK,
                        "cqi_sinr": "allocation",
                        "uplink_power_control": {"model": "full_carrier"},
                    }
                }
            },
        ),
        (
            {"cell": {"radius_m": 300, "link": _NR_LINK}, "network": {"sites": 7}},
            "cell.radius_m does not apply to a hexagonal network",
            {
                "cell": {"radius_m": 300, "link": _NR_LINK},
                "network": {"site_positions_m": [[0.0, 0.0], [500.0, 0.0]], "sectors": 1},
            },
        ),
        (
            {"cell": {"link": {**_NR_LINK, "max_bps_per_hz": 0.5}}},
            "cell.link: max_bps_per_hz applies only with a Shannon or CQI-table efficiency",
            {"cell": {"link": {**_NR_LINK, "max_bps_per_hz": 0.5, "link_abstraction": "gap"}}},
        ),
        (
            {"cell": {"link": {**_NR_LINK, "snr_gap_db": 10.0}}},
            "cell.link: snr_gap_db applies only with a gap-based efficiency",
            {"cell": {"link": {**_NR_LINK, "snr_gap_db": 10.0, "link_abstraction": "gap"}}},
        ),
        (
            {"training": {"target_accuracy": 0.9}},
            "training.target_accuracy does not apply in learning.mode: timing",
            {"training": {"target_accuracy": 0.9}, "learning": {"mode": "learn"}},
        ),
        (
            {"algorithm": {"name": "transfer_test", "starved": "hold_share"}},
            "algorithm.starved: hold_share (an out-of-coverage UE's round-robin RBs held) "
            "applies to one OFDMA cell, not a fixed-rate link",
            {"cell": _OFDMA, "algorithm": {"name": "transfer_test", "starved": "hold_share"}},
        ),
    ],
)
def test_a_key_another_choice_makes_inapplicable_is_refused(sections, refused, accepted):
    """A key that the section's (or the algorithm's) other choices would ignore is a
    one-line error naming it; under the choice that reads it, it is accepted; the
    resolved scenario (every default written) parses back."""
    from netfl.loading.scenarios import resolved

    with pytest.raises(ScenarioError, match=re.escape(refused)):
        parse_scenario(tiny_scenario(**sections))
    ok = parse_scenario(tiny_scenario(**accepted))
    assert resolved(parse_scenario(resolved(ok))) == resolved(ok)


def test_data_roots_and_weight_files_are_read_beside_the_scenario(tmp_path, monkeypatch):
    """``data.root``, FedMD's ``public_root`` and EcoFed's ``pretrain`` files are
    relative to the scenario file's folder, as every other file key, whatever the
    working directory; the resolved scenario names them absolutely."""
    import yaml

    from netfl.loading.scenarios import algorithm_config, load_scenario, resolved

    folder = tmp_path / "study"
    folder.mkdir()
    monkeypatch.chdir(tmp_path)
    cases = {
        "data": tiny_scenario(data={"dataset": "mnist", "root": "images"}),
        "fedmd": tiny_scenario(
            algorithm={"name": "fedmd", "public_dataset": "mnist", "public_root": "public"}
        ),
        "ecofed": tiny_scenario(
            model={"name": "vgg11"},
            algorithm={"name": "ecofed", "pretrain": {"weights_file": "~/w.pt"}},
        ),
    }
    for name, data in cases.items():
        path = folder / f"{name}.yaml"
        path.write_text(yaml.safe_dump(data))
        scenario = load_scenario(path)
        again = parse_scenario(resolved(scenario))  # (from another folder: the same files)
        if name == "data":
            assert scenario.data.root == again.data.root == str(folder / "images")
        elif name == "fedmd":
            assert algorithm_config(scenario).public_root == str(folder / "public")
            assert algorithm_config(again).public_root == str(folder / "public")
        else:
            weights = str(Path("~/w.pt").expanduser().resolve())
            assert algorithm_config(scenario).pretrain.weights_file == weights
