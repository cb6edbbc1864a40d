"""netfl's torch threads never spin against other work on the machine, and the run
records its thread count and OpenMP wait policy (netfl.core.threads)."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from netfl.loading.scenarios import parse_scenario
from netfl.output.rundir import write_run_dir
from netfl.sim.runner import run
from tests.conftest import tiny_scenario

PROBE = (
    "import os, sys{pre}; import netfl; from netfl.core.threads import wait_policy; "
    "print(os.environ.get('OMP_WAIT_POLICY')); print(wait_policy()['omp_wait_policy_source'])"
)


def _probe(env_extra: dict[str, str], pre: str = "") -> list[str]:
    env = {k: v for k, v in os.environ.items() if k not in ("OMP_WAIT_POLICY", "GOMP_SPINCOUNT")}
    out = subprocess.run(
        [sys.executable, "-c", PROBE.format(pre=pre)],
        env={**env, **env_extra},
        capture_output=True,
        text=True,
        check=True,
    )
    return out.stdout.split("\n")[:2]


@pytest.mark.parametrize(
    "env_extra, pre, expected",
    [
        ({}, "", ["PASSIVE", "netfl default"]),
        ({"OMP_WAIT_POLICY": "ACTIVE"}, "", ["ACTIVE", "environment"]),
        ({"GOMP_SPINCOUNT": "300000"}, "", ["None", "environment"]),
        ({}, "; import torch", ["None", "torch imported before netfl"]),
    ],
)
def test_idle_openmp_threads_sleep_unless_the_user_chose(env_extra, pre, expected):
    """``import netfl`` before torch sets OMP_WAIT_POLICY=PASSIVE; a policy the user set
    is kept, and a torch imported earlier (its runtime read the environment) is said."""
    assert _probe(env_extra, pre) == expected


@pytest.mark.parametrize("num_threads", [None, 1])
def test_the_manifest_records_the_thread_choice(num_threads, tmp_path):
    """A learning run records the threads of its jobs and where they came from;
    ``learning.num_threads`` overrides the automatic choice and gives the process its
    own count back afterwards."""
    import torch

    before = torch.get_num_threads()
    learning = {"mode": "learn"} | ({"num_threads": num_threads} if num_threads else {})
    scenario = parse_scenario(tiny_scenario(learning=learning, training={"rounds": 1}))
    out = write_run_dir(run(scenario), tmp_path / "run")
    man = json.loads((out / "manifest.json").read_text())
    assert man["torch_num_threads"] == 1  # (logistic regression: small steps either way)
    assert man["torch_num_threads_source"].startswith(
        "learning.num_threads" if num_threads else "auto: "
    )
    assert man["omp_wait_policy"] and man["omp_wait_policy_source"]
    assert torch.get_num_threads() == before


def test_a_run_collects_garbage_less_often_and_restores_the_thresholds(monkeypatch):
    """While a run lasts the collector's thresholds are :data:`RUN_THRESHOLDS` (seen from
    inside the run); after it, and after a run that fails, they are what they were."""
    import gc

    import netfl.sim.runner as runner
    from netfl.core.gc_policy import RUN_THRESHOLDS

    seen = []

    class Broken:
        def __init__(self, *a, **k):
            seen.append(gc.get_threshold())
            raise RuntimeError("world")

    monkeypatch.setattr(runner, "World", Broken)
    before = gc.get_threshold()
    assert before != RUN_THRESHOLDS
    with pytest.raises(RuntimeError, match="world"):
        runner.run(None)
    assert seen == [RUN_THRESHOLDS]
    assert gc.get_threshold() == before


def test_runs_in_threads_that_overlap_restore_the_thresholds_once_all_have_ended():
    """The thresholds are the process's: two threads whose blocks overlap (the first
    leaves while the second still runs) keep :data:`RUN_THRESHOLDS` until the last one
    leaves, then the thresholds from before the first."""
    import gc
    import threading

    from netfl.core.gc_policy import RUN_THRESHOLDS, fewer_collections

    before = gc.get_threshold()
    first_in, second_in, first_out = threading.Event(), threading.Event(), threading.Event()
    seen = {}

    def first():
        with fewer_collections():
            first_in.set()
            second_in.wait(10)
        first_out.set()

    def second():
        first_in.wait(10)
        with fewer_collections():
            second_in.set()
            first_out.wait(10)
            seen["after the first left"] = gc.get_threshold()

    threads = [threading.Thread(target=first), threading.Thread(target=second)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(20)
    assert seen == {"after the first left": RUN_THRESHOLDS}
    assert gc.get_threshold() == before


def test_the_automatic_count_follows_the_step_size():
    """One thread below ONE_THREAD_BELOW_FLOPS training FLOPs per step, the process's
    threads from there on, one where the process has one."""
    from netfl.core.threads import ONE_THREAD_BELOW_FLOPS, auto_threads

    assert auto_threads(0.99 * ONE_THREAD_BELOW_FLOPS, 8)[0] == 1
    assert auto_threads(ONE_THREAD_BELOW_FLOPS, 8)[0] == 8
    assert auto_threads(1e12, 1)[0] == 1
    assert "MFLOP per training step" in auto_threads(1e6, 2)[1]


def _world_threads(**sections) -> tuple[int, str]:
    from netfl.sim.world import World

    sections = {"learning": {"mode": "learn"}, **sections}
    world = World(parse_scenario(tiny_scenario(**sections)))
    try:
        return world.job_threads, world.job_threads_source
    finally:
        world.close()


@pytest.mark.skipif((os.cpu_count() or 1) < 2, reason="needs two cores to choose between")
def test_the_count_is_the_scenarios_not_the_loads():
    """The 2NN at batch 16 (14 MFLOP a step) trains on one thread, McMahan's CNN at 32
    (2.3 GFLOP) on the process's; the batched executor counts the devices it may stack;
    the same scenario gets the same count with another process busy on every core."""
    import torch

    cores = torch.get_num_threads()
    small = {
        "model": {"name": "2nn"},
        "data": {"dataset": "mnist5k"},
        "training": {"batch_size": 16},
    }
    large = {**small, "model": {"name": "cnn"}, "training": {"batch_size": 32}}
    wide = {**small, "devices": {"count": 50}, "learning": {"mode": "learn", "executor": "batched"}}
    idle = [_world_threads(**s)[0] for s in (small, large, wide)]
    assert idle == [1, cores, cores]
    busy = [
        subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(os.cpu_count())
    ]
    try:
        loaded = [_world_threads(**s)[0] for s in (small, large, wide)]
    finally:
        for p in busy:
            p.kill()
            p.wait()
    assert loaded == idle


def test_a_run_that_fails_to_start_gives_the_thread_count_back():
    """A world whose learning set-up fails (a CUDA device on a machine without one) has
    set no thread count that outlives it: the next run's choice is the scenario's."""
    import torch

    from netfl.errors import UserError
    from netfl.sim.world import World

    if torch.cuda.is_available():
        pytest.skip("a CUDA device is present: the set-up would not fail")
    before = torch.get_num_threads()
    scenario = parse_scenario(tiny_scenario(learning={"mode": "learn", "device": "cuda"}))
    with pytest.raises(UserError, match="learning.device"):
        World(scenario)
    assert torch.get_num_threads() == before


@pytest.mark.parametrize("model, stacked", [("2nn", True), ("svm", False)])
def test_the_batched_executors_thread_choice_counts_its_devices_only_where_it_stacks(
    model, stacked
):
    """Unset ``learning.num_threads``, the batched executor's step is the devices' steps
    together where it stacks them (the 2NN), one device's where it trains them one at a
    time (the SVM's multi-margin loss): the executor's own verdict decides both."""
    from netfl.sim.world import World

    def source(executor: str) -> str:
        s = parse_scenario(
            {
                "name": "threads",
                "seed": 1,
                "devices": {"count": 40},
                "data": {"dataset": "mnist5k"},
                "model": {"name": model},
                "training": {"rounds": 1},
                "learning": {"mode": "learn", "executor": executor},
                "outputs": {"figures": False, "progress": False},
            }
        )
        return World(s).job_threads_source

    one, together = source("serial"), source("batched")
    assert one.startswith("auto: ") and together.startswith("auto: ")
    mflop = [float(t.split()[1]) for t in (one, together)]
    assert mflop[1] == pytest.approx(mflop[0] * (40 if stacked else 1), rel=1e-3)
