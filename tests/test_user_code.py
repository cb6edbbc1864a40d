"""User code that fails (netfl.core.usercode): every entry point into a researcher's own
code — a plugin's import, its algorithm's construction, rounds, evaluation and
``state_dict``, its model builder, data-set loader and partition — failing by raising,
by ``sys.exit(0)``, by ``KeyboardInterrupt`` or by returning ``None``: the CLI prints one
line naming the plugin and exits 1 (never 0, never 130, never a traceback); a failure
after a finished round keeps that round in a run directory marked ``failed``, and
``netfl run --resume`` after the fix gives exactly the uninterrupted run's tables."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest
import yaml

from netfl.cli.app import main
from tests.conftest import tiny_scenario
from tests.test_plugins import clean_registry  # noqa: F401 (autouse: what a plugin registered goes)

#: a plugin whose every entry point fails as ``mode.txt`` beside it says
#: (``WHERE:HOW``, read at each call: writing it empty is the fix)
PLUGIN = '''
import os
from pathlib import Path

import numpy as np
import torch

from netfl import register_dataset, register_model, register_partition
from netfl.algorithms import FedAvg, register
from netfl.learning.datasets import load_dataset

HERE = Path(__file__).parent


def fail(where):
    """Fail here if mode.txt says so; True: return None instead."""
    text = (HERE / "mode.txt").read_text().strip()
    at, _, how = text.partition(":")
    if at != where:
        return False
    if how == "raise":
        raise RuntimeError(f"boom in {where}")
    if how == "exit0":
        raise SystemExit(0)
    if how == "interrupt":
        raise KeyboardInterrupt
    if how == "osexit" and os.getpid() != int((HERE / "driver.pid").read_text()):
        os._exit(0)  # (in a sweep's pool worker only)
    return how == "none"


fail("import")


def build(input_shape, num_classes):
    if fail("model"):
        return None
    return torch.nn.Sequential(
        torch.nn.Flatten(), torch.nn.Linear(int(np.prod(input_shape)), num_classes)
    )


def load(root, test_fraction, seed, **options):
    if fail("dataset"):
        return None
    return load_dataset("digits", root, test_fraction, seed)


def split(labels, num_devices, rng):
    if fail("partition"):
        return None
    return np.array_split(rng.permutation(len(labels)), num_devices)


register_model("ucmodel", build)
register_dataset("ucdata", load)
register_partition("ucsplit", split)


@register
class Fragile(FedAvg):
    """FedAvg whose entry points fail on request (a test plugin)."""

    name = "fragile"

    def __init__(self, world, config):
        fail("init")
        super().__init__(world, config)
        self.evaluations = 0

    def round(self, r):
        if r == 1 and fail("round"):
            return None
        return (yield from super().round(r))

    def evaluate(self):
        self.evaluations += 1
        if self.evaluations == 2 and fail("evaluate"):
            return None
        return super().evaluate()

    def state_dict(self):
        state = super().state_dict()
        if self.evaluations == 2 and fail("state_dict"):
            return None
        return {**state, "evaluations": self.evaluations}

    def load_state_dict(self, state):
        state = dict(state)
        self.evaluations = int(state.pop("evaluations"))
        super().load_state_dict(state)
'''

HOWS = ("raise", "exit0", "interrupt", "none")
#: where a failure comes before any round finished (nothing to keep)
BEFORE = ("import", "init", "model", "dataset", "partition")
#: where it comes in round 1, after round 0 finished
DURING = ("round", "evaluate", "state_dict")
CASES = [
    (where, how)
    for where in BEFORE + DURING
    for how in HOWS
    if not (how == "none" and where in ("import", "init"))  # (nothing is returned there)
]


def _study(folder: Path, mode: str) -> Path:
    """The plugin, its mode and a 3-round learning scenario using all it registers."""
    (folder / "fragile.py").write_text(PLUGIN)
    (folder / "mode.txt").write_text(mode)
    data = tiny_scenario(
        plugins=["fragile.py"],
        algorithm={"name": "fragile"},
        model={"name": "ucmodel"},
        data={"dataset": "ucdata", "partition": {"scheme": "ucsplit"}},
        training={"rounds": 3, "batch_size": 16},
        learning={"mode": "learn"},
        outputs={"figures": False, "progress": False, "dir": str(folder / "runs")},
    )
    path = folder / "s.yaml"
    path.write_text(yaml.safe_dump(data))
    return path


def _tables(run_dir: Path) -> dict[str, pd.DataFrame]:
    return {
        "rounds": pd.read_csv(run_dir / "rounds.csv"),
        "devices": pd.read_csv(run_dir / "devices.csv"),
        "transfers": pd.read_parquet(run_dir / "transfers.parquet"),
        "computes": pd.read_parquet(run_dir / "computes.parquet"),
    }


@pytest.mark.parametrize(("where", "how"), CASES, ids=[f"{w}-{h}" for w, h in CASES])
def test_failing_user_code_is_one_line_exit_1_and_keeps_finished_rounds(
    where, how, tmp_path, capsys
):
    path = _study(tmp_path, f"{where}:{how}")
    out = tmp_path / "run"
    code = main(["run", str(path), "--out", str(out), "--no-progress"])
    err = capsys.readouterr().err
    lines = err.strip().splitlines()
    assert code == 1, err
    assert len(lines) == 1 and lines[0].startswith("error: ") and "Traceback" not in err, err
    assert "fragile.py" in lines[0], lines[0]
    if where in BEFORE:
        assert not out.exists() or not any(out.iterdir())  # (nothing had finished)
        return
    assert "round 1" in lines[0] or "after round 1" in lines[0], lines[0]
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["status"] == "failed" and manifest["complete"] is False
    assert manifest["error"] in lines[0]
    # round 0 kept (and round 1 too when only its state_dict failed: it had finished)
    assert len(pd.read_csv(out / "rounds.csv")) == (2 if where == "state_dict" else 1)
    assert "--resume" in lines[0]


@pytest.mark.parametrize("where", DURING)
def test_resume_after_the_fix_equals_the_uninterrupted_run(where, tmp_path, capsys):
    path = _study(tmp_path, f"{where}:raise")
    out = tmp_path / "run"
    assert main(["run", str(path), "--out", str(out), "--no-progress"]) == 1
    (tmp_path / "mode.txt").write_text("")  # the fix
    assert main(["run", "--resume", str(out), "--no-progress"]) == 0
    whole = tmp_path / "whole"
    assert main(["run", str(path), "--out", str(whole), "--no-progress"]) == 0
    capsys.readouterr()
    ours, theirs = _tables(out), _tables(whole)
    for name in ours:
        pd.testing.assert_frame_equal(ours[name], theirs[name], obj=name)
    assert json.loads((out / "manifest.json").read_text())["status"] == "complete"


def test_debug_shows_the_plugins_traceback(tmp_path, capsys):
    path = _study(tmp_path, "round:raise")
    assert main(["--debug", "run", str(path), "--out", str(tmp_path / "r"), "--no-progress"]) == 1
    err = capsys.readouterr().err
    assert "Traceback" in err and 'raise RuntimeError(f"boom in {where}")' in err


def test_a_round_that_is_no_generator_is_named(tmp_path, capsys):
    path = _study(tmp_path, "")
    text = (tmp_path / "fragile.py").read_text()
    text = text.replace(
        "    def round(self, r):\n",
        "    def round(self, r):\n        if r == 1:\n            return 5\n",
    )
    text = text.replace("return (yield from super().round(r))", "return super().round(r)")
    (tmp_path / "fragile.py").write_text(text)
    assert main(["run", str(path), "--out", str(tmp_path / "r"), "--no-progress"]) == 1
    err = capsys.readouterr().err
    assert "round 1: round() returned 5, not a generator" in err, err


BAD_RESULTS = {
    "outputs": (
        "torch.nn.Linear(int(np.prod(input_shape)), num_classes)",
        "torch.nn.Linear(int(np.prod(input_shape)), 3)",
        "gives outputs of shape (2, 3) for a batch of 2",
    ),
    "no_parameters": (
        "    return torch.nn.Sequential(",
        "    return torch.nn.Flatten()\n    return torch.nn.Sequential(",
        "a model with no parameters",
    ),
    "lengths": (
        '    return load_dataset("digits", root, test_fraction, seed)',
        '    d = load_dataset("digits", root, test_fraction, seed)\n'
        "    d.train_y_np = d.train_y_np[:7]\n    return d",
        "train samples but 7 train labels",
    ),
}


@pytest.mark.parametrize("case", list(BAD_RESULTS))
def test_a_bad_model_or_data_set_is_named_before_a_round(case, tmp_path, capsys):
    """Outputs that do not match the classes, a model with nothing to train, x and y of
    different lengths: one line naming the plugin, not a loss function's shape error."""
    old, new, expected = BAD_RESULTS[case]
    path = _study(tmp_path, "")
    plugin = tmp_path / "fragile.py"
    assert old in plugin.read_text()
    plugin.write_text(plugin.read_text().replace(old, new))
    assert main(["run", str(path), "--out", str(tmp_path / "r"), "--no-progress"]) == 1
    err = capsys.readouterr().err
    assert expected in err and "fragile.py" in err and len(err.strip().splitlines()) == 1, err


