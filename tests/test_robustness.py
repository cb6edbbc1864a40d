"""Robust under every key (issue 32): every numeric key has a physical bound, every
file is read bounded, work is counted before it starts; each class of input a probe
found accepted silently, hanging or ending in a traceback is one bounded line (exit 2)."""

from __future__ import annotations

import time
from pathlib import Path

import pytest
import yaml

from netfl.cli.app import main
from netfl.errors import UserError
from netfl.loading.scenarios import load_scenario, parse_scenario, scenario_schema
from tests.conftest import tiny_scenario

MAX_LINE = 700
OFDMA = {"radius_m": 200, "link": {"mode": "ofdma", "channel_profile": "nr_fr1_uma"}}
LTE = {"radius_m": 200, "link": {"mode": "ofdma", "channel_profile": "lte_20mhz"}}


def _unbounded(schema: dict) -> list[str]:
    """Numeric properties of a JSON schema without a lower and an upper bound."""
    out: list[str] = []

    def check(node: dict, name: str) -> None:
        if "enum" in node or "const" in node:
            return
        kind = node.get("type")
        if kind in ("number", "integer"):
            lo = "minimum" in node or "exclusiveMinimum" in node
            hi = "maximum" in node or "exclusiveMaximum" in node
            if not (lo and hi):
                out.append(name)
        elif kind == "array":
            for i, item in enumerate(node.get("prefixItems", [])):
                check(item, f"{name}[{i}]")
            if "items" in node:
                check(node["items"], f"{name}[]")
        for alt in node.get("anyOf", []) + node.get("oneOf", []):
            check(alt, name)

    def walk(node: dict, name: str) -> None:
        for key, value in node.get("properties", {}).items():
            check(value, f"{name}.{key}")
        for alt in node.get("anyOf", []) + node.get("oneOf", []):
            walk(alt, name)

    for name, node in schema.get("$defs", {}).items():
        walk(node, name)
    walk(schema, "scenario")
    return out


def test_every_numeric_key_has_a_physical_bound():
    """Every number and integer of the scenario schema, every algorithm's options
    included, has a lower and an upper bound (a value beyond it is refused, never
    simulated): ``netfl schema`` shows them to editors too."""
    assert _unbounded(scenario_schema()) == []


def _case(**sections) -> dict:
    return tiny_scenario(**sections)


def _pathloss(**params) -> dict:
    return _case(
        cell={**OFDMA, "link": {**OFDMA["link"], "pathloss": {"model": "log_distance", **params}}}
    )


