"""A researcher's own algorithm without editing netfl (issue 33, plugins): a ``.py``
file or module named by the scenario's ``plugins`` key, or an installed package's
``netfl.algorithms`` entry point, registered before validation and used by ``run``,
``validate``, ``list``, sweeps (a local pool, Ray) and ``--resume``; every problem is
one line naming the key."""

from __future__ import annotations

import importlib
import json
import sys
from pathlib import Path

import pandas as pd
import pytest
import yaml

from netfl.algorithms import ALGORITHMS
from netfl.cli.app import main
from netfl.loading import plugins
from tests.conftest import tiny_scenario

#: a plugin: FedAvg whose devices train twice as many epochs (a visible difference)
PLUGIN = """
from pydantic import Field

from netfl.algorithms import FedAvg, FedAvgConfig, register


class TwiceConfig(FedAvgConfig):
    factor: int = Field(2, ge=1, le=10)


@register
class {cls}(FedAvg):
    {doc}
    name = "{name}"
    Config = TwiceConfig

    def local_update(self, r, device, state, epochs=None, seed_key=(), proximal_weight=0.0):
        return super().local_update(
            r, device, state, self.config.factor * self.world.train_config.epochs,
            seed_key, proximal_weight,
        )
"""


def _plugin_text(name: str = "twice", doc: bool = True) -> str:
    docstring = '"""FedAvg with k times the local epochs (a test plugin)."""' if doc else "pass"
    return PLUGIN.format(cls=name.title().replace("_", ""), name=name, doc=docstring)


@pytest.fixture(autouse=True)
def clean_registry():
    """Plugins registered by a test leave the registries (and sys.modules) as they were."""
    algorithms, origins, loaded = dict(ALGORITHMS), dict(plugins._ORIGIN), dict(plugins._LOADED)
    modules, path = set(sys.modules), list(sys.path)
    before = plugins._snapshot()
    yield
    plugins._forget(before)
    sys.path[:] = path
    ALGORITHMS.clear()
    ALGORITHMS.update(algorithms)
    plugins._ORIGIN.clear()
    plugins._ORIGIN.update(origins)
    plugins._LOADED.clear()
    plugins._LOADED.update(loaded)
    for name in set(sys.modules) - modules:
        if name.startswith(("netfl_plugin_", "epplug", "helper_for_")):
            del sys.modules[name]


def _scenario_file(folder: Path, **sections) -> Path:
    outputs = {"figures": False, "progress": False, "dir": str(folder / "runs")}
    sections["outputs"] = {**outputs, **sections.get("outputs", {})}
    data = tiny_scenario(**sections)
    path = folder / "s.yaml"
    path.write_text(yaml.safe_dump(data))
    return path


def test_a_plugin_file_runs_validates_lists_and_is_recorded(tmp_path, capsys, monkeypatch):
    """A ``.py`` file next to the scenario registers its algorithm; the run directory's
    scenario names it by absolute path (from any working directory)."""
    folder = tmp_path / "study"
    folder.mkdir()
    (folder / "twice.py").write_text(_plugin_text())
    path = _scenario_file(
        folder, plugins=["twice.py"], algorithm={"name": "twice"}, learning={"mode": "learn"}
    )
    monkeypatch.chdir(tmp_path)  # (not the scenario's folder)
    assert main(["validate", str(path)]) == 0
    out = tmp_path / "run"
    assert main(["run", str(path), "--out", str(out), "--no-progress"]) == 0
    stored = yaml.safe_load((out / "scenario.yaml").read_text())
    assert stored["plugins"] == [str((folder / "twice.py").resolve())]
    assert stored["algorithm"] == {
        "name": "twice",
        "fraction": 1.0,
        "min_clients": 1,
        "downlink": "unicast",
        "deadline_s": None,
        "uplink_codec": {"name": "none", "options": None},
        "downlink_codec": {"name": "none", "options": None},
        "aggregation": "digital",
        "over_the_air": {"gain_threshold": 0.1, "noise": True},
        "factor": 2,
    }
    # the plugin's epochs are charged: twice FedAvg's compute per device and round
    base = tmp_path / "base"
    fedavg = _scenario_file(tmp_path, algorithm={"name": "fedavg"}, learning={"mode": "learn"})
    assert main(["run", str(fedavg), "--out", str(base), "--no-progress"]) == 0
    ours = pd.read_parquet(out / "computes.parquet").query("kind == 'train'")
    theirs = pd.read_parquet(base / "computes.parquet").query("kind == 'train'")
    assert ours["flops"].sum() == pytest.approx(2 * theirs["flops"].sum())
    capsys.readouterr()
    assert main(["list", "algorithms", "--plugin", str(folder / "twice.py")]) == 0
    line = next(x for x in capsys.readouterr().out.splitlines() if x.strip().startswith("twice"))
    assert "FedAvg with k times the local epochs" in line and "[plugin " in line