# -- sweeps ------------------------------------------------------------------------------


def _sweep(folder: Path, grid: dict, base: dict) -> Path:
    (folder / "base.yaml").write_text(yaml.safe_dump(base))
    path = folder / "s.sweep.yaml"
    path.write_text(yaml.safe_dump({"name": "s", "base": "base.yaml", "grid": grid}))
    return path


def test_a_write_never_touches_a_siblings_temporary_folders(tmp_path):
    """Run ``lr=1``'s leftovers are cleaned by exact name: ``lr=1.5``'s folder being
    written (``.lr=1.5.XXXXXXXX.tmp``) and its replaced run set aside (``.old``) stay."""
    from netfl.loading.scenarios import parse_scenario
    from netfl.output.rundir import write_run_dir
    from netfl.sim.runner import run

    result = run(parse_scenario(tiny_scenario(training={"rounds": 1, "batch_size": 16})))
    sibling_tmp = tmp_path / ".lr=1.5.ab12cd34.tmp"
    sibling_old = tmp_path / ".lr=1.5.ab12cd34.old" / "run"
    own_tmp = tmp_path / ".lr=1.zz99yy88.tmp"  # (this run's own, killed half-way)
    for folder in (sibling_tmp, sibling_old, own_tmp):
        folder.mkdir(parents=True)
        (folder / "scenario.yaml").write_text("x")
    write_run_dir(result, tmp_path / "lr=1")
    assert (sibling_tmp / "scenario.yaml").is_file() and (sibling_old / "scenario.yaml").is_file()
    assert not own_tmp.exists() and not (tmp_path / "lr=1.5").exists()
    assert (tmp_path / "lr=1" / "manifest.json").is_file()


