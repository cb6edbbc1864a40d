"""DNN-partitioned FL: Table I bytes, the ρ schedule, the frozen device part, the replay
buffer, pre-training, and vanilla DPFL's equivalence with whole-model FedAvg."""

from __future__ import annotations

import math

import pytest
import torch

from netfl.algorithms import ALGORITHMS
from netfl.errors import ScenarioError, UserError
from netfl.learning.split_model import round_bytes
from netfl.loading.scenarios import algorithm_config, parse_scenario
from netfl.sim.runner import run
from netfl.sim.world import World
from tests.conftest import tiny_scenario

SPLIT = ("vanilla_dpfl", "local_loss_dpfl", "ecofed")
TINY_PRETRAIN = {"num_samples": 60, "epochs": 1, "batch_size": 20}


def _scenario(algorithm: dict, mode: str = "timing", **sections):
    base = {
        "devices": {"count": 3, "link_profile": "4g_lte_advanced"},
        "data": {
            "dataset": "synthetic",
            "synthetic": {"shape": [3, 8, 8], "num_samples": 150, "num_classes": 4},
            "partition": {"scheme": "iid"},
        },
        "model": {"name": "resnet9"},
        "training": {"rounds": 3, "batch_size": 16},
        "learning": {"mode": mode},
        "algorithm": algorithm,
    }
    base.update(sections)
    return parse_scenario(tiny_scenario(**base))


def _algorithm(scenario):
    world = World(scenario)
    return world, ALGORITHMS[scenario.algorithm.name](world, algorithm_config(scenario))


def _per_device_bits(result, r: int, node: str) -> dict[str, float]:
    t = result.transfers
    t = t[t["round"] == r]
    return {
        "up": float(t.loc[t["src"] == node, "size_bits"].sum()),
        "down": float(t.loc[t["dst"] == node, "size_bits"].sum()),
    }


@pytest.mark.parametrize("name", ["fedavg", *SPLIT])
def test_per_device_round_bytes_are_table_i(name):
    algo = {"name": name} if name == "fedavg" else {"name": name, "partition_point": "PP2"}
    if name == "ecofed":
        algo["rho"] = 2
    scenario = _scenario(algo, training={"rounds": 4, "batch_size": 16})
    result = run(scenario)
    world, alg = _algorithm(scenario)
    scheme = "classic_fl" if name == "fedavg" else name
    model_bits = world.model.size_bits
    dev_bits = getattr(alg, "device_bits", 0.0)
    acts = getattr(alg, "act_values", 0)
    aux = getattr(alg, "aux_bits", 0.0)
    for r in range(4):
        for d in world.devices:
            n = world.num_samples(d)
            want = round_bytes(
                scheme,
                model_bits,
                dev_bits,
                n,
                acts,
                aux_bits=aux,
                upload_activations=r % 2 == 0,
                first_round=r == 0,
                num_batches=len(alg.epoch_batches(d)) if name == "ecofed" else 1,
            )
            assert _per_device_bits(result, r, d.name) == pytest.approx(want), (r, d.name)


def test_ecofed_uploads_every_rho_rounds_and_replays_between():
    result = run(_scenario({"name": "ecofed", "rho": 3}, training={"rounds": 7}))
    t = result.transfers
    assert sorted(t.loc[t["kind"] == "activations", "round"].unique()) == [0, 3, 6]
    # a device's streamed uploads never overlap on its own link
    for _, g in t[t["kind"] == "activations"].groupby(["round", "src"]):
        g = g.sort_values("start_s")
        assert (g["start_s"].to_numpy()[1:] >= g["end_s"].to_numpy()[:-1] - 1e-12).all()
    rounds = result.rounds.set_index("round")
    assert list(rounds["activation_upload"]) == [1, 0, 0, 1, 0, 0, 1]
    assert (rounds["server_trained"] == 3).all()  # replay: the server trains every round
    c = result.computes
    assert set(c.loc[c["kind"] == "device_forward", "round"]) == {0, 3, 6}
    assert (c.groupby("round")["kind"].apply(lambda k: (k == "server_train").sum()) == 3).all()


