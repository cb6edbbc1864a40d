"""Bits, resource blocks and RRC state counted once: a multicast's RBs in the round's
``rb_subframes``, receivers cut mid-way or while promoted, a transfer cut before its
first flow, and a downlink's rest after a handover between sectors of one site."""

from __future__ import annotations

import math

import numpy as np
import pytest

from netfl.algorithms.algorithm import RoundSummary
from netfl.core.activity import DeviceCut
from netfl.loading.scenarios import parse_scenario
from netfl.sim.accounting import rb_subframes_on_air, round_row, snapshot
from netfl.sim.world import World
from tests.conftest import tiny_scenario
from tests.radio.test_multicell_radio import PLAIN_CELL

#: the two-site tests' plain cell (deterministic loss), without fading
CELL = {**PLAIN_CELL, "link": {**PLAIN_CELL["link"], "fading": "none"}}
TWO_SITES = {
    "site_positions_m": [[0.0, 0.0], [500.0, 0.0]],
    "sectors": 1,
    "antenna": "omni",
    "interference": {"model": "none"},
}


def _three_receivers(**devices):
    s = tiny_scenario(
        cell=CELL,
        network=TWO_SITES,
        devices={
            "count": 3,
            "layout": {"kind": "positions", "positions_m": [[100, 0], [120, 0], [150, 0]]},
            **devices,
        },
    )
    return World(parse_scenario(s))


def _held_rb_subframes(world, until_s=math.inf):
    """RB sub-frames FL flows held on cell 0's downlink until ``until_s``, from the
    occupancy log (a step function of time)."""
    occ = world.radio.tables()["occupancy"]
    occ = occ[(occ["carrier"] == "downlink") & (occ["cell"] == 0)]
    t, rbs = occ["time_s"].to_numpy(), occ["flow_rbs"].to_numpy()
    ends = np.minimum(np.append(t[1:], t[-1]), until_s)
    return float(np.sum(rbs * np.maximum(ends - t, 0.0))) / 1e-3


def _row(world, before, nodes):
    return round_row(
        0,
        0.0,
        world.env.now,
        world.recorder.transfers,
        [],
        nodes,
        before,
        snapshot(nodes),
        RoundSummary(num_clients=3, train_loss=math.nan),
    )


@pytest.mark.parametrize("cut_s", [None, 0.02])
def test_a_multicasts_resource_blocks_count_once_in_the_round(cut_s):
    """One broadcast to three receivers holds the carrier's RBs once: the round's
    ``rb_subframes`` is what the occupancy log says was held, not three times it; a
    receiver cut mid-way carries the RBs held until its cut (not NaN), the others the
    whole transmission's."""
    world = _three_receivers()
    env, radio = world.env, world.radio
    nodes = {n.name: n for n in [*world.infrastructure, *world.all_devices]}
    before = snapshot(nodes)
    proc = radio.broadcast(world.bs, world.all_devices, 1e7, "model_down", 1)
    if cut_s is not None:
        env.run(until=cut_s)
        world.activities.cut(world.all_devices[2], "left")
    records = env.run(until=proc)
    held = _held_rb_subframes(world)
    assert held > 0
    for r in records[:2]:
        assert r.rb_subframes == pytest.approx(held, rel=1e-9)
    if cut_s is not None:
        assert records[2].outcome == "left"
        assert records[2].rb_subframes == pytest.approx(_held_rb_subframes(world, cut_s), rel=1e-9)
        assert 0 < records[2].rb_subframes < held
    row = _row(world, before, nodes)
    assert row["rb_subframes"] == pytest.approx(held, rel=1e-9)
    assert row["downlink_bits"] == 1e7


def test_rb_subframes_on_air_counts_unicasts_and_each_multicast_group_once():
    class R:  # (the fields it reads)
        def __init__(self, group, rbs):
            self.multicast_group, self.rb_subframes = group, rbs

    air = [R(-1, 2.0), R(-1, 3.0), R(4, 10.0), R(4, 7.0), R(4, 10.0), R(5, 1.0)]
    assert rb_subframes_on_air(air) == 2.0 + 3.0 + 10.0 + 1.0
    assert rb_subframes_on_air([R(4, math.nan), R(4, 6.0), R(4, 5.0)]) == 6.0
    assert math.isnan(rb_subframes_on_air([R(-1, math.nan)]))  # (fixed rate: none)


