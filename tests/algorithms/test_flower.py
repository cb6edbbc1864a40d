"""Unmodified Flower apps on the simulated network (algorithm: flower): the same final
parameters as an in-process driver without a network, a round's duration by hand,
every strategy of flwr.serverapp.strategy that needs no extra set-up, timeouts,
availability, errors of the apps, and what netfl keeps of a run (the nodes' contexts)."""

from __future__ import annotations

import io
import random
import re
from pathlib import Path

import numpy as np
import pytest
import torch
from flwr.app import Context, Message, RecordDict
from flwr.common.constant import SUPERLINK_NODE_ID
from flwr.serverapp import Grid
from flwr.supercore.run import Run
from flwr.supercore.task_identity import TaskIdentity

from netfl.algorithms import ALGORITHMS
from netfl.algorithms.flower_grid import NODE_ID_BASE, RUN_ID, message_bits
from netfl.core.rng import Streams
from netfl.errors import AppError, ScenarioError, UserError
from netfl.learning.flower_client import run_flower_client
from netfl.learning.tasks import FlowerClientTask
from netfl.loading.scenarios import algorithm_config, parse_scenario
from netfl.sim.runner import run
from netfl.sim.world import World
from tests.conftest import tiny_scenario

APP_DIR = Path(__file__).resolve().parents[1] / "flower_apps"
APPS = {
    "server_app": "netfl_test_flower:server",
    "client_app": "netfl_test_flower:client",
    "app_dir": str(APP_DIR),
}


def _flower_data(**sections) -> dict:
    """``tiny_scenario`` without its training keys that a ClientApp replaces (refused)."""
    data = tiny_scenario(**sections)
    if "batch_size" not in sections.get("training", {}):
        data["training"].pop("batch_size")
    return data


def _scenario(run_config: dict, rounds: int = 5, **sections):
    base = {
        "learning": {"mode": "learn"},
        "training": {"rounds": rounds},
        "algorithm": {"name": "flower", **APPS, "run_config": run_config},
    }
    return parse_scenario(_flower_data(**{**base, **sections}))


def _results():
    import netfl_test_flower  # (importable once a scenario named the app folder)

    return netfl_test_flower.RESULTS


class InProcessGrid(Grid):
    """A driver without a network: each message goes straight to the ClientApp (through
    the same job runner netfl's executor uses), in the order sent."""

    def __init__(self, world: World, run_config: dict):
        self.world = world
        self.contexts = {
            NODE_ID_BASE + d.index: Context(
                RUN_ID,
                NODE_ID_BASE + d.index,
                {"partition-id": d.index, "num-partitions": len(world.all_devices)},
                RecordDict(),
                dict(run_config),
            )
            for d in world.all_devices
        }
        n = len(world.dataset.test_y_np)
        self.edges = np.linspace(0, n, len(world.all_devices) + 1).round().astype(int)
        self._run = Run.create_empty(RUN_ID)
        self.ids = 0

    def set_run(self, run):
        self._run = run

    @property
    def run(self):
        return self._run

    def create_message(self, content, message_type, dst_node_id, group_id, ttl=None):
        return Message(content, dst_node_id, message_type, ttl=ttl, group_id=group_id)

    def get_node_ids(self):
        return list(self.contexts)

    def push_messages(self, messages):  # (the test's ServerApp only sends and receives)
        raise AssertionError("push_messages: not used by the test's ServerApp")

    def pull_messages(self, message_ids):
        raise AssertionError("pull_messages: not used by the test's ServerApp")

    def send_and_receive(self, messages, *, timeout=None):
        replies = []
        for msg in messages:
            self.ids += 1
            msg.metadata.__dict__["_message_id"] = f"{self.ids:016x}"
            i = msg.metadata.dst_node_id - NODE_ID_BASE
            result = run_flower_client(
                self.world.executor.context,
                FlowerClientTask(
                    client_app=APPS["client_app"],
                    app_dir=APPS["app_dir"],
                    message=msg,
                    context=self.contexts[msg.metadata.dst_node_id],
                    indices=self.world.partitions[i],
                    test_rows=(int(self.edges[i]), int(self.edges[i + 1])),
                    seed=0,
                ),
            )
            assert result.error is None, result.error
            replies.append(result.reply)
        return replies


