"""Run-time invariants: each one, broken on purpose, raises an error that names it."""

from __future__ import annotations

import math

import pytest
import simpy

from netfl.algorithms.fedavg import FedAvg
from netfl.core.invariants import InvariantError, check_records, check_round
from netfl.core.records import ComputeRecord, TransferRecord
from netfl.loading.scenarios import parse_scenario
from netfl.radio.sharing import Flow, ProcessorSharing
from netfl.sim.runner import run
from tests.conftest import tiny_scenario


def _flow(env, bits):
    return Flow(bits, math.inf, env.event())


def test_a_healthy_medium_passes_and_delivers_exactly():
    env = simpy.Environment()
    medium = ProcessorSharing(env, 100.0)
    ends = []

    def send(bits):
        yield medium.add_flow(_flow(env, bits))
        ends.append(env.now)

    env.process(send(100.0))
    env.process(send(300.0))
    env.run()
    assert ends == [2.0, 4.0]


def test_over_allocated_resources_are_caught(monkeypatch):
    env = simpy.Environment()
    medium = ProcessorSharing(env, 100.0)
    original = ProcessorSharing._allocate

    def greedy(self):
        total = original(self)
        for f in self.flows:
            f.share *= 3  # hand out three times the capacity
        return total

    monkeypatch.setattr(ProcessorSharing, "_allocate", greedy)
    medium.add_flow(_flow(env, 100.0))  # allocated at the end of this instant
    with pytest.raises(InvariantError, match="resources_within_capacity") as err:
        env.run()
    assert err.value.name == "resources_within_capacity"


def test_bits_delivered_beyond_the_request_are_caught(monkeypatch):
    env = simpy.Environment()
    medium = ProcessorSharing(env, 100.0)
    original = ProcessorSharing._drain_all

    def leaky(self, t0, t1):
        original(self, t0, t1)
        for f in self.flows:
            f.remaining_bits -= 7.0  # bits that were never sent

    monkeypatch.setattr(ProcessorSharing, "_drain_all", leaky)
    medium.add_flow(_flow(env, 100.0))
    with pytest.raises(InvariantError, match="bits_delivered_equal_requested"):
        env.run()


def _transfer(**kw):
    base = dict(
        round=0,
        src="ue0",
        dst="bs",
        kind="model_up",
        direction="uplink",
        size_bits=8.0,
        start_s=0.0,
        end_s=1.0,
        num_models=1,
        tx_energy_j=1.0,
        rx_energy_j=0.0,
    )
    return TransferRecord(**{**base, **kw})


def _compute(**kw):
    base = dict(round=0, node="ue0", kind="train", flops=1.0, start_s=0.0, end_s=1.0, energy_j=1.0)
    return ComputeRecord(**{**base, **kw})


@pytest.mark.parametrize(
    "transfers, computes, name",
    [
        ([_transfer(size_bits=-1.0)], [], "sizes_nonnegative"),
        ([_transfer(end_s=-0.5)], [], "durations_nonnegative"),
        ([_transfer(tx_energy_j=-1e-3)], [], "energy_nonnegative"),
        ([_transfer(rx_energy_j=math.nan)], [], "energy_nonnegative"),
        ([_transfer(end_s=9.0)], [], "time_monotone"),
        ([], [_compute(flops=-5.0)], "sizes_nonnegative"),
        ([], [_compute(start_s=0.5, end_s=0.25)], "durations_nonnegative"),
        ([], [_compute(energy_j=-2.0)], "energy_nonnegative"),
        ([], [_compute(end_s=11.0)], "time_monotone"),
    ],
)
def test_record_faults_name_their_invariant(transfers, computes, name):
    check_records([_transfer()], [_compute()], now_s=1.0)  # healthy records pass
    with pytest.raises(InvariantError) as err:
        check_records(transfers, computes, now_s=1.0)
    assert err.value.name == name


def test_round_faults_name_their_invariant():
    meters = {"ue0": (1.0, 2.0)}
    check_round(0, 0.0, 1.0, meters, {"ue0": (1.0, 2.5)}, 0.5)
    for args, name in [
        ((0, 2.0, 1.0, meters, meters, 0.5), "time_monotone"),
        ((0, 0.0, 1.0, meters, {"ue0": (0.5, 2.0)}, 0.5), "energy_meters_monotone"),
        ((0, 0.0, 1.0, meters, meters, 1.5), "accuracy_in_unit_interval"),
        ((0, 0.0, 1.0, meters, meters, -0.1), "accuracy_in_unit_interval"),
    ]:
        with pytest.raises(InvariantError) as err:
            check_round(*args)
        assert err.value.name == name
    check_round(0, 0.0, 1.0, meters, meters, math.nan)  # rounds without evaluation


def test_the_runner_checks_every_round(monkeypatch):
    scenario = parse_scenario(tiny_scenario(learning={"mode": "learn"}))
    run(scenario)  # healthy

    original = FedAvg.server_update

    def bad_server_update(self, r, clients, results):
        yield from original(self, r, clients, results)
        self.world.recorder.computes.append(
            _compute(
                node="bs",
                kind="aggregate",
                start_s=self.world.env.now,
                end_s=self.world.env.now,
                energy_j=-1.0,
            )
        )

    monkeypatch.setattr(FedAvg, "server_update", bad_server_update)
    with pytest.raises(InvariantError, match="energy_nonnegative"):
        run(scenario)
    monkeypatch.setattr(FedAvg, "server_update", original)
    monkeypatch.setattr(FedAvg, "evaluate", lambda self: (1.2, 0.0))
    with pytest.raises(InvariantError, match="accuracy_in_unit_interval"):
        run(scenario)
