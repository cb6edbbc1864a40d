"""Client executors: the process pool and Ray actors give the serial executor's rounds."""

from __future__ import annotations

import pandas as pd
import pytest

from netfl import parse_scenario, run
from netfl.errors import UserError
from tests.conftest import default_sigint, tiny_scenario


def _rounds(algorithm: dict, executor: str, **learning) -> pd.DataFrame:
    scenario = parse_scenario(
        tiny_scenario(
            devices={"count": 5},
            data={"dataset": "digits", "partition": {"scheme": "dirichlet", "alpha": 0.5}},
            model={"name": "fcn"},
            training={"rounds": 3, "batch_size": 16, "lr": 0.05},
            algorithm=algorithm,
            # test batches of 64: one evaluation is split over the workers
            learning={
                "mode": "learn",
                "executor": executor,
                "num_threads": 1,
                "eval_batch_size": 64,
                **learning,
            },
        )
    )
    result = run(scenario)
    assert result.info["executor"] == executor and result.info["torch_num_threads"] == 1
    return result.rounds.drop(columns=[c for c in result.rounds if "wall" in c])


def _job_world(devices: int = 3):
    """A learning world on the digits (IID) with one thread per job: the world, its
    learning context, the device model's name and a copy of its initial state."""
    from netfl.sim.world import World

    world = World(
        parse_scenario(
            tiny_scenario(
                devices={"count": devices},
                data={"dataset": "digits", "partition": {"scheme": "iid"}},
                training={"rounds": 1, "batch_size": 16},
                learning={"mode": "learn", "num_threads": 1},
            )
        )
    )
    context = world.executor.context
    name = world.device_model(world.devices[0]).spec.name
    state = {k: v.clone() for k, v in context.model(name).state_dict().items()}
    return world, context, name, state


@pytest.mark.parametrize(
    "algorithm", [{"name": "fedavg", "fraction": 0.6}, {"name": "dfl"}], ids=["fedavg", "dfl"]
)
def test_process_pool_and_ray_actors_give_the_serial_rounds(algorithm, ray_local):
    serial = _rounds(algorithm, "serial")
    assert serial["accuracy"].notna().all() and serial["accuracy"].iloc[-1] > 0.2
    pool = _rounds(algorithm, "process", workers=2)
    actors = _rounds(algorithm, "ray", workers=2)
    pd.testing.assert_frame_equal(serial, pool, check_exact=True)
    pd.testing.assert_frame_equal(serial, actors, check_exact=True)


def test_a_failing_job_in_a_worker_fails_the_run(monkeypatch):
    scenario = parse_scenario(
        tiny_scenario(
            data={"dataset": "digits", "partition": {"scheme": "iid"}},
            training={"rounds": 1, "batch_size": 16, "lr": float("1e-3")},
            learning={"mode": "learn", "executor": "process", "workers": 2, "num_threads": 1},
        )
    )
    # every job raises in its worker (forked after the patch): the run fails with it
    from netfl.learning import executor as ex

    monkeypatch.setattr(ex.LearningContext, "run", lambda self, task: 1 / 0)
    with pytest.raises(ZeroDivisionError):
        run(scenario)


def test_ray_executor_without_ray_is_one_line(monkeypatch):
    import netfl.learning.parallel as parallel

    def missing():
        raise ImportError("Ray is not installed: pip install 'netfl[ray]'")

    monkeypatch.setattr(parallel, "import_ray", missing)
    scenario = parse_scenario(tiny_scenario(learning={"mode": "learn", "executor": "ray"}))
    with pytest.raises(UserError, match=r"learning.executor: Ray is not installed"):
        run(scenario)