def test_same_final_parameters_as_an_in_process_driver():
    """Sampling half the nodes per round (Flower's random.sample), three rounds: netfl's
    Grid and a driver without a network give the same final model bit for bit."""
    cfg = {"num-server-rounds": 3, "fraction-train": 0.5, "tag": "netfl"}
    scenario = _scenario(cfg, devices={"count": 6})
    res = run(scenario)
    assert len(res.rounds) == 3 and res.stop_reason == "algorithm_finished"
    ours = _results()["netfl"]

    world = World(scenario)
    grid = InProcessGrid(world, {**cfg, "tag": "driver"})
    seed = Streams(scenario.seed).torch_seed("flower_server")
    random.seed(seed)
    np.random.seed(seed % (1 << 32))
    torch.manual_seed(seed)
    TaskIdentity.task_id, TaskIdentity.run_id, TaskIdentity.node_id = 1, RUN_ID, SUPERLINK_NODE_ID
    from netfl_test_flower import server

    server(
        grid=grid,
        context=Context(
            RUN_ID, SUPERLINK_NODE_ID, {}, RecordDict(), grid.contexts[NODE_ID_BASE].run_config
        ),
    )
    world.close()
    theirs = _results()["driver"]
    assert ours.keys() == theirs.keys()
    for key in ours:
        assert torch.equal(ours[key], theirs[key]), key
    # each round trained 3 of the 6 devices (half), and all 6 evaluated
    assert (res.rounds["flower_messages"] == 3 + 6).all()
    assert (res.rounds["num_clients"] == 6).all()


def test_one_device_round_is_downlink_compute_uplink_by_hand():
    """One device on a dedicated 4G link (5 Mbit/s up, 20 down): the round lasts
    S_down/20e6 + FLOPs/F + S_up/5e6, where S is the message's protobuf size (the model's
    650 float32 plus a little metadata) and the FLOPs are logistic regression's
    forward and weight-gradient products, 2·2·64·10 per sample."""
    cfg = {"num-server-rounds": 1, "min-nodes": 1, "fraction-evaluate": 0.0}
    res = run(_scenario(cfg, devices={"count": 1}))
    from netfl.compute import get_compute_profile

    rate = get_compute_profile("raspberry_pi_4").effective_flops_per_s
    tr = res.transfers.set_index("kind")
    down, up = tr.loc["train_down"], tr.loc["train_up"]
    for t in (down, up):
        assert 32 * 650 < t["size_bits"] < 32 * 650 + 8 * 2048
    n = int(res.devices.query("kind == 'pue'")["num_samples"].iloc[0])
    (compute,) = res.computes.itertuples()
    assert compute.flops == 4 * 64 * 10 * n
    expect = down["size_bits"] / 20e6 + compute.flops / rate + up["size_bits"] / 5e6
    assert res.rounds["round_time_s"].iloc[0] == pytest.approx(expect, rel=1e-12)
    assert down["end_s"] == pytest.approx(down["size_bits"] / 20e6, rel=1e-12)
    assert compute.start_s == down["end_s"] and up["start_s"] == compute.end_s


def test_message_bits_are_the_protobuf_size():
    from flwr.app import ArrayRecord

    state = {"w": torch.zeros(100, 10)}
    msg = Message(RecordDict({"arrays": ArrayRecord(state)}), NODE_ID_BASE, "train")
    assert 8 * 4000 < message_bits(msg) < 8 * 4000 + 8 * 1024


#: strategies that need set-up beyond a ServerApp: client-side DP clipping needs the
#: ClientApp's clipping mod; the XGBoost strategies need xgboost and its models
NEEDS_SET_UP = {
    "DifferentialPrivacyClientSideAdaptiveClipping",
    "DifferentialPrivacyClientSideFixedClipping",
    "FedXgbBagging",
    "FedXgbCyclic",
}


def _strategies() -> list[str]:
    from flwr.serverapp import strategy

    return sorted(set(strategy.__all__) - {"Result", "Strategy"} - NEEDS_SET_UP)