def test_a_two_worker_sweep_over_prefixed_names_loses_no_run(tmp_path):
    """``lr: [1, 1.5, 1.25]`` (runs ``lr=1``, ``lr=1.5``, ``lr=1.25``) on two workers, 20
    times: every run complete every time."""
    from netfl.sweep.run import expand, load_sweep, run_sweep

    base = tiny_scenario(training={"rounds": 1, "batch_size": 16}, devices={"count": 2})
    runs = expand(*load_sweep(_sweep(tmp_path, {"training.lr": [1, 1.5, 1.25]}, base)))
    assert sorted(r.name for r in runs) == ["lr=1", "lr=1.25", "lr=1.5"]
    for k in range(20):
        out = tmp_path / f"out{k}"
        index = run_sweep(runs, out, workers=2)
        assert list(index["status"]) == ["complete"] * 3, index[["run", "status", "error"]]
        assert all((out / r.name / "manifest.json").is_file() for r in runs)


def test_a_sweep_names_a_failed_run_on_stderr_keeps_its_rounds_and_exits_1(tmp_path, capsys):
    (tmp_path / "fragile.py").write_text(PLUGIN)
    (tmp_path / "mode.txt").write_text("round:raise")
    base = tiny_scenario(plugins=["fragile.py"], algorithm={"name": "fragile"})
    base["training"]["rounds"] = 3
    path = _sweep(tmp_path, {"devices.count": [2, 3]}, base)
    out = tmp_path / "out"
    assert main(["sweep", str(path), "--out", str(out), "--no-progress"]) == 1
    err = capsys.readouterr().err
    failed = [line for line in err.splitlines() if line.startswith("error: run ")]
    assert len(failed) == 2 and all("boom in round" in line for line in failed), err
    index = pd.read_csv(out / "sweep.csv")
    assert list(index["status"]) == ["failed", "failed"]
    assert (index["rounds"] == 1).all()  # (the finished round, summarised)
    assert json.loads((out / "count=2" / "manifest.json").read_text())["status"] == "failed"
    (tmp_path / "mode.txt").write_text("")  # the fix: the same command finishes them
    assert main(["sweep", str(path), "--out", str(out), "--no-progress"]) == 0
    assert list(pd.read_csv(out / "sweep.csv")["rounds"]) == [3, 3]