def test_a_plugin_in_a_two_worker_sweep_and_a_resume(tmp_path, capsys):
    """A sweep's worker processes run the plugin's algorithm, and a run interrupted
    after its checkpoint resumes with it (the checkpoint's scenario names the file)."""
    (tmp_path / "twice.py").write_text(_plugin_text())
    base = _scenario_file(
        tmp_path,
        plugins=["twice.py"],
        algorithm={"name": "twice"},
        training={"rounds": 4, "batch_size": 16},
        outputs={"figures": False, "progress": False, "checkpoint_every": 1},
    )
    _sweep_then_resume(tmp_path, base, "twice", "netfl_plugin_twice")


def test_a_plugin_in_a_ray_sweep(tmp_path, ray_local):
    """A Ray task's process imports the plugin from the scenario's absolute path."""
    from netfl.sweep.run import expand, load_sweep, run_sweep

    (tmp_path / "twice.py").write_text(_plugin_text())
    _scenario_file(tmp_path, plugins=["twice.py"], algorithm={"name": "twice"})
    sweep = tmp_path / "s.sweep.yaml"
    sweep.write_text(yaml.safe_dump({"name": "pl", "base": "s.yaml", "seeds": [1, 2]}))
    index = run_sweep(expand(*load_sweep(sweep)), tmp_path / "out", workers=2, backend="ray")
    assert list(index["status"]) == ["complete", "complete"], index["error"].tolist()


def _entry_point_package(folder: Path, name: str, module_text: str, value: str) -> None:
    """An installed distribution as pip leaves it: a module and its ``dist-info`` with
    an ``entry_points.txt`` declaring ``netfl.algorithms``."""
    pkg = folder / "epplug"
    pkg.mkdir()
    (pkg / "__init__.py").write_text(module_text)
    info = folder / "epplug-0.1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: epplug\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text(f"[netfl.algorithms]\n{name} = {value}\n")


def test_an_entry_point_algorithm_needs_no_plugins_key(tmp_path, monkeypatch, capsys):
    """``algorithm.name`` alone finds an installed package's entry point (a class that
    its module did not register is registered for it); list says where it came from."""
    text = _plugin_text("ep_twice").replace("@register\n", "")
    _entry_point_package(tmp_path, "ep_twice", text, "epplug:EpTwice")
    monkeypatch.syspath_prepend(str(tmp_path))
    importlib.invalidate_caches()
    path = _scenario_file(tmp_path, algorithm={"name": "ep_twice", "factor": 3})
    out = tmp_path / "run"
    assert main(["run", str(path), "--out", str(out), "--no-progress"]) == 0
    assert json.loads((out / "manifest.json").read_text())["algorithm"] == "ep_twice"
    capsys.readouterr()
    assert main(["list", "algorithms"]) == 0
    listing = capsys.readouterr().out
    assert "[entry point ep_twice = epplug:EpTwice (epplug)]" in listing


def test_an_entry_point_algorithm_in_a_two_worker_sweep_and_a_resume(tmp_path, monkeypatch):
    """The sweep's worker processes find the installed entry point by the algorithm's
    name alone, and a run interrupted after its checkpoint resumes with it."""
    text = _plugin_text("ep_sweep").replace("@register\n", "")
    _entry_point_package(tmp_path, "ep_sweep", text, "epplug:EpSweep")
    monkeypatch.syspath_prepend(str(tmp_path))
    importlib.invalidate_caches()
    base = _scenario_file(
        tmp_path,
        algorithm={"name": "ep_sweep"},
        training={"rounds": 4, "batch_size": 16},
        outputs={"figures": False, "progress": False, "checkpoint_every": 1},
    )
    _sweep_then_resume(tmp_path, base, "ep_sweep", "epplug")