#: (scenario data, what its one line names) — each accepted, hanging or a traceback before
BAD = {
    "pathloss_nan": (_pathloss(kappa=float("nan")), "cell.link.pathloss: kappa"),
    "pathloss_inf_gain": (_pathloss(beta0_db=float("-inf")), "cell.link.pathloss: beta0_db"),
    "pathloss_bool": (_pathloss(kappa=True), "kappa: expected a number"),
    "pathloss_negative_exponent": (_pathloss(kappa=-3), "kappa: -3 is outside"),
    "pathloss_negative_height": (_pathloss(height_rx_m=-5), "height_rx_m: -5 is outside"),
    "pathloss_negative_std": (_pathloss(shadowing_std_db=-4), "shadowing_std_db: -4"),
    "pathloss_d0_zero": (_pathloss(d0_m=0), "d0_m: 0 is outside"),
    "pathloss_kappa_text": (_pathloss(kappa="abc"), "kappa: expected a number, got 'abc'"),
    "position_bool": (
        _case(
            cell=OFDMA,
            devices={
                "count": 2,
                "layout": {"kind": "positions", "positions_m": [[True, 0], [9, 0]]},
            },
        ),
        "devices.layout.positions_m: expected numbers, got a boolean",
    ),
    "overhead_bool": (
        _case(cell={**OFDMA, "link": {**OFDMA["link"], "overheads": {"pdcch_symbols": True}}}),
        "overheads.pdcch_symbols",
    ),
    "annulus_outside": (
        _case(cell=OFDMA, devices={"count": 2, "layout": {"kind": "annulus", "inner_m": 500}}),
        "devices.layout.inner_m: 500 m lies outside the cell",
    ),
    "lte_101_rbs": (
        _case(cell={**LTE, "link": {**LTE["link"], "num_rbs": 101}}),
        "num_rbs: 101 on an LTE carrier of 20 MHz",
    ),
    "tx_power_huge": (
        _case(cell={**OFDMA, "link": {**OFDMA["link"], "ue_tx_power_dbm": 1e6}}),
        "cell.link.ue_tx_power_dbm",
    ),
    "integer_overflow": (
        _case(
            devices={"count": 2, "layout": {"kind": "grid", "spacing_m": 10, "columns": 10**400}}
        ),
        "devices.layout.columns: integer too large",
    ),
    "seed_overflow": (_case(seed=10**30), "seed: integer too large"),
    "trajectory_period_tiny": (
        _case(
            cell=OFDMA,
            devices={
                "count": 2,
                "mobility": {"model": "constant_velocity", "record_every_s": 1e-9},
            },
        ),
        "devices.mobility.record_every_s",
    ),
    "gauss_markov_step_tiny": (
        _case(
            cell=OFDMA, devices={"count": 2, "mobility": {"model": "gauss_markov", "step_s": 1e-9}}
        ),
        "devices.mobility.step_s",
    ),
    "hierfavg_kappa2": (_case(algorithm={"name": "hierfavg", "kappa2": 10**9}), "algorithm.kappa2"),
    "fedzkt_generator_terabytes": (
        _case(
            devices={"count": 2, "models": ["logreg", "fcn"]},
            algorithm={
                "name": "fedzkt",
                "noise_dim": 4096,
                "generator_width": 1024,
                "distill_batch_size": 100_000,
            },
        ),
        "algorithm: the generator (noise_dim 4096, generator_width 1024) with distill_batch_size",
    ),
    "lte_model_grant_cycles": (
        _case(cell=LTE, model={"name": "logreg", "size_bits": 2e10}),
        "model.size_bits: 2e+10 bits take 16,667 uplink grant cycles",
    ),
    "transfer_test_grant_cycles": (
        _case(cell=LTE, algorithm={"name": "transfer_test", "upload_bytes": 1e10}),
        "algorithm.upload_bytes: 1e+10 bytes take",
    ),
    "transfer_test_huge": (
        _case(cell=LTE, algorithm={"name": "transfer_test", "upload_bytes": 1e15}),
        "algorithm.upload_bytes",
    ),
    "too_many_sites": (
        _case(cell=OFDMA, network={"site_positions_m": [[i * 600.0, 0.0] for i in range(201)]}),
        "network.site_positions_m: List should have at most 200 items",
    ),
    "union_of_forms": (
        _case(cell=OFDMA, network={"sites": 7, "server_site": "foo"}),
        "network.server_site: expected a valid integer, unable to parse string as an integer; "
        "or 'cloud' (got 'foo')",
    ),
    "network_key_on_a_cell": (
        _case(cell=OFDMA, network={"handover": {"hysteresis_db": 3}}),
        "network: a network needs sites",
    ),
}


def _write(tmp_path: Path, data: dict, name: str = "s.yaml") -> Path:
    path = tmp_path / name
    path.write_text(yaml.safe_dump(data))
    return path


def _refused(capsys, path: Path, verb: str = "validate") -> str:
    t0 = time.perf_counter()
    code = main([verb, str(path)])
    err = capsys.readouterr().err
    assert code == 2, err
    assert time.perf_counter() - t0 < 10.0
    assert "Traceback" not in err
    lines = err.strip().splitlines()
    assert 1 <= len(lines) <= 3 and all(len(line) <= MAX_LINE for line in lines), lines
    return err


@pytest.mark.parametrize("case", sorted(BAD))
def test_each_class_of_bad_input_is_one_line(case, tmp_path, capsys):
    data, expected = BAD[case]
    err = _refused(capsys, _write(tmp_path, data))
    assert expected in err, err


def _naming_profile_file(tmp_path: Path, file_name: str) -> Path:
    """A scenario whose cell's profile ``mine`` comes from ``file_name``."""
    link = {"mode": "ofdma", "channel_profile": "mine", "channel_profile_file": file_name}
    return _write(tmp_path, _case(cell={"radius_m": 200, "link": link}))


def _profile_file(tmp_path: Path, text: str) -> Path:
    (tmp_path / "cells.yaml").write_text(text)
    return _naming_profile_file(tmp_path, "cells.yaml")


