"""Checkpoint and resume: a run interrupted at any round boundary — or killed with
SIGKILL at a random moment — and resumed gives the uninterrupted run's results."""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import pandas as pd
import pytest
import torch
import yaml

from netfl.errors import UserError
from netfl.loading.scenarios import parse_scenario
from netfl.output.rundir import write_run
from netfl.sim.checkpoint import checkpoint_path, load_checkpoint, save_checkpoint
from netfl.sim.runner import run
from tests.conftest import default_sigint, tiny_scenario

ROOT = Path(__file__).resolve().parent.parent


class Killed(Exception):
    pass


def _scenario(algorithm: str, mode: str, rounds: int, every: int):
    return parse_scenario(
        tiny_scenario(
            devices={"count": 4},
            learning={"mode": mode},
            training={"rounds": rounds, "batch_size": 16},
            algorithm={"name": algorithm},
            outputs={"figures": False, "progress": False, "checkpoint_every": every},
        )
    )


def _kill_after(round_index: int):
    def on_round(row):
        if row["round"] == round_index:
            raise Killed()

    return on_round


def _interrupted_and_resumed(scenario, tmp_path: Path, kill_after: int):
    run_dir = tmp_path / f"killed{kill_after}"
    run_dir.mkdir()
    with pytest.raises(Killed):
        run(scenario, on_round=_kill_after(kill_after), run_dir=run_dir)
    return run(scenario, run_dir=run_dir, resume=True), run_dir


@pytest.mark.parametrize("kill_after", [0, 3, 4])
def test_timing_run_resumes_byte_identically(kill_after, tmp_path):
    scenario = _scenario("fedavg", "timing", rounds=6, every=2)
    whole = write_run(run(scenario), tmp_path / "whole", figures=False)
    resumed, run_dir = _interrupted_and_resumed(scenario, tmp_path, kill_after)
    if kill_after >= 1:  # checkpoints at round boundaries 2 and 4
        assert load_checkpoint(run_dir)["next_round"] == (kill_after + 1) // 2 * 2
    out = write_run(resumed, tmp_path / f"resumed{kill_after}", figures=False)
    assert (out / "rounds.csv").read_bytes() == (whole / "rounds.csv").read_bytes()
    for table in ("transfers", "computes"):
        pd.testing.assert_frame_equal(
            pd.read_parquet(out / f"{table}.parquet"), pd.read_parquet(whole / f"{table}.parquet")
        )


@pytest.mark.parametrize("algorithm, kill_after", [("fedavg", 1), ("dfl", 2), ("fd", 1)])
def test_learning_run_resumes_with_identical_accuracies(algorithm, kill_after, tmp_path):
    scenario = _scenario(algorithm, "learn", rounds=4, every=1)
    whole = run(scenario)
    resumed, _ = _interrupted_and_resumed(scenario, tmp_path, kill_after)
    cols = ["round", "sim_time_s", "accuracy", "loss", "train_loss", "uplink_bits"]
    pd.testing.assert_frame_equal(resumed.rounds[cols], whole.rounds[cols])


def test_stateful_heterogeneous_algorithm_resumes(tmp_path):
    data = tiny_scenario(
        devices={"count": 4, "models": ["logreg", "fcn"]},
        model={"name": "fcn"},
        learning={"mode": "learn"},
        training={"rounds": 3, "batch_size": 16},
        algorithm={
            "name": "fedzkt",
            "server_iterations": 2,
            "distill_batch_size": 8,
            "generator_width": 4,
        },
        outputs={"figures": False, "progress": False, "checkpoint_every": 1},
    )
    scenario = parse_scenario(data)
    whole = run(scenario)
    resumed, _ = _interrupted_and_resumed(scenario, tmp_path, 1)
    assert list(resumed.rounds["accuracy"]) == list(whole.rounds["accuracy"])
    pd.testing.assert_frame_equal(
        resumed.tables["device_accuracy"], whole.tables["device_accuracy"]
    )


def test_checkpoints_load_safely_and_round_trip_numpy(tmp_path):
    import numpy as np

    state = {"a": np.arange(3), "b": [np.float64(1.5), {"t": torch.ones(2)}], "n": np.int64(4)}
    save_checkpoint(tmp_path, state)
    back = load_checkpoint(tmp_path)
    assert np.array_equal(back["a"], np.arange(3)) and back["b"][0] == 1.5 and back["n"] == 4
    # a pickle with arbitrary objects is refused by weights_only loading (torch's
    # UnpicklingError), reported as an unreadable checkpoint
    torch.save({"x": object()}, checkpoint_path(tmp_path))
    with pytest.raises(UserError, match=r"cannot be read \(UnpicklingError\)"):
        load_checkpoint(tmp_path)


