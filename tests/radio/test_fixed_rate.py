"""Timing of fixed-rate links: exact delivery instants, processor sharing, energy."""

from __future__ import annotations

import math

import numpy as np
import pytest
import simpy
from hypothesis import given, settings
from hypothesis import strategies as st

from netfl.core.records import Recorder
from netfl.radio import FixedRateRadio, ProcessorSharing, max_min_fair
from tests.conftest import make_node

REL = 1e-12  # float rounding of rate × time accumulations


def _log(env, proc, name, out):
    def wrapper():
        yield proc
        out.append((name, env.now))

    return env.process(wrapper())


def test_dedicated_links_end_at_size_over_rate_exactly(env, recorder):
    radio = FixedRateRadio(env, recorder, shared=False)
    bs = make_node("bs", "bs", link=None, compute="edge_server_cpu")
    a = make_node("ue0", link="3g_hspa_plus")  # 3 up / 6 down Mbit/s
    b = make_node("ue1", link="4g_lte", index=1)  # 5 up / 20 down Mbit/s
    size = 53_227_840.0
    out: list = []
    _log(env, radio.transfer(a, bs, size, "model_up"), "up_a", out)
    _log(env, radio.transfer(bs, b, size, "model_down"), "down_b", out)
    _log(env, radio.transfer(b, a, size, "d2d"), "d2d", out)
    env.run()
    assert sorted(out, key=lambda x: x[1]) == [
        ("down_b", size / 20e6),
        ("d2d", size / min(5e6, 6e6)),  # sender's uplink, receiver's downlink
        ("up_a", size / 3e6),
    ]
    dirs = {r.kind: r.direction for r in recorder.transfers}
    assert dirs == {"model_up": "uplink", "model_down": "downlink", "d2d": "d2d"}


def test_transfer_energy_is_power_times_time(env, recorder):
    radio = FixedRateRadio(env, recorder)
    bs = make_node("bs", "bs", link=None, compute="edge_server_cpu")
    a = make_node("ue0")
    radio.transfer(a, bs, 10e6, "x")
    env.run()
    rec = recorder.transfers[0]
    assert rec.duration_s == 2.0
    assert rec.airtime_s == 2.0
    assert rec.tx_energy_j == a.compute.tx_power_w * 2.0
    assert rec.rx_energy_j == 0.0  # the BS is charged by its power model, not per flow
    assert a.energy.tx_j == rec.tx_energy_j and a.energy.tx_s == 2.0


def test_two_equal_transfers_share_and_end_together(env, recorder):
    radio = FixedRateRadio(
        env, recorder, shared=True, uplink_capacity_bps=10e6, downlink_capacity_bps=40e6
    )
    bs = make_node("bs", "bs", link=None, compute="edge_server_cpu")
    devs = [make_node(f"ue{i}", link="5g", index=i) for i in range(2)]  # caps 20 Mbit/s
    out: list = []
    for d in devs:
        _log(env, radio.transfer(d, bs, 30e6, "up"), d.name, out)
    env.run()
    # each gets 5 Mbit/s: 30 Mbit / 5 Mbit/s = 6 s
    assert out == [("ue0", 6.0), ("ue1", 6.0)]


def test_staggered_transfers_end_at_analytic_instants(env, recorder):
    """A: 10 Mbit at t=0, B: 10 Mbit at t=1, capacity 10 Mbit/s, no binding caps.

    0–1 s: A alone at 10 Mbit/s → 0 Mbit... A would finish at 1 s exactly; use 20 Mbit:
    A alone 0–1 s (10 Mbit sent, 10 left); both at 5 Mbit/s: A ends at 3 s,
    B has 10 Mbit sent by then? B sent 10 Mbit in 1–3 s → B (20 Mbit) has 10 left,
    alone at 10 Mbit/s → ends at 4 s.
    """
    medium = ProcessorSharing(env, 10e6)
    out: list = []

    def flow(name, start, size):
        yield env.timeout(start)
        yield medium.send(size)
        out.append((name, env.now))

    env.process(flow("A", 0.0, 20e6))
    env.process(flow("B", 1.0, 20e6))
    env.run()
    assert out[0][0] == "A" and out[0][1] == pytest.approx(3.0, rel=REL)
    assert out[1][0] == "B" and out[1][1] == pytest.approx(4.0, rel=REL)


def test_caps_redistribute_capacity(env):
    """Capacity 10: a flow capped at 2 leaves 8 to the other (max-min fairness)."""
    medium = ProcessorSharing(env, 10e6)
    out: list = []

    def flow(name, size, cap):
        yield medium.send(size, cap)
        out.append((name, env.now))

    env.process(flow("slow", 4e6, 2e6))  # 2 Mbit/s → 2 s
    env.process(flow("fast", 16e6, 20e6))  # 8 Mbit/s for 2 s (16 Mbit) → 2 s
    env.run()
    assert [n for n, _ in out] == ["slow", "fast"]
    assert out[0][1] == pytest.approx(2.0, rel=REL)
    assert out[1][1] == pytest.approx(2.0, rel=REL)


@given(
    caps=st.lists(st.one_of(st.just(math.inf), st.floats(0.1, 50.0)), min_size=1, max_size=12),
    capacity=st.floats(1.0, 100.0),
)
def test_max_min_fair_invariants(caps, capacity):
    rates = max_min_fair(capacity, np.array(caps))
    caps_a = np.array(caps)
    assert np.all(rates <= caps_a + 1e-9)
    assert rates.sum() == pytest.approx(min(capacity, caps_a.sum()), rel=1e-9)
    # max-min: a flow below its cap gets at least as much as every other flow
    for i, r in enumerate(rates):
        if r < caps_a[i] - 1e-9:
            assert np.all(rates <= r + 1e-9)


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.floats(0.0, 5.0), st.floats(1e3, 5e7)), min_size=1, max_size=10))
def test_processor_sharing_is_work_conserving(jobs):
    """Bits are conserved: the medium empties exactly when a single server at
    full capacity would (any work-conserving discipline): T = fold max(T, a) + s/C."""
    env = simpy.Environment()
    capacity = 10e6
    medium = ProcessorSharing(env, capacity)
    ends: list[float] = []

    def flow(start, size):
        yield env.timeout(start)
        yield medium.send(size)
        ends.append(env.now)

    for start, size in jobs:
        env.process(flow(start, size))
    env.run()
    expected = 0.0
    for start, size in sorted(jobs):
        expected = max(expected, start) + size / capacity
    assert len(ends) == len(jobs)
    assert max(ends) == pytest.approx(expected, rel=1e-9)


def test_records_carry_the_round(env):
    rec = Recorder()
    rec.round = 7
    radio = FixedRateRadio(env, rec)
    bs = make_node("bs", "bs", link=None, compute="edge_server_cpu")
    radio.transfer(make_node("ue0"), bs, 1e6, "x", num_models=1)
    env.run()
    assert rec.transfers[0].round == 7 and rec.transfers[0].num_models == 1
