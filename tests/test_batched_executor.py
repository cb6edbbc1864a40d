"""The batched executor (``learning.executor: batched``): every client's state equals the
serial executor's up to the order of float sums, momentum, weight decay and the
proximal term included; a client with fewer batches is masked; the runs' accuracies
agree."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest
import torch
from torch import nn

import netfl
from netfl import World, parse_scenario, run
from netfl.learning.tasks import TrainConfig, TrainTask
from tests.conftest import tiny_scenario

CONFIG = TrainConfig(lr=0.05, momentum=0.9, weight_decay=1e-3, batch_size=16, epochs=2)


MNIST = {"dataset": "mnist5k", "partition": {"scheme": "dirichlet", "alpha": 0.5}}


CUDA = pytest.param(
    "cuda",
    marks=pytest.mark.skipif(not torch.cuda.is_available(), reason="no GPU on this machine"),
)


def _world(model: str, executor: str, data: dict = MNIST, count: int = 4, device: str = "cpu"):
    """A world on ``executor``; a batched one batches convolutions on a CPU too (its
    default runs them serially there, where they lose: these tests hold the maths)."""
    learning = {"mode": "learn", "executor": executor, "num_threads": 1, "device": device}
    world = _plain_world(model, data, count, learning)
    if executor == "batched":
        world.executor.convolutions_on_cpu = True
    return world


def _plain_world(model: str, data: dict, count: int, learning: dict):
    return World(
        parse_scenario(
            tiny_scenario(
                devices={"count": count},
                data=data,
                model={"name": model},
                learning=learning,
            )
        )
    )


def _tasks(world, proximal: float, indices=None) -> list[TrainTask]:
    state = world.init_model_state()
    return [
        TrainTask(
            model=world.model.name,
            state=state,
            indices=world.partitions[k][:120] if indices is None else indices[k],
            config=CONFIG,
            seed=1000 + k,
            proximal_weight=proximal,
        )
        for k in range(len(world.devices) if indices is None else len(indices))
    ]


@pytest.mark.parametrize("device", ["cpu", CUDA])
@pytest.mark.parametrize("model", ["2nn", "cnn", "lenet"])
@pytest.mark.parametrize("proximal", [0.0, 0.01])
def test_each_client_ends_where_the_serial_executor_ends_it(model, proximal, device):
    """4 clients, momentum 0.9, weight decay, with and without the proximal term: states
    within 1e-5 relative (1e-6 absolute) of the serial executor's, losses within 1e-5.
    McMahan's CNN runs one epoch of 80 samples: over longer runs a last-bit difference in
    a convolution can flip which of two near-equal activations a max-pool passes its
    gradient to, after which the two trajectories separate (seen on one client of four
    after two epochs of 120 samples: 2.6e-3 absolute); its runs' accuracies still agree
    (docs/benchmarks.md). On ``cuda`` where a GPU is at hand (serial and batched both
    there)."""
    serial, batched = (
        _world(model, "serial", device=device),
        _world(model, "batched", device=device),
    )
    tasks = _tasks(serial, proximal)
    if model == "cnn":
        tasks = [
            replace(t, config=replace(CONFIG, epochs=1), indices=t.indices[:80]) for t in tasks
        ]
    want = [serial.executor.submit(t) for t in tasks]
    got = [batched.executor.submit(t) for t in tasks]
    assert len(batched.executor.pending) == len(tasks)
    results = [f.result() for f in got]  # (the first collection runs the whole group)
    assert not batched.executor.pending
    for w, g in zip(want, results, strict=True):
        w = w.result()
        assert (g.num_samples, g.num_steps) == (w.num_samples, w.num_steps)
        assert g.mean_loss == pytest.approx(w.mean_loss, rel=1e-5)
        for key, value in w.state.items():
            torch.testing.assert_close(g.state[key], value, rtol=1e-5, atol=1e-6)


def test_a_client_with_half_the_batches_is_masked():
    """Client 0 has half of client 1's samples (and a short last batch): it ends where
    the serial executor ends it, after half the steps, its momentum untouched on the
    steps it does not have."""
    serial, batched = _world("2nn", "serial"), _world("2nn", "batched")
    full = serial.partitions[0][:100]
    tasks = _tasks(serial, 0.0, [full[:50], full])
    tasks = [replace(t, seed=7) for t in tasks]
    want = [serial.executor.submit(t).result() for t in tasks]
    got = [f.result() for f in [batched.executor.submit(t) for t in tasks]]
    assert got[0].num_steps < got[1].num_steps  # (4 + 4 against 7 + 7 steps)
    for w, g in zip(want, got, strict=True):
        for key, value in w.state.items():
            torch.testing.assert_close(g.state[key], value, rtol=1e-5, atol=1e-6)


class NormNet(nn.Module):
    """BatchNorm three ways: 2-d with momentum 0.1, 1-d with the cumulative average
    (momentum None), and one without running statistics (batch statistics only)."""

    def __init__(self, input_shape, num_classes):
        super().__init__()
        self.conv = nn.Conv2d(input_shape[0], 6, 3, padding=1)
        self.bn2d = nn.BatchNorm2d(6)
        self.plain = nn.BatchNorm2d(6, track_running_stats=False, affine=False)
        self.fc = nn.Linear(6 * 4 * 4, 16)
        self.bn1d = nn.BatchNorm1d(16, momentum=None)
        self.out = nn.Linear(16, num_classes)

    def forward(self, x):
        x = self.plain(torch.relu(self.bn2d(self.conv(x))))
        x = nn.functional.max_pool2d(x, 2).flatten(1)
        return self.out(torch.relu(self.bn1d(self.fc(x))))


@pytest.fixture
def normnet():
    from netfl.learning.catalog import MODEL_BUILDERS, MODEL_CATALOG

    netfl.register_model("normnet", NormNet, description="BatchNorm three ways")
    yield "normnet"
    del MODEL_CATALOG["normnet"], MODEL_BUILDERS["normnet"]


def test_batchnorm_clients_keep_their_own_statistics(normnet):
    """A model with BatchNorm (tracked with momentum, cumulative, untracked): each client
    ends with the serial executor's parameters, running means and variances and
    ``num_batches_tracked`` - clients of unequal size included, their short last batches
    normalised over their real samples only."""
    digits = {"dataset": "digits", "partition": {"scheme": "dirichlet", "alpha": 0.5}}
    serial, batched = _world(normnet, "serial", digits), _world(normnet, "batched", digits)
    assert batched.executor._why_not(_tasks(serial, 0.0)[0]) is None
    sizes = [120, 70, 45, 120]  # (45 = 2 x 16 + 13: a short last batch)
    tasks = _tasks(serial, 0.01, [serial.partitions[k][:n] for k, n in enumerate(sizes)])
    want = [serial.executor.submit(t).result() for t in tasks]
    got = [f.result() for f in [batched.executor.submit(t) for t in tasks]]
    assert len({g.num_steps for g in got}) == 3
    for w, g in zip(want, got, strict=True):
        assert set(g.state) == set(w.state)
        assert int(g.state["bn1d.num_batches_tracked"]) == w.num_steps
        for key, value in w.state.items():
            torch.testing.assert_close(g.state[key], value, rtol=1e-5, atol=1e-6)
        assert not torch.equal(g.state["bn2d.running_mean"], tasks[0].state["bn2d.running_mean"])
    # the clients' statistics differ from one another (each its own data)
    assert not torch.allclose(got[0].state["bn2d.running_var"], got[3].state["bn2d.running_var"])


def test_a_model_with_other_buffers_trains_serially_and_says_so(caplog, normnet):
    import logging

    class Scaled(nn.Module):
        def __init__(self, input_shape, num_classes):
            super().__init__()
            self.fc = nn.Linear(int(np.prod(input_shape)), num_classes)
            self.register_buffer("scale", torch.ones(1))

        def forward(self, x):
            return self.fc(x.flatten(1)) * self.scale

    from netfl.learning.catalog import MODEL_BUILDERS, MODEL_CATALOG

    netfl.register_model("scaled", Scaled)
    try:
        world = _world("scaled", "batched", {"dataset": "digits"})
        with caplog.at_level(logging.WARNING):
            futures = [world.executor.submit(t) for t in _tasks(world, 0.0)]
    finally:
        del MODEL_CATALOG["scaled"], MODEL_BUILDERS["scaled"]
    assert not world.executor.pending and "trains serially (buffers)" in caplog.text
    assert all(f.result().num_steps > 0 for f in futures)


def test_fedavg_runs_agree_between_executors():
    """Three rounds of FedAvg with the 2NN: the batched run's accuracies are the serial
    run's (float-sum order aside)."""

    def accuracies(executor: str) -> np.ndarray:
        sc = parse_scenario(
            tiny_scenario(
                devices={"count": 6},
                data={"dataset": "mnist5k", "partition": {"scheme": "iid"}},
                model={"name": "2nn"},
                training={"rounds": 3, "batch_size": 32, "lr": 0.05, "momentum": 0.9},
                learning={"mode": "learn", "executor": executor, "num_threads": 1},
            )
        )
        return run(sc).rounds["accuracy"].to_numpy()

    np.testing.assert_allclose(accuracies("batched"), accuracies("serial"), atol=2e-3)


