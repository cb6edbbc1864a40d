"""Shared fixtures: small nodes and scenarios."""

from __future__ import annotations

import signal

import numpy as np
import pytest
import simpy

from channel_models import get_link_profile
from netfl.compute import get_compute_profile
from netfl.core.nodes import Node
from netfl.core.records import Recorder


def make_node(
    name: str,
    kind: str = "pue",
    link: str | None = "4g_lte",
    compute: str = "raspberry_pi_4",
    index: int = 0,
) -> Node:
    return Node(
        name,
        kind,
        index if kind != "bs" else -1,
        np.zeros(2),
        get_compute_profile(compute),
        get_link_profile(link) if link else None,
    )


@pytest.fixture
def env() -> simpy.Environment:
    return simpy.Environment()


@pytest.fixture
def recorder() -> Recorder:
    return Recorder()


def default_sigint() -> None:
    """``preexec_fn`` of a child process that a test interrupts: SIGINT's default
    disposition, whatever this process inherited (a suite started in the background,
    ``nohup make test &``, ignores SIGINT, and a Python child would ignore it too)."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


@pytest.fixture
def sigint_handler():
    """Python's own Ctrl-C handler in this process for the test (restored after)."""
    before = signal.signal(signal.SIGINT, signal.default_int_handler)
    yield
    signal.signal(signal.SIGINT, before)


def tiny_scenario(**sections) -> dict:
    """A small, fast scenario as plain data (timing mode by default)."""
    base = {
        "name": "tiny",
        "seed": 3,
        "devices": {"count": 4},
        "data": {"dataset": "digits", "partition": {"scheme": "iid"}},
        "model": {"name": "logreg"},
        "training": {"rounds": 2, "batch_size": 16},
        "learning": {"mode": "timing"},
        "outputs": {"figures": False, "progress": False},
    }
    for key, value in sections.items():
        if isinstance(value, dict) and isinstance(base.get(key), dict):
            base[key] = {**base[key], **value}
        else:
            base[key] = value
    return base


def assert_average_of_local_models(world, state, start, devices, r: int = 0) -> None:
    """``state`` is Σ n_k w_k / Σ n_k of the local models of ``devices``, each trained
    here by hand from ``start`` with its round-``r`` seed (FedAvg, McMahan et al. 2017)."""
    import numpy as np
    import torch

    from netfl.learning.tasks import TrainTask

    ctx = world.executor.context
    locals_ = [
        ctx.run(
            TrainTask(
                model=world.model.spec.name,
                state=start,
                indices=world.partitions[d.index],
                config=world.train_config,
                seed=world.streams.torch_seed("torch", r, d.index),
            )
        )
        for d in devices
    ]
    n = np.array([world.num_samples(d) for d in devices], dtype=np.float64)
    assert [res.num_samples for res in locals_] == list(n)
    for key, value in state.items():
        by_hand = sum(
            w * res.state[key].double() for w, res in zip(n / n.sum(), locals_, strict=True)
        )
        torch.testing.assert_close(value.double(), by_hand, rtol=1e-6, atol=1e-7)
        assert not torch.equal(value, start[key])  # (training moved the model)


@pytest.fixture(scope="session")
def ray_local():
    """One local Ray instance of 2 CPUs for the whole test session (starting Ray takes
    seconds); the executors and the sweep backend find it running and leave it up."""
    import ray

    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False, logging_level="ERROR")
    yield ray
    ray.shutdown()