@pytest.mark.parametrize(
    ("files", "spec", "expected"),
    [
        ({}, "no_such_plugin_module", "plugins[0]: no module named 'no_such_plugin_module'"),
        ({}, "missing.py", "plugins[0]: no plugin file "),
        (
            {"bad.py": "raise RuntimeError('my plugin is broken\\nsecond line')"},
            "bad.py",
            "bad.py: import (bad.py:1 in <module>) raised RuntimeError: my plugin is broken",
        ),
        (
            {"clash.py": _plugin_text("fedavg")},
            "clash.py",
            "clash.py: algorithm 'fedavg' is already a built-in; give yours another name",
        ),
        (
            {
                "notalgo.py": "from netfl.algorithms import register\n\n@register\nclass X:\n    name = 'x'\n"
            },
            "notalgo.py",
            "'X' is no netfl algorithm (subclass netfl.Algorithm",
        ),
        (
            {"badimport.py": "import no_such_dependency_xyz\n"},
            "badimport.py",
            "badimport.py raised ModuleNotFoundError: No module named 'no_such_dependency_xyz'",
        ),
    ],
    ids=["module_not_found", "file_not_found", "raises", "clash", "not_an_algorithm", "dependency"],
)
def test_a_bad_plugin_is_one_line_naming_the_key(files, spec, expected, tmp_path, capsys):
    for name, text in files.items():
        (tmp_path / name).write_text(text)
    path = _scenario_file(tmp_path, plugins=[spec])
    # the plugin's own code failing is exit 1; a plugin that cannot be found or
    # registered is bad input, exit 2
    assert main(["validate", str(path)]) == (1 if spec == "bad.py" else 2)
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "Traceback" not in err, err
    assert expected in err, err


def test_two_plugins_with_one_name_and_an_unknown_algorithm(tmp_path, capsys):
    (tmp_path / "a.py").write_text(_plugin_text("same"))
    (tmp_path / "b.py").write_text(_plugin_text("same"))
    assert main(["validate", str(_scenario_file(tmp_path, plugins=["a.py", "b.py"]))]) == 2
    err = capsys.readouterr().err
    assert "plugins[1]: " in err and "algorithm 'same' is already plugin " in err
    assert main(["validate", str(_scenario_file(tmp_path, algorithm={"name": "fedprox"}))]) == 2
    assert "`plugins: [my_algorithm.py]`" in capsys.readouterr().err


def test_a_class_without_a_docstring_lists_fine(tmp_path, capsys):
    (tmp_path / "nodoc.py").write_text(_plugin_text("nodoc", doc=False))
    assert main(["list", "algorithms", "--plugin", str(tmp_path / "nodoc.py")]) == 0
    line = next(x for x in capsys.readouterr().out.splitlines() if x.strip().startswith("nodoc"))
    assert "(no description)" in line