@pytest.mark.slow  # (36 s: `make test-slow`, which CI runs too)
def test_twenty_rounds_agree_within_a_standard_deviation_over_seeds():
    """FedAvg, 10 clients, 2NN, 20 rounds, seeds 1-3: the batched runs' final accuracies
    are the serial runs' within one standard deviation over the seeds (and, seed by seed,
    within float noise)."""

    def final(executor: str, seed: int) -> float:
        sc = parse_scenario(
            tiny_scenario(
                seed=seed,
                devices={"count": 10},
                data={"dataset": "mnist5k", "partition": {"scheme": "dirichlet", "alpha": 0.5}},
                model={"name": "2nn"},
                training={
                    "rounds": 20,
                    "batch_size": 32,
                    "lr": 0.05,
                    "momentum": 0.9,
                    "eval_every": 20,
                },
                learning={"mode": "learn", "executor": executor, "num_threads": 1},
            )
        )
        return float(run(sc).rounds["accuracy"].iloc[-1])

    serial = np.array([final("serial", s) for s in (1, 2, 3)])
    batched = np.array([final("batched", s) for s in (1, 2, 3)])
    assert abs(batched.mean() - serial.mean()) <= serial.std(ddof=1)
    np.testing.assert_allclose(batched, serial, atol=5e-3)


