"""Sweep files: expansion (counts, names, seeds), local runs, skip-if-complete, failures."""

from __future__ import annotations

import re

import pandas as pd
import pytest
import yaml

from netfl.cli.app import main
from netfl.errors import ScenarioError
from netfl.sweep.run import expand, load_sweep, run_sweep
from tests.conftest import tiny_scenario


def _write(tmp_path, sweep: dict, base: dict | None = None):
    (tmp_path / "base.yaml").write_text(yaml.safe_dump(base or tiny_scenario()))
    path = tmp_path / "s.sweep.yaml"
    path.write_text(yaml.safe_dump({"name": "s", "base": "base.yaml", **sweep}, sort_keys=False))
    return path


def test_grid_variants_zip_and_seeds_expand_in_order(tmp_path):
    path = _write(
        tmp_path,
        {
            "set": {"training.rounds": 3},
            "variants": {"a": {"algorithm": {"name": "fedavg"}}, "b": {"algorithm.fraction": 0.5}},
            "grid": {"devices.count": [2, 4, 6], "data.partition": [{"scheme": "iid"}]},
            "zip": {"training.lr": [0.1, 0.01], "training.batch_size": [8, 16]},
            "seeds": [1, 2],
        },
    )
    runs = expand(*load_sweep(path))
    assert len(runs) == 2 * 3 * 1 * 2 * 2
    names = [r.name for r in runs]
    assert len(set(names)) == len(names)
    assert names[0] == "a-count=2-partition=iid-lr=0.1-batch_size=8-seed1"
    assert names[-1] == "b-count=6-partition=iid-lr=0.01-batch_size=16-seed2"
    first, last = runs[0].scenario, runs[-1].scenario
    assert (first.devices.count, first.training.lr, first.training.batch_size, first.seed) == (
        2,
        0.1,
        8,
        1,
    )
    assert (last.devices.count, last.training.lr, last.seed) == (6, 0.01, 2)
    assert all(r.scenario.training.rounds == 3 for r in runs)
    assert {r.scenario.algorithm.options().get("fraction") for r in runs} == {None, 0.5}
    assert runs[0].scenario.name == "s-" + names[0].replace("=", "_")
    assert runs[0].params == {
        "variant": "a",
        "devices.count": 2,
        "data.partition": {"scheme": "iid"},
        "training.lr": 0.1,
        "training.batch_size": 8,
        "seed": 1,
    }


def test_without_seeds_the_base_seed_is_kept(tmp_path):
    runs = expand(*load_sweep(_write(tmp_path, {"grid": {"devices.count": [2, 3]}})))
    assert [r.name for r in runs] == ["count=2", "count=3"]
    assert {r.scenario.seed for r in runs} == {tiny_scenario()["seed"]}


def test_bad_sweeps_are_one_line_errors(tmp_path):
    path = _write(tmp_path, {"zip": {"training.lr": [0.1], "training.batch_size": [8, 16]}})
    with pytest.raises(ScenarioError, match=r"s.sweep.yaml: zip: .*one length"):
        load_sweep(path)
    path = _write(tmp_path, {"gird": {}})
    with pytest.raises(ScenarioError, match=r"s.sweep.yaml: gird: unknown key"):
        load_sweep(path)
    path = _write(tmp_path, {"grid": {"devices.count": [0]}})
    with pytest.raises(ScenarioError, match=r"\(run count=0\): devices.count"):
        expand(*load_sweep(path))


def test_a_seed_on_an_axis_is_the_seed_that_runs(tmp_path):
    """A grid over ``seed`` (no ``seeds``) runs each seed, and the index records it."""
    runs = expand(*load_sweep(_write(tmp_path, {"grid": {"seed": [1, 2]}})))
    assert [(r.name, r.scenario.seed, r.params["seed"]) for r in runs] == [
        ("seed=1", 1, 1),
        ("seed=2", 2, 2),
    ]
    runs = expand(*load_sweep(_write(tmp_path, {"variants": {"a": {"seed": 9}}})))
    assert runs[0].scenario.seed == runs[0].params["seed"] == 9