def test_jobs_and_results_cross_processes_unchanged():
    """The pool's transport (tensors as numpy arrays) gives back equal tensors of the same
    dtype and shape, and falls back to torch's pickling for what numpy cannot hold."""
    import pickle

    import numpy as np
    import torch

    from netfl.learning.transport import encode

    g = torch.Generator().manual_seed(0)
    w = torch.randn(6, 5, generator=g)
    values = {
        "f32": w,
        "f64": w.double(),
        "f16": w.half(),
        "i64": torch.arange(7),
        "u8": torch.arange(7, dtype=torch.uint8),
        "bool": w > 0,
        "scalar": torch.tensor(3.5),
        "view": w.t()[1:, ::2],  # non-contiguous
        "bf16": w.bfloat16(),  # no numpy dtype: torch's own pickling
        "grad": w.clone().requires_grad_(True),
        "nested": [(w[0], {"k": w[1]})],
        "np": np.arange(3),
    }
    back = pickle.loads(encode(values))
    for key in ("f32", "f64", "f16", "i64", "u8", "bool", "scalar", "view", "bf16", "grad"):
        assert back[key].dtype == values[key].dtype and back[key].shape == values[key].shape
        assert torch.equal(back[key].detach(), values[key].detach()), key
    assert back["grad"].requires_grad
    assert torch.equal(back["nested"][0][1]["k"], w[1])
    assert np.array_equal(back["np"], np.arange(3))


def test_ctrl_c_on_the_process_group_stops_the_pool_and_writes_the_finished_rounds(tmp_path):
    """Ctrl-C reaches the simulator and its workers: the workers ignore it, the simulator
    writes the finished rounds marked incomplete (exit 130) and no worker is left."""
    import json
    import os
    import signal
    import subprocess
    import sys
    import time
    from pathlib import Path

    import yaml

    from netfl.sim.checkpoint import checkpoint_path

    data = tiny_scenario(
        data={"dataset": "digits", "partition": {"scheme": "iid"}},
        training={"rounds": 2000, "batch_size": 16},
        learning={"mode": "learn", "executor": "process", "workers": 2, "num_threads": 1},
        outputs={"figures": False, "progress": False, "checkpoint_every": 1},
    )
    path = tmp_path / "s.yaml"
    path.write_text(yaml.safe_dump(data))
    out = tmp_path / "run"
    root = Path(__file__).resolve().parents[2]
    proc = subprocess.Popen(
        [sys.executable, "-m", "netfl", "run", str(path), "--out", str(out)],
        env={**os.environ, "PYTHONPATH": str(root)},
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,  # its own process group, as a terminal gives it
        preexec_fn=default_sigint,
    )
    deadline = time.time() + 120
    while not checkpoint_path(out).exists() and time.time() < deadline:
        time.sleep(0.05)
    os.killpg(proc.pid, signal.SIGINT)
    _, err = proc.communicate(timeout=120)
    assert proc.returncode == 130, err
    assert "finished rounds written" in err and "Traceback" not in err
    assert json.loads((out / "manifest.json").read_text())["complete"] is False
    # the group is gone: no worker outlived it (multiprocessing's resource tracker, which
    # watches the shared states' segments, ends when it sees the simulator's end)
    deadline = time.time() + 10
    with pytest.raises(ProcessLookupError):
        while time.time() < deadline:
            os.killpg(proc.pid, 0)
            time.sleep(0.05)


def test_ray_actors_get_a_rounds_global_state_once(ray_local):
    """FedAvg's devices all start from the global state: it is put into Ray's object store
    once per round, not once per device."""
    from netfl.sim.world import World

    scenario = parse_scenario(
        tiny_scenario(
            devices={"count": 6},
            data={"dataset": "digits", "partition": {"scheme": "iid"}},
            training={"rounds": 3, "batch_size": 16},
            learning={"mode": "learn", "executor": "ray", "workers": 2, "num_threads": 1},
        )
    )
    from netfl.algorithms import get_algorithm
    from netfl.loading.scenarios import algorithm_config

    world = World(scenario)
    try:
        algorithm = get_algorithm("fedavg")(world, algorithm_config(scenario))
        for r in range(3):
            world.env.run(until=world.env.process(algorithm.round(r)))
        assert world.executor.puts == 3
        acc, _ = algorithm.evaluate()
        assert acc > 0.2  # it learned (10 classes: chance is 0.1)
    finally:
        world.close()


