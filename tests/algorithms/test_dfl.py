"""DFL and FD on the simulated cell: the FedAvg limit, payloads, FD's exchange."""

from __future__ import annotations

import pytest

from netfl.algorithms import ALGORITHMS
from netfl.loading.scenarios import algorithm_config, parse_scenario
from netfl.sim.runner import run
from netfl.sim.world import World
from tests.conftest import tiny_scenario

NON_IID = {"dataset": "digits", "partition": {"scheme": "dominant_label", "fraction": 0.8}}


def _scenario(algorithm: dict, mode: str = "learn", **sections):
    base = {
        "devices": {"count": 10},
        "data": NON_IID,
        "training": {"rounds": 3, "batch_size": 16, "local_epochs": 2},
        "learning": {"mode": mode},
        "algorithm": algorithm,
    }
    base.update(sections)
    return parse_scenario(tiny_scenario(**base))


def test_threshold_one_is_fedavg():
    fedavg = run(_scenario({"name": "fedavg", "fraction": 0.5}))
    dfl = run(_scenario({"name": "dfl", "fraction": 0.5, "threshold": 1.0}))
    assert list(dfl.rounds["accuracy"]) == list(fedavg.rounds["accuracy"])
    assert list(dfl.rounds["loss"]) == list(fedavg.rounds["loss"])
    assert (dfl.rounds["rho"] == 1.0).all()


def test_distillation_changes_training_when_rho_below_one():
    a = run(_scenario({"name": "dfl", "threshold": 1.0}))
    b = run(_scenario({"name": "dfl", "ratio": "fixed", "fixed_ratio": 0.3}))
    assert list(a.rounds["accuracy"]) != list(b.rounds["accuracy"])
    assert (b.rounds["rho"] == 0.3).all()
    c = run(_scenario({"name": "dfl", "threshold": 0.0}, training={"rounds": 4}))
    assert list(c.rounds["rho"]) == [1.0, 0.75, 0.5, 0.25]


@pytest.mark.parametrize("name", ["dfl", "fd", "fedavg"])
def test_per_round_bytes_are_model_plus_soft_targets(name):
    scenario = _scenario({"name": name, "fraction": 0.3}, "timing")
    result = run(scenario)
    world = World(scenario)
    alg = ALGORITHMS[name](world, algorithm_config(scenario))
    model = world.model.size_bits
    soft = 10 * 10 * 32.0
    per_device = {"dfl": model + soft, "fd": soft, "fedavg": model}[name]
    t = result.transfers
    for (_, node), g in t.groupby(["round", "dst"]):
        if node != "bs":
            assert g["size_bits"].sum() == per_device
    for (_, node), g in t.groupby(["round", "src"]):
        if node != "bs":
            assert g["size_bits"].sum() == per_device
    assert (result.rounds["num_clients"] == 3).all()
    if name != "fedavg":
        assert alg.soft_bits == soft


def test_fd_uploads_no_weights_and_keeps_models_on_devices():
    result = run(_scenario({"name": "fd"}))
    t = result.transfers
    assert set(t["kind"]) == {"soft_targets_down", "soft_targets_up"}
    assert (t["num_models"] == 0).all() and (result.rounds["models_sent"] == 0).all()
    # each device's model learns from its own data (IID: well above chance)
    iid = run(_scenario({"name": "fd"}, data={"dataset": "digits", "partition": {"scheme": "iid"}}))
    assert iid.rounds["accuracy"].iloc[-1] > 0.4  # chance is 0.1
    # non-IID local models are poor on the balanced test set: FD's known weakness
    assert result.rounds["accuracy"].iloc[-1] < iid.rounds["accuracy"].iloc[-1]


def test_kl_direction_reaches_every_device_job():
    """``kl_direction`` is carried to every device's distillation job."""
    from netfl.learning.tasks import DistillTask

    seen = []
    for direction in ("model_to_targets", "targets_to_model"):
        scenario = _scenario(
            {"name": "dfl", "ratio": "fixed", "fixed_ratio": 0.3, "kl_direction": direction}
        )
        world = World(scenario)
        alg = ALGORITHMS["dfl"](world, algorithm_config(scenario))
        original = world.submit_device_job

        def spy(task_type, r, device, original=original, **fields):
            assert task_type is DistillTask
            seen.append(fields["kl_direction"])
            return original(task_type, r, device, **fields)

        world.submit_device_job = spy
        for r in range(2):
            world.recorder.round = r
            world.env.run(until=world.env.process(alg.round(r)))
    assert set(seen) == {"model_to_targets", "targets_to_model"}


@pytest.mark.parametrize("name", ["dfl", "fd"])
def test_soft_targets_correct_counts_rows_peaking_on_their_label(name):
    import torch

    result = run(_scenario({"name": name}))
    col = result.rounds["soft_targets_correct"]
    assert col.between(0, 10).all() and col.dtype.kind == "i"
    world = World(_scenario({"name": name}))
    alg = ALGORITHMS[name](world, algorithm_config(_scenario({"name": name})))
    soft = torch.full((10, 10), 0.01)
    soft[torch.arange(10), (torch.arange(10) + torch.tensor([0] * 7 + [1] * 3)) % 10] = 0.9
    alg.soft = soft
    assert alg.soft_targets_correct() == 7


@pytest.mark.parametrize("downlink", ["unicast", "multicast"])
def test_fd_soft_targets_count_no_model_either_way(downlink):
    """FD's soft targets are no model, broadcast or sent to each client: the downloads
    are ``soft_targets_down`` records carrying 0 models, and no round counts one."""
    result = run(_scenario({"name": "fd", "downlink": downlink}, "timing"))
    down = result.transfers[result.transfers["direction"] == "downlink"]
    assert set(down["kind"]) == {"soft_targets_down"} and (down["num_models"] == 0).all()
    assert (down["multicast_group"] >= 0).all() == (downlink == "multicast")
    assert (result.rounds["models_downlink"] == 0).all()
    assert (result.rounds["models_sent"] == 0).all()


@pytest.mark.parametrize("name", ["dfl", "fd"])
def test_a_deadline_cuts_late_clients_as_in_fedavg(name):
    """DFL's and FD's rounds are FedAvg's with columns added: its deadline applies. A
    deadline inside the round's span cuts the slow clients, recorded late; the round
    ends at the deadline plus the server's step."""
    free = run(_scenario({"name": name}, "timing", training={"rounds": 1}))
    span = float(free.rounds["round_time_s"].iloc[0])
    cut = run(_scenario({"name": name, "deadline_s": 0.5 * span}, "timing", training={"rounds": 1}))
    row = cut.rounds.iloc[0]
    assert row["clients_late"] > 0 and row["round_time_s"] < span
    assert (cut.transfers["outcome"] == "late").any()