@pytest.mark.parametrize(
    "sweep, overrides, error",
    [
        ({"grid": {"seed": [1, 2]}, "seeds": [3]}, None, "grid: seed is also set by seeds"),
        (
            {"set": {"training.lr": 0.1}, "grid": {"training": [{"rounds": 1}]}},
            None,
            "grid: training would override training.lr (set) in every run",
        ),
        (
            {"variants": {"a": {"training": {"lr": 0.1}}}, "zip": {"training.lr": [0.2]}},
            None,
            "zip: training.lr would override training.lr (variants) in every run",
        ),
        (
            {"grid": {"training.lr": [0.1]}, "zip": {"training": [{"rounds": 1}]}},
            None,
            "grid: training.lr is also set by zip (training)",
        ),
        ({"zip": {"seed": []}}, None, "zip: empty list for seed"),
        ({"variants": {".": {"training.rounds": 1}}}, None, "variant name '.'"),
        (
            {"grid": {"algorithm.fraction": [0.2, 0.8]}, "seeds": [1, 2]},
            {"algorithm": {"name": "fedavg", "fraction": 0.5}},
            "--set algorithm: the sweep's runs are named by algorithm.fraction",
        ),
        (
            {"grid": {"training": [{"lr": 0.1}, {"lr": 0.2}]}},
            {"training.lr": 0.3},
            "--set training.lr: the sweep's runs are named by training.lr",
        ),
        (
            {"grid": {"devices.count": [2, 3]}, "seeds": [1]},
            {"seed": 9},
            "--set seed: the sweep's runs are named by seed",
        ),
    ],
)
def test_a_key_set_twice_is_an_error_not_silently_overridden(tmp_path, sweep, overrides, error):
    with pytest.raises(ScenarioError, match=re.escape(error)):
        expand(*load_sweep(_write(tmp_path, sweep)), overrides)


def test_refinements_and_overrides_of_every_run_are_allowed(tmp_path):
    """A grid inside a variant's section, a variant over ``set``, and ``--set`` over
    the variants' values (an analysis script's shorter runs): what runs is what they say."""
    sweep = {
        "set": {"training.rounds": 3},
        "variants": {
            "a": {"algorithm": {"name": "fedavg"}},
            "b": {"algorithm": {"name": "fedavg"}, "training.rounds": 4},
        },
        "grid": {"algorithm.fraction": [0.5, 1.0]},
    }
    runs = expand(*load_sweep(_write(tmp_path, sweep)))
    assert [(r.name, r.scenario.training.rounds) for r in runs] == [
        ("a-fraction=0.5", 3),
        ("a-fraction=1", 3),
        ("b-fraction=0.5", 4),
        ("b-fraction=1", 4),
    ]
    assert [r.scenario.algorithm.options()["fraction"] for r in runs] == [0.5, 1.0] * 2
    runs = expand(*load_sweep(_write(tmp_path, sweep)), {"training.rounds": 1})
    assert {r.scenario.training.rounds for r in runs} == {1}


def test_run_skip_and_failure(tmp_path, capsys):
    path = _write(
        tmp_path,
        {
            "variants": {
                "ok": {},
                "broken": {"data": {"dataset": "mnist", "root": str(tmp_path / "none")}},
            },
            "grid": {"devices.count": [2, 3]},
            "target_accuracy": 0.5,
        },
    )
    spec, p = load_sweep(path)
    runs = expand(spec, p)
    out = tmp_path / "out"
    index = run_sweep(runs, out, target_accuracy=spec.target_accuracy)
    assert list(index["status"]) == ["complete", "complete", "failed", "failed"]
    assert index.loc[2, "error"].startswith("UserError") and "data.root" in index.loc[2, "error"]
    assert (out / "ok-count=2" / "manifest.json").is_file()
    assert (out / "broken-count=2.error.txt").is_file()
    saved = pd.read_csv(out / "sweep.csv")
    assert list(saved["run"]) == list(index["run"]) and "sim_time_s" in saved
    assert saved.loc[0, "sim_time_s"] > 0 and saved.loc[0, "bits"] > 0
    assert (out / "sweep.parquet").is_file()
    # second invocation: complete runs are skipped, failed ones retried
    seen = []
    index2 = run_sweep(runs, out, on_done=lambda name, status: seen.append((name, status)))
    assert ("ok-count=2", "skipped") in seen and ("broken-count=3", "failed") in seen
    assert list(index2["status"]) == ["complete", "complete", "failed", "failed"]
    assert index2.loc[0, "sim_time_s"] == index.loc[0, "sim_time_s"]
    # a complete directory of a *different* scenario is not silently reused or overwritten
    other = expand(spec, p, {"training.rounds": 1})
    index3 = run_sweep(other[:1], out)
    assert index3.loc[0, "status"] == "failed" and index3.loc[0, "error"].startswith("stale")
    assert (out / "ok-count=2" / "manifest.json").is_file()
    # the CLI: exit 1 when a run failed, the index path printed
    assert main(["sweep", str(path), "--out", str(out), "--no-progress"]) == 1
    text = capsys.readouterr().out
    assert "s: 4 runs" in text and "2 failed" in text and "2 complete" in text
    assert main(["sweep", str(tmp_path / "missing.yaml")]) == 2


