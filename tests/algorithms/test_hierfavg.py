"""HierFAVG (Liu et al., ICC 2020): the FedAvg limit, edge/cloud aggregation by hand,
the hops it makes on a network, and its state_dict round trip."""

from __future__ import annotations

import pandas as pd
import pytest
import torch

from netfl.algorithms import ALGORITHMS
from netfl.loading.scenarios import algorithm_config, parse_scenario
from netfl.sim.runner import run
from netfl.sim.world import World
from tests.conftest import tiny_scenario
from tests.radio.test_multicell_radio import PLAIN_CELL, TWO_SITES

TWO_CELLS = {
    **TWO_SITES,
    "interference": {"model": "none"},
    "server_site": "cloud",
    "backhaul": {"capacity_mbps": 100, "latency_ms": 4},
}
FOUR = [[100.0, 0.0], [-120.0, 40.0], [420.0, 0.0], [600.0, 50.0]]


def _scenario(algorithm: dict, mode: str = "learn", **sections):
    base = {
        "devices": {"count": 4},
        "training": {"rounds": 2, "batch_size": 16},
        "learning": {"mode": mode},
        "algorithm": algorithm,
        **sections,
    }
    return parse_scenario(tiny_scenario(**base))


@pytest.mark.parametrize(
    "cell", [None, {"link": {"mode": "ofdma", "channel_profile": "nr_fr1_uma"}}]
)
def test_one_cell_and_kappa2_one_is_fedavg(cell):
    extra = {"cell": cell} if cell else {}
    a = run(_scenario({"name": "fedavg"}, **extra))
    b = run(_scenario({"name": "hierfavg", "kappa2": 1}, **extra))
    pd.testing.assert_frame_equal(a.transfers, b.transfers)
    pd.testing.assert_frame_equal(a.computes, b.computes)
    assert list(b.rounds["edges"]) == [1, 1]
    assert list(a.rounds["accuracy"]) == pytest.approx(list(b.rounds["accuracy"]), abs=1e-6)
    assert list(a.rounds["sim_time_s"]) == list(b.rounds["sim_time_s"])


def test_edge_and_cloud_aggregation_by_hand():
    s = _scenario(
        {"name": "hierfavg", "kappa2": 2},
        cell=PLAIN_CELL,
        network=TWO_CELLS,
        devices={"count": 4, "layout": {"kind": "positions", "positions_m": FOUR}},
        training={"rounds": 1, "batch_size": 16},
    )
    world = World(s)
    alg = ALGORITHMS["hierfavg"](world, algorithm_config(s))
    assert {e: [d.name for d in m] for e, (_, m) in alg.edges(world.devices).items()} == {
        "cell0": ["ue0", "ue1"],
        "cell1": ["ue2", "ue3"],
    }
    # replay the round by hand with the same seeds: edge rounds j = 0, 1, then the cloud
    from netfl.learning.params import weighted_average
    from netfl.learning.tasks import TrainTask

    w0 = alg.global_state
    n = [world.num_samples(d) for d in world.devices]

    def train(device, state, j):
        seed = world.streams.torch_seed("torch", 0, device.index, *((j,) if j else ()))
        task = TrainTask(
            config=world.train_config,
            seed=seed,
            model=world.model.name,
            indices=world.partitions[device.index],
            state=state,
            proximal_weight=0.0,
        )
        return world.executor.submit(task).result().state

    edges = []
    for members in ([0, 1], [2, 3]):
        state = w0
        for j in range(2):
            states = [train(world.devices[i], state, j) for i in members]
            state = weighted_average(states, [n[i] for i in members])
        edges.append((state, sum(n[i] for i in members)))
    expected = weighted_average([e for e, _ in edges], [m for _, m in edges])
    env = world.env
    proc = env.process(alg.round(0))
    env.run(until=proc)
    for k, v in expected.items():
        torch.testing.assert_close(alg.global_state[k], v, rtol=0, atol=1e-6)
    world.close()