@pytest.mark.parametrize("name", _strategies())
def test_every_flower_strategy_runs_two_rounds(name):
    res = run(_scenario({"num-server-rounds": 2, "strategy": name, "tag": name}))
    rounds = res.rounds
    assert len(rounds) == 2 and res.stop_reason == "algorithm_finished"
    assert (rounds["flower_messages"] == 8).all() and (rounds["flower_errors"] == 0).all()
    assert rounds["accuracy"].between(0, 1).all()
    assert (rounds["uplink_bits"] > 0).all() and (rounds["device_energy_j"] > 0).all()
    assert all(torch.isfinite(v).all() for v in _results()[name].values())


def test_a_timeout_drops_the_replies_still_on_their_way():
    """A strategy timeout (simulated seconds) of 4 ms, an exchange of about 6.2 ms (1.2 ms
    down, 4.9 ms up): every reply comes late, counted and not aggregated; round 0's
    replies still arrive (and cost air time) during round 1; the run ends when the
    ServerApp returns, and round 1's uplinks, still on air then, stop there: recorded
    ``late`` with the bits and energy they had, not lost."""
    res = run(_scenario({"num-server-rounds": 2, "timeout": 0.004, "fraction-evaluate": 0.0}))
    assert (res.rounds["flower_late"] == 4).all()
    assert res.rounds["num_clients"].eq(0).all() and res.rounds["train_loss"].isna().all()
    assert res.rounds["sim_time_s"].tolist() == pytest.approx([0.004, 0.008], rel=1e-9)
    up = res.transfers[res.transfers["kind"] == "train_up"]
    assert len(up) == 8 and (up["round"] == 1).all()
    first = up[up["start_s"] < 0.004]
    assert len(first) == 4 and (first["outcome"] == "delivered").all()
    stopped = up[up["start_s"] > 0.004]
    assert len(stopped) == 4 and (stopped["outcome"] == "late").all()
    assert stopped["end_s"].tolist() == pytest.approx([0.008] * 4, rel=1e-12)
    assert (
        (0 < stopped["delivered_bits"]) & (stopped["delivered_bits"] < stopped["size_bits"])
    ).all()
    assert (stopped["tx_energy_j"] > 0).all()
    assert res.rounds["uplink_bits"].iloc[1] == pytest.approx(up["delivered_bits"].sum())


def test_devices_that_are_off_are_not_nodes(tmp_path):
    """A trace keeps ue3 off for the whole run: the strategy never sees it."""
    trace = tmp_path / "on.csv"
    trace.write_text("device,on_s,off_s\nue0,0,1e6\nue1,0,1e6\nue2,0,1e6\nue3,1e6,2e6\n")
    res = run(
        _scenario(
            {"num-server-rounds": 2},
            devices={"count": 4, "availability": {"model": "trace", "file": str(trace)}},
        )
    )
    assert "ue3" not in set(res.transfers["dst"]) and (res.rounds["num_clients"] == 3).all()


def test_a_device_that_leaves_mid_exchange_answers_node_unavailable(tmp_path):
    """ue1 leaves 3 ms into round 0, during its reply's upload (1.2 ms down, 4.9 ms up):
    the upload stops there with the bits it delivered, the strategy gets Flower's error
    reply for it (and aggregates the three others); in round 1 ue1 is no node."""
    trace = tmp_path / "on.csv"
    trace.write_text("device,on_s,off_s\nue0,0,1e6\nue1,0,0.003\nue2,0,1e6\nue3,0,1e6\n")
    res = run(
        _scenario(
            {"num-server-rounds": 2, "fraction-evaluate": 0.0},
            devices={"count": 4, "availability": {"model": "trace", "file": str(trace)}},
        )
    )
    assert res.rounds["flower_errors"].tolist() == [1.0, 0.0]
    assert res.rounds["num_clients"].tolist() == [4, 3]
    up = res.transfers[(res.transfers["kind"] == "train_up") & (res.transfers["src"] == "ue1")]
    assert len(up) == 1 and up.iloc[0]["outcome"] == "left"
    assert up.iloc[0]["end_s"] == pytest.approx(0.003, rel=1e-12)
    assert 0 < up.iloc[0]["delivered_bits"] < up.iloc[0]["size_bits"]