def test_the_pool_holds_a_bounded_number_of_jobs_and_serves_the_awaited_one_first():
    """Jobs beyond ``in_flight`` wait unencoded in the executor; waiting on the last one
    first still completes (it is moved to the head of the queue), every result equals
    the job run in this process, and no more than ``in_flight`` were ever in the pool."""
    import torch

    from netfl.learning.parallel import ProcessExecutor
    from netfl.learning.tasks import TrainTask

    world, context, name, state = _job_world(10)
    tasks = [
        TrainTask(name, state, world.partitions[i], world.train_config, seed=100 + i)
        for i in range(10)
    ]
    threads = torch.get_num_threads()
    pool = ProcessExecutor(context, workers=2, threads=1, in_flight=2)
    try:
        jobs = [pool.submit(t) for t in tasks]
        results = {i: jobs[i].result(timeout=120) for i in reversed(range(10))}
        torch.set_num_threads(1)
        for i, task in enumerate(tasks):
            local = context.run(task)
            for key, value in local.state.items():
                assert torch.equal(results[i].state[key], value), (i, key)
        assert pool.most_sent == 2
    finally:
        torch.set_num_threads(threads)
        pool.close()
        world.close()


def test_closing_the_pool_cancels_the_jobs_not_yet_sent():
    from netfl.learning.parallel import ProcessExecutor
    from netfl.learning.tasks import TrainTask

    world, context, name, state = _job_world(3)
    tasks = [TrainTask(name, state, world.partitions[0], world.train_config, s) for s in range(6)]
    pool = ProcessExecutor(context, workers=1, threads=1, in_flight=1)
    jobs = [pool.submit(t) for t in tasks]
    pool.close()
    world.close()
    assert all(j.done() for j in jobs)
    assert sum(j.cancelled() for j in jobs) >= 4  # at most one sent, one being sent
    with pytest.raises(RuntimeError, match="closed"):
        pool.submit(tasks[0])


def test_jobs_read_their_start_state_from_one_shared_segment_per_state():
    """A state that many jobs start from is written to shared memory once; a state
    changed in place is a new one; results equal the jobs run in this process; closing
    the pool unlinks every segment."""
    from multiprocessing import shared_memory

    import torch

    from netfl.learning.parallel import ProcessExecutor
    from netfl.learning.tasks import TrainTask

    world, context, name, state = _job_world(6)
    threads = torch.get_num_threads()
    pool = ProcessExecutor(context, workers=2, threads=1)
    try:
        first = [
            TrainTask(name, state, world.partitions[i], world.train_config, i) for i in range(6)
        ]
        got = [j.result(timeout=120) for j in [pool.submit(t) for t in first]]
        assert pool.shared.created == 1
        names = {e[2].name for e in pool.shared._entries.values()}
        torch.set_num_threads(1)
        expected = [context.run(t) for t in first]
        key = next(iter(state))
        state[key].add_(0.5)  # in place: the job below starts from another state
        second = TrainTask(name, state, world.partitions[0], world.train_config, 0)
        got.append(pool.submit(second).result(timeout=120))
        expected.append(context.run(second))
        assert pool.shared.created == 2
        names |= {e[2].name for e in pool.shared._entries.values()}
        for result, local in zip(got, expected, strict=True):
            assert all(torch.equal(result.state[k], v) for k, v in local.state.items())
        assert not torch.equal(got[0].state[key], got[-1].state[key])
    finally:
        torch.set_num_threads(threads)
        pool.close()
        world.close()
    assert len(names) == 2 and pool.shared.segments == 0
    for segment in names:
        with pytest.raises(FileNotFoundError):
            shared_memory.SharedMemory(segment)


def test_shared_states_cover_dicts_of_states_and_leave_other_dtypes_inline():
    """A split job's parts (a dict of states) are shared too; a bfloat16 state, which
    numpy cannot hold, travels with the job; what a worker reads back is equal."""
    import numpy as np
    import torch

    from netfl.learning.tasks import SplitTask, TrainConfig
    from netfl.learning.transport import SharedState, SharedStates, map_refs, read_shared

    parts = {
        "device": {"w": torch.randn(3, 4), "n": torch.tensor(7)},
        "server": {"w": torch.randn(5), "flag": torch.tensor([True, False])},
        "aux": {"w": torch.randn(2, dtype=torch.bfloat16)},
    }
    task = SplitTask("server", "cnn", "p", parts, np.arange(4), TrainConfig(), 0)
    store = SharedStates()
    try:
        shared, keys = store.share(task)
        assert isinstance(shared.states["device"], SharedState)
        assert isinstance(shared.states["server"], SharedState)
        assert shared.states["aux"] is parts["aux"] and len(keys) == 2
        back = map_refs(shared, SharedState, read_shared)
        for part, state in parts.items():
            for k, v in state.items():
                assert back.states[part][k].dtype == v.dtype and torch.equal(
                    back.states[part][k], v
                )
        store.release(keys)
        assert store.segments == 2  # idle, but the newest are kept for the jobs to come
    finally:
        store.close()
    assert store.segments == 0