def test_process_pool_gives_the_local_result(tmp_path):
    path = _write(tmp_path, {"grid": {"devices.count": [2, 3]}})
    runs = expand(*load_sweep(path))
    a = run_sweep(runs, tmp_path / "serial")
    b = run_sweep(runs, tmp_path / "pool", workers=2)
    cols = ["run", "status", "sim_time_s", "bits", "device_energy_j", "subframes"]
    pd.testing.assert_frame_equal(a[cols], b[cols])


def test_ray_backend_gives_the_local_index(tmp_path, ray_local):
    """Same sweep, same index (all but wall time) on a local 2-CPU Ray instance and the
    local pool, learning included; a failing variant is recorded on both."""
    base = tiny_scenario(learning={"mode": "learn", "num_threads": 1})
    path = _write(
        tmp_path,
        {
            "variants": {"ok": {}, "broken": {"data": {"dataset": "mnist", "root": "/nowhere"}}},
            "grid": {"devices.count": [2, 3]},
        },
        base,
    )
    runs = expand(*load_sweep(path))
    local = run_sweep(runs, tmp_path / "local", workers=2)
    seen = []
    ray_index = run_sweep(
        runs, tmp_path / "ray", workers=2, backend="ray", on_done=lambda n, s: seen.append(s)
    )
    assert sorted(seen) == ["complete", "complete", "failed", "failed"]
    assert list(ray_index["status"]) == ["complete", "complete", "failed", "failed"]
    assert (
        ray_index["error"].iloc[2].startswith("UserError")
        and "data.root" in ray_index["error"].iloc[2]
    )
    cols = [c for c in local.columns if c != "wall_time_s"]
    pd.testing.assert_frame_equal(local[cols], ray_index[cols])
    assert ray_index["final_accuracy"].iloc[:2].between(0.05, 1).all()
    # the driver wrote the run directories, byte-identical rounds to the local pool's
    for name in ray_index["run"].iloc[:2]:
        a = pd.read_csv(tmp_path / "local" / name / "rounds.csv")
        b = pd.read_csv(tmp_path / "ray" / name / "rounds.csv")
        wall = [c for c in a if "wall" in c]
        pd.testing.assert_frame_equal(a.drop(columns=wall), b.drop(columns=wall))
    # re-invoked on Ray: complete runs are skipped
    seen.clear()
    run_sweep(runs, tmp_path / "ray", workers=2, backend="ray", on_done=lambda n, s: seen.append(s))
    assert seen.count("skipped") == 2


def test_a_worker_builds_the_data_of_identical_variants_once(tmp_path, monkeypatch):
    import netfl.sim.data as data_mod

    calls = []
    real = data_mod.load_dataset
    monkeypatch.setattr(data_mod, "_DATA_CACHE", type(data_mod._DATA_CACHE)())
    monkeypatch.setattr(data_mod, "_PARTITION_CACHE", type(data_mod._DATA_CACHE)())
    monkeypatch.setattr(data_mod, "load_dataset", lambda *a, **k: calls.append(a) or real(*a, **k))
    path = _write(tmp_path, {"grid": {"training.lr": [0.01, 0.1], "devices.count": [2, 3]}})
    index = run_sweep(expand(*load_sweep(path)), tmp_path / "out")
    assert list(index["status"]) == ["complete"] * 4
    assert len(calls) == 1  # one data set; partitions by device count: two
    assert len(data_mod._DATA_CACHE) == 1 and len(data_mod._PARTITION_CACHE) == 2