def test_replay_buffer_capacity_is_respected():
    # 3 devices × 40 samples; room for 90: the oldest device's activations are evicted
    result = run(
        _scenario({"name": "ecofed", "rho": 2, "replay_capacity": 90}, training={"rounds": 4})
    )
    r = result.rounds
    assert (r["buffer_samples"] <= 90).all()
    # upload rounds: each device trains on its fresh upload; by the next round the
    # first uploader's entry has been evicted, so only two devices replay
    assert list(r["server_trained"]) == [3, 2, 3, 2]


def test_ecofed_device_part_stays_frozen_and_server_part_learns():
    scenario = _scenario(
        {"name": "ecofed", "rho": 2, "pretrain": TINY_PRETRAIN}, "learn", training={"rounds": 3}
    )
    world, alg = _algorithm(scenario)
    dev0 = {k: v.clone() for k, v in alg.part_state(alg.device_keys).items()}
    srv0 = {k: v.clone() for k, v in alg.part_state(alg.server_keys).items()}
    for r in range(3):
        world.recorder.round = r
        proc = world.env.process(alg.round(r))
        world.env.run(until=proc)
    for k, v in alg.part_state(alg.device_keys).items():
        assert torch.equal(v, dev0[k]), k
    assert any(not torch.equal(v, srv0[k]) for k, v in alg.part_state(alg.server_keys).items())
    info = alg.info()
    assert info["pretrain_flops"] > 0 and "synthetic" in info["pretrain_source"]
    assert math.isfinite(info["pretrain_server_time_s"])
    # the same pre-training again comes from the cache, with the same weights
    _, again = _algorithm(scenario)
    assert again.info()["pretrain_cached"]
    for k, v in again.part_state(again.device_keys).items():
        assert torch.equal(v, dev0[k])


def test_pretrained_weights_load_from_a_local_file(tmp_path):
    scenario = _scenario({"name": "ecofed"}, "learn")
    world, alg = _algorithm(scenario)
    state = {
        k: torch.full_like(v, 0.5) if v.is_floating_point() else v
        for k, v in alg.global_state.items()
    }
    path = tmp_path / "w.pt"
    torch.save(state, path)
    loaded = _scenario({"name": "ecofed", "pretrain": {"weights_file": str(path)}}, "learn")
    _, alg2 = _algorithm(loaded)
    for k, v in alg2.part_state(alg2.device_keys).items():
        assert torch.equal(v, state[alg2.device_keys[k]])
    bad = _scenario({"name": "ecofed", "pretrain": {"dataset": "digits"}}, "learn")
    with pytest.raises(UserError, match=r"algorithm.pretrain.dataset: digits images are"):
        _algorithm(bad)


def test_vanilla_dpfl_learns_exactly_what_fedavg_learns():
    """SplitFed's per-batch exchange is whole-model SGD: same accuracies as FedAvg;
    only the bytes and the instants differ."""
    small = {"devices": {"count": 2}, "training": {"rounds": 2, "batch_size": 16}}
    fedavg = run(_scenario({"name": "fedavg"}, "learn", **small))
    split = run(_scenario({"name": "vanilla_dpfl"}, "learn", **small))
    assert list(split.rounds["accuracy"]) == list(fedavg.rounds["accuracy"])
    assert not split.rounds["sim_time_s"].equals(fedavg.rounds["sim_time_s"])


def test_vanilla_dpfl_round_time_is_the_sum_of_its_steps():
    """One device on a dedicated link: the round is the sum of every exchange and step."""
    scenario = _scenario({"name": "vanilla_dpfl"}, devices={"count": 1, "link_profile": "4g_lte"})
    result = run(scenario)
    world, alg = _algorithm(scenario)
    dev, bs = world.devices[0], world.bs
    up, down = dev.link.uplink_bps, dev.link.downlink_bps
    f_dev, f_srv = dev.compute.effective_flops_per_s, bs.compute.effective_flops_per_s
    t = alg.device_bits / down + alg.device_bits / up
    for b in alg.batches(dev):
        bits = b * alg.act_values * 32
        t += alg.device_flops.train_per_sample * b / f_dev  # forward + backward
        t += bits / up + bits / down
        t += alg.server_flops.train_per_sample * b / f_srv
    t += 2.0 * (alg.split.device_params + alg.split.server_params) / f_srv  # aggregation
    assert result.rounds["round_time_s"].iloc[0] == pytest.approx(t, rel=1e-9)


