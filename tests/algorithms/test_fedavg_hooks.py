"""FedAvg's round calls named hooks (select, configure, local update, payload, aggregate):
a variant that overrides one changes exactly that step; what a round honours
(``deadline_s``) is declared by the round that is written, never detected."""

from __future__ import annotations

from dataclasses import replace

import pytest
import torch

from netfl.algorithms import (
    ALGORITHMS,
    DFL,
    FD,
    ClientConfig,
    EcoFed,
    FedAvg,
    FedDif,
    FedSwap,
    HierFAVG,
    LocalLossDPFL,
    Payload,
    VanillaDPFL,
    honours,
)
from netfl.errors import ScenarioError
from netfl.learning.params import OrderedAverage
from netfl.loading.scenarios import algorithm_config, parse_scenario
from netfl.sim.world import World
from tests.algorithms.test_fedavg import _run_round
from tests.algorithms.test_fedavg import _world as fedavg_world
from tests.conftest import tiny_scenario


def _world(cls: type[FedAvg] = FedAvg, mode: str = "learn", devices: int = 4, **algorithm):
    return fedavg_world(mode, devices, cls, **algorithm)


def _records(world: World, kind: str, computes: bool = False) -> dict[str, object]:
    rows = world.recorder.computes if computes else world.recorder.transfers
    return {
        (r.node if computes else r.src if kind.endswith("up") else r.dst): r
        for r in rows
        if r.kind == kind
    }


class _Spy(OrderedAverage):
    """FedAvg's aggregator, its calls recorded."""

    def __init__(self, weights):
        super().__init__(weights)
        self.calls: list[tuple[str, int]] = []

    def add(self, index, state):
        if state is not None:  # (OrderedAverage.drop adds None)
            self.calls.append(("add", index))
        super().add(index, state)

    def drop(self, index):
        self.calls.append(("drop", index))
        super().drop(index)


class _Traced(FedAvg):
    """FedAvg, each hook's call recorded with the simulated time."""

    def __init__(self, world, config):
        super().__init__(world, config)
        self.calls: list[tuple[str, object, float]] = []
        self.spy: _Spy | None = None

    def _log(self, hook, who):
        self.calls.append((hook, who, self.world.env.now))

    def select_clients(self, r):
        self._log("select", None)
        return super().select_clients(r)

    def configure_client(self, r, device):
        self._log("configure", device.name)
        return super().configure_client(r, device)

    def local_update(self, r, device, state, epochs=None, seed_key=(), proximal_weight=0.0):
        self._log("local_update", device.name)
        return super().local_update(r, device, state, epochs, seed_key, proximal_weight)

    def payload(self, r, device, result):
        self._log("payload", device.name)
        return super().payload(r, device, result)

    def aggregator(self, r, clients):
        self._log("aggregator", len(clients))
        self.spy = _Spy([self.world.num_samples(d) for d in clients])
        return self.spy


def test_the_round_calls_each_hook_in_turn_and_the_numbers_stay_fedavgs():
    plain_world, plain = _world()
    world, alg = _world(_Traced)
    _run_round(plain_world, plain)
    _run_round(world, alg)
    names = [d.name for d in alg.select_clients(0)]
    alg.calls.pop()  # (the call just above)
    hooks = [h for h, _, _ in alg.calls]
    assert hooks[:2] == ["select", "aggregator"] and alg.calls[1][2] == 0.0
    for hook in ("configure", "local_update", "payload"):
        assert sorted(w for h, w, _ in alg.calls if h == hook) == sorted(names), hook
    for name in names:  # per client: configured, trained, then its payload
        mine = [h for h, w, _ in alg.calls if w == name]
        assert mine == ["configure", "local_update", "payload"]
    up = _records(world, "model_up")
    assert all(t <= up[w].start_s for h, w, t in alg.calls if h == "payload")
    # every update reached the aggregator the hook returned, which gave the model
    assert sorted(alg.spy.calls) == [("add", i) for i in range(len(names))]
    for key, value in plain.global_state.items():
        assert torch.equal(value, alg.global_state[key])
    assert [(t.kind, t.size_bits, t.start_s, t.end_s) for t in world.recorder.transfers] == [
        (t.kind, t.size_bits, t.start_s, t.end_s) for t in plain_world.recorder.transfers
    ]
    plain_world.close()
    world.close()


