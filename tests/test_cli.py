"""The CLI's verbs and exit codes."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from netfl.cli.app import main
from netfl.errors import ScenarioError
from tests.conftest import tiny_scenario


@pytest.fixture
def scenario_file(tmp_path) -> Path:
    f = tmp_path / "tiny.yaml"
    f.write_text(yaml.safe_dump(tiny_scenario()))
    return f


def test_validate_ok(scenario_file, capsys):
    assert main(["validate", str(scenario_file)]) == 0
    assert "valid" in capsys.readouterr().out


def test_validate_bad_key_exit_2_one_line(scenario_file, capsys):
    assert main(["validate", str(scenario_file), "--set", "devices.cnt=3"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1
    assert err[0].startswith(f"error: {scenario_file}: devices.cnt: unknown key")


def test_debug_shows_the_exception(scenario_file):
    with pytest.raises(ScenarioError):
        main(["--debug", "validate", str(scenario_file), "--set", "devices.count=0"])


def test_subprocess_exit_code_and_no_traceback(tmp_path):
    bad = tmp_path / "bad.yaml"
    bad.write_text("name: x\nmodel: {name: resnet}\n")
    out = subprocess.run(
        [sys.executable, "-m", "netfl", "run", str(bad)], capture_output=True, text=True
    )
    assert out.returncode == 2
    assert "Traceback" not in out.stderr
    assert out.stderr.strip() == (
        f"error: {bad}: model.name: unknown model 'resnet' "
        "(valid: 2nn, cifar_cnn, cnn, fcn, lenet, lenet_deep, lenet_wide, logreg, lstm, mobilenet_v2_x0_5, "
        "mobilenet_v2_x1_0, resnet9, shufflenet_v2_x0_5, shufflenet_v2_x1_0, svm, vgg11)"
    )


def test_run_writes_complete_run_directory(scenario_file, tmp_path, capsys):
    out = tmp_path / "run1"
    code = main(
        [
            "run",
            str(scenario_file),
            "--out",
            str(out),
            "--set",
            "learning.mode=learn",
            "--set",
            "outputs.figures=true",
            "--no-progress",
        ]
    )
    assert code == 0
    names = {p.name for p in out.iterdir()}
    assert names == {
        "scenario.yaml",
        "manifest.json",
        "rounds.csv",
        "devices.csv",
        "transfers.parquet",
        "computes.parquet",
        "critical_path.parquet",
        "policy.parquet",
        "figures",
    }
    assert {p.name for p in (out / "figures").iterdir()} == {
        "accuracy_vs_round.png",
        "accuracy_vs_time.png",
        "round_time_split.png",
        "energy_per_device.png",
        "device_timeline.png",
        "upload_cdf.png",
    }
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["status"] == "complete" and manifest["num_rounds"] == 2
    resolved = yaml.safe_load((out / "scenario.yaml").read_text())
    assert resolved["learning"]["mode"] == "learn" and resolved["algorithm"]["fraction"] == 1.0
    assert f"results: {out}" in capsys.readouterr().out
    # existing run directory: refused, exit 2
    assert main(["run", str(scenario_file), "--out", str(out)]) == 2


def test_report_one_and_many(scenario_file, tmp_path):
    a, b = tmp_path / "a", tmp_path / "b"
    assert main(["run", str(scenario_file), "--out", str(a), "--no-progress"]) == 0
    assert (
        main(["run", str(scenario_file), "--out", str(b), "--no-progress", "--set", "seed=9"]) == 0
    )
    assert main(["report", str(a)]) == 0
    assert (a / "figures" / "round_time_split.png").is_file()
    assert not (a / "figures" / "accuracy_vs_time.png").exists()  # (a timing run)
    assert main(["report", str(a), str(b), "--out", str(tmp_path / "cmp")]) == 0
    assert (tmp_path / "cmp" / "energy_vs_time.png").is_file()
    assert main(["report", str(a), str(b)]) == 2
    assert main(["report", str(tmp_path / "nothing")]) == 2


def test_list_and_schema(capsys):
    assert main(["list"]) == 0
    out = capsys.readouterr().out
    for word in ("fedavg", "mnist5k", "cnn", "4g_lte", "raspberry_pi_4", "dirichlet"):
        assert word in out
    assert main(["schema"]) == 0
    schema = json.loads(capsys.readouterr().out)
    assert "cell" in schema["properties"]


def test_interrupted_write_leaves_nothing(scenario_file, tmp_path, monkeypatch):
    import netfl.output.figures

    def boom(*a, **k):
        raise RuntimeError("disk full")

    monkeypatch.setattr(netfl.output.figures, "run_figures", boom)
    out = tmp_path / "runs" / "x"
    with pytest.raises(RuntimeError):
        main(
            [
                "run",
                str(scenario_file),
                "--out",
                str(out),
                "--set",
                "outputs.figures=true",
                "--no-progress",
            ]
        )
    assert not out.exists()
    assert list((tmp_path / "runs").iterdir()) == []


def test_a_cell_with_no_device_in_coverage_exits_2_without_a_run_directory(tmp_path, capsys):
    f = tmp_path / "far.yaml"
    f.write_text(
        yaml.safe_dump(
            tiny_scenario(
                cell={
                    "radius_m": 3000,
                    "link": {"mode": "ofdma", "channel_profile": "nr_fr1_uma", "fading": "none"},
                }
            )
        )
    )
    out = tmp_path / "run"
    assert main(["run", str(f), "--out", str(out), "--no-progress"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "no device is in coverage" in err[0]
    assert not out.exists()


def test_an_unusable_output_directory_is_one_line(scenario_file, tmp_path, capsys):
    """``--out`` of ``report`` and ``sweep`` that is a file or cannot be created: one line
    naming the option, exit 2, before anything is drawn or run."""
    run_dir = tmp_path / "run"
    assert main(["run", str(scenario_file), "--out", str(run_dir), "--no-progress"]) == 0
    capsys.readouterr()
    a_file = tmp_path / "a_file"
    a_file.write_text("x")
    assert main(["report", str(run_dir), "--out", str(a_file)]) == 2
    assert (
        capsys.readouterr().err.strip() == f"error: --out: {a_file} exists and is not a directory"
    )
    assert main(["report", str(run_dir), "--out", str(a_file / "figs")]) == 2
    assert capsys.readouterr().err.strip() == (
        f"error: --out: cannot create {a_file / 'figs'} (Not a directory)"
    )
    (tmp_path / "base.yaml").write_text(yaml.safe_dump(tiny_scenario()))
    sweep = tmp_path / "s.sweep.yaml"
    sweep.write_text(yaml.safe_dump({"name": "s", "base": "base.yaml"}))
    assert main(["sweep", str(sweep), "--out", str(a_file), "--no-progress"]) == 2
    assert (
        capsys.readouterr().err.strip() == f"error: --out: {a_file} exists and is not a directory"
    )
    out = a_file / "sweep"  # checked, not created: a refused sweep leaves nothing behind
    assert main(["sweep", str(sweep), "--out", str(out), "--no-progress"]) == 2
    assert capsys.readouterr().err.strip() == (
        f"error: --out: cannot create {out} ({a_file} is not a directory)"
    )


def test_ctrl_c_while_the_run_directory_is_written_keeps_it_whole(
    scenario_file, tmp_path, monkeypatch, capsys
):
    """A Ctrl-C arriving while the finished run's tables are being written is held until
    they are: the directory is there and complete, the exit code says interrupted."""
    import signal

    import netfl.output.figures
    from netfl.output.rundir import is_complete

    figures = netfl.output.figures.run_figures

    def interrupted_figures(*a, **k):  # (the signal lands in the middle of the write)
        signal.raise_signal(signal.SIGINT)
        return figures(*a, **k)

    monkeypatch.setattr(netfl.output.figures, "run_figures", interrupted_figures)
    out = tmp_path / "runs" / "x"
    args = ["run", str(scenario_file), "--out", str(out), "--set", "outputs.figures=true"]
    assert main([*args, "--no-progress"]) == 130
    assert is_complete(out) and (out / "rounds.csv").is_file()
    assert "the run had finished" in capsys.readouterr().err


def test_a_run_interrupted_before_its_first_round_leaves_no_directory(
    scenario_file, tmp_path, monkeypatch, capsys
):
    """With checkpoints on, Ctrl-C before a round finished: nothing to keep, so no run
    directory (its checkpoint folder held only the scenario), as the message says; the
    same command then runs."""
    import netfl.sim.runner

    real = netfl.sim.runner.simulate_round

    def interrupted(world, algorithm, r):
        raise KeyboardInterrupt

    out = tmp_path / "runs" / "x"
    args = ["run", str(scenario_file), "--out", str(out), "--no-progress"]
    args += ["--set", "outputs.checkpoint_every=1"]
    monkeypatch.setattr(netfl.sim.runner, "simulate_round", interrupted)
    assert main(args) == 130
    assert "no run directory was written" in capsys.readouterr().err
    assert not out.exists()
    monkeypatch.setattr(netfl.sim.runner, "simulate_round", real)
    assert main(args) == 0 and (out / "rounds.csv").is_file()


def test_a_run_directory_has_the_modes_the_umask_gives(scenario_file, tmp_path):
    import os
    import stat

    old = os.umask(0o022)
    try:
        out = tmp_path / "runs" / "x"
        assert main(["run", str(scenario_file), "--out", str(out), "--no-progress"]) == 0
    finally:
        os.umask(old)
    assert stat.S_IMODE(out.stat().st_mode) == 0o755


def test_the_summary_line_says_why_there_is_no_accuracy(scenario_file, tmp_path, capsys):
    """A timing run evaluates nothing: its summary says so instead of printing NaN, and
    it draws no (empty) accuracy figures; a learn run prints the last round's accuracy
    and draws them."""
    figures = ["--set", "outputs.figures=true"]
    assert (
        main(["run", str(scenario_file), "--out", str(tmp_path / "t"), "--no-progress", *figures])
        == 0
    )
    out = capsys.readouterr().out
    assert "accuracy n/a (timing mode)," in out and "nan" not in out
    drawn = {p.name for p in (tmp_path / "t" / "figures").iterdir()}
    assert "round_time_split.png" in drawn and not {"accuracy_vs_round.png"} & drawn
    assert "accuracy_vs_time.png" not in drawn
    args = ["run", str(scenario_file), "--out", str(tmp_path / "l"), "--no-progress"]
    assert main([*args, "--set", "learning.mode=learn", *figures]) == 0
    line = next(x for x in capsys.readouterr().out.splitlines() if "accuracy" in x)
    assert float(line.split("accuracy ")[1].split(",")[0]) > 0.0
    assert (tmp_path / "l" / "figures" / "accuracy_vs_round.png").is_file()