def test_a_pool_worker_that_exits_is_a_failed_run(tmp_path, capsys):
    """``os._exit(0)`` in a pool worker's run (nothing Python can catch in that process):
    the sweep finds no complete manifest, names the run failed and exits 1."""
    import os

    (tmp_path / "fragile.py").write_text(PLUGIN)
    (tmp_path / "mode.txt").write_text("round:osexit")
    (tmp_path / "driver.pid").write_text(str(os.getpid()))
    base = tiny_scenario(plugins=["fragile.py"], algorithm={"name": "fragile"})
    base["training"]["rounds"] = 3
    path = _sweep(tmp_path, {"devices.count": [2, 3]}, base)
    code = main(["sweep", str(path), "--out", str(tmp_path / "out"), "--workers", "2"])
    err = capsys.readouterr().err
    assert code == 1
    assert "error: run count=2 failed" in err and "worker" in err, err
    index = pd.read_csv(tmp_path / "out" / "sweep.csv")
    assert list(index["status"]) == ["failed", "failed"]


# -- Flower apps -------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("side", "how"),
    [("client", "exit1"), ("client", "exit0"), ("client", "interrupt"), ("server", "exit0")],
)
def test_a_flower_app_that_exits_or_interrupts_is_a_failure(side, how, tmp_path, capsys):
    """``sys.exit`` or ``KeyboardInterrupt`` in a ClientApp's handler (in round 2, after a
    finished round) or in the ServerApp: one line naming the app, exit 1."""
    from tests.algorithms.test_flower import APPS, _flower_data

    config = (
        {"num-server-rounds": 3, "fail-node": 1, "fail-round": 2, "fail-how": how}
        if side == "client"
        else {"num-server-rounds": 1, "server-fails": True, "fail-how": how}
    )
    data = _flower_data(
        learning={"mode": "learn"},
        algorithm={"name": "flower", **APPS, "run_config": config},
        outputs={"figures": False, "progress": False},
    )
    path = tmp_path / "s.yaml"
    path.write_text(yaml.safe_dump(data))
    out = tmp_path / "run"
    code = main(["run", str(path), "--out", str(out), "--no-progress"])
    err = capsys.readouterr().err
    lines = err.strip().splitlines()
    assert code == 1, err
    assert len(lines) == 1 and "Traceback" not in err, err
    if side == "client":
        assert "ue1" in lines[0] and ("SystemExit" in lines[0] or "KeyboardInterrupt" in lines[0])
        assert json.loads((out / "manifest.json").read_text())["status"] == "failed"
    else:
        assert "SystemExit" in lines[0] and "server_app" in lines[0], lines[0]


def test_a_flower_app_module_that_exits_at_import_is_exit_1(tmp_path, capsys):
    (tmp_path / "exiting_app.py").write_text("import sys\nsys.exit(0)\n")
    from tests.algorithms.test_flower import _flower_data

    data = _flower_data(
        learning={"mode": "learn"},
        algorithm={
            "name": "flower",
            "server_app": "exiting_app:server",
            "client_app": "exiting_app:client",
            "app_dir": str(tmp_path),
        },
    )
    path = tmp_path / "s.yaml"
    path.write_text(yaml.safe_dump(data))
    assert main(["validate", str(path)]) == 1
    err = capsys.readouterr().err
    assert "exiting_app.py:2" in err and "SystemExit: exit code 0" in err, err
    assert len(err.strip().splitlines()) == 1, err
    data["algorithm"]["app_dir"] = str(tmp_path / "absent")
    path.write_text(yaml.safe_dump(data))
    assert main(["validate", str(path)]) == 2
    err = capsys.readouterr().err
    assert "algorithm.app_dir: no folder" in err and len(err.strip().splitlines()) == 1, err


