"""FedZKT and FedMD on the simulator: heterogeneous models, stragglers, sizes, server time."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from netfl.algorithms import ALGORITHMS
from netfl.errors import ScenarioError
from netfl.learning.consensus import adapt_images
from netfl.loading.scenarios import algorithm_config, parse_scenario
from netfl.sim.runner import run
from netfl.sim.world import World
from tests.conftest import tiny_scenario

MODELS = ["logreg", "fcn", "lenet"]
ZKT = {"name": "fedzkt", "server_iterations": 3, "distill_batch_size": 16, "generator_width": 8}
FEDMD = {"name": "fedmd", "public_dataset": "mnist5k", "public_samples": 120, "alignment_size": 30}


def _scenario(algorithm: dict, mode: str = "learn", **sections):
    base = {
        "devices": {"count": 5, "models": MODELS},
        "model": {"name": "fcn"},
        "data": {"dataset": "digits", "partition": {"scheme": "iid"}},
        "learning": {"mode": mode},
        "algorithm": algorithm,
    }
    base.update(sections)
    return parse_scenario(tiny_scenario(**base))


def _build(scenario):
    world = World(scenario)
    return world, ALGORITHMS[scenario.algorithm.name](world, algorithm_config(scenario))


def _round(world, alg, r):
    world.recorder.round = r
    proc = world.env.process(alg.round(r))
    world.env.run(until=proc)
    return proc.value


def test_devices_get_models_in_turn_and_groups_override():
    s = _scenario(
        ZKT,
        "timing",
        devices={"count": 5, "models": MODELS, "groups": [{"count": 1, "model": "cnn"}]},
    )
    world = World(s)
    names = [world.device_model(d).spec.name for d in world.devices]
    assert names == ["cnn", "fcn", "lenet", "logreg", "fcn"]
    assert world.model.spec.name == "fcn"  # the server's global model


def test_single_model_algorithms_reject_per_device_models():
    with pytest.raises(ScenarioError, match="devices.models: algorithm 'fedavg' trains one model"):
        _scenario({"name": "fedavg"}, "timing")


def test_stragglers_keep_their_parameters_and_are_not_charged():
    world, alg = _build(_scenario({**ZKT, "fraction": 0.4}))
    before = {i: {k: v.clone() for k, v in s.items()} for i, s in alg.device_states.items()}
    summary = _round(world, alg, 0)
    assert summary.num_clients == 2
    active = {d.index for d in alg.select_clients(0)}
    for i, state in alg.device_states.items():
        same = all(torch.equal(state[k], before[i][k]) for k in state)
        assert same == (i not in active), i
    trained = {c.node for c in world.recorder.computes if c.kind == "train"}
    assert trained == {f"ue{i}" for i in active}


@pytest.mark.parametrize("algorithm", [ZKT, FEDMD])
def test_transfer_sizes_are_each_devices_own_model_or_payload(algorithm):
    world, alg = _build(_scenario(algorithm, "timing"))
    for r in range(2):
        _round(world, alg, r)
    by_name = {d.name: d for d in world.devices}
    c = world.dataset.num_classes
    kinds = set()
    for t in world.recorder.transfers:
        kinds.add(t.kind)
        dev = by_name[t.dst] if t.dst in by_name else by_name[t.src]
        if t.kind in ("model_up", "model_down"):
            assert t.size_bits == world.device_model(dev).size_bits
        elif t.kind in ("scores_up", "consensus_down"):
            assert t.size_bits == 30 * c * 32
        elif t.kind == "public_data_down":
            assert t.round == 0 and t.size_bits == 120 * (8 * 8 * 8 + 8)
    if algorithm is ZKT:
        assert kinds == {"model_up", "model_down"}
        sizes = {world.device_model(d).size_bits for d in world.devices}
        assert len(sizes) == 3  # three architectures, three sizes
    else:
        assert kinds == {"scores_up", "consensus_down", "public_data_down"}
        assert sum(t.kind == "public_data_down" for t in world.recorder.transfers) == 5


def test_server_time_is_charged_from_the_distillation_flops_while_devices_idle():
    world, alg = _build(_scenario(ZKT, "timing"))
    _round(world, alg, 0)
    (distill,) = [c for c in world.recorder.computes if c.kind == "distill"]
    clients = alg.select_clients(0)
    assert distill.flops == alg.server_update_flops(clients) > 0
    rate = world.bs.compute.effective_flops_per_s
    assert distill.end_s - distill.start_s == pytest.approx(distill.flops / rate, rel=1e-12)
    for t in world.recorder.transfers:
        assert t.end_s <= distill.start_s or t.start_s >= distill.end_s
    for c in world.recorder.computes:
        if c.node != "bs":
            assert c.end_s <= distill.start_s
    # more devices → more server FLOPs (each teacher and student costs)
    assert alg.server_update_flops(world.devices) > alg.server_update_flops(clients[:2])


def test_timing_mode_charges_what_learning_mode_charges():
    timing = run(_scenario(ZKT, "timing"))
    learn = run(_scenario(ZKT, "learn"))
    assert list(timing.rounds["sim_time_s"]) == list(learn.rounds["sim_time_s"])
    assert list(timing.rounds["uplink_bits"]) == list(learn.rounds["uplink_bits"])


def test_fedzkt_records_global_and_per_device_accuracy():
    res = run(_scenario(ZKT))
    dev = res.tables["device_accuracy"]
    assert len(dev) == 2 * 5 and set(dev["model"]) == set(MODELS)
    last = dev[dev["round"] == 1]
    row = res.rounds.iloc[-1]
    assert row["device_accuracy_mean"] == pytest.approx(last["accuracy"].mean())
    assert row["device_accuracy_min"] == last["accuracy"].min()
    assert 0.0 <= row["accuracy"] <= 1.0
    for col in ("generator_loss", "global_loss", "transfer_loss", "server_flops"):
        assert res.rounds[col].notna().all()


def test_fedmd_accuracy_is_the_mean_of_device_models_and_transfer_learning_runs_once():
    res = run(_scenario(FEDMD))
    dev = res.tables["device_accuracy"]
    for r, grp in dev.groupby("round"):
        assert res.rounds.loc[r, "accuracy"] == pytest.approx(grp["accuracy"].mean())
    comp = res.computes
    per_round = comp[comp["kind"] == "train"].groupby("round")["flops"].sum()
    assert per_round[0] > per_round[1]  # round 0 adds the public-set transfer learning


def test_fedmd_consensus_is_the_mean_of_the_scores():
    world, alg = _build(_scenario(FEDMD))
    seen = {}
    original = world.executor.submit

    def spy(task):
        fut = original(task)
        if getattr(task, "kind", None) == "scores":
            seen[task.model, id(task)] = fut.result()
        if getattr(task, "kind", None) == "digest":
            seen["consensus"] = task.public_y
        return fut

    world.executor.submit = spy
    _round(world, alg, 0)
    scores = [v for k, v in seen.items() if k != "consensus"]
    assert len(scores) == 5
    assert torch.allclose(seen["consensus"], torch.stack(scores).mean(dim=0))


def test_public_images_are_resized_and_standardised():
    x = torch.rand(20, 1, 8, 8) * 16
    out = adapt_images(x, (3, 28, 28))
    assert out.shape == (20, 3, 28, 28)
    assert torch.allclose(out.mean(dim=(0, 2, 3)), torch.zeros(3), atol=1e-5)
    assert torch.allclose(out.std(dim=(0, 2, 3)), torch.ones(3), atol=1e-3)
    assert adapt_images(torch.rand(4, 3, 32, 32), (1, 28, 28)).shape == (4, 1, 28, 28)


def test_l2_weight_keeps_the_scale_of_9_per_device():
    """(9) sums CE over D_k and adds λ‖w − w_last‖² once; the batch-mean CE the device
    minimises gets λ/|D_k|: the weight each device's task carries."""
    scenario = _scenario({**ZKT, "l2_weight": 3.0})
    world, alg = _build(scenario)
    seen = []
    original = world.submit_device_job

    def spy(task_type, r, device, **fields):
        seen.append((device.index, fields.get("proximal_weight")))
        return original(task_type, r, device, **fields)

    world.submit_device_job = spy
    _round(world, alg, 0)
    assert seen
    for index, weight in seen:
        assert weight == pytest.approx(3.0 / len(world.partitions[index]))


