"""Malformed input is refused quickly with one bounded line per problem (issue 11, measured
cases), and a run's directory is reserved before simulating."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from netfl.cli.app import main
from netfl.errors import ScenarioError, UserError
from netfl.loading.scenarios import load_scenario, parse_scenario
from netfl.output.rundir import release_run_dir, reserve_run_dir
from netfl.scenario.files import read_yaml
from tests.conftest import default_sigint, tiny_scenario

MAX_LINE = 700  # characters of one error line, whatever the input (valid-key lists included)


def _write(tmp_path: Path, text: str | bytes, name: str = "s.yaml") -> Path:
    p = tmp_path / name
    p.write_bytes(text if isinstance(text, bytes) else text.encode())
    return p


def _refused(capsys, path: Path, *extra: str) -> str:
    t0 = time.perf_counter()
    code = main(["validate", str(path), *extra])
    err = capsys.readouterr().err
    assert code == 2, err
    assert time.perf_counter() - t0 < 5.0
    assert "Traceback" not in err
    lines = err.strip().splitlines()
    assert 1 <= len(lines) <= 21 and all(len(line) <= MAX_LINE for line in lines), lines
    return err


BASE = "name: s\nseed: 1\n"

#: (YAML text, what the one-line error names) — each silently accepted or a traceback before
BAD = {
    "duplicate_key": (BASE + "training:\n  lr: 0.1\n  lr: 0.2\n", "duplicate key 'lr'"),
    "duplicate_section": (
        BASE + "training: {lr: 0.1}\ntraining: {momentum: 0.9}\n",
        "duplicate key 'training'",
    ),
    "seed_yes": ("name: s\nseed: yes\n", "seed: expected an integer, got a boolean"),
    "count_true": (BASE + "devices: {count: true}\n", "devices.count: expected an integer"),
    "rounds_yes": (BASE + "training: {rounds: yes}\n", "training.rounds: expected an integer"),
    "lr_inf": (BASE + "training: {lr: .inf}\n", "training.lr: Input should be a finite number"),
    "power_inf": (
        BASE + "devices: {compute_overrides: {busy_power_w: .inf}}\n",
        "devices.compute_overrides.busy_power_w",
    ),
    "radius_inf": (BASE + "cell: {radius_m: .inf}\n", "cell.radius_m"),
    "tx_power_huge": (
        BASE + "cell: {link: {mode: ofdma, ue_tx_power_dbm: 1e6}}\n",
        "cell.link.ue_tx_power_dbm",
    ),
    "tx_power_nan": (
        BASE + "cell: {link: {mode: ofdma, ue_tx_power_dbm: .nan}}\n",
        "cell.link.ue_tx_power_dbm",
    ),
    "coherence_tiny": (
        BASE + "cell: {link: {mode: ofdma, coherence_time_s: 1e-12}}\n",
        "cell.link.coherence_time_s",
    ),
    "max_rbs_tiny": (
        BASE + "cell: {link: {mode: ofdma, max_rbs_per_transfer: 1e-9}}\n",
        "cell.link.max_rbs_per_transfer",
    ),
    "cue_density_huge": (
        BASE + "cell: {link: {mode: ofdma}, cues: {density_per_km2: 1e6}}\n",
        "CUEs on average",
    ),
    "cue_density_huge_over_a_network": (  # (its area, not the cell's 250 m disc: 363,709)
        BASE
        + "cell: {link: {mode: ofdma, channel_profile: nr_fr1_uma}, "
        + "cues: {density_per_km2: 20000}}\nnetwork: {sites: 7, isd_m: 1732}\n",
        "network area gives 363,709 CUEs on average",
    ),
    "bandwidth_1hz": (BASE + "cell: {link: {mode: ofdma, bandwidth_hz: 1}}\n", "bandwidth_hz"),
    "billion_devices": (BASE + "devices: {count: 1000000000}\n", "devices.count"),
    "huge_synthetic": (
        BASE
        + "data: {dataset: synthetic, synthetic: {num_samples: 1000000, shape: [3, 512, 512]}}\n",
        "GiB of float32 images",
    ),
    "long_seed_list": ("name: s\nseed: [" + ", ".join(["1"] * 20_000) + "]\n", "seed"),
    "unknown_key": (BASE + "trainig: {}\n", "trainig: unknown key"),
    "bad_name": ("name: ../escape\n", "name: String should match pattern"),
    "alias_bomb": (
        'a: &a ["x","x","x","x","x","x","x","x","x"]\n'
        + "".join(
            f"{c}: &{c} [*{p},*{p},*{p},*{p},*{p},*{p},*{p},*{p},*{p}]\n"
            for p, c in zip("abcdefgh", "bcdefghi", strict=True)
        ),
        "alias bomb",
    ),
    "not_a_mapping": ("- 1\n- 2\n", "a scenario must be a mapping"),
    "empty": ("\n\n", "file is empty"),
    "syntax": (BASE + "training: {lr: [1, 2}\n", "YAML syntax error: line 3"),
}


@pytest.mark.parametrize("case", sorted(BAD))
def test_bad_scenarios_get_one_bounded_line(case, tmp_path, capsys):
    text, expected = BAD[case]
    err = _refused(capsys, _write(tmp_path, text))
    assert expected in err, err
    assert str(tmp_path / "s.yaml") in err


@pytest.mark.parametrize(
    "raw, expected",
    [
        (b"name: s\nseed: \xff\n", "not UTF-8 text (byte 0xff at offset 14)"),
        (b"\x7fELF\x02\x01\x00\x00binary", "binary file"),
    ],
)
def test_non_text_files_are_refused(raw, expected, tmp_path, capsys):
    assert expected in _refused(capsys, _write(tmp_path, raw))


def test_directories_and_huge_files_are_refused(tmp_path, capsys):
    assert "is a directory" in _refused(capsys, tmp_path)
    big = _write(tmp_path, "name: s\n" + "# " * (1 << 20))
    assert "at most 1 MiB" in _refused(capsys, big)


def test_many_problems_are_capped(tmp_path, capsys):
    sections = "".join(f"bad{i}: 1\n" for i in range(50))
    err = _refused(capsys, _write(tmp_path, BASE + sections))
    assert "… and 30 more problems" in err


# -- fuzzing: any value at any key path of valid scenarios of every kind is in
# tests/test_fuzz.py; here, any bytes as a file ------------------------------------
@settings(max_examples=200, deadline=2000, derandomize=True)
@given(st.binary(max_size=300))
def test_fuzzed_bytes_never_escape_as_other_errors(tmp_path_factory, raw):
    path = tmp_path_factory.mktemp("fuzz") / "f.yaml"
    path.write_bytes(raw)
    try:
        parse_scenario(read_yaml(path), str(path))
    except ScenarioError as err:
        assert all(len(line) <= MAX_LINE for line in err.lines())


# -- the run directory ------------------------------------------------------------------
def _scenario_file(tmp_path: Path, **sections) -> Path:
    data = tiny_scenario(outputs={"dir": str(tmp_path / "runs"), "figures": False}, **sections)
    return _write(tmp_path, yaml.safe_dump(data), "run.yaml")


def test_unusable_out_fails_before_simulating(tmp_path, capsys, monkeypatch):
    import netfl.sim.runner

    called = []
    monkeypatch.setattr(netfl.sim.runner, "run", lambda *a, **k: called.append(1))
    path = _scenario_file(tmp_path)
    (tmp_path / "afile").write_text("x")
    for out, msg in [
        ("", "--out: empty path"),
        (str(tmp_path / "afile" / "run"), "--out: cannot create"),
        (str(tmp_path / "afile"), "already exists"),
    ]:
        assert main(["run", str(path), "--out", out, "--no-progress"]) == 2
        assert msg in capsys.readouterr().err
    assert called == []
    assert main(["sweep", str(path), "--out", " "]) == 2
    assert "--out: empty path" in capsys.readouterr().err


def test_default_run_dirs_are_unique_and_released_when_a_run_fails(tmp_path, monkeypatch):
    scenario = load_scenario(_scenario_file(tmp_path))
    a, b = reserve_run_dir(scenario), reserve_run_dir(scenario)
    assert a != b and a.is_dir() and b.is_dir()
    release_run_dir(a)
    assert not a.exists()
    with pytest.raises(UserError, match="already exists"):
        reserve_run_dir(scenario, b)

    import netfl.sim.runner

    def boom(*a, **k):
        raise UserError("simulated failure")

    monkeypatch.setattr(netfl.sim.runner, "run", boom)
    out = tmp_path / "failing"
    assert main(["run", str(_scenario_file(tmp_path)), "--out", str(out)]) == 2
    assert not out.exists()


@pytest.mark.parametrize("sig, code", [(signal.SIGTERM, 143), (signal.SIGINT, 130)])
def test_a_signal_writes_the_finished_rounds_marked_incomplete_and_resume_completes(
    sig, code, tmp_path
):
    import json

    from netfl.sim.checkpoint import checkpoint_path

    path = _scenario_file(tmp_path, training={"rounds": 300, "batch_size": 16})
    data = yaml.safe_load(path.read_text())
    data["outputs"]["checkpoint_every"] = 1
    path.write_text(yaml.safe_dump(data))
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parent.parent)}

    def netfl(*args):
        return subprocess.Popen(
            [sys.executable, "-m", "netfl", *args, "--no-progress"],
            stderr=subprocess.PIPE,
            text=True,
            env=env,
            preexec_fn=default_sigint,
        )

    whole = netfl("run", str(path), "--out", str(tmp_path / "whole"))
    out = tmp_path / "stopped"
    proc = netfl("run", str(path), "--out", str(out))
    deadline = time.time() + 120
    while not checkpoint_path(out).exists() and time.time() < deadline:
        time.sleep(0.02)
    proc.send_signal(sig)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == code, err
    assert "marked incomplete in manifest.json" in err and "Traceback" not in err
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["complete"] is False and manifest["stop_reason"] == "interrupted"
    assert manifest["status"] == "incomplete"
    assert 1 <= len((out / "rounds.csv").read_text().splitlines()) - 1 < 300
    resumed = netfl("run", "--resume", str(out))
    _, err = resumed.communicate(timeout=300)
    assert resumed.returncode == 0, err
    assert whole.wait(timeout=300) == 0
    assert (out / "rounds.csv").read_bytes() == (tmp_path / "whole" / "rounds.csv").read_bytes()
    assert json.loads((out / "manifest.json").read_text())["complete"] is True


@pytest.mark.parametrize("damage", ["", "round,accuracy\n1,2,3,4\n\x00\x01", "garbage"])
def test_report_on_a_damaged_run_directory_is_one_line(damage, tmp_path, capsys):
    from netfl.output.rundir import write_run
    from netfl.sim.runner import run

    d = write_run(run(parse_scenario(tiny_scenario())), tmp_path / "r", figures=False)
    (d / "rounds.csv").write_text(damage)
    assert main(["report", str(d), "--out", str(tmp_path / "figs")]) == 2
    err = capsys.readouterr().err
    assert "damaged run directory" in err and "Traceback" not in err
    assert len(err.strip().splitlines()) == 1


def test_validate_runs_the_data_checks_that_need_no_simulation(tmp_path, capsys):
    path = _write(tmp_path, "name: x\ndevices: {count: 5000}\ndata: {dataset: digits}\n")
    t0 = time.perf_counter()
    assert main(["validate", str(path)]) == 2
    assert time.perf_counter() - t0 < 1.0
    err = capsys.readouterr().err
    assert "data.partition: 1438 training samples cannot give 5000 devices" in err
    missing = _write(tmp_path, "name: x\ndata: {dataset: mnist, root: /nonexistent}\n", "m.yaml")
    assert main(["validate", str(missing)]) == 2
    assert "data.root" in capsys.readouterr().err


def test_a_half_written_run_directory_is_swept_away(tmp_path):
    from netfl.output.rundir import write_run
    from netfl.sim.runner import run

    stale = tmp_path / ".r.abc12345.tmp"  # (as mkdtemp names it: 8 characters)
    stale.mkdir()
    (stale / "rounds.csv").write_text("partial")
    write_run(run(parse_scenario(tiny_scenario())), tmp_path / "r", figures=False)
    assert not stale.exists() and (tmp_path / "r" / "manifest.json").is_file()


def test_an_implausible_link_budget_is_a_one_line_warning_naming_the_key(tmp_path, caplog):
    """``beta0_db: 30`` (a gain where a loss is meant: mean SNR ~100 dB) is accepted but
    warned about — one line naming the key, exit 0 (a transmit power above 60 dBm is
    refused by the schema already). No bundled scenario warns."""
    import logging

    from netfl.scenario.plausibility import link_budget_warnings
    from netfl.sweep.spec import is_sweep_file

    lte = {"mode": "ofdma", "channel_profile": "lte_20mhz"}
    gain = {**lte, "pathloss": {"model": "log_distance", "beta0_db": 30.0, "kappa": 3.76}}
    path = tmp_path / "gain.yaml"
    path.write_text(yaml.safe_dump(tiny_scenario(cell={"radius_m": 150, "link": gain})))
    with caplog.at_level(logging.WARNING):
        assert main(["validate", str(path)]) == 0
    (line,) = [r.getMessage() for r in caplog.records if "beta0_db" in r.getMessage()]
    assert line.startswith(f"{path}: cell.link.pathloss.beta0_db: ") and "gain" in line
    fine = parse_scenario(tiny_scenario(cell={"radius_m": 150, "link": lte}))
    assert link_budget_warnings(fine) == []
    root = Path(__file__).resolve().parents[1] / "scenarios"
    for f in sorted(root.rglob("*.yaml")):
        if not is_sweep_file(f):
            assert link_budget_warnings(load_scenario(f)) == [], f
