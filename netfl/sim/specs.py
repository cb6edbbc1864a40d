"""The composition step: a validated scenario resolved once into the small specs the
builders take (:mod:`netfl.sim.build`, :class:`~netfl.sim.placement.Placement`,
:class:`~netfl.sim.device_mobility.DeviceMobility`,
:class:`~netfl.sim.device_availability.DeviceAvailability`).

Each spec holds what one part of the world needs and nothing else — names looked up
(profiles, the channel profile with the section's overrides applied, the scheduler's
options), defaults filled in — so a builder never calls back into the scenario and a
test can build a part from its spec alone.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from channel_models import get_link_profile
from netfl.algorithms import get_algorithm
from netfl.compute import get_compute_profile
from netfl.radio.columns import AGGREGATE_ABOVE_FLOWS
from netfl.radio.cues import CueTrafficConfig
from netfl.radio.radio_energy import BsPowerModel

if TYPE_CHECKING:
    from channel_models import LinkProfile
    from channel_models.channel_profiles import ChannelProfile
    from netfl.core.nodes import ComputeProfile
    from netfl.scenario.availability_section import AvailabilitySection
    from netfl.scenario.data_section import DataSection
    from netfl.scenario.network_section import MobilitySection, NetworkSection
    from netfl.scenario.schema import LearningSection, ModelSection, Scenario, TrainingSection

__all__ = [
    "DataSpec",
    "InfraSpec",
    "PlacementSpec",
    "RadioSpec",
    "RunSpec",
    "data_spec",
    "resolve_run",
]


@dataclass(frozen=True)
class DataSpec:
    """The data set and its split: the ``data`` section, the seed, the devices."""

    data: DataSection
    seed: int
    num_devices: int


@dataclass(frozen=True)
class InfraSpec:
    """The base station and, in a network, its deployment."""

    server_profile: ComputeProfile
    network: NetworkSection | None
    cell_radius_m: float
    #: the BSs' antenna height [m] (the cellular law's; a network's deployment)
    bs_height_m: float


@dataclass(frozen=True)
class PlacementSpec:
    """Where devices stand: the layouts of the devices and of their groups."""

    count: int
    #: ``(key, layout, device indices, group or None)`` of each layout
    #: (:meth:`~netfl.scenario.schema.Scenario.layout_slots`)
    slots: tuple[tuple[str, Any, list[int], int | None], ...]
    cell_radius_m: float
    network: NetworkSection | None
    #: the carrier [Hz] of indoor devices' O2I loss (a network's; None otherwise)
    carrier_hz: float | None


@dataclass(frozen=True)
class RadioSpec:
    """The radio: fixed-rate links, one OFDMA cell, or a network's cells."""

    mode: str  # "fixed_rate" or "ofdma"
    network: NetworkSection | None
    cell_radius_m: float
    bs_power: BsPowerModel
    # fixed rate
    shared: bool = False
    uplink_capacity_bps: float | None = None
    downlink_capacity_bps: float | None = None
    # OFDMA
    channel: ChannelProfile | None = None
    scheduler: str = "round_robin"
    scheduler_options: dict[str, Any] | None = None
    max_rbs_per_transfer: float = math.inf
    aggregate_above_flows: int = AGGREGATE_ABOVE_FLOWS
    fading_draw: str = "per_transfer"
    cues: CueTrafficConfig | None = None


@dataclass(frozen=True)
class RunSpec:
    """Every part's spec of one run's world."""

    infra: InfraSpec
    placement: PlacementSpec
    #: each device's compute and link profile (its group's, overrides applied)
    devices: tuple[tuple[ComputeProfile, LinkProfile], ...]
    radio: RadioSpec
    mobility: tuple[MobilitySection, ...]
    availability: tuple[AvailabilitySection, ...]
    data: DataSpec
    #: the global model and its options (``model``), and each device's architecture
    model: ModelSection
    device_models: tuple[str, ...]
    training: TrainingSection
    learning: LearningSection
    #: the directions the algorithm's traffic needs (the coverage log's)
    directions: frozenset[str]