def test_a_client_app_that_raises_stops_the_run_naming_device_and_round():
    cfg = {"num-server-rounds": 3, "fail-node": 1, "fail-round": 2}
    res = run(_scenario(cfg), partial_on_interrupt=True)
    assert res.stop_reason == "failed" and len(res.rounds) == 1
    line = res.info["error"]
    assert "\n" not in line and "ue1" in line and "round 1" in line
    assert "RuntimeError: the test asked this node to fail" in line
    assert "Traceback" in res.info["error_trace"]
    with pytest.raises(AppError, match="ue1"):  # (no round finished: raised)
        run(_scenario({"num-server-rounds": 3, "fail-node": 1, "fail-round": 1}))


def test_a_server_app_that_raises_is_one_line():
    with pytest.raises(AppError, match=r"server_app .* raised in round 0 \(ValueError: the "):
        run(_scenario({"num-server-rounds": 1, "server-fails": True}))


def test_bad_apps_and_settings_name_their_key():
    cases = {
        "algorithm.client_app": {"client_app": "no_such_module:app"},
        "algorithm.server_app": {"server_app": "netfl_test_flower:client"},
    }
    for key, change in cases.items():
        with pytest.raises(ScenarioError, match=key):
            parse_scenario(
                _flower_data(
                    learning={"mode": "learn"}, algorithm={"name": "flower", **APPS, **change}
                )
            )
    with pytest.raises(ScenarioError, match="outputs.checkpoint_every"):
        _scenario({}, outputs={"checkpoint_every": 1, "figures": False, "progress": False})
    with pytest.raises(ScenarioError, match="learning.mode"):
        _scenario({}, learning={"mode": "timing"})
    with pytest.raises(ScenarioError, match="algorithm.run_config"):
        _scenario({"x": [1, 2]})
    # what the ClientApp's own code replaces, and a per-round draw Flower has no round for
    for key, sections in {
        "training.batch_size": {"training": {"rounds": 2, "batch_size": 16}},
        "training.lr": {"training": {"rounds": 2, "lr": 0.5}},
        "learning.eval_batch_size": {"learning": {"mode": "learn", "eval_batch_size": 7}},
        "devices.availability.model": {
            "devices": {"count": 4, "availability": {"model": "bernoulli", "p": 0.5}}
        },
    }.items():
        with pytest.raises(ScenarioError, match=re.escape(key)):
            _scenario({}, **sections)


def test_app_dir_is_relative_to_the_scenario_file(tmp_path):
    import shutil

    shutil.copy(APP_DIR / "netfl_test_flower.py", tmp_path / "netfl_test_flower.py")
    from netfl.loading.scenarios import load_scenario, resolved

    path = tmp_path / "s.yaml"
    import yaml

    data = _flower_data(
        learning={"mode": "learn"},
        algorithm={
            "name": "flower",
            "server_app": APPS["server_app"],
            "client_app": APPS["client_app"],
        },
    )
    path.write_text(yaml.safe_dump(data))
    scenario = load_scenario(path)
    assert resolved(scenario)["algorithm"]["app_dir"] == str(tmp_path.resolve())


def test_state_dict_round_trip_of_the_nodes_contexts():
    """What netfl holds of a Flower run is each node's Context (its ``state``): it
    round-trips through torch.save. (The ServerApp's own state lives in its code, so a
    Flower run is never checkpointed: see test_bad_apps_and_settings_name_their_key.)"""
    scenario = _scenario({"num-server-rounds": 2})
    world = World(scenario)
    algorithm = ALGORITHMS["flower"](world, algorithm_config(scenario))
    try:
        for r in range(2):
            world.recorder.round = r
            proc = world.env.process(algorithm.round(r))
            world.env.run(until=proc)
        state = algorithm.state_dict()
        buf = io.BytesIO()
        torch.save(state, buf)
        buf.seek(0)
        other = ALGORITHMS["flower"](world, algorithm_config(scenario))
        other.load_state_dict(torch.load(buf, weights_only=False))
        for nid, ctx in algorithm.bridge.contexts.items():
            assert ctx.state["calls"]["n"] == 2
            assert other.bridge.contexts[nid].state["calls"]["n"] == 2
        assert algorithm.finished
    finally:
        algorithm.close()
        world.close()


