"""The OFDMA carrier is a composition (issue 50): it *has* a block grid, a scheduler and
a power-control policy, and uses of each nothing but the interface that part declares
(:data:`GRID_INTERFACE`, :data:`SCHEDULER_INTERFACE`, :data:`POWER_INTERFACE`)."""

from __future__ import annotations

import math

import numpy as np
import simpy

from channel_models.fading import RayleighBlockFading
from channel_models.link_budget import shannon_efficiency
from netfl.radio.block_grid import GRID_INTERFACE, BlockGrid
from netfl.radio.ofdma import OfdmaCarrier
from netfl.radio.rb_power import POWER_INTERFACE, RbPowerControl
from netfl.radio.schedulers import (
    SCHEDULER_INTERFACE,
    SCHEDULERS,
    Scheduler,
    build_scheduler,
)

BLOCK_S = 1e-3


class Recording:
    """Forwards every attribute to ``target`` and notes its name."""

    def __init__(self, target, used: set[str]):
        object.__setattr__(self, "_target", target)
        object.__setattr__(self, "_used", used)

    def __getattr__(self, name):
        self._used.add(name)
        return getattr(self._target, name)

    def __setattr__(self, name, value):
        self._used.add(name)
        setattr(self._target, name, value)


class _Path:
    """A moving UE's link whose per-RB SNR falls by 1 % a block."""

    def terms(self, blocks):
        psd = 30.0 * 0.99 ** (blocks - blocks[0])
        return psd, psd * 4.0


def _exercise(scheduler: str, aggregate_above_flows: int = 0) -> dict[str, set[str]]:
    env = simpy.Environment()
    used = {"grid": set(), "scheduler": set(), "power": set()}
    carrier = OfdmaCarrier(
        env,
        "ul",
        25,
        180e3,
        RayleighBlockFading(BLOCK_S),
        shannon_efficiency,
        Recording(build_scheduler(scheduler), used["scheduler"]),
        aggregate_above_flows=aggregate_above_flows,
        rb_groups=np.full(5, 5.0),
    )
    assert scheduler in repr(carrier)
    grid = Recording(carrier.grid, used["grid"])
    carrier.grid = grid
    carrier.scheduler.attach(grid)
    carrier.power = Recording(carrier.power, used["power"])
    rng = np.random.default_rng(0)

    def traffic():
        handle = carrier.add_session(3.0)
        flows = [
            carrier.send(2e5, 20.0, np.random.default_rng(i), snr_total=60.0 if i % 2 else math.inf)
            for i in range(12)
        ]
        flows.append(carrier.send(1e5, 10.0, rng, multicast_snrs=np.array([10.0, 30.0])))
        flows.append(carrier.send(1e5, 30.0, rng, snr_total=120.0, path=_Path()))
        flows.append(carrier.send(5e4, 8.0, rng, cap_rbs=2.0))
        flows.append(carrier.send(5e4, 8.0, rng, background=True))
        yield env.timeout(0.004)
        carrier.rescale_snr(flows[:3], np.array([0.5, 2.0, 1.0]))
        carrier.set_cap(flows[3], 4.0)
        carrier.refresh_paths([flows[13]])
        carrier.progress(flows[4])
        assert carrier.min_usable_snr == 0.0  # (Shannon: every SNR carries bits)
        assert carrier.usable_caps(5.0, np.array([1.0, math.inf])).tolist() == [5.0, 5.0]
        carrier.rb_seconds(flows[5])
        carrier.withdraw(flows[6])
        carrier.remove_session(handle)
        yield env.timeout(0.002)
        for i in range(60):  # (many short flows: columns of several blocks, if allowed)
            carrier.send(5e5, 15.0, np.random.default_rng(100 + i))

    env.process(traffic())
    env.run()
    assert not carrier.flows
    return used


def test_the_carrier_uses_of_each_part_only_its_interface():
    used = {"grid": set(), "scheduler": set(), "power": set()}
    for name in SCHEDULERS:
        for part, names in _exercise(name).items():
            used[part] |= names
    for part, names in _exercise("round_robin", aggregate_above_flows=8).items():
        used[part] |= names
    interfaces = {
        "grid": set(GRID_INTERFACE),
        "scheduler": set(SCHEDULER_INTERFACE),
        "power": set(POWER_INTERFACE),
    }
    for part, names in used.items():
        assert names <= interfaces[part], (part, names - interfaces[part])
        # (and every name the interface declares is used: it is no wider than needed)
        assert interfaces[part] <= names, (part, interfaces[part] - names)


def test_the_parts_are_composed_not_inherited():
    """No multiple inheritance: the carrier is a shared medium, its parts are not."""
    assert OfdmaCarrier.__mro__[1].__name__ == "SharedMedium"
    for part in (BlockGrid, RbPowerControl, Scheduler):
        assert not issubclass(OfdmaCarrier, part)
        assert part.__mro__[1:] in ((object,), (Scheduler.__mro__[1], object))