def test_backend_arguments_are_checked(tmp_path, capsys):
    path = _write(tmp_path, {"grid": {"devices.count": [2]}})
    assert main(["sweep", str(path), "--workers", "0", "--no-progress"]) == 2
    assert "--workers: 0" in capsys.readouterr().err
    assert main(["sweep", str(path), "--address", "auto", "--no-progress"]) == 2
    assert "--address: only with --backend ray" in capsys.readouterr().err
    with pytest.raises(SystemExit) as exc:  # argparse's own check of the choices
        main(["sweep", str(path), "--backend", "dask"])
    assert exc.value.code == 2


def test_a_ray_sweep_refuses_runs_with_ray_actors_before_running_any(tmp_path, capsys):
    """Nested Ray (runs with ``learning.executor: ray`` as Ray tasks) would deadlock on
    CPUs: a one-line error naming the key, exit 2, nothing run (Ray never started)."""
    path = _write(tmp_path, {"grid": {"learning.executor": ["serial", "ray"]}})
    out = tmp_path / "out"
    args = ["sweep", str(path), "--out", str(out), "--backend", "ray", "--no-progress"]
    assert main(args) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1
    assert "learning.executor: 'ray' in run" in err and "--backend local" in err
    assert not out.exists()


def test_ray_backend_from_the_command_line(tmp_path, ray_local, capsys):
    path = _write(tmp_path, {"grid": {"devices.count": [2, 3]}})
    out = tmp_path / "out"
    args = ["sweep", str(path), "--out", str(out), "--backend", "ray", "--no-progress"]
    assert main(args) == 0
    assert "s: 2 runs (2 complete)" in capsys.readouterr().out
    assert pd.read_csv(out / "sweep.csv")["status"].tolist() == ["complete", "complete"]


def test_the_data_cache_keeps_two_data_sets_and_keys_partitions_by_their_section(monkeypatch):
    import netfl.sim.data as data_mod
    from netfl import parse_scenario
    from netfl.core.rng import Streams

    monkeypatch.setattr(data_mod, "_DATA_CACHE", type(data_mod._DATA_CACHE)())
    monkeypatch.setattr(data_mod, "_PARTITION_CACHE", type(data_mod._DATA_CACHE)())

    def build(seed, **data):
        s = parse_scenario(tiny_scenario(seed=seed, data={"dataset": "digits", **data}))
        from netfl.sim.specs import data_spec

        return data_mod.build_data(data_spec(s), Streams(seed))

    a_data, a_parts = build(1, partition={"scheme": "dirichlet", "alpha": 0.5})
    b_data, b_parts = build(1, partition={"scheme": "dirichlet", "alpha": 5.0})
    assert b_data is a_data and b_parts is not a_parts  # same data, other split
    assert build(1, partition={"scheme": "dirichlet", "alpha": 0.5})[1] is a_parts
    build(2, partition={"scheme": "iid"})
    build(3, partition={"scheme": "iid"})  # a third data set: the least recently used goes
    assert len(data_mod._DATA_CACHE) == 2
    again, parts = build(1, partition={"scheme": "dirichlet", "alpha": 0.5})
    assert again is not a_data and all(
        (p == q).all() for p, q in zip(parts, a_parts, strict=True)
    )  # rebuilt: equal values


