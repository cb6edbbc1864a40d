"""Every registered algorithm resumes from its ``state_dict`` at a round boundary."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from netfl.algorithms import ALGORITHMS
from netfl.loading.scenarios import algorithm_config, parse_scenario
from netfl.sim.world import World
from tests.conftest import tiny_scenario

#: algorithms that split a model need a splittable one (small inputs keep it fast)
SPLIT = {
    "data": {
        "dataset": "synthetic",
        "synthetic": {"shape": [3, 8, 8], "num_samples": 60, "num_classes": 4},
        "partition": {"scheme": "dirichlet", "alpha": 0.3},
    },
    "model": {"name": "resnet9"},
}
OPTIONS = {
    "ecofed": {"pretrain": {"num_samples": 60, "epochs": 1, "batch_size": 20}},
    "fedzkt": {"server_iterations": 4, "distill_batch_size": 16, "generator_width": 8},
    "fedmd": {"public_dataset": "mnist5k", "public_samples": 200, "alignment_size": 40},
}
#: algorithms with no state (the link test)
STATELESS = {"transfer_test"}
#: heterogeneous-model algorithms get two architectures
HETERO = {"fedzkt", "fedmd"}
#: a Flower ServerApp's state lives in its own code: such a run is never checkpointed
#: (refused by check_scenario); the part netfl holds round-trips in test_flower.py
NOT_RESUMABLE = {"flower"}


def _scenario(name: str):
    sections = {
        "devices": {"count": 5},
        "cell": {"radius_m": 60, "link": {"mode": "ofdma", "channel_profile": "feddif"}},
        "data": {"dataset": "digits", "partition": {"scheme": "dirichlet", "alpha": 0.3}},
        "learning": {"mode": "learn"},
        "algorithm": {"name": name, **OPTIONS.get(name, {})},
    }
    if name in ("vanilla_dpfl", "local_loss_dpfl", "ecofed"):
        sections.update(SPLIT)
    if name in HETERO:
        sections["devices"] = {"count": 5, "models": ["logreg", "fcn"]}
    if name in STATELESS:  # (fading draws follow the run's transfer count, not its state)
        sections["cell"]["link"]["fading"] = "none"
    return parse_scenario(tiny_scenario(**sections))


def _build(name: str):
    scenario = _scenario(name)
    world = World(scenario)
    return world, ALGORITHMS[name](world, algorithm_config(scenario))


def _rounds(world, algorithm, rounds) -> None:
    for r in rounds:
        world.recorder.round = r
        world.begin_round(r)
        proc = world.env.process(algorithm.round(r))
        world.env.run(until=proc)


@pytest.mark.parametrize("name", sorted(set(ALGORITHMS) - NOT_RESUMABLE))
def test_state_dict_round_trip_resumes_identically(name, tmp_path):
    from netfl.sim.checkpoint import load_checkpoint, save_checkpoint

    world_a, alg_a = _build(name)
    _rounds(world_a, alg_a, [0, 1])

    world_b, alg_b = _build(name)
    _rounds(world_b, alg_b, [0])
    # through the run's checkpoint file, read back as a resume reads it (weights_only)
    save_checkpoint(tmp_path, {"algorithm": alg_b.state_dict()})
    world_c, alg_c = _build(name)
    # as the runner resumes: round 0's clock replayed without torch work, then the state
    world_c.learn = False
    _rounds(world_c, alg_c, [0])
    world_c.learn = True
    alg_c.load_state_dict(load_checkpoint(tmp_path)["algorithm"])
    _rounds(world_c, alg_c, [1])

    sa, sc = alg_a.state_dict(), alg_c.state_dict()
    if name in STATELESS:  # nothing learnt: the resumed round's transfers are the same
        assert sa == sc == {}
        a = [
            (t.src, t.kind, t.size_bits, t.end_s - t.start_s)
            for t in world_a.recorder.transfers
            if t.round == 1
        ]
        c = [
            (t.src, t.kind, t.size_bits, t.end_s - t.start_s)
            for t in world_c.recorder.transfers
            if t.round == 1
        ]
        assert [x[:3] for x in a] == [x[:3] for x in c] and a
        np.testing.assert_allclose([x[3] for x in a], [x[3] for x in c], rtol=1e-12)
        return
    acc_a, loss_a = alg_a.evaluate()
    acc_c, loss_c = alg_c.evaluate()
    assert acc_a == acc_c and loss_a == loss_c
    for key, value in sa["global_state"].items():
        assert torch.equal(value, sc["global_state"][key]), key
    for part in ("device_states", "generator_state"):  # per-device models, FedZKT's generator
        if part not in sa:
            continue
        flat_a = sa[part] if part == "generator_state" else dict(enumerate(sa[part].values()))
        flat_c = sc[part] if part == "generator_state" else dict(enumerate(sc[part].values()))
        for key, value in flat_a.items():
            if isinstance(value, dict):
                assert all(torch.equal(v, flat_c[key][k]) for k, v in value.items()), (part, key)
            else:
                assert torch.equal(value, flat_c[key]), (part, key)