def test_cli_keeps_the_finished_rounds_of_a_failed_app(tmp_path, capsys):
    """``netfl run``: a ClientApp raising in round 1 exits 2 with one line; round 0 is
    written, the manifest marked incomplete; ``--debug`` adds the app's traceback."""
    import json

    import yaml

    from netfl.cli.app import main

    data = _flower_data(
        learning={"mode": "learn"},
        algorithm={
            "name": "flower",
            **APPS,
            "run_config": {"num-server-rounds": 3, "fail-node": 2, "fail-round": 2},
        },
    )
    path = tmp_path / "s.yaml"
    path.write_text(yaml.safe_dump(data))
    for debug in (False, True):
        out = tmp_path / f"run{int(debug)}"
        code = main(
            [*(["--debug"] if debug else []), "run", str(path), "--out", str(out), "--no-progress"]
        )
        err = capsys.readouterr().err
        assert code == 1  # (user code failed; 2 is for bad input)
        lines = [line for line in err.splitlines() if line.startswith("error:")]
        assert len(lines) == 1 and "ue2" in lines[0] and "round 1" in lines[0]
        assert "marked failed" in lines[0]
        assert ("Traceback" in err) == debug
        manifest = json.loads((out / "manifest.json").read_text())
        assert manifest["complete"] is False and manifest["status"] == "failed"
        assert len((out / "rounds.csv").read_text().strip().splitlines()) == 2  # header + round 0


def test_compute_model_charges_the_models_flops_per_example():
    """``compute: model``: a handler costs the scenario model's FLOPs per sample × the
    reply's num-examples (× local epochs when training), without counting."""
    cfg = {"num-server-rounds": 1, "local-epochs": 2}
    res = run(
        _scenario(cfg, algorithm={"name": "flower", **APPS, "run_config": cfg, "compute": "model"})
    )
    flops = res.info["train_flops_per_sample"], res.info["inference_flops_per_sample"]
    samples = res.devices.set_index("node")["num_samples"]
    n = len(samples[res.devices.set_index("node")["kind"] == "pue"])
    shares = np.diff(np.linspace(0, res.info["num_test_samples"], n + 1).round())
    for c in res.computes.itertuples():
        i = int(c.node[2:])
        expect = flops[0] * samples[c.node] * 2 if c.kind == "train" else flops[1] * shares[i]
        assert c.flops == pytest.approx(expect, rel=1e-12), c


def test_a_handler_gets_its_own_copy_of_the_message():
    """Flower's FedAvg sends every node the same record; a handler that writes into its
    message (here its config's ``seen``) changes neither the server's nor the next
    node's, with the serial executor as over a wire."""
    run(_scenario({"num-server-rounds": 2, "mutate": True, "fraction-evaluate": 0.0}))
    import netfl_test_flower  # (importable once a scenario named the app folder)

    assert netfl_test_flower.SEEN == [1] * 8
    netfl_test_flower.SEEN.clear()


def test_a_handler_cut_before_its_step_ends_leaves_the_context_as_it_was(tmp_path):
    """ue0 leaves 1.25 ms into round 0 (after its 1.2 ms download, in its compute step)
    and is back at 3 ms: its context counts the one handler that finished (round 1's),
    the others two."""
    trace = tmp_path / "on.csv"
    trace.write_text(
        "device,on_s,off_s\nue0,0,0.00125\nue0,0.003,1e6\nue1,0,1e6\nue2,0,1e6\nue3,0,1e6\n"
    )
    scenario = _scenario(
        {"num-server-rounds": 2, "fraction-evaluate": 0.0},
        devices={"count": 4, "availability": {"model": "trace", "file": str(trace)}},
    )
    world = World(scenario)
    algorithm = ALGORITHMS["flower"](world, algorithm_config(scenario))
    try:
        for r in range(2):
            world.recorder.round = r
            world.env.run(until=world.env.process(algorithm.round(r)))
        calls = {
            nid - NODE_ID_BASE: ctx.state["calls"]["n"]
            for nid, ctx in algorithm.bridge.contexts.items()
        }
        assert calls == {0: 1, 1: 2, 2: 2, 3: 2}
        cut = [c for c in world.recorder.computes if c.node == "ue0" and c.round == 0]
        assert len(cut) == 1 and cut[0].outcome == "left"
    finally:
        algorithm.close()
        world.close()