def test_an_evaluation_is_split_into_whole_test_batches_over_the_workers():
    """With 3 workers and one state, the test set goes out as 3 contiguous runs of whole
    batches covering every row once; with 5 states, one job each; the scores are the
    serial evaluation's exactly."""
    from netfl.learning.executor import SerialExecutor
    from netfl.learning.train import evaluate
    from netfl.sim.world import World

    world = World(
        parse_scenario(
            tiny_scenario(
                data={"dataset": "digits"},
                learning={"mode": "learn", "eval_batch_size": 50},
            )
        )
    )
    seen = []

    class ThreeWorkers(SerialExecutor):
        workers = 3

        def submit(self, task):
            seen.append((task.start, task.stop))
            return super().submit(task)

    world.executor = ThreeWorkers(world.executor.context)
    spec = world.model.spec
    states = [world.init_model_state(None, k) for k in range(5)]
    n = len(world.dataset.test_y)
    expected = [
        evaluate(
            spec.build(world.dataset.input_shape, world.dataset.num_classes),
            s,
            world.dataset.test_x,
            world.dataset.test_y,
            spec.loss_fn(),
            50,
        )
        for s in states
    ]
    assert world.evaluate(states[0]) == expected[0]
    assert len(seen) == 3 and seen[0][0] == 0 and seen[-1][1] == n
    assert all(a % 50 == 0 and a < b for a, b in seen)
    assert all(seen[i][1] == seen[i + 1][0] for i in range(2))
    seen.clear()
    assert world.evaluate_many([(s, None) for s in states]) == expected
    assert seen == [(0, n)] * 5


def test_a_state_that_does_not_fit_in_shared_memory_travels_with_its_job(monkeypatch):
    """With no room in /dev/shm (a container's 64 MB, say) states go through the pipe:
    no segment is written and the results are the same."""
    import torch

    import netfl.learning.transport as transport
    from netfl.learning.parallel import ProcessExecutor
    from netfl.learning.tasks import TrainTask

    world, context, name, state = _job_world(3)
    tasks = [TrainTask(name, state, world.partitions[i], world.train_config, i) for i in range(3)]
    monkeypatch.setattr(transport, "shm_free_bytes", lambda: 0)
    threads = torch.get_num_threads()
    pool = ProcessExecutor(context, workers=1, threads=1)
    try:
        got = [j.result(timeout=120) for j in [pool.submit(t) for t in tasks]]
        torch.set_num_threads(1)
        for task, result in zip(tasks, got, strict=True):
            local = context.run(task)
            assert all(torch.equal(result.state[k], v) for k, v in local.state.items())
        assert pool.shared.created == 0 and pool.shared.inline == 3
    finally:
        torch.set_num_threads(threads)
        pool.close()
        world.close()


def _kill_worker_at_train_job(monkeypatch, counter, nth: int) -> None:
    """Workers (forked after this patch) SIGKILL themselves on the ``nth`` training job
    of the run, as the out-of-memory killer would."""
    import os
    import signal

    from netfl.learning import executor as ex

    run_job = ex.LearningContext.run

    def killing(self, task):
        if isinstance(task, ex.TrainTask):
            with open(counter, "a") as f:  # one byte per job, appended atomically
                f.write("x")
            if os.path.getsize(counter) >= nth:
                os.kill(os.getpid(), signal.SIGKILL)
        return run_job(self, task)

    monkeypatch.setattr(ex.LearningContext, "run", killing)


def _pool_scenario_file(tmp_path, **outputs):
    import yaml

    data = tiny_scenario(
        devices={"count": 4},
        data={"dataset": "digits", "partition": {"scheme": "iid"}},
        training={"rounds": 3, "batch_size": 16},
        learning={"mode": "learn", "executor": "process", "workers": 2, "num_threads": 1},
        outputs={"figures": False, "progress": False, **outputs},
    )
    path = tmp_path / "s.yaml"
    path.write_text(yaml.safe_dump(data))
    return path