def test_split_schemes_need_a_splittable_model():
    with pytest.raises(ScenarioError, match="model.name: ecofed splits the model"):
        parse_scenario(tiny_scenario(algorithm={"name": "ecofed"}))


def test_ecofed_refuses_a_multicast_downlink():
    """EcoFed's device part goes to each device once, by unicast: a multicast downlink
    (FedAvg's option) is a one-line error, not silently ignored."""
    with pytest.raises(ScenarioError, match="algorithm.downlink: ecofed sends each device"):
        parse_scenario(
            tiny_scenario(
                model={"name": "vgg11"}, algorithm={"name": "ecofed", "downlink": "multicast"}
            )
        )


def test_coalesced_device_steps_deliver_at_the_same_instants():
    """Merging a batch's backward with the next forward (the device idles in between
    otherwise) changes no transfer instant, round time or energy; it saves events."""
    runs = {
        c: run(_scenario({"name": "vanilla_dpfl", "coalesce": c}, devices={"count": 3}))
        for c in (True, False)
    }
    a, b = runs[True], runs[False]
    cols = ["round", "src", "dst", "kind", "size_bits"]
    assert a.transfers[cols].equals(b.transfers[cols])
    for col in ("start_s", "end_s"):
        assert a.transfers[col].to_numpy() == pytest.approx(b.transfers[col].to_numpy(), rel=1e-12)
    assert a.rounds["round_time_s"].to_numpy() == pytest.approx(
        b.rounds["round_time_s"].to_numpy(), rel=1e-12
    )
    assert a.rounds["device_energy_j"].to_numpy() == pytest.approx(
        b.rounds["device_energy_j"].to_numpy(), rel=1e-9
    )
    assert len(a.computes) < len(b.computes)
    dev = lambda c: c[c["node"] != "bs"]["flops"].sum()  # noqa: E731
    assert dev(a.computes) == pytest.approx(dev(b.computes), rel=1e-12)


def test_local_loss_streams_through_one_send_queue_per_device():
    """Streamed activations queue on the device's link: no two of its uploads overlap,
    so a slow link is never credited with more than its rate."""
    result = run(_scenario({"name": "local_loss_dpfl"}, devices={"count": 2, "link_profile": "3g"}))
    t = result.transfers
    for (_, src), g in t[t["direction"] == "uplink"].groupby(["round", "src"]):
        g = g.sort_values("start_s")
        assert (g["start_s"].to_numpy()[1:] >= g["end_s"].to_numpy()[:-1] - 1e-12).all(), src
        busy = g["duration_s"].sum()
        assert busy == pytest.approx(g["size_bits"].sum() / 0.4e6)  # 3G: 0.4 Mbit/s up
    rounds = result.rounds
    first_up = t[(t["round"] == 0) & (t["direction"] == "uplink") & (t["src"] == "ue0")]
    assert rounds["round_time_s"].iloc[0] >= first_up["duration_s"].sum()


def test_ecofed_rho1_unquantised_trains_on_fresh_activations_exactly():
    """ρ = 1, no quantisation: each round's server part is the weighted average of
    server parts trained on the activations the frozen device part gives now, batch by
    training batch (the batches the device forwards and uploads: resnet9's BatchNorm
    keeps no statistics, so each activation depends on the batch it was computed in)."""
    from netfl.learning import weighted_average
    from netfl.learning.split_train import device_activations, train_server_part

    scenario = _scenario(
        {"name": "ecofed", "rho": 1, "quantize": False, "pretrain": TINY_PRETRAIN},
        "learn",
        training={"rounds": 1, "batch_size": 16},
    )
    world, alg = _algorithm(scenario)
    dev0 = alg.part_state(alg.device_keys)
    srv0 = alg.part_state(alg.server_keys)
    split, _ = world.executor.context.split("resnet9", "PP2")
    states, weights = [], []
    for d in world.devices:
        idx = torch.from_numpy(world.partitions[d.index])
        x, y = world.dataset.train_x[idx], world.dataset.train_y[idx]
        acts = device_activations(split.device, dev0, x, world.train_config.batch_size)
        res = train_server_part(
            split.server,
            srv0,
            acts,
            y,
            world.train_config,
            world.streams.torch_seed("torch", 0, d.index),
            torch.nn.CrossEntropyLoss(),
        )
        states.append(res.state)
        weights.append(res.num_samples)
    want = weighted_average(states, weights)
    proc = world.env.process(alg.round(0))
    world.env.run(until=proc)
    got = alg.part_state(alg.server_keys)
    for k, v in want.items():
        assert torch.equal(got[k], v), k


