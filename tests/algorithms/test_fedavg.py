"""FedAvg (McMahan et al., 2017, Algorithm 1): the weighted average by hand, partial
participation, and limiting cases (after Flower's ``fedavgm`` tests: tiny aggregations
computed by hand, and the variant that must reduce to the plain algorithm)."""

from __future__ import annotations

import pytest
import simpy
import torch

from netfl.algorithms import FedAvg
from netfl.learning.tasks import TrainTask
from netfl.learning.train import TrainResult
from netfl.loading.scenarios import algorithm_config, parse_scenario
from netfl.sim.world import World
from tests.conftest import assert_average_of_local_models, tiny_scenario


def _world(
    mode: str = "learn", devices: int = 4, cls: type[FedAvg] = FedAvg, **algorithm
) -> tuple[World, FedAvg]:
    scenario = parse_scenario(
        tiny_scenario(
            devices={"count": devices},
            data={"dataset": "digits", "partition": {"scheme": "dirichlet", "alpha": 0.5}},
            training={"rounds": 1, "batch_size": 16, "lr": 0.05},
            learning={"mode": mode},
            algorithm={"name": "fedavg", **algorithm},
        )
    )
    world = World(scenario)
    return world, cls(world, algorithm_config(scenario))


def _run_round(world: World, alg: FedAvg, r: int = 0):
    world.recorder.round = r
    proc = world.env.process(alg.round(r))
    world.env.run(until=proc)
    return proc.value


def test_server_update_is_the_sample_weighted_average_by_hand():
    world, alg = _world()
    devices = world.devices[:3]
    states = [
        {"w": torch.tensor([1.0, 2.0]), "b": torch.tensor([0.0])},
        {"w": torch.tensor([4.0, 8.0]), "b": torch.tensor([3.0])},
        {"w": torch.tensor([-2.0, 0.0]), "b": torch.tensor([6.0])},
    ]
    samples = [1, 3, 4]  # weights 1/8, 3/8, 4/8
    results = [
        TrainResult(state=s, num_samples=n, num_steps=1, mean_loss=0.0)
        for s, n in zip(states, samples, strict=True)
    ]
    world.env.run(until=world.env.process(alg.server_update(0, devices, results)))
    # w = (1·[1, 2] + 3·[4, 8] + 4·[-2, 0]) / 8 = [5/8, 26/8]; b = (0 + 9 + 24) / 8
    torch.testing.assert_close(alg.global_state["w"], torch.tensor([0.625, 3.25]))
    torch.testing.assert_close(alg.global_state["b"], torch.tensor([33 / 8]))
    world.close()


def test_a_round_averages_the_clients_local_models_weighted_by_their_data():
    """The streaming average of a plain round equals Σ n_k w_k / Σ n_k of the clients'
    local models, each trained here by hand from the same start and seed."""
    world, alg = _world()
    start = {k: v.clone() for k, v in alg.global_state.items()}
    clients = alg.select_clients(0)
    _run_round(world, alg)
    assert_average_of_local_models(world, alg.global_state, start, clients)
    world.close()


@pytest.mark.parametrize(
    ("fraction", "min_clients", "expected"), [(0.5, 1, 4), (0.1, 1, 1), (0.1, 3, 3), (1.0, 1, 8)]
)
def test_partial_participation_only_the_sampled_clients_transfer(fraction, min_clients, expected):
    world, alg = _world("timing", devices=8, fraction=fraction, min_clients=min_clients)
    clients = alg.select_clients(0)
    assert len(clients) == expected == len({d.index for d in clients})
    summary = _run_round(world, alg)
    assert summary.num_clients == expected
    names = {d.name for d in clients}
    up = [t for t in world.recorder.transfers if t.kind == "model_up"]
    down = [t for t in world.recorder.transfers if t.kind == "model_down"]
    assert sorted(t.src for t in up) == sorted(names)
    assert sorted(t.dst for t in down) == sorted(names)
    trained = [c.node for c in world.recorder.computes if c.kind == "train"]
    assert sorted(trained) == sorted(names)
    # the sample is a function of (seed, round): the same again, another round differs
    assert [d.index for d in alg.select_clients(0)] == [d.index for d in clients]
    if expected < 8:
        draws = {tuple(d.index for d in alg.select_clients(r)) for r in range(10)}
        assert len(draws) > 1


def test_partial_participation_leaves_the_absent_clients_data_out():
    """A client not sampled contributes nothing: the average is over the sampled ones."""
    world, alg = _world(devices=6, fraction=0.5)
    start = {k: v.clone() for k, v in alg.global_state.items()}
    clients = alg.select_clients(0)
    _run_round(world, alg)
    ctx = world.executor.context
    total = sum(world.num_samples(d) for d in clients)
    for key, value in alg.global_state.items():
        by_hand = sum(
            world.num_samples(d)
            / total
            * ctx.run(
                TrainTask(
                    world.model.spec.name,
                    start,
                    world.partitions[d.index],
                    world.train_config,
                    world.streams.torch_seed("torch", 0, d.index),
                )
            )
            .state[key]
            .double()
            for d in clients
        )
        torch.testing.assert_close(value.double(), by_hand, rtol=1e-6, atol=1e-7)
    world.close()


def test_limit_one_client_is_local_training_on_its_data():
    """With one device FedAvg's round is that device's local SGD, bit for bit."""
    world, alg = _world(devices=1)
    start = {k: v.clone() for k, v in alg.global_state.items()}
    _run_round(world, alg)
    (device,) = world.devices
    local = world.executor.context.run(
        TrainTask(
            world.model.spec.name,
            start,
            world.partitions[0],
            world.train_config,
            world.streams.torch_seed("torch", 0, device.index),
        )
    )
    for key, value in alg.global_state.items():
        assert torch.equal(value, local.state[key])
    world.close()


def test_limit_the_downlink_mode_changes_the_clock_not_the_model():
    """Unicast and multicast downloads train the same models: only time differs."""
    uni, a = _world(devices=5)
    multi, b = _world(devices=5, downlink="multicast")
    _run_round(uni, a)
    _run_round(multi, b)
    for key, value in a.global_state.items():
        assert torch.equal(value, b.global_state[key])
    groups = {t.multicast_group for t in multi.recorder.transfers if t.kind == "model_down"}
    assert len(groups) == 1 and groups != {-1}
    uni.close()
    multi.close()


def test_multicast_sends_the_model_once_at_the_weakest_rate():
    world, alg = _world("timing", devices=5, downlink="multicast")
    _run_round(world, alg)
    down = [t for t in world.recorder.transfers if t.kind == "model_down"]
    assert len({(t.start_s, t.end_s) for t in down}) == 1  # one transmission, all receivers
    assert isinstance(world.env, simpy.Environment)