def _netfl(*args, **kw):
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.Popen(
        [sys.executable, "-m", "netfl", *args],
        env=env,
        stderr=subprocess.PIPE,
        text=True,
        preexec_fn=default_sigint,
        **kw,
    )


def test_sigkill_at_a_random_moment_then_resume_gives_identical_rounds_csv(tmp_path):
    data = tiny_scenario(
        training={"rounds": 300, "batch_size": 16},
        outputs={"figures": False, "progress": False, "checkpoint_every": 1, "dir": str(tmp_path)},
    )
    path = tmp_path / "s.yaml"
    path.write_text(yaml.safe_dump(data))
    whole = _netfl("run", str(path), "--out", str(tmp_path / "whole"))
    assert whole.wait(timeout=300) == 0
    killed_dir = tmp_path / "killed"
    proc = _netfl("run", str(path), "--out", str(killed_dir))
    deadline = time.time() + 120
    while not checkpoint_path(killed_dir).exists() and time.time() < deadline:
        time.sleep(0.02)
    time.sleep(random.Random(7).uniform(0.0, 1.0))  # a random moment after the first checkpoint
    proc.send_signal(signal.SIGKILL)
    proc.wait(timeout=60)
    assert not (killed_dir / "manifest.json").exists(), "the run finished before the kill"
    resumed = _netfl("run", "--resume", str(killed_dir))
    _, err = resumed.communicate(timeout=300)
    assert resumed.returncode == 0, err
    assert (killed_dir / "rounds.csv").read_bytes() == (
        tmp_path / "whole" / "rounds.csv"
    ).read_bytes()
    assert not (killed_dir / ".checkpoint").exists()


def test_ofdma_cell_with_background_users_resumes_byte_identically(tmp_path):
    """Radio state that crosses rounds (CUE sessions, fading, re-drops) is replayed."""
    data = tiny_scenario(
        devices={"count": 5},
        cell={
            "radius_m": 120,
            "redrop_every_round": True,
            "link": {"mode": "ofdma", "channel_profile": "feddif"},
            "cues": {"density_per_km2": 300, "session_rate_per_s": 0.5},
        },
        training={"rounds": 4, "batch_size": 16},
        algorithm={"name": "feddif"},
        outputs={"figures": False, "progress": False, "checkpoint_every": 1},
    )
    scenario = parse_scenario(data)
    whole = write_run(run(scenario), tmp_path / "whole", figures=False)
    resumed, _ = _interrupted_and_resumed(scenario, tmp_path, 2)
    out = write_run(resumed, tmp_path / "resumed", figures=False)
    a = pd.read_csv(out / "rounds.csv").drop(columns=["matching_time_s"])
    b = pd.read_csv(whole / "rounds.csv").drop(columns=["matching_time_s"])
    pd.testing.assert_frame_equal(a, b)  # (matching_time_s is wall-clock time)
    pd.testing.assert_frame_equal(
        pd.read_parquet(out / "transfers.parquet"), pd.read_parquet(whole / "transfers.parquet")
    )


def test_a_signal_that_reaches_another_thread_waits_for_the_checkpoint_write(
    tmp_path, sigint_handler
):
    """Ctrl-C delivered to a thread other than the writer's (torch's threads get signals
    too) is held until the checkpoint is written, then raised; the file is whole."""
    import threading

    from netfl.sim.checkpoint import signals_deferred

    written = []
    with pytest.raises(KeyboardInterrupt):
        with signals_deferred():
            other = threading.Thread(target=signal.raise_signal, args=(signal.SIGINT,))
            other.start()
            other.join()
            time.sleep(0.05)  # bytecodes run: the handler would fire here
            save_checkpoint(tmp_path, {"x": torch.arange(5)})
            written.append(True)
    assert written == [True]
    assert torch.equal(load_checkpoint(tmp_path)["x"], torch.arange(5))
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler


def test_a_damaged_checkpoint_is_a_one_line_error_on_resume(tmp_path, capsys):
    """A checkpoint file damaged after it was written (a disk error, a truncated copy):
    ``--resume`` says which file and what to do, exit 2, no torch traceback."""
    import yaml as _yaml

    from netfl.cli.app import main

    scenario = _scenario("fedavg", "timing", rounds=6, every=1)
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    (run_dir / ".checkpoint").mkdir()
    with pytest.raises(Killed):
        run(scenario, on_round=_kill_after(2), run_dir=run_dir)
    from netfl.loading.scenarios import resolved

    (run_dir / ".checkpoint" / "scenario.yaml").write_text(_yaml.safe_dump(resolved(scenario)))
    path = checkpoint_path(run_dir)
    assert load_checkpoint(run_dir)["next_round"] == 3  # readable as written
    path.write_bytes(path.read_bytes()[:200])  # truncated
    assert main(["run", "--resume", str(run_dir), "--no-progress"]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "Traceback" not in err
    assert err.startswith(f"error: --resume: the checkpoint {path} cannot be read (")
    assert "run the scenario again" in err


def _interrupted_run_dir(tmp_path: Path, seed: int = 0, algorithm: str = "fedavg") -> Path:
    """A run directory as `netfl run` leaves it after Ctrl-C at round 3 of 6: the finished
    rounds written (marked incomplete), the checkpoint and its scenario kept."""
    from netfl.cli.app import main

    data = tiny_scenario(
        seed=seed,
        devices={"count": 4},
        learning={"mode": "timing"},
        training={"rounds": 6, "batch_size": 16},
        algorithm={"name": algorithm},
        outputs={"figures": False, "progress": False, "checkpoint_every": 1},
    )
    path = tmp_path / f"s{seed}{algorithm}.yaml"
    path.write_text(yaml.safe_dump(data))
    run_dir = tmp_path / f"run{seed}{algorithm}"
    import netfl.sim.runner as runner

    real = runner.check_round
    calls = []

    def interrupt_at_round_3(r, *args):
        calls.append(r)
        if r == 3:
            raise KeyboardInterrupt
        return real(r, *args)

    runner.check_round = interrupt_at_round_3
    try:
        assert main(["run", str(path), "--out", str(run_dir), "--no-progress"]) == 130
    finally:
        runner.check_round = real
    man = json.loads((run_dir / "manifest.json").read_text())
    assert man["complete"] is False and man["status"] == "incomplete"
    return run_dir


def _contents(run_dir: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in run_dir.iterdir() if p.is_file()}


@pytest.mark.parametrize("damage", ["truncated", "empty", "garbage", "no_rows", "bad_scenario"])
def test_a_failed_resume_keeps_the_finished_rounds_and_manifest(damage, tmp_path, capsys):
    """A resume that cannot load its checkpoint (or its scenario) fails with one line and
    removes nothing: the interrupted run's rounds.csv and manifest stay as they were."""
    from netfl.cli.app import main

    run_dir = _interrupted_run_dir(tmp_path)
    before = _contents(run_dir)
    assert len(pd.read_csv(run_dir / "rounds.csv")) == 3
    path = checkpoint_path(run_dir)
    if damage == "truncated":
        path.write_bytes(path.read_bytes()[:300])
    elif damage == "empty":
        path.write_bytes(b"")
    elif damage == "garbage":
        path.write_bytes(os.urandom(4096))
    elif damage == "no_rows":
        torch.save({"next_round": 3, "algorithm": {}}, path)
    else:
        (run_dir / ".checkpoint" / "scenario.yaml").write_text("training: {rounds: -1}\n")
    capsys.readouterr()
    assert main(["run", "--resume", str(run_dir), "--no-progress"]) == 2
    err = capsys.readouterr().err.strip()
    assert "Traceback" not in err
    assert all(line.startswith("error: ") for line in err.splitlines())  # one line a problem
    assert _contents(run_dir) == before


def test_a_checkpoint_of_another_scenario_is_refused(tmp_path, capsys):
    """A checkpoint copied in from another run (another seed, another algorithm) does
    not resume silently into this run: one line, and nothing of the run is removed."""
    from netfl.cli.app import main

    ours = _interrupted_run_dir(tmp_path, seed=1)
    for seed, algorithm in ((2, "fedavg"), (1, "dfl")):
        theirs = _interrupted_run_dir(tmp_path, seed=seed, algorithm=algorithm)
        checkpoint_path(ours).write_bytes(checkpoint_path(theirs).read_bytes())
        before = _contents(ours)
        capsys.readouterr()
        assert main(["run", "--resume", str(ours), "--no-progress"]) == 2
        err = capsys.readouterr().err.strip()
        assert len(err.splitlines()) == 1
        assert "belongs to another scenario" in err
        assert _contents(ours) == before


def test_a_resume_replaces_the_partial_tables_only_when_its_own_are_written(tmp_path):
    """After a good resume the directory holds the whole run, complete, no checkpoint;
    it equals an uninterrupted run's rounds.csv."""
    from netfl.cli.app import main

    run_dir = _interrupted_run_dir(tmp_path)
    assert main(["run", "--resume", str(run_dir), "--no-progress"]) == 0
    man = json.loads((run_dir / "manifest.json").read_text())
    assert man["complete"] is True and man["num_rounds"] == 6
    assert not (run_dir / ".checkpoint").exists()
    assert not list(tmp_path.glob(".run*"))  # no temporary or old directories left
    whole = tmp_path / "whole"
    assert main(["run", str(tmp_path / "s0fedavg.yaml"), "--out", str(whole), "--no-progress"]) == 0
    assert (run_dir / "rounds.csv").read_bytes() == (whole / "rounds.csv").read_bytes()


def test_a_resume_before_the_first_checkpoint_equals_the_uninterrupted_run(tmp_path):
    """Killed before its first checkpoint, a run directory holds only the resolved
    scenario (``.checkpoint/scenario.yaml``): resuming runs it from round 0 and must give
    the uninterrupted run's tables — also for options the resolved scenario once lost
    (a random layout's antenna height on an NR cell)."""
    from netfl.cli.app import main
    from netfl.loading.scenarios import load_scenario, resolved

    data = tiny_scenario(
        cell={"radius_m": 200, "link": {"mode": "ofdma", "channel_profile": "nr_fr1_uma"}},
        devices={"count": 4, "layout": {"kind": "uniform_disc", "height_m": 20}},
        training={"rounds": 3, "batch_size": 16},
        outputs={"figures": False, "progress": False, "checkpoint_every": 2},
    )
    path = tmp_path / "s.yaml"
    path.write_text(yaml.safe_dump(data))
    killed = tmp_path / "killed"
    (killed / ".checkpoint").mkdir(parents=True)
    (killed / ".checkpoint" / "scenario.yaml").write_text(
        yaml.safe_dump(resolved(load_scenario(path)), sort_keys=False)
    )
    assert main(["run", "--resume", str(killed), "--no-progress"]) == 0
    whole = tmp_path / "whole"
    assert main(["run", str(path), "--out", str(whole), "--no-progress"]) == 0
    for name in ("rounds.csv", "devices.csv"):
        assert (killed / name).read_bytes() == (whole / name).read_bytes(), name


def test_a_resume_into_a_directory_with_a_stray_file_writes_its_run(tmp_path):
    """Killed before anything was written (only ``.checkpoint/``), then a stray file
    appeared (a file manager's ``.DS_Store``, a note): the resumed run still writes."""
    from netfl.cli.app import main

    run_dir = _interrupted_run_dir(tmp_path)
    for item in run_dir.iterdir():  # as SIGKILL leaves it: the checkpoint only
        if item.name != ".checkpoint":
            item.unlink()
    (run_dir / ".DS_Store").write_bytes(b"\0")
    assert main(["run", "--resume", str(run_dir), "--no-progress"]) == 0
    assert json.loads((run_dir / "manifest.json").read_text())["complete"] is True


def test_a_failure_while_replacing_the_interrupted_run_puts_it_back(tmp_path, monkeypatch):
    """The swap that replaces an interrupted run's tables fails (a disk error, a kill):
    the old tables and the checkpoint are back in place, nothing half-written remains;
    a swap killed between its two renames is undone by the next write."""
    import netfl.output.rundir as rundir
    from netfl.loading.scenarios import load_scenario
    from netfl.output.rundir import write_run_dir

    run_dir = _interrupted_run_dir(tmp_path)
    before = _contents(run_dir)
    scenario = load_scenario(run_dir / ".checkpoint" / "scenario.yaml")
    result = run(scenario, run_dir=run_dir, resume=True)
    checkpoint = checkpoint_path(run_dir).read_bytes()  # (the resumed run's latest)
    real = os.rename

    def failing(src, dst):
        if str(src).endswith(".tmp"):  # the new tables into place, the old ones aside
            raise OSError(28, "No space left on device")
        return real(src, dst)

    monkeypatch.setattr(rundir.os, "rename", failing)
    with pytest.raises(OSError):
        write_run_dir(result, run_dir)
    monkeypatch.setattr(rundir.os, "rename", real)
    assert _contents(run_dir) == before
    assert checkpoint_path(run_dir).read_bytes() == checkpoint
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".run")]
    # killed between the two renames: the tables aside, no run directory
    aside = tmp_path / f".{run_dir.name}.x1y2z3w4.old"  # (as mkdtemp names it)
    aside.mkdir()
    real(run_dir, aside / "run")
    write_run_dir(result, run_dir)
    assert json.loads((run_dir / "manifest.json").read_text())["num_rounds"] == 6
    assert not aside.exists()