def _ecofed_jobs(augment: list[str], rounds: int = 3):
    """EcoFed (ρ = 2) in learning mode: every SplitTask submitted, with its result."""
    scenario = _scenario(
        {"name": "ecofed", "rho": 2, "pretrain": TINY_PRETRAIN},
        "learn",
        training={"rounds": rounds, "batch_size": 16, "augment": augment},
    )
    world, alg = _algorithm(scenario)
    jobs = []
    original = world.submit_device_job

    def spy(task_type, r, device, **fields):
        future = original(task_type, r, device, **fields)
        jobs.append((r, device.index, fields, future))
        return future

    world.submit_device_job = spy
    for r in range(rounds):
        world.recorder.round = r
        world.env.run(until=world.env.process(alg.round(r)))
    return world, alg, jobs


def test_ecofed_hflip_makes_fresh_uploads_differ_and_is_never_applied_to_replays():
    """With ``augment: [hflip]`` the activations of round 0 and round 2 (fresh uploads,
    seeded per round) differ; the server trains in round 1 on exactly round 0's stored
    activations (replayed, not re-augmented); without augmentation both uploads agree."""
    from netfl.learning.split_model import dequantize_activations, quantize_activations

    for augment in (["hflip"], []):
        world, alg, jobs = _ecofed_jobs(augment)
        acts = {(r, d): fut.result() for r, d, f, fut in jobs if f.get("kind") == "activations"}
        server = {(r, d): f["activations"] for r, d, f, _ in jobs if f.get("kind") == "server"}
        for d in range(3):
            fresh0, fresh2 = acts[(0, d)], acts[(2, d)]
            assert torch.equal(fresh0, fresh2) == (not augment)
            batches = alg.epoch_batches(world.devices[d])
            stored = dequantize_activations(quantize_activations(fresh0, batches))
            assert torch.equal(server[(1, d)], stored)  # round 1 replays round 0 as stored
            assert torch.equal(server[(0, d)], stored)


def test_ecofed_quantises_each_uploaded_batch_with_its_own_scale():
    world, alg, _ = _ecofed_jobs([], rounds=1)
    stored, _labels = alg.buffer.get(0)
    batches = alg.epoch_batches(world.devices[0])
    assert len(batches) > 1
    bounds = [sum(batches[:i]) for i in range(len(batches) + 1)]
    per_batch = [stored.scales[lo:hi].unique() for lo, hi in zip(bounds, bounds[1:], strict=False)]
    assert all(len(s) == 1 for s in per_batch)
    assert len({float(s) for s in per_batch}) > 1


@pytest.mark.parametrize("name", ["fedavg", "vanilla_dpfl", "local_loss_dpfl"])
def test_round_work_is_what_a_client_moves_and_computes(name):
    """The estimates a resource policy gets (``round_work``) are each device's round as it
    ran: its bits down and up and its FLOPs (the records of one timing round)."""
    algo = {"name": name} if name == "fedavg" else {"name": name, "partition_point": "PP2"}
    scenario = _scenario(algo, training={"rounds": 1, "batch_size": 16, "local_epochs": 2})
    result = run(scenario)
    world, alg = _algorithm(scenario)
    work = alg.round_work()
    c = result.computes
    for d in world.devices:
        bits = _per_device_bits(result, 0, d.name)
        assert work.download_bits(d) == pytest.approx(bits["down"], rel=1e-12)
        assert work.upload_bits(d) == pytest.approx(bits["up"], rel=1e-12)
        flops = float(c.loc[c["node"] == d.name, "flops"].sum())
        assert work.train_flops(d) == pytest.approx(flops, rel=1e-9)
    world.close()