def test_hops_on_a_network_access_and_backhaul():
    s = _scenario(
        {"name": "hierfavg", "kappa2": 3},
        "timing",
        cell=PLAIN_CELL,
        network=TWO_CELLS,
        devices={"count": 4, "layout": {"kind": "positions", "positions_m": FOUR}},
        training={"rounds": 2, "batch_size": 16},
    )
    result = run(s)
    t = result.transfers
    for r in (0, 1):
        tr = t[t["round"] == r]
        bh = tr[tr["direction"] == "backhaul"]
        # one model down to each edge and one up per cloud round, over the backhaul only
        assert sorted(bh["kind"]) == ["edge_model_down"] * 2 + ["edge_model_up"] * 2
        air = tr[tr["direction"] != "backhaul"]
        # κ2 = 3 edge rounds: each client downloads from and uploads to its own cell 3 times
        assert (air.groupby(["src", "dst"]).size() == 3).all()
        for _, row in air.iterrows():
            dev, bs = (
                (row["src"], row["dst"])
                if row["direction"] == "uplink"
                else (row["dst"], row["src"])
            )
            assert bs == ("cell0" if dev in ("ue0", "ue1") else "cell1")
        # cloud aggregation after both edges are up
        agg = result.computes[(result.computes["round"] == r) & (result.computes["node"] == "bs")]
        assert len(agg) == 1 and agg["start_s"].iloc[0] >= bh["end_s"].max() - 1e-12
    assert list(result.rounds["edges"]) == [2, 2]
    assert result.rounds["models_backhaul"].sum() == 8


def test_state_dict_round_trip():
    s = _scenario({"name": "hierfavg", "kappa2": 2}, training={"rounds": 1, "batch_size": 16})
    world = World(s)
    alg = ALGORITHMS["hierfavg"](world, algorithm_config(s))
    env = world.env
    env.run(until=env.process(alg.round(0)))
    state = alg.state_dict()
    other = ALGORITHMS["hierfavg"](World(s), algorithm_config(s))
    other.load_state_dict(state)
    for k, v in alg.global_state.items():
        assert torch.equal(other.global_state[k], v)
    world.close()


def test_codecs_on_each_tier():
    """Timing mode on two cells with a cloud server: the access tier's uploads are fp16,
    its downloads 8-bit uniform; the backhaul's models go down as bf16 and up as 1 %
    top-k — each transfer's size the codec's, by hand (logistic regression on the 8×8
    digits: a 64×10 weight and 10 biases)."""
    s = _scenario(
        {
            "name": "hierfavg",
            "kappa2": 2,
            "uplink_codec": {"name": "fp16"},
            "downlink_codec": {"name": "uniform", "options": {"bits": 8}},
            "edge_uplink_codec": {"name": "topk", "options": {"fraction": 0.01}},
            "edge_downlink_codec": {"name": "bf16"},
        },
        "timing",
        cell=PLAIN_CELL,
        network=TWO_CELLS,
        devices={"count": 4, "layout": {"kind": "positions", "positions_m": FOUR}},
    )
    t = run(s).transfers
    size = t.groupby("kind")["size_bits"].unique().to_dict()
    assert list(size["model_up"]) == [16 * 650]
    assert list(size["model_down"]) == [8 * 650 + 64 * 2]
    assert list(size["edge_model_down"]) == [16 * 650]
    # top-k: ⌈0.01·640⌉ = 7 values and positions of 10 bits; 1 bias value, 4 bits
    assert list(size["edge_model_up"]) == [7 * 32 + 7 * 10 + 32 + 4]


def test_error_feedback_memories_of_both_tiers_resume(tmp_path):
    """Learning mode with top-k and error feedback on both tiers: killed after a round
    and resumed, the same rows as straight through (the memories in the checkpoint)."""
    from netfl.sim.checkpoint import load_checkpoint
    from tests.test_checkpoint import _interrupted_and_resumed

    s = _scenario(
        {
            "name": "hierfavg",
            "kappa2": 2,
            "uplink_codec": {"name": "topk", "options": {"fraction": 0.1}},
            "edge_uplink_codec": {"name": "topk", "options": {"fraction": 0.1}},
        },
        cell=PLAIN_CELL,
        network=TWO_CELLS,
        devices={"count": 4, "layout": {"kind": "positions", "positions_m": FOUR}},
        training={"rounds": 3, "batch_size": 16},
        outputs={"figures": False, "progress": False, "checkpoint_every": 1},
    )
    whole = run(s)
    resumed, run_dir = _interrupted_and_resumed(s, tmp_path, 1)
    saved = load_checkpoint(run_dir)["algorithm"]
    assert set(saved["codec_memory"]) == {"ue0", "ue1", "ue2", "ue3"}
    assert set(saved["edge_codec_memory"]) == {"cell0", "cell1"}
    cols = ["round", "sim_time_s", "accuracy", "loss", "uplink_bits"]
    pd.testing.assert_frame_equal(resumed.rounds[cols], whole.rounds[cols])