def test_validate_checks_every_run_of_a_sweep_without_running_it(tmp_path, capsys):
    path = _write(tmp_path, {"grid": {"devices.count": [2, 3, 4, 5, 6]}, "seeds": [1, 2]})
    out = tmp_path / "runs"
    assert main(["validate", str(path), "--set", "outputs.dir=" + str(out)]) == 0
    line = capsys.readouterr().out.strip()
    assert line == (
        f"{path}: valid sweep (s, 10 runs: count=2-seed1, count=2-seed2, count=3-seed1, "
        "count=3-seed2, ...)"
    )
    assert not out.exists()
    # a run whose data cannot be split is named, on one line, exit 2 (no traceback)
    path = _write(tmp_path, {"grid": {"devices.count": [2, 100000]}})
    assert main(["validate", str(path)]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "(run count=100000): data.partition:" in err


def test_scenario_and_sweep_files_are_not_confused(tmp_path, capsys):
    """``netfl run``/``validate`` of a sweep and ``netfl sweep`` of a scenario say which
    command the file needs, in one line; a sweep's unknown key lists the sweep's keys."""
    sweep = _write(tmp_path, {"grid": {"devices.count": [2]}})
    scenario = tmp_path / "base.yaml"
    assert main(["run", str(sweep)]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "`netfl sweep`" in err
    assert main(["sweep", str(scenario), "--no-progress"]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "a scenario, not a sweep" in err and "`netfl run`" in err
    assert main(["validate", str(_write(tmp_path, {"gird": {}}))]) == 2
    err = capsys.readouterr().err.strip()
    assert err.endswith(
        "gird: unknown key (valid keys: name, base, set, variants, grid, zip, seeds, "
        "target_accuracy)"
    )


def test_a_dead_sweep_worker_fails_only_the_runs_in_flight(tmp_path, monkeypatch):
    """A run whose worker process is killed (as by the out-of-memory killer) breaks the
    local pool: it, and at most the run beside it, are recorded as lost; the runs still
    queued go on in a fresh pool, and the next invocation retries the lost ones."""
    import os
    import signal

    import netfl.sim.runner

    run_scenario = netfl.sim.runner.run

    def killing(scenario, *args, **kwargs):  # forked into the sweep's workers
        if scenario.devices.count == 3:
            os.kill(os.getpid(), signal.SIGKILL)
        return run_scenario(scenario, *args, **kwargs)

    monkeypatch.setattr(netfl.sim.runner, "run", killing)
    path = _write(tmp_path, {"grid": {"devices.count": [2, 3, 4, 5, 6]}})
    runs = expand(*load_sweep(path))
    out = tmp_path / "out"
    index = run_sweep(runs, out, workers=2).set_index("run")
    lost = index[index["status"] == "failed"]
    # the killed run and at most the one in flight beside it when the pool broke (which
    # one depends on timing); every other run, queued behind them, completed in a fresh pool
    assert "count=3" in lost.index and len(lost) <= 2
    assert lost["error"].str.startswith("WorkerLost: the sweep worker running this run").all()
    assert (index.drop(lost.index)["status"] == "complete").all() and len(index) == 5
    assert (out / "count=3.error.txt").read_text().count("WorkerLost") >= 1
    monkeypatch.undo()
    again = run_sweep(runs, out, workers=2)
    assert (again["status"] == "complete").all()
    assert not list(out.glob("*.error.txt"))  # the retried runs' old errors are gone


def test_runs_with_checkpoints_resume_where_an_interrupted_sweep_stopped(tmp_path, monkeypatch):
    """With ``outputs.checkpoint_every`` a sweep's runs keep checkpoints in their run
    directories: after Ctrl-C the next invocation resumes the interrupted run from its last
    checkpoint (not from round 0) and gets the uninterrupted run's rows; a checkpoint of
    another scenario (other --set values) is not resumed."""
    import netfl.sim.runner
    from netfl.output.run_directory import RunDirectory

    base = tiny_scenario(training={"rounds": 5}, outputs={"checkpoint_every": 1})
    path = _write(tmp_path, {"grid": {"devices.count": [2, 3]}}, base=base)
    runs = expand(*load_sweep(path))
    assert list(run_sweep(runs, tmp_path / "whole")["status"]) == ["complete", "complete"]

    run_scenario, resumed, stop = netfl.sim.runner.run, [], [True]

    def spied(scenario, *args, on_round=None, **kwargs):
        resumed.append(kwargs.get("resume"))

        def ctrl_c_after_round_2(row):  # in the second run only, while `stop` holds
            if stop[0] and row["round"] == 2 and scenario.devices.count == 3:
                raise KeyboardInterrupt

        return run_scenario(scenario, *args, on_round=ctrl_c_after_round_2, **kwargs)

    monkeypatch.setattr(netfl.sim.runner, "run", spied)
    out = tmp_path / "out"
    with pytest.raises(KeyboardInterrupt):
        run_sweep(runs, out)
    assert resumed == [False, False]
    assert (out / "count=2" / "manifest.json").is_file()  # complete: its checkpoint gone
    assert not (out / "count=2" / ".checkpoint").exists()
    assert not (out / "count=3" / "manifest.json").exists()  # stopped after round 2
    # the index of the sweep so far, which `netfl report` reads
    partial = pd.read_csv(out / "sweep.csv")
    assert list(partial["status"]) == ["complete", "interrupted"]
    assert partial.loc[1, "error"].startswith("the sweep was interrupted")
    assert partial.loc[0, "sim_time_s"] > 0
    from netfl.sweep.report import sweep_report

    assert (out / "report" / "index.html") in sweep_report(out)
    stop[0] = False
    index = run_sweep(runs, out)
    assert resumed[2:] == [True] and list(index["status"]) == ["complete", "complete"]
    pd.testing.assert_frame_equal(
        pd.read_csv(out / "count=3" / "rounds.csv"),
        pd.read_csv(tmp_path / "whole" / "count=3" / "rounds.csv"),
    )
    assert not (out / "count=3" / ".checkpoint").exists()
    # a checkpoint of another scenario in the way is not resumed: that run starts over
    other = expand(*load_sweep(path), {"training.lr": 0.5})
    (out / "other").mkdir()
    assert RunDirectory.in_sweep(out / "other", runs[1].scenario)[1] is False  # none yet
    (out / "other" / ".checkpoint" / "state.pt").write_bytes(b"")
    assert RunDirectory.in_sweep(out / "other", runs[1].scenario)[1] is True
    assert RunDirectory.in_sweep(out / "other", other[1].scenario)[1] is False
    assert not (out / "other" / ".checkpoint" / "state.pt").exists()


def test_a_run_failing_in_a_pool_worker_leaves_its_traceback(tmp_path):
    """The index holds the one-line error; ``NAME.error.txt`` the worker's traceback."""
    path = _write(
        tmp_path,
        {
            "variants": {
                "ok": {},
                "broken": {"data": {"dataset": "mnist", "root": str(tmp_path / "none")}},
            },
        },
    )
    out = tmp_path / "out"
    index = run_sweep(expand(*load_sweep(path)), out, workers=2).set_index("run")
    assert index.loc["ok", "status"] == "complete" and index.loc["broken", "status"] == "failed"
    assert index.loc["broken", "error"].startswith("UserError: ")
    text = (out / "broken.error.txt").read_text()
    assert "Traceback" in text and "_run_one" in text and "data.root" in text


def test_a_sweeps_base_scenario_reads_its_relative_files_from_its_own_folder(
    tmp_path, monkeypatch, capsys
):
    """A base scenario naming a relative CSV layout and channel-profile file runs in a
    sweep as it runs alone: the names are taken relative to the scenario's folder (not
    the working directory, nor the sweep file's) in validate and a local sweep."""
    from netfl.cli.app import main
    from tests.test_channel_profile_file import PROFILE

    cells = tmp_path / "cells"
    cells.mkdir()
    (cells / "profiles.yaml").write_text(yaml.safe_dump({"profiles": {"mine": PROFILE}}))
    (cells / "ues.csv").write_text("x_m,y_m\n10,0\n0,20\n-30,0\n0,-40\n")
    base = tiny_scenario(
        cell={
            "radius_m": 200,
            "link": {
                "mode": "ofdma",
                "channel_profile": "mine",
                "channel_profile_file": "profiles.yaml",
            },
        },
        devices={"count": 4, "layout": {"kind": "csv", "file": "ues.csv"}},
        outputs={"figures": False, "progress": False, "checkpoint_every": 1},
    )
    (cells / "base.yaml").write_text(yaml.safe_dump(base))
    sweeps = tmp_path / "sweeps"
    sweeps.mkdir()
    sweep = sweeps / "s.sweep.yaml"
    sweep.write_text(yaml.safe_dump({"name": "rel", "base": "../cells/base.yaml", "seeds": [1, 2]}))
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    assert main(["run", str(cells / "base.yaml"), "--out", "alone", "--no-progress"]) == 0
    assert main(["validate", str(sweep)]) == 0
    out = tmp_path / "out"
    assert main(["sweep", str(sweep), "--out", str(out), "--no-progress"]) == 0, capsys.readouterr()
    index = pd.read_csv(out / "sweep.csv")
    assert list(index["status"]) == ["complete", "complete"]
    for run_dir in (out / "seed1", elsewhere / "alone"):
        devices = pd.read_csv(run_dir / "devices.csv").query("kind != 'bs'")
        assert sorted(devices["x_m"].round(6).tolist()) == [-30, 0, 0, 10]


def test_the_index_marks_a_run_stopped_before_its_end_interrupted(tmp_path, monkeypatch):
    """A run directory whose manifest says the run did not finish (an interrupted
    ``netfl run --resume`` of it, say) is indexed as interrupted, with its rows
    summarised, never as complete (a report would average it with the whole ones)."""
    import json

    import netfl.sweep.run

    runs = expand(*load_sweep(_write(tmp_path, {"grid": {"devices.count": [2, 3]}})))
    out = tmp_path / "out"
    run_sweep(runs, out)
    manifest = out / "count=2" / "manifest.json"
    man = json.loads(manifest.read_text())
    manifest.write_text(json.dumps({**man, "complete": False, "stop_reason": "interrupted"}))

    def interrupted(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(netfl.sweep.run, "_run_local", interrupted)
    with pytest.raises(KeyboardInterrupt):
        run_sweep(runs, out)
    index = pd.read_csv(out / "sweep.csv").set_index("run")
    assert index.loc["count=2", "status"] == "interrupted"
    assert index.loc["count=2", "rounds"] == 2  # (its finished rounds, summarised)
    assert index.loc["count=3", "status"] == "complete"


def test_a_sweep_directory_that_cannot_be_created_is_one_line(tmp_path, monkeypatch, capsys):
    """A path that passes the writability check but cannot be made (``/proc/x`` as
    root, a full disk): exit 2, one line naming it."""
    from pathlib import Path

    path = _write(tmp_path, {"grid": {"devices.count": [2]}})
    out = tmp_path / "out"
    real = Path.mkdir

    def refusing(self, *args, **kwargs):
        if self == out:
            raise OSError(28, "No space left on device")
        return real(self, *args, **kwargs)

    monkeypatch.setattr(Path, "mkdir", refusing)
    assert main(["sweep", str(path), "--out", str(out), "--no-progress"]) == 2
    err = capsys.readouterr().err.strip()
    assert err == f"error: cannot create the sweep directory {out} (No space left on device)"


@pytest.mark.parametrize("sigint", ["default", "ignored"])
def test_sigterm_to_a_local_pool_sweep_stops_its_runs(tmp_path, sigint):
    """SIGTERM sent to the sweep's process alone (as a scheduler does) stops the runs in
    its pool's workers too, not only the sweep: it exits at once (143), every run in
    flight is indexed as interrupted, and no worker outlives it — also when it was
    started in the background with Ctrl-C ignored (``netfl sweep ... &``)."""
    import contextlib
    import os
    import signal
    import subprocess
    import sys
    import time
    from pathlib import Path

    from tests.conftest import default_sigint

    path = _write(
        tmp_path,
        {"grid": {"devices.count": [2, 3, 4]}},
        base=tiny_scenario(training={"rounds": 100_000}, outputs={"figures": False}),
    )
    out = tmp_path / "out"
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parent.parent)}
    proc = subprocess.Popen(
        [sys.executable, "-m", "netfl", "sweep", str(path), "--out", str(out)]
        + ["--workers", "2", "--no-progress"],
        stderr=subprocess.PIPE,
        text=True,
        env=env,
        preexec_fn=default_sigint
        if sigint == "default"
        else (lambda: signal.signal(signal.SIGINT, signal.SIG_IGN)),
    )
    try:
        # (the two workers started: on a loaded machine that takes longer than the
        # 4 s it takes on an idle one; then they are running their first runs)
        deadline, workers = time.time() + 120.0, []
        while time.time() < deadline and len(workers) < 2:
            time.sleep(0.5)
            workers = subprocess.run(
                ["pgrep", "-P", str(proc.pid)], capture_output=True, text=True
            ).stdout.split()
        assert len(workers) >= 2
        time.sleep(3.0)
        t0 = time.time()
        proc.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=60)
    finally:  # (a failure leaves no sweep of 100,000 rounds behind)
        if proc.poll() is None:
            for pid in subprocess.run(
                ["pgrep", "-P", str(proc.pid)], capture_output=True, text=True
            ).stdout.split():
                os.kill(int(pid), signal.SIGKILL)
            proc.kill()
            proc.communicate()
    try:
        assert proc.returncode == 143, err
        assert time.time() - t0 < 15.0  # (the runs would go on for minutes)
        for pid in workers:
            assert (
                not os.path.exists(f"/proc/{pid}")
                or "zombie" in open(f"/proc/{pid}/status").read().lower()
            )
    finally:  # (checked first: a worker that outlived the sweep fails the test, then goes)
        for pid in workers:
            with contextlib.suppress(ProcessLookupError):
                os.kill(int(pid), signal.SIGKILL)
    index = pd.read_csv(out / "sweep.csv")
    assert set(index["status"]) <= {"interrupted", "failed"} and len(index) == 3