def test_a_model_that_freezes_a_batchnorm_trains_serially():
    """A model whose ``train()`` leaves a BatchNorm layer in evaluation mode (normalised
    by its running statistics, not updated) is not batched: the batched forward
    normalises every BatchNorm by the batch."""
    from netfl.learning.batched import batchable

    class Frozen(NormNet):
        def train(self, mode: bool = True):
            super().train(mode)
            self.bn2d.eval()
            return self

    why = batchable(Frozen((1, 8, 8), 10), nn.CrossEntropyLoss())
    assert why is not None and "evaluation mode" in why
    assert batchable(NormNet((1, 8, 8), 10), nn.CrossEntropyLoss()) is None


def test_convolutions_on_a_cpu_train_serially_and_say_so_once(caplog):
    """By default McMahan's CNN is not batched on a CPU (grouped convolutions lose to one
    client at a time there): its jobs run serially, said once; the 2NN is batched."""
    import logging

    learning = {"mode": "learn", "executor": "batched", "num_threads": 1}
    cnn = _plain_world("cnn", MNIST, 4, learning)
    with caplog.at_level(logging.WARNING):
        futures = [cnn.executor.submit(t) for t in _tasks(cnn, 0.0)]
    assert not cnn.executor.pending and all(f.result().num_steps > 0 for f in futures)
    assert caplog.text.count("cnn trains serially (convolutions on a CPU") == 1
    dense = _plain_world("2nn", MNIST, 4, learning)
    [dense.executor.submit(t) for t in _tasks(dense, 0.0)]
    assert len(dense.executor.pending) == 4
    cnn.close()
    dense.close()


class EinsumNet(nn.Module):
    """A linear layer written as an einsum over its weight's transpose: vmap gives its
    gradient in another memory layout than the stacked weight's."""

    def __init__(self, input_shape, num_classes):
        super().__init__()
        self.w = nn.Parameter(0.1 * torch.randn(num_classes, int(np.prod(input_shape))))
        self.b = nn.Parameter(torch.zeros(num_classes))

    def forward(self, x):
        return torch.einsum("ni,ji->nj", x.flatten(1), self.w) + self.b


def test_a_gradient_in_another_layout_updates_its_own_weights():
    """The batched update reads each gradient by its strides: a model whose weight's
    gradient comes transposed ends where the serial executor ends it."""
    from netfl.learning.catalog import MODEL_BUILDERS, MODEL_CATALOG

    netfl.register_model("einsumnet", EinsumNet)
    try:
        serial = _world("einsumnet", "serial", {"dataset": "digits"})
        batched = _world("einsumnet", "batched", {"dataset": "digits"})
        tasks = _tasks(serial, 0.0)
        want = [serial.executor.submit(t).result() for t in tasks]
        got = [f.result() for f in [batched.executor.submit(t) for t in tasks]]
    finally:
        del MODEL_CATALOG["einsumnet"], MODEL_BUILDERS["einsumnet"]
    for w, g in zip(want, got, strict=True):
        for key, value in w.state.items():
            torch.testing.assert_close(g.state[key], value, rtol=1e-5, atol=1e-6)
