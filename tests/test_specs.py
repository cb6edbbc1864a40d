"""The composition step (issue 50): a scenario is resolved once into per-part specs
(:mod:`netfl.sim.specs`), and each part is built from its spec alone — no scenario."""

from __future__ import annotations

import math

import numpy as np
import pytest
import simpy

from channel_models.profile_catalog import channel_profiles
from netfl.core.nodes import Node
from netfl.core.records import Recorder
from netfl.core.rng import Streams
from netfl.loading.scenarios import parse_scenario
from netfl.radio.cues import CueTrafficConfig
from netfl.radio.radio_energy import BsPowerModel
from netfl.sim.build import Infrastructure, build_radio
from netfl.sim.placement import Placement
from netfl.sim.specs import PlacementSpec, RadioSpec, resolve_run
from tests.conftest import tiny_scenario


def test_the_specs_hold_what_the_scenario_says_resolved():
    """Groups' profiles per device with the overrides applied, the channel profile with
    the section's overrides, the scheduler's options from its legacy key, defaults."""
    scenario = parse_scenario(
        tiny_scenario(
            devices={
                "count": 5,
                "compute_profile": "raspberry_pi_4",
                "compute_overrides": {"busy_power_w": 3.5},
                "groups": [{"count": 2, "compute_profile": "jetson_nano"}],
            },
            cell={
                "link": {
                    "mode": "ofdma",
                    "num_rbs": 25,
                    "scheduler": "proportional_fair",
                    "pf_window_blocks": 40,
                }
            },
        )
    )
    spec = resolve_run(scenario)
    names = [compute.name for compute, _ in spec.devices]
    assert names == ["jetson_nano"] * 2 + ["raspberry_pi_4"] * 3
    assert {compute.busy_power_w for compute, _ in spec.devices} == {3.5}
    radio = spec.radio
    assert radio.mode == "ofdma" and radio.channel.num_rbs == 25
    assert radio.scheduler == "proportional_fair"
    assert radio.scheduler_options == {"window_blocks": 40}
    assert math.isinf(radio.max_rbs_per_transfer) and radio.aggregate_above_flows == 512
    assert spec.placement.count == 5 and spec.placement.network is None
    assert len(spec.mobility) == len(spec.availability) == 5


def test_a_radio_and_a_placement_build_from_their_specs_alone():
    """No scenario anywhere: a proportional-fair OFDMA cell of a hand-written spec, and
    a uniform drop of a hand-written placement spec within its radius."""
    from netfl.scenario.layout import LayoutSection

    env = simpy.Environment()
    channel = channel_profiles()["feddif"]
    spec = RadioSpec(
        "ofdma",
        network=None,
        cell_radius_m=150.0,
        bs_power=BsPowerModel(130.0, 4.7, 20.0, 1),
        channel=channel,
        scheduler="proportional_fair",
        scheduler_options={"window_blocks": 10.0},
        cues=CueTrafficConfig(),
    )
    bs = Node("bs", "bs", -1, np.zeros(2), None)
    parts = build_radio(spec, env, Recorder(), Streams(1), Infrastructure(bs, [], None), None)
    for carrier in parts.radio.carriers.values():
        assert carrier.scheduler.name == "proportional_fair"
        assert carrier.scheduler.config.window_blocks == pytest.approx(10.0)
    layout = LayoutSection()
    placement = Placement(
        PlacementSpec(40, (("devices.layout", layout, list(range(40)), None),), 150.0, None, None),
        Streams(1),
    )
    xy = placement.positions(0)
    assert xy.shape == (40, 2) and (np.hypot(*xy.T) <= 150.0).all()