def test_a_killed_worker_leaves_the_finished_rounds_marked_incomplete(
    tmp_path, monkeypatch, capsys
):
    """A worker killed in round 1 (4 jobs a round): one line naming the lost worker, exit
    1, round 0 written marked incomplete with the error, and the run resumes from its
    checkpoint to the uninterrupted run's rounds."""
    import json

    from netfl.cli.app import main

    path = _pool_scenario_file(tmp_path, checkpoint_every=1)
    _kill_worker_at_train_job(monkeypatch, tmp_path / "jobs", nth=5)
    out = tmp_path / "run"
    assert main(["run", str(path), "--out", str(out), "--no-progress"]) == 1
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "Traceback" not in err
    assert err.startswith("error: a worker process of the process executor ended abruptly")
    assert f"1 finished rounds written to {out}" in err
    assert f"resume with: netfl run --resume {out}" in err
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["complete"] is False and manifest["stop_reason"] == "worker_lost"
    assert "ended abruptly" in manifest["error"]
    assert len(pd.read_csv(out / "rounds.csv")) == 1
    monkeypatch.undo()  # workers live again
    assert main(["run", "--resume", str(out), "--no-progress"]) == 0
    whole = tmp_path / "whole"
    assert main(["run", str(path), "--out", str(whole), "--no-progress"]) == 0
    resumed, want = pd.read_csv(out / "rounds.csv"), pd.read_csv(whole / "rounds.csv")
    assert len(resumed) == 3
    pd.testing.assert_series_equal(resumed["accuracy"], want["accuracy"], check_exact=True)


def test_a_worker_killed_before_any_round_finished_is_one_line(tmp_path, monkeypatch, capsys):
    from netfl.cli.app import main

    path = _pool_scenario_file(tmp_path)
    _kill_worker_at_train_job(monkeypatch, tmp_path / "jobs", nth=1)
    out = tmp_path / "run"
    assert main(["run", str(path), "--out", str(out), "--no-progress"]) == 1
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "Traceback" not in err
    assert "ended abruptly" in err and err.endswith("no round had finished")
    assert not out.exists()


def test_a_dead_ray_actor_fails_its_jobs_with_worker_lost(ray_local):
    from netfl.errors import WorkerLost
    from netfl.learning.parallel import RayExecutor
    from netfl.learning.tasks import TrainTask

    world, context, name, state = _job_world()
    executor = RayExecutor(context, workers=1, threads=1)
    try:
        task = TrainTask(name, state, world.partitions[0], world.train_config, seed=1)
        assert executor.submit(task).result(timeout=120).num_samples == len(world.partitions[0])
        ray_local.kill(executor._actors[0])
        with pytest.raises(WorkerLost, match="Ray actor of the ray executor died"):
            executor.submit(task).result(timeout=120)
    finally:
        executor.close()
        world.close()


def test_an_unreachable_ray_cluster_is_one_line(tmp_path, monkeypatch, capsys):
    """``learning.ray_address`` (a run) and ``--address`` (a sweep) that Ray cannot reach:
    one line naming the key and the address, exit 2 (Ray's own error: a traceback)."""
    import ray
    import yaml

    from netfl.cli.app import main

    def unreachable(address=None, **kwargs):
        raise ConnectionError("ray client connection timeout")

    monkeypatch.setattr(ray, "is_initialized", lambda: False)
    monkeypatch.setattr(ray, "init", unreachable)
    address = "ray://10.0.0.1:10001"
    data = tiny_scenario(learning={"mode": "learn", "executor": "ray", "ray_address": address})
    path = tmp_path / "s.yaml"
    path.write_text(yaml.safe_dump(data))
    assert main(["run", str(path), "--out", str(tmp_path / "run")]) == 2
    err = capsys.readouterr().err.strip()
    assert err == (
        f"error: {path}: learning.ray_address: cannot reach the Ray cluster at {address} "
        "(ConnectionError: ray client connection timeout)"
    )
    (tmp_path / "base.yaml").write_text(yaml.safe_dump(tiny_scenario()))
    sweep = tmp_path / "s.sweep.yaml"
    sweep.write_text(yaml.safe_dump({"name": "s", "base": "base.yaml"}))
    args = ["sweep", str(sweep), "--backend", "ray", "--address", address, "--no-progress"]
    assert main([*args, "--out", str(tmp_path / "sweep")]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith(f"error: --address: cannot reach the Ray cluster at {address}")
    assert len(err.splitlines()) == 1