class _DoubleBits(FedAvg):
    def payload(self, r, device, result):
        upload = super().payload(r, device, result)
        return replace(upload, bits=2.0 * upload.bits)


def test_a_payload_hook_changes_the_upload_bytes_and_nothing_else():
    plain_world, plain = _world()
    world, alg = _world(_DoubleBits)
    _run_round(plain_world, plain)
    _run_round(world, alg)
    bits = world.model.size_bits
    for kind, factor in (("model_up", 2.0), ("model_down", 1.0)):
        sizes = {t.size_bits for t in world.recorder.transfers if t.kind == kind}
        assert sizes == {factor * bits}, kind
    assert {t.size_bits for t in plain_world.recorder.transfers} == {bits}
    slow, fast = _records(world, "model_up"), _records(plain_world, "model_up")
    assert all(slow[n].end_s - slow[n].start_s > fast[n].end_s - fast[n].start_s for n in fast)
    for key, value in plain.global_state.items():  # (bits on air, not the values)
        assert torch.equal(value, alg.global_state[key])
    plain_world.close()
    world.close()


class _Quantised(FedAvg):
    """A codec on the payload hook: the server receives what it decodes."""

    def payload(self, r, device, result):
        upload = super().payload(r, device, result)
        state = {
            k: v.half().float() if v.is_floating_point() else v for k, v in result.state.items()
        }
        return Payload(upload.bits / 2.0, replace(result, state=state))


def test_a_payload_hook_decides_what_the_server_receives():
    plain_world, plain = _world()
    world, alg = _world(_Quantised)
    _run_round(plain_world, plain)
    _run_round(world, alg)
    assert {t.size_bits for t in world.recorder.transfers if t.kind == "model_up"} == {
        world.model.size_bits / 2.0
    }
    assert any(not torch.equal(v, alg.global_state[k]) for k, v in plain.global_state.items())
    plain_world.close()
    world.close()


class _ThreeEpochsForTheFirst(FedAvg):
    def configure_client(self, r, device):
        settings = super().configure_client(r, device)
        return replace(settings, epochs=3 * settings.epochs) if device.index == 0 else settings


def test_a_configure_hook_sets_a_clients_epochs_and_so_its_compute_time():
    plain_world, plain = _world(mode="timing")
    world, alg = _world(_ThreeEpochsForTheFirst, mode="timing")
    assert plain.configure_client(0, plain_world.devices[1]) == ClientConfig(
        epochs=plain_world.train_config.epochs
    )
    _run_round(plain_world, plain)
    _run_round(world, alg)
    slow, fast = _records(world, "train", True), _records(plain_world, "train", True)
    for name, step in fast.items():
        factor = 3.0 if name == world.devices[0].name else 1.0
        assert slow[name].flops == pytest.approx(factor * step.flops, rel=1e-12)
        assert slow[name].duration_s == pytest.approx(factor * step.duration_s, rel=1e-9)
    plain_world.close()
    world.close()


class _KeepsEveryUpdate(FedAvg):
    def __init__(self, world, config):
        super().__init__(world, config)
        self.seen: list = []

    def aggregator(self, r, clients):
        return None

    def server_update(self, r, clients, results):
        self.seen = list(results)
        yield from super().server_update(r, clients, results)


class _Fixed:
    """An aggregator that answers one state, whatever arrives."""

    def __init__(self, state):
        self.state, self.added, self.dropped = state, [], []

    def add(self, index, state):
        self.added.append(index)

    def drop(self, index):
        self.dropped.append(index)

    def result(self):
        return self.state


def test_an_aggregate_hook_is_the_aggregation_streaming_or_not():
    plain_world, plain = _world()
    _run_round(plain_world, plain)
    world, alg = _world(_KeepsEveryUpdate)
    _run_round(world, alg)  # no aggregator: the server gets every state, averages them
    assert alg.seen and all(res.state is not None for res in alg.seen)
    for key, value in plain.global_state.items():
        assert torch.equal(value, alg.global_state[key])
    fixed = {k: torch.zeros_like(v) for k, v in plain.global_state.items()}

    class Overridden(FedAvg):
        def aggregator(self, r, clients):
            self.used = _Fixed(fixed)
            return self.used

    other_world, other = _world(Overridden)
    _run_round(other_world, other)
    assert sorted(other.used.added) == list(range(len(other.select_clients(0))))
    assert other.global_state is fixed and not other.used.dropped
    for w in (plain_world, world, other_world):
        w.close()