def _profile_yaml(**changes) -> str:
    from tests.test_channel_profile_file import PROFILE

    return yaml.safe_dump({"profiles": {"mine": {**PROFILE, **changes}}})


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (_profile_yaml(noise_dbm_per_hz=float("inf")), "noise_dbm_per_hz: inf is outside"),
        (_profile_yaml(bandwidth_hz=float("nan")), "bandwidth_hz: nan is outside"),
        (
            _profile_yaml(fading={"model": "rayleigh", "coherence_time_s": 1e-12}),
            "fading.coherence_time_s: 1e-12 is outside",
        ),
        (
            _profile_yaml(
                uplink_grant={"startup_delay_s": 0.01, "bsr_max_bytes": 1e-9, "cycle_gap_s": 0.001}
            ),
            "uplink_grant.bsr_max_bytes: 1e-09 is outside",
        ),
        ("profiles:\n  mine: {}\n  mine: {}\n", "duplicate key 'mine'"),
        (
            'a: &a ["x","x","x","x","x","x","x","x","x"]\n'
            + "".join(
                f"{c}: &{c} [*{p},*{p},*{p},*{p},*{p},*{p},*{p},*{p},*{p}]\n"
                for p, c in zip("abcdefgh", "bcdefghi", strict=True)
            ),
            "alias bomb",
        ),
    ],
    ids=[
        "noise_inf",
        "bandwidth_nan",
        "coherence_tiny",
        "grant_tiny",
        "duplicate_key",
        "alias_bomb",
    ],
)
def test_a_channel_profile_file_is_held_to_the_scenarios_rules(text, expected, tmp_path, capsys):
    """Values a profile file gives bypass the scenario's keys: they are bounded where
    the profile is built, and the file is read as strictly as a scenario."""
    err = _refused(capsys, _profile_file(tmp_path, text))
    assert "cell.link" in err and expected in err, err


def test_special_files_are_refused_without_blocking(tmp_path, capsys):
    """A channel-profile file or scenario that is a FIFO nobody writes, or a device,
    is refused before it is opened."""
    import os

    os.mkfifo(tmp_path / "fifo.yaml")
    assert "not a regular file" in _refused(capsys, tmp_path / "fifo.yaml")
    for name in ("fifo.yaml", "/dev/zero"):
        assert "not a regular file" in _refused(capsys, _naming_profile_file(tmp_path, name))


def test_a_long_literal_list_is_no_alias_bomb(tmp_path):
    """40,000 explicit positions (120,000 YAML nodes, no alias) are a scenario, not a bomb."""
    positions = [[float(i % 200) - 100.0, float(i // 200) - 100.0] for i in range(40_000)]
    data = _case(
        cell={"radius_m": 200},
        devices={"count": 40_000, "layout": {"kind": "positions", "positions_m": positions}},
    )
    path = tmp_path / "many.yaml"
    path.write_text(yaml.safe_dump(data, default_flow_style=True))
    assert path.stat().st_size < 1 << 20
    assert len(load_scenario(path).devices.layout.positions_m) == 40_000


def test_a_sweep_is_counted_before_it_is_expanded(tmp_path, capsys):
    """A grid of 10^10 runs is refused at once (no list of them is built), in validate
    and in sweep, naming the grid and the counts."""
    _write(tmp_path, _case(), "base.yaml")
    sweep = {
        "name": "huge",
        "base": "base.yaml",
        "variants": {f"v{i}": {} for i in range(10)},
        "grid": {
            "training.lr": [0.001 * i for i in range(1, 1001)],
            "training.rounds": list(range(1, 1001)),
        },
        "seeds": list(range(1, 1001)),
    }
    path = _write(tmp_path, sweep, "huge.sweep.yaml")
    for verb in ("validate", "sweep"):
        err = _refused(capsys, path, verb)
        assert (
            "grid: 10,000,000,000 runs (10 variants × 1000 training.lr × 1000 training.rounds × 1000 seeds)"
            in err
        )


def test_the_trajectories_table_is_bounded_while_the_run_goes(monkeypatch):
    """A recording period that would make the trajectories table too large stops the
    run with one line naming the key as soon as the rows pass the bound (not at the
    end, after the memory is gone)."""
    import netfl.sim.device_mobility as mobility
    from netfl.sim.runner import run

    monkeypatch.setattr(mobility, "MAX_TRAJECTORY_ROWS", 500)
    s = parse_scenario(
        _case(
            cell=OFDMA,
            devices={
                "count": 2,
                "mobility": {"model": "constant_velocity", "record_every_s": 0.01},
            },
            model={"name": "logreg", "size_bits": 1e8},
            training={"rounds": 5},
        )
    )
    with pytest.raises(
        UserError,
        match=r"devices\.mobility\.record_every_s: the trajectories table would pass 500 rows",
    ):
        run(s)