def _devices(
    scenario: Scenario, channel: ChannelProfile | None
) -> tuple[tuple[ComputeProfile, LinkProfile], ...]:
    """Each device's compute profile — its modem profile's radio powers where one is
    chosen (``link``: the one its link, or the OFDMA cell's channel, names), then the
    overrides — and its link profile."""
    d = scenario.devices
    names: list[tuple[str, str]] = []
    for g in d.groups:
        names += [
            (g.compute_profile or d.compute_profile, g.link_profile or d.link_profile)
        ] * g.count
    names += [(d.compute_profile, d.link_profile)] * (d.count - len(names))
    overrides = d.compute_overrides.model_dump()
    out = []
    for (cp, lp), modem in zip(names, d.modem_profiles_of(), strict=True):
        compute, link = get_compute_profile(cp), get_link_profile(lp)
        if modem == "link":
            modem = (channel or link).modem_profile
            if modem is None:  # (parse_scenario refuses it with the key)
                raise ValueError(
                    f"devices.modem_profile: 'link': {(channel or link).name!r} names no modem"
                )
        if modem is not None:
            compute = compute.with_modem(get_compute_profile(modem))
        out.append((compute.with_overrides(**overrides), link))
    return tuple(out)


def _radio(scenario: Scenario, channel: ChannelProfile | None) -> RadioSpec:
    link, bp, c = scenario.cell.link, scenario.cell.bs_power, scenario.cell.cues
    common = {"network": scenario.network, "cell_radius_m": scenario.cell.radius_m}
    if link.mode != "ofdma" and scenario.network is None:
        up = down = None
        if link.shared:
            cap = get_link_profile(link.capacity_profile or scenario.devices.link_profile)
            up = link.uplink_capacity_mbps * 1e6 if link.uplink_capacity_mbps else cap.uplink_bps
            down = (
                link.downlink_capacity_mbps * 1e6
                if link.downlink_capacity_mbps
                else cap.downlink_bps
            )
        power = BsPowerModel(bp.p0_w, bp.delta_p, bp.max_tx_power_w or 20.0, bp.num_trx)
        return RadioSpec(
            "fixed_rate",
            bs_power=power,
            shared=link.shared,
            uplink_capacity_bps=up,
            downlink_capacity_bps=down,
            **common,
        )
    assert channel is not None
    return RadioSpec(
        "ofdma",
        bs_power=BsPowerModel(
            bp.p0_w, bp.delta_p, bp.max_tx_power_w or channel.bs_tx_power_w, bp.num_trx
        ),
        channel=channel,
        scheduler=link.scheduler,
        scheduler_options=link.scheduler_config(),
        max_rbs_per_transfer=link.max_rbs_per_transfer or math.inf,
        aggregate_above_flows=(
            AGGREGATE_ABOVE_FLOWS
            if link.aggregate_above_flows is None
            else link.aggregate_above_flows
        ),
        fading_draw=link.fading_draw,
        cues=CueTrafficConfig(
            c.density_per_km2,
            c.session_rate_per_s,
            c.mean_session_s,
            c.demand_rbs,
            c.uplink_fraction,
            c.mean_session_bits,
        ),
        **common,
    )


def data_spec(scenario: Scenario) -> DataSpec:
    """What the data set and its split depend on (``netfl validate`` builds them too)."""
    return DataSpec(scenario.data, scenario.seed, scenario.devices.count)


def resolve_run(scenario: Scenario) -> RunSpec:
    """Every part's spec of ``scenario``'s world (the composition step: the one place a
    run reads the scenario's sections for its radio, infrastructure and devices)."""
    s = scenario
    ofdma = s.cell.link.mode == "ofdma" or s.network is not None
    channel = s.cell.link.channel_profile_resolved() if ofdma else None
    if channel is not None and s.network is not None and channel.antenna_gain_db:
        # (parse_scenario refuses it with the key; a Scenario built otherwise lands here)
        from netfl.scenario.files import network_gain_problem

        raise ValueError(f"cell.link.channel_profile: {network_gain_problem(channel)}")
    law_height = float(channel.build_pathloss().height_tx_m) if channel is not None else 0.0
    server = get_compute_profile(s.server.compute_profile).with_overrides(
        **s.server.compute_overrides.model_dump()
    )
    return RunSpec(
        infra=InfraSpec(server, s.network, s.cell.radius_m, law_height),
        placement=PlacementSpec(
            s.devices.count,
            tuple(s.layout_slots()),
            s.cell.radius_m,
            s.network,
            channel.carrier_hz if (channel is not None and s.network is not None) else None,
        ),
        devices=_devices(s, channel),
        radio=_radio(s, channel),
        mobility=tuple(s.devices.mobility_of()),
        availability=tuple(s.devices.availability_of()),
        data=data_spec(s),
        model=s.model,
        device_models=tuple(s.devices.model_names(s.model.name)),
        training=s.training,
        learning=s.learning,
        directions=frozenset(get_algorithm(s.algorithm.name).directions(s.algorithm.options())),
    )