# -- nothing hangs on valid-looking input ------------------------------------------------

#: a cell whose background users keep the clock busy (what made waits hang)
BUSY_CELL = {
    "radius_m": 150,
    "link": {"mode": "ofdma", "channel_profile": "nr_fr1_uma"},
    "cues": {"density_per_km2": 2000, "session_rate_per_s": 0.02, "mean_session_s": 30.0},
}
NEVER_BACK = {"model": "markov", "mean_on_s": 0.001, "mean_off_s": 1e9}


@pytest.mark.parametrize("name", ["fedavg", "fedbuff", "fedasync"])
def test_devices_that_never_return_stop_the_run_with_one_line(name, tmp_path, capsys):
    data = tiny_scenario(
        cell=BUSY_CELL,
        devices={"count": 4, "availability": NEVER_BACK},
        algorithm={"name": name},
        outputs={"figures": False, "progress": False},
    )
    path = tmp_path / "s.yaml"
    path.write_text(yaml.safe_dump(data))
    assert main(["run", str(path), "--out", str(tmp_path / "r"), "--no-progress"]) == 2
    err = capsys.readouterr().err
    assert "devices.availability: no device is on" in err and "86400 s" in err, err
    assert len(err.strip().splitlines()) == 1, err


def test_async_devices_in_flight_are_no_reason_to_stop():
    """With devices in flight a slot waits for one to finish, however far the next
    return is (long on-periods: nobody is off)."""
    from netfl.loading.scenarios import parse_scenario
    from netfl.sim.runner import run

    data = tiny_scenario(
        devices={
            "count": 4,
            "availability": {"model": "markov", "mean_on_s": 1e6, "mean_off_s": 1e6},
        },
        algorithm={"name": "fedasync"},
        training={"rounds": 10, "batch_size": 16},
    )
    assert len(run(parse_scenario(data)).rounds) == 10


def test_a_time_budget_bounds_the_wait_instead():
    """With ``training.time_budget_s`` the run waits as long as the budget allows and
    ends by it (no error)."""
    from netfl.loading.scenarios import parse_scenario
    from netfl.sim.runner import run

    data = tiny_scenario(
        devices={
            "count": 2,
            "availability": {"model": "markov", "mean_on_s": 0.5, "mean_off_s": 50},
        },
        training={"rounds": 1000, "batch_size": 16, "time_budget_s": 30.0},
    )
    result = run(parse_scenario(data))
    assert result.stop_reason == "time_budget" and result.rounds["sim_time_s"].iloc[-1] >= 30.0


def test_fedbuffs_buffer_must_fit_the_devices_training_at_once(tmp_path, capsys):
    data = tiny_scenario(algorithm={"name": "fedbuff", "buffer_size": 100_000})
    path = tmp_path / "s.yaml"
    path.write_text(yaml.safe_dump(data))
    assert main(["validate", str(path)]) == 2
    err = capsys.readouterr().err
    assert "algorithm.buffer_size: 100000 updates per server step, but at most 4" in err, err
    data["algorithm"] = {"name": "fedbuff", "buffer_size": 3, "concurrency": 2}
    path.write_text(yaml.safe_dump(data))
    assert main(["validate", str(path)]) == 2
    assert "concurrency 2" in capsys.readouterr().err
    from netfl.loading.scenarios import parse_scenario
    from netfl.sim.runner import run

    data["algorithm"] = {"name": "fedbuff"}  # (default K: 10, here the 4 devices)
    result = run(parse_scenario({**data, "training": {"rounds": 2, "batch_size": 16}}))
    assert (result.rounds["updates"] == 4).all()


def test_more_threads_than_cpus_is_one_line(tmp_path, capsys):
    import os

    data = tiny_scenario(learning={"mode": "learn", "num_threads": 1024})
    path = tmp_path / "s.yaml"
    path.write_text(yaml.safe_dump(data))
    assert main(["run", str(path), "--out", str(tmp_path / "r"), "--no-progress"]) == 2
    err = capsys.readouterr().err
    cpus = len(os.sched_getaffinity(0))
    assert "learning.num_threads: 1024 threads per job" in err and f"{cpus} CPUs" in err, err