def test_a_late_client_is_dropped_from_the_aggregator():
    world, alg = _world(_Traced, deadline_s=1e-4)
    start = {k: v.clone() for k, v in alg.global_state.items()}
    summary = _run_round(world, alg)
    assert summary.extra["clients_late"] == summary.num_clients > 0
    assert sorted(alg.spy.calls) == [("drop", i) for i in range(summary.num_clients)]
    for key, value in start.items():  # nothing arrived: the model stays
        assert torch.equal(value, alg.global_state[key])
    world.close()


def test_what_a_round_honours_is_declared_by_the_round_written():
    class Inherits(FedAvg):
        pass

    class Replaces(FedAvg):
        def round(self, r):
            return (yield from super().round(r))

    class Wraps(FedAvg):
        @honours("deadline_s", "policy", "outage")
        def round(self, r):
            return (yield from super().round(r))

    deadline = frozenset({"deadline_s", "policy", "outage"})
    assert FedAvg.round_honours() == Inherits.round_honours() == Wraps.round_honours()
    assert FedAvg.round_honours() == deadline and Replaces.round_honours() == frozenset()
    for cls in (DFL, FD, VanillaDPFL, LocalLossDPFL):
        assert cls.round_honours() == deadline, cls.name
    for cls in (FedDif, FedSwap, EcoFed):
        assert cls.round_honours() == frozenset(), cls.name
    assert HierFAVG.round_honours() == frozenset({"policy"})  # (its own round, a policy's)
    assert not hasattr(FedAvg, "wraps_fedavg_round")


@pytest.mark.parametrize(("decorated", "accepted"), [(False, False), (True, True)])
def test_the_scenario_check_reads_the_declaration(monkeypatch, decorated, accepted):
    class Plugin(FedAvg):
        name = "hooks_plugin"

        def round(self, r):
            return (yield from super().round(r))

    if decorated:
        Plugin.round = honours("deadline_s")(Plugin.round)
    monkeypatch.setitem(ALGORITHMS, Plugin.name, Plugin)
    data = tiny_scenario(algorithm={"name": Plugin.name, "deadline_s": 1.0})
    if accepted:
        assert parse_scenario(data).algorithm.name == Plugin.name
        return
    with pytest.raises(ScenarioError) as err:
        parse_scenario(data)
    message = str(err.value)
    assert "'hooks_plugin' runs its own rounds; a deadline applies to FedAvg's round" in message
    assert "valid with: dfl, fd, fedavg, local_loss_dpfl, vanilla_dpfl)" in message


@pytest.mark.parametrize("name", ["dfl", "fd"])
def test_dfl_and_fd_ask_the_configure_hook_for_the_epochs(name):
    """DFL's and FD's local update (distillation) train the epochs the configure hook
    gives: three times the epochs on one client, three times its training FLOPs (less
    the one prediction pass for its soft targets); the others unchanged."""
    from netfl.algorithms import ALGORITHMS

    base = ALGORITHMS[name]

    def configure_client(self, r, device):
        settings = base.configure_client(self, r, device)
        return replace(settings, epochs=3 * settings.epochs) if device.index == 0 else settings

    tripled = type(f"Tripled{name}", (base,), {"configure_client": configure_client})
    scenario = parse_scenario(
        tiny_scenario(
            devices={"count": 3},
            training={"rounds": 1, "batch_size": 16},
            learning={"mode": "timing"},
            algorithm={"name": name},
        )
    )
    steps = {}
    for cls in (base, tripled):
        world = World(scenario)
        alg = cls(world, algorithm_config(scenario))
        _run_round(world, alg)
        steps[cls] = _records(world, "train", True)
        world.close()
    plain, slow = steps[base], steps[tripled]
    world = World(scenario)
    m = world.model.flops
    for node, step in plain.items():
        n = world.num_samples(world.devices[int(node[2:])])
        extra = 2 * m.train_per_sample * n * world.train_config.epochs if node == "ue0" else 0.0
        assert slow[node].flops == pytest.approx(step.flops + extra, rel=1e-12)
    world.close()