@pytest.mark.parametrize("downlink", ["unicast", "multicast"])
def test_fedmd_consensus_counts_no_model_either_way(downlink):
    """FedMD's consensus scores are no model, broadcast or sent to each device."""
    result = run(_scenario({**FEDMD, "downlink": downlink}, "timing", training={"rounds": 1}))
    down = result.transfers[result.transfers["kind"] == "consensus_down"]
    assert len(down) and (down["num_models"] == 0).all()
    assert (down["multicast_group"] >= 0).all() == (downlink == "multicast")
    assert (result.rounds["models_downlink"] == 0).all()


def test_fedzkt_with_every_update_dropped_charges_the_distillation_it_would_run():
    """A learning rate that blows every device model up (non-finite updates, dropped):
    no distillation runs (its losses are NaN), yet it is charged as in timing mode —
    the clock never depends on learned values, so a resumed run replays it — and
    ``server_flops`` is the FLOPs the server was charged, in both modes."""
    blown = run(
        _scenario(ZKT, training={"rounds": 1, "lr": 1000.0, "local_epochs": 3, "batch_size": 8})
    )
    row = blown.rounds.iloc[0]
    assert row["nonfinite_updates"] == 5
    assert np.isnan(row["generator_loss"]) and np.isnan(row["global_loss"])
    charged = blown.computes[blown.computes["kind"] == "distill"]["flops"].sum()
    assert charged > 0 and row["server_flops"] == charged
    fine = run(_scenario(ZKT, "timing", training={"rounds": 1}))
    distill = fine.computes[fine.computes["kind"] == "distill"]["flops"].sum()
    assert distill == charged and fine.rounds["server_flops"].iloc[0] == distill