def test_a_closed_standard_output_ends_quietly(tmp_path):
    """``netfl schema | head -1``: the reader leaves after one line of 128 KB; no
    traceback, exit 141 (a shell's code for it)."""
    import subprocess
    import sys

    proc = subprocess.Popen(
        [sys.executable, "-m", "netfl", "schema"], stdout=subprocess.PIPE, stderr=subprocess.PIPE
    )
    proc.stdout.readline()
    proc.stdout.close()
    err = proc.stderr.read().decode()
    assert proc.wait() == 141 and "Traceback" not in err and "Error" not in err, err


FAILS = {"raise": "raise RuntimeError('bad forward')", "exit0": "sys.exit(0)"}
#: a plugin model whose forward fails (line 14) on a training batch
BADNET = """import sys
import numpy as np
import torch
from netfl import register_model


class Net(torch.nn.Module):
    def __init__(self, shape, classes):
        super().__init__()
        self.fc = torch.nn.Linear(int(np.prod(shape)), classes)

    def forward(self, x):
        if x.shape[0] > 4:  # (a training batch: not the checks' or the FLOP count's)
            {fail}
        return self.fc(x.flatten(1))


register_model("badnet", Net)
"""


@pytest.mark.parametrize("how", list(FAILS))
def test_user_code_failing_in_a_process_executors_worker_is_named(how, tmp_path, capsys):
    """A plugin model's forward failing inside a pool worker (whose traceback does not
    cross processes): one line naming the plugin's file and line, exit 1."""
    (tmp_path / "badnet.py").write_text(BADNET.format(fail=FAILS[how]))
    data = tiny_scenario(
        plugins=["badnet.py"],
        model={"name": "badnet"},
        learning={"mode": "learn", "executor": "process", "workers": 2},
    )
    path = tmp_path / "s.yaml"
    path.write_text(yaml.safe_dump(data))
    assert main(["run", str(path), "--out", str(tmp_path / "r"), "--no-progress"]) == 1
    err = capsys.readouterr().err
    assert "badnet.py:14 in forward" in err and len(err.strip().splitlines()) == 1, err


def test_user_code_failing_in_a_ray_actor_is_named_there(tmp_path):
    """A Ray actor's job (run here, as the actor runs it: Ray keeps a job's traceback in
    the actor's process) names the plugin's file and line, with the labels the driver
    passed it."""
    from netfl.core.usercode import user_code_labels
    from netfl.errors import UserCodeError
    from netfl.learning.parallel import _RayWorker
    from netfl.learning.tasks import TrainTask
    from netfl.loading.scenarios import load_scenario
    from netfl.sim.world import World

    (tmp_path / "badnet.py").write_text(BADNET.format(fail=FAILS["raise"]))
    path = tmp_path / "s.yaml"
    path.write_text(
        yaml.safe_dump(
            tiny_scenario(
                plugins=["badnet.py"], model={"name": "badnet"}, learning={"mode": "learn"}
            )
        )
    )
    world = World(load_scenario(path))
    try:
        device = world.devices[0]
        task = TrainTask(
            model="badnet",
            state=world.init_model_state(),
            indices=world.partitions[device.index],
            config=world.train_config,
            seed=1,
        )
        actor = _RayWorker(world.executor.context, 1, user_code_labels())
        with pytest.raises(UserCodeError, match=r"badnet\.py:14 in forward\) raised RuntimeError"):
            actor.run(task)
    finally:
        world.close()


def test_netfl_run_into_a_closed_pipe_ends_quietly(tmp_path):
    """``netfl run … | head -1`` whose reader has left before the run prints: the run
    directory is whole, no traceback, the closed-pipe exit code."""
    import subprocess
    import sys

    path = tmp_path / "s.yaml"
    path.write_text(yaml.safe_dump(tiny_scenario(training={"rounds": 1, "batch_size": 16})))
    out = tmp_path / "r"
    proc = subprocess.Popen(
        [sys.executable, "-m", "netfl", "run", str(path), "--out", str(out), "--no-progress"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    proc.stdout.close()  # (the reader is gone before the first line)
    err = proc.stderr.read().decode()
    assert proc.wait() == 141 and "Traceback" not in err and "Error" not in err, err
    assert json.loads((out / "manifest.json").read_text())["status"] == "complete"