def test_no_plugin_named_imports_nothing_more(tmp_path):
    """Validating a scenario that names no plugin imports neither torch nor any plugin
    (light verbs stay light)."""
    import subprocess

    path = _scenario_file(tmp_path)
    code = (
        f"import sys; from netfl.cli.app import main; rc = main(['validate', {str(path)!r}]); "
        "print(rc, 'torch' in sys.modules, any(m.startswith('netfl_plugin_') for m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.split("\n")[-2] == "0 False False"


def test_fedprox_example_with_mu_zero_is_fedavg_bit_for_bit(tmp_path):
    """``examples/fedprox``: μ = 0 gives FedAvg's losses and accuracies to the last bit;
    μ > 0 changes them (the proximal term is applied)."""
    from netfl.loading.scenarios import load_scenario
    from netfl.sim.runner import run

    example = Path(__file__).resolve().parent.parent / "examples" / "fedprox" / "fedprox.yaml"
    small = [
        "data.dataset=digits",
        "model.name=logreg",
        "devices.count=4",
        "training.rounds=3",
        "training.local_epochs=1",
        "outputs.figures=false",
    ]
    cols = ["accuracy", "loss", "sim_time_s", "device_energy_j"]
    fedprox0 = run(load_scenario(example, [*small, "algorithm.mu=0"])).rounds[cols]
    fedavg = run(load_scenario(example, [*small, "algorithm={name: fedavg}"])).rounds[cols]
    pd.testing.assert_frame_equal(fedprox0, fedavg, check_exact=True)
    fedprox1 = run(load_scenario(example, [*small, "algorithm.mu=1.0"])).rounds[cols]
    assert not fedprox1["loss"].equals(fedavg["loss"])
    pd.testing.assert_series_equal(fedprox1["sim_time_s"], fedavg["sim_time_s"])


def test_a_plugin_that_fails_half_way_can_be_fixed_and_loaded_again(tmp_path, capsys):
    """A plugin that registered an algorithm and then raised leaves nothing registered:
    the fixed file loads in the same process (a notebook, a long-lived driver)."""
    plugin = tmp_path / "half.py"
    plugin.write_text(_plugin_text("half") + "\nraise ValueError('oops')\n")
    path = _scenario_file(tmp_path, plugins=["half.py"], algorithm={"name": "half"})
    assert main(["validate", str(path)]) == 1  # (user code failed)
    assert "half.py: import (half.py:23 in <module>) raised ValueError: oops" in (
        capsys.readouterr().err
    )
    assert "half" not in ALGORITHMS
    plugin.write_text(_plugin_text("half"))
    assert main(["validate", str(path)]) == 0


def test_a_plugin_imports_a_helper_beside_it(tmp_path):
    """A ``.py`` plugin's folder is on the import path (as a script's is)."""
    (tmp_path / "helper_for_twice.py").write_text("FACTOR = 3\n")
    text = (
        _plugin_text("helped")
        .replace(
            "from pydantic import Field",
            "from helper_for_twice import FACTOR\nfrom pydantic import Field",
        )
        .replace("Field(2, ge=1, le=10)", "Field(FACTOR, ge=1, le=10)")
    )
    (tmp_path / "helped.py").write_text(text)
    from netfl.loading.scenarios import load_scenario

    path = _scenario_file(tmp_path, plugins=["helped.py"], algorithm={"name": "helped"})
    assert load_scenario(path).algorithm.name == "helped"
    assert ALGORITHMS["helped"].Config().factor == 3


#: a plugin adding one of everything else a scenario names
LAB = """
import numpy as np
from torch import nn

import netfl
from channel_models import LinkProfile
from netfl.compute.profiles import ComputeProfile
from netfl.learning.datasets import Dataset


def tiny_mlp(input_shape, num_classes):
    return nn.Sequential(nn.Flatten(), nn.Linear(int(np.prod(input_shape)), 8), nn.ReLU(),
                         nn.Linear(8, num_classes))


def blobs(root, test_fraction, seed, **options):
    rng = np.random.default_rng(seed)
    y = np.repeat(np.arange(3), 40)
    x = (rng.normal(size=(120, 1, 2, 2)) + y[:, None, None, None]).astype(np.float32)
    n = int(120 * (1 - test_fraction))
    order = rng.permutation(120)
    tr, te = order[:n], order[n:]
    return Dataset("blobs", x[tr], y[tr], x[te], y[te], 3)


def contiguous(labels, num_devices, rng, skew=0.0):
    sizes = 1.0 + skew * np.arange(num_devices)
    cuts = np.round(np.cumsum(sizes) / sizes.sum() * len(labels)).astype(int)
    return np.split(np.arange(len(labels)), cuts[:-1])


netfl.register_model("tiny_mlp", tiny_mlp, description="8 hidden units")
netfl.register_dataset("blobs", blobs, description="three Gaussian blobs")
netfl.register_partition("contiguous", contiguous, params=("skew",))
netfl.register_compute_profile(ComputeProfile("lab_board", 1e9, 2.0, 1.0, 1.5, 1.0))
netfl.register_link_profile(LinkProfile("lab_link", 1e6, 4e6, "the lab's link"))
"""


def test_a_plugin_registers_a_model_data_set_partition_and_profiles(tmp_path, capsys):
    """A run uses every entry the plugin registered: the partition's sizes by hand,
    the download at the plugin link's rate, the training at the plugin board's FLOP/s;
    ``netfl list`` names the plugin beside each of them."""
    (tmp_path / "lab.py").write_text(LAB)
    path = _scenario_file(
        tmp_path,
        plugins=["lab.py"],
        devices={"count": 3, "compute_profile": "lab_board", "link_profile": "lab_link"},
        data={"dataset": "blobs", "partition": {"scheme": "contiguous", "options": {"skew": 1}}},
        model={"name": "tiny_mlp"},
        learning={"mode": "learn"},
        training={"rounds": 2, "batch_size": 8},
    )
    out = tmp_path / "run"
    assert main(["run", str(path), "--out", str(out), "--no-progress"]) == 0
    from netfl.loading.scenarios import load_scenario
    from netfl.sim.world import World

    world = World(load_scenario(path))
    sizes = [world.num_samples(d) for d in world.devices]
    assert sizes == [16, 32, 48]  # (96 training samples in shares 1:2:3)
    transfers = pd.read_parquet(out / "transfers.parquet")
    down = transfers[transfers["kind"] == "model_down"].iloc[0]
    assert down["end_s"] - down["start_s"] == pytest.approx(down["size_bits"] / 4e6, rel=1e-9)
    computes = pd.read_parquet(out / "computes.parquet")
    train = computes[(computes["kind"] == "train") & (computes["node"] == "ue0")].iloc[0]
    assert train["end_s"] - train["start_s"] == pytest.approx(train["flops"] / 1e9, rel=1e-9)
    world.close()
    capsys.readouterr()
    assert main(["list", "--plugin", str(tmp_path / "lab.py")]) == 0
    listing = capsys.readouterr().out
    for name in ("tiny_mlp", "blobs", "contiguous", "lab_board", "lab_link"):
        line = next(line for line in listing.splitlines() if line.strip().startswith(name))
        assert "[plugin " in line and "lab.py]" in line, line


@pytest.mark.parametrize(
    ("text", "partition", "expected"),
    [
        (
            LAB.replace('"tiny_mlp", tiny_mlp', '"logreg", tiny_mlp'),
            {"scheme": "iid"},
            "lab.py: model 'logreg' is already a built-in; give yours another name",
        ),
        (
            LAB.replace("1e9, 2.0", "-1.0, 2.0"),
            {"scheme": "iid"},
            "effective_flops_per_s must be a positive number",
        ),
        (LAB, {"scheme": "iid", "options": {"skew": 1}}, "options are for a plugin's scheme"),
        (LAB, {"scheme": "contiguous", "options": {"tilt": 1}}, "options tilt do not apply"),
        (LAB, {"scheme": "contiguous", "alpha": 1.0}, "alpha does not apply to scheme"),
    ],
    ids=["clash", "bad_profile", "options_builtin", "unknown_option", "builtin_param"],
)
def test_bad_registrations_and_partition_options_are_one_line(
    tmp_path, capsys, text, partition, expected
):
    (tmp_path / "lab.py").write_text(text)
    path = _scenario_file(tmp_path, plugins=["lab.py"], data={"partition": partition})
    assert main(["validate", str(path)]) == 2
    err = capsys.readouterr().err.strip()
    assert expected in err and len(err.splitlines()) == 1, err
    # a failed plugin takes back what it registered before failing
    from netfl.learning.catalog import MODEL_CATALOG

    if "clash" in expected or "positive" in expected:
        assert "tiny_mlp" not in MODEL_CATALOG


def test_a_plugin_partition_that_overlaps_is_refused_clearly(tmp_path, capsys):
    text = LAB.replace(
        "return np.split(np.arange(len(labels)), cuts[:-1])",
        "return [np.arange(10)] * num_devices",
    )
    (tmp_path / "lab.py").write_text(text)
    path = _scenario_file(
        tmp_path, plugins=["lab.py"], data={"partition": {"scheme": "contiguous"}}
    )
    assert main(["run", str(path), "--out", str(tmp_path / "r"), "--no-progress"]) == 2
    err = capsys.readouterr().err
    assert "scheme 'contiguous' gave a sample to two devices" in err


def test_a_plugin_model_in_a_fresh_process_is_counted_again_when_edited(tmp_path):
    """`netfl run` in a new process (the model registered before netfl's model module is
    imported); after the plugin's model is edited, its size is counted again rather than
    read from the on-disk cache of model facts."""
    import os
    import subprocess

    (tmp_path / "lab.py").write_text(LAB)
    path = _scenario_file(
        tmp_path,
        plugins=["lab.py"],
        model={"name": "tiny_mlp"},
        devices={"count": 2},
        training={"rounds": 1, "batch_size": 16},
    )
    env = {**os.environ, "NETFL_CACHE_DIR": str(tmp_path / "cache")}

    def params(out: Path) -> int:
        cmd = [sys.executable, "-m", "netfl", "run", str(path), "--out", str(out), "--no-progress"]
        done = subprocess.run(cmd, env=env, capture_output=True, text=True, cwd=tmp_path)
        assert done.returncode == 0, done.stderr
        return json.loads((out / "manifest.json").read_text())["model_params"]

    # digits: 64 inputs, 10 classes; hidden 8 → 64·8 + 8 + 8·10 + 10
    assert params(tmp_path / "a") == 64 * 8 + 8 + 8 * 10 + 10
    (tmp_path / "lab.py").write_text(
        LAB.replace(
            "8), nn.ReLU(),\n                         nn.Linear(8,",
            "32), nn.ReLU(),\n                         nn.Linear(32,",
        )
    )
    assert params(tmp_path / "b") == 64 * 32 + 32 + 32 * 10 + 10


def test_an_entry_point_that_fails_takes_back_what_it_registered(tmp_path, monkeypatch, capsys):
    text = (
        LAB + "\nfrom netfl.algorithms import FedAvg\n\nclass Other(FedAvg):\n    name = 'other'\n"
    )
    _entry_point_package(tmp_path, "ep_fail", text, "epplug:Other")
    monkeypatch.syspath_prepend(str(tmp_path))
    importlib.invalidate_caches()
    path = _scenario_file(tmp_path, algorithm={"name": "ep_fail"})
    assert main(["validate", str(path)]) == 2
    assert "the class's name is 'other', not 'ep_fail'" in capsys.readouterr().err
    from netfl.learning.catalog import MODEL_CATALOG

    assert "tiny_mlp" not in MODEL_CATALOG


def _sweep_then_resume(tmp_path: Path, base: Path, name: str, modules: str) -> None:
    """A 2-worker sweep of ``base`` (algorithm ``name``) completes; a run interrupted at
    round 2 resumes — in this process as in a new one: the algorithm and its modules
    (names starting with ``modules``) forgotten first — to the uninterrupted run's
    rounds, byte for byte."""
    sweep = tmp_path / "s.sweep.yaml"
    sweep.write_text(
        yaml.safe_dump({"name": "pl", "base": base.name, "grid": {"algorithm.factor": [1, 3]}})
    )
    out = tmp_path / "sweep"
    assert main(["sweep", str(sweep), "--workers", "2", "--out", str(out), "--no-progress"]) == 0
    assert list(pd.read_csv(out / "sweep.csv")["status"]) == ["complete", "complete"]
    import netfl.sim.runner as runner

    real = runner.check_round

    def interrupt(r, *args):
        if r == 2:
            raise KeyboardInterrupt
        return real(r, *args)

    run_dir = tmp_path / "killed"
    runner.check_round = interrupt
    try:
        assert main(["run", str(base), "--out", str(run_dir), "--no-progress"]) == 130
    finally:
        runner.check_round = real
    ALGORITHMS.pop(name)  # (as in a new process: the resume loads the plugin itself)
    plugins._LOADED.clear()
    plugins._ORIGIN.pop(("algorithm", name), None)
    for module in [m for m in sys.modules if m.startswith(modules)]:
        del sys.modules[module]
    assert main(["run", "--resume", str(run_dir), "--no-progress"]) == 0
    whole = tmp_path / "whole"
    assert main(["run", str(base), "--out", str(whole), "--no-progress"]) == 0
    assert (run_dir / "rounds.csv").read_bytes() == (whole / "rounds.csv").read_bytes()


def test_a_plugin_data_set_takes_a_root_as_public_or_pretraining_set(tmp_path):
    """A plugin data set is called with its ``root``: FedMD's ``public_root`` and
    EcoFed's ``pretrain.root`` are accepted for it (refused only for the shipped sets)."""
    from netfl.loading.scenarios import load_scenario

    (tmp_path / "lab.py").write_text(LAB)
    fedmd = {"name": "fedmd", "public_dataset": "blobs", "public_root": str(tmp_path)}
    load_scenario(_scenario_file(tmp_path, plugins=["lab.py"], algorithm=fedmd))
    pretrain = {"dataset": "blobs", "root": str(tmp_path)}
    ecofed = {"name": "ecofed", "pretrain": pretrain}
    load_scenario(
        _scenario_file(tmp_path, plugins=["lab.py"], model={"name": "vgg11"}, algorithm=ecofed)
    )