def test_a_receiver_cut_while_promoted_leaves_the_multicast_to_the_others():
    """``huang2012_lte``: a receiver cut while the receivers wait for their RRC promotion
    is no receiver (no record), the others get the model; nothing of it stays registered
    — a later cut of another receiver's unicast writes no record of the multicast, and
    that device's RRC state ends in one tail."""
    world = _three_receivers(compute_profile="huang2012_lte")
    env, radio = world.env, world.radio
    a, b, c = world.all_devices
    proc = radio.broadcast(world.bs, [a, b, c], 1e7, "model_down", 1)
    env.run(until=a.compute.rrc_promotion_s / 2)
    world.activities.cut(b, "left")
    records = env.run(until=proc)
    assert [(r.dst, r.outcome) for r in records] == [("ue0", "delivered"), ("ue2", "delivered")]
    assert not world.activities.busy(a) and not world.activities.busy(c)
    n = len(world.recorder.transfers)
    env.run(until=5.0)
    unicast = radio.transfer(world.bs, a, 1e9, "next")
    env.run(until=5.2)
    world.activities.cut(a, "late")
    with pytest.raises(DeviceCut):
        env.run(until=unicast)
    assert [(r.dst, r.kind, r.outcome) for r in world.recorder.transfers[n:]] == [
        ("ue0", "next", "late")
    ]
    tail0 = a.energy.tail_s
    env.run(until=5.2 + a.compute.rrc_tail_s + 1.0)
    radio.settle()
    assert a.energy.tail_s - tail0 == pytest.approx(a.compute.rrc_tail_s, rel=1e-12)


def test_a_transfer_cut_before_its_first_flow_held_no_resource_blocks():
    """An LTE download (its downlink delay before the first flow) cut within the delay:
    its record holds 0 RB sub-frames (not NaN), so the round's column stays a number."""
    s = tiny_scenario(
        cell={"link": {"mode": "ofdma", "channel_profile": "lte_20mhz"}},
        devices={"count": 1},
    )
    world = World(parse_scenario(s))
    env, radio = world.env, world.radio
    (ue,) = world.all_devices
    delay = radio.profile.downlink_delay_s
    assert delay > 0
    start = env.now
    proc = radio.transfer(world.bs, ue, 1e7, "model_down")
    env.run(until=start + delay / 2)
    world.activities.cut(ue, "late")
    with pytest.raises(DeviceCut):
        env.run(until=proc)
    (rec,) = world.recorder.transfers
    assert rec.outcome == "late" and rec.rb_subframes == 0.0 and rec.delivered_bits == 0.0


def test_a_downlink_handed_over_between_sectors_of_one_site_crosses_its_backhaul_once():
    """Two 3-sector sites, the FL server at site 0: a device driving past site 1 hands
    over from one of its sectors to another mid-download; the undelivered rest is at the
    site already, so the backhaul carries the model once (an inter-site handover's rest
    crosses the new site's backhaul: tests/radio/test_multicell_radio.py)."""
    network = {
        "site_positions_m": [[0.0, 0.0], [500.0, 0.0]],
        "sectors": 3,
        "antenna": "tr38901",
        "interference": {"model": "none"},
        "server_site": 0,
        "backhaul": {"capacity_mbps": 1000.0, "latency_ms": 5.0},
        "handover": {
            "hysteresis_db": 1.0,
            "ttt_s": 0.04,
            "interruption_ms": 30,
            "sample_ms": 10,
            "filter_k": 0,
        },
    }
    s = tiny_scenario(
        cell=CELL,
        network=network,
        devices={
            "count": 1,
            "layout": {"kind": "positions", "positions_m": [[600.0, -150.0]]},
            "mobility": {"model": "constant_velocity", "speed_kmh": 108, "heading_deg": 90},
        },
    )
    world = World(parse_scenario(s))
    env, radio = world.env, world.radio
    (ue,) = world.all_devices
    rec = env.run(until=radio.transfer(world.bs, ue, 8e8, "model_down", 1))
    site = radio.geometry.cell_site
    ((when, _, src, dst),) = radio.handover.handovers
    assert site[src] == site[dst] == 1 and src != dst and rec.start_s < when < rec.end_s
    hops = [t for t in world.recorder.transfers if t.direction == "backhaul"]
    assert sum(t.delivered_bits for t in hops) == 8e8
    assert rec.delivered_bits == 8e8 and rec.dst == "ue0"


def test_a_multicast_receiver_cut_before_the_flow_starts_held_no_resource_blocks():
    """On LTE a multicast waits the downlink delay before its flow starts: a receiver
    cut then holds 0 RB sub-frames (not NaN), and the round counts the others' once."""
    s = tiny_scenario(
        cell={"link": {"mode": "ofdma", "channel_profile": "lte_20mhz"}}, devices={"count": 3}
    )
    world = World(parse_scenario(s))
    env, radio = world.env, world.radio
    nodes = {n.name: n for n in [*world.infrastructure, *world.all_devices]}
    before = snapshot(nodes)
    delay = radio.profile.downlink_delay_s
    proc = radio.broadcast(world.bs, world.all_devices, 1e7, "model_down", 1)
    env.run(until=delay / 2)
    world.activities.cut(world.all_devices[0], "left")
    first, *others = env.run(until=proc)
    assert first.outcome == "left" and first.rb_subframes == 0.0
    assert others[0].rb_subframes > 0 and others[0].rb_subframes == others[1].rb_subframes
    assert _row(world, before, nodes)["rb_subframes"] == pytest.approx(others[0].rb_subframes)