def test_asking_for_the_nodes_takes_no_time():
    """A ServerApp that asks for the nodes a few times before starting its strategy
    runs on the same clock as one that does not."""
    base = {"num-server-rounds": 2, "fraction-evaluate": 0.0}
    plain = run(_scenario(base)).rounds["sim_time_s"].tolist()
    assert run(_scenario({**base, "extra-polls": 5})).rounds["sim_time_s"].tolist() == plain


def test_a_strategy_waiting_for_nodes_waits_in_simulated_time(tmp_path, monkeypatch):
    """FedAvg wants all 4 nodes; ue3 turns on at 5 s: Flower's sample_nodes sleeps
    between its polls, each sleep advancing the clock to the next device that turns on
    (and taking no real time), so the round's messages leave at 5 s. Wanting more nodes
    than there are devices, the run stops after WAIT_POLLS waits with one line."""
    import time

    from netfl.algorithms.flower_server_grid import WAIT_POLLS

    slept = []
    monkeypatch.setattr(time, "sleep", slept.append)
    trace = tmp_path / "on.csv"
    trace.write_text("device,on_s,off_s\nue0,0,1e6\nue1,0,1e6\nue2,0,1e6\nue3,5,1e6\n")
    cfg = {"num-server-rounds": 1, "min-nodes": 4, "fraction-evaluate": 0.0}
    devices = {"count": 4, "availability": {"model": "trace", "file": str(trace)}}
    res = run(_scenario(cfg, devices=devices))
    down = res.transfers[res.transfers["kind"] == "train_down"]
    assert len(down) == 4 and (down["start_s"] == 5.0).all()
    assert slept == []
    with pytest.raises(UserError, match=f"waited for nodes {WAIT_POLLS} times"):
        run(_scenario({**cfg, "min-nodes": 5}, rounds=1))
    assert slept == []


def test_two_apps_of_one_module_name_each_run_their_own_code(tmp_path):
    """Folders holding an app module of the same name, with a helper module beside it
    (two versions of one app, a sweep over ``app_dir``; one folder inside another):
    each run imports its own folder's code, helper included, not what Python loaded
    first — also when a run of the first comes back after the others."""
    import sys

    code = (APP_DIR / "netfl_test_flower.py").read_text()
    folders = {1: tmp_path / "v1", 2: tmp_path / "v2", 3: tmp_path / "v1" / "inner"}
    for version, folder in folders.items():
        folder.mkdir()
        (folder / "netfl_twin_helper.py").write_text(f"VERSION = {version}\n")
        (folder / "netfl_twin_ns").mkdir()  # (a helper package without __init__.py)
        (folder / "netfl_twin_ns" / "util.py").write_text(f"VERSION = {version}\n")
        (folder / "netfl_twin.py").write_text(
            code
            + "\nfrom netfl_twin_helper import VERSION as HELPER\n"
            + "from netfl_twin_ns.util import VERSION as NS\n"
        )

    def run_version(version: int):
        apps = {"server_app": "netfl_twin:server", "client_app": "netfl_twin:client"}
        run_config = {"num-server-rounds": 1, "fraction-evaluate": 0.0, "tag": f"v{version}"}
        algorithm = {"name": "flower", **apps, "app_dir": str(folders[version])}
        run(_scenario(run_config, algorithm={**algorithm, "run_config": run_config}))
        module = sys.modules["netfl_twin"]
        return module.HELPER, module.NS, sorted(module.RESULTS)

    assert run_version(3) == (3, 3, ["v3"])
    assert run_version(1) == (1, 1, ["v1"])
    assert run_version(2) == (2, 2, ["v2"])
    assert run_version(1) == (1, 1, ["v1"])
