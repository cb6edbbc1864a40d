"""The scenario's ``devices`` section: the participating devices (PUEs) and their
profiles — how many, which compute and link profiles (with per-scenario compute
overrides, which the ``server`` section shares), groups of a fleet with profiles,
models, layouts, mobility and availability of their own, and each device's resolved
setting (a group's, else the section's).
"""

from __future__ import annotations

import math

from pydantic import (
    Field,
    NonNegativeFloat,
    PositiveFloat,
    PositiveInt,
    field_validator,
    model_validator,
)

from channel_models import link_profiles
from netfl.compute.profiles import compute_profiles
from netfl.learning.catalog import MODEL_CATALOG as MODELS
from netfl.scenario.availability_section import AvailabilitySection
from netfl.scenario.layout import LayoutSection
from netfl.scenario.network_section import MobilitySection
from netfl.scenario.registries import dvfs_problem
from netfl.scenario.strict import _check_name, _Strict

__all__ = ["MAX_DEVICES", "ComputeOverrides", "DeviceGroup", "DevicesSection"]

#: bounds that keep a valid-looking scenario from exhausting memory
MAX_DEVICES = 100_000


class ComputeOverrides(_Strict):
    """Per-scenario replacements of compute-profile values."""

    effective_flops_per_s: PositiveFloat | None = Field(None, le=1e18)
    busy_power_w: NonNegativeFloat | None = Field(None, le=1e4)
    idle_power_w: NonNegativeFloat | None = Field(None, le=1e4)
    tx_power_w: NonNegativeFloat | None = Field(None, le=1e4)
    rx_power_w: NonNegativeFloat | None = Field(None, le=1e4)
    parallel_jobs: PositiveInt | None = Field(None, le=4096)
    radio_wait_power_w: NonNegativeFloat | None = Field(None, le=1e4)
    rrc_tail_power_w: NonNegativeFloat | None = Field(None, le=1e4)
    rrc_tail_s: NonNegativeFloat | None = Field(None, le=3600.0)
    tx_power_per_mbps_w: NonNegativeFloat | None = Field(None, le=1e3)
    tx_power_per_w: NonNegativeFloat | None = Field(None, le=1e3)
    rx_power_per_mbps_w: NonNegativeFloat | None = Field(None, le=1e3)
    rrc_promotion_power_w: NonNegativeFloat | None = Field(None, le=1e4)
    rrc_promotion_s: NonNegativeFloat | None = Field(None, le=60.0)
    min_frequency_hz: NonNegativeFloat | None = Field(
        None, le=1e11, description="DVFS: lowest CPU frequency a policy may set [Hz]"
    )
    max_frequency_hz: NonNegativeFloat | None = Field(
        None, le=1e11, description="DVFS: highest CPU frequency [Hz], the default; 0: no DVFS"
    )
    capacitance: NonNegativeFloat | None = Field(
        None, le=1e-20, description="DVFS: κ [J/(cycle·Hz²)]: a cycle at f costs κ·f² J"
    )
    cycles_per_flop: NonNegativeFloat | None = Field(
        None, le=1e12, description="DVFS: CPU cycles per FLOP; 0: f_max / effective_flops_per_s"
    )
    cycles_per_sample: NonNegativeFloat | None = Field(
        None,
        le=1e12,
        description="DVFS: CPU cycles per training sample (Yang et al.'s c_k); 0: from FLOPs",
    )

    def check_profiles(self, names: list[str]) -> None:
        """``ValueError`` naming ``compute_overrides.KEY`` where these overrides give one
        of the compute profiles ``names`` invalid DVFS values (min above max, DVFS
        without a capacitance, DVFS values without DVFS)."""
        given = self.model_dump()
        profiles = compute_profiles()
        for name in dict.fromkeys(names):
            if name not in profiles:  # (its own check names it)
                continue
            problem = dvfs_problem(profiles[name].with_overrides(**given))
            if problem is not None:
                key, message = problem
                raise ValueError(f"compute_overrides.{key}: {message} (compute profile {name!r})")


class DeviceGroup(_Strict):
    """A group of devices with their own profiles (heterogeneous fleets)."""

    count: PositiveInt | None = Field(
        None, le=MAX_DEVICES, description="this group's devices (or give fraction)"
    )
    fraction: float | None = Field(
        None,
        gt=0.0,
        le=1.0,
        description="this group's share of devices.count, rounded to the nearest device "
        "(at least one); the resolved scenario records both",
    )
    compute_profile: str | None = None
    link_profile: str | None = None
    modem_profile: str | None = Field(
        None, description="this group's modem (default: devices.modem_profile)"
    )
    model: str | None = Field(
        None,
        description="this group's on-device model (heterogeneous-model algorithms: fedzkt, fedmd)",
    )
    layout: LayoutSection | None = Field(
        None, description="where this group's devices stand (default: devices.layout)"
    )
    availability: AvailabilitySection | None = Field(
        None, description="when this group's devices can take part (default: devices.availability)"
    )
    mobility: MobilitySection | None = Field(
        None, description="how this group's devices move (default: devices.mobility)"
    )

    _vm = field_validator("model")(lambda v: _check_name("model", v, MODELS))
    _vc = field_validator("compute_profile")(
        lambda v: _check_name("compute profile", v, compute_profiles())
    )
    _vl = field_validator("link_profile")(lambda v: _check_name("link profile", v, link_profiles()))
    _vo = field_validator("modem_profile")(lambda v: _check_modem(v))


def _check_modem(name: str | None) -> str | None:
    """A modem profile: ``link`` or a compute profile's name."""
    if name == "link":
        return name
    return _check_name("modem profile", name, {"link": None, **compute_profiles()})


class DevicesSection(_Strict):
    count: PositiveInt = Field(10, le=MAX_DEVICES, description="participating devices (PUEs)")
    compute_profile: str = "raspberry_pi_4"
    link_profile: str = "4g_lte"
    modem_profile: str | None = Field(
        None,
        description="whose modem the devices draw: a compute profile's name (its transmit, "
        "receive, wait and RRC powers replace the compute profile's), or 'link': the measured "
        "phone the link or channel profile names (s20u_lte on LTE, s20u_5g_lowband, "
        "s20u_5g_mmwave); unset: the compute profile's own",
    )
    compute_overrides: ComputeOverrides = ComputeOverrides()
    groups: list[DeviceGroup] = Field(
        default_factory=list,
        description="the first devices take these groups' profiles in order; the rest the defaults",
    )
    models: list[str] = Field(
        default_factory=list,
        description="on-device models assigned in turn (device i gets models[i mod len]; a "
        "group's model wins); empty: every device runs model.name",
    )
    layout: LayoutSection = Field(
        LayoutSection(),
        description="where the devices no group places stand (default: uniform over the cell)",
    )
    mobility: MobilitySection = Field(
        MobilitySection(), description="how the devices no group moves move (default: static)"
    )
    availability: AvailabilitySection = Field(
        AvailabilitySection(),
        description="when the devices no group sets can take part (default: always)",
    )

    def _per_device(self, values: list, key: str) -> list:
        """``values`` (one per device) with each group's own ``key`` over its devices."""
        out, i = list(values), 0
        for g in self.groups:
            if getattr(g, key) is not None:
                out[i : i + g.count] = [getattr(g, key)] * g.count
            i += g.count
        return out

    def availability_of(self) -> list[AvailabilitySection]:
        """Each device's availability: its group's, else ``availability``."""
        return self._per_device([self.availability] * self.count, "availability")

    def mobility_of(self) -> list[MobilitySection]:
        """Each device's mobility: its group's, else ``mobility``."""
        return self._per_device([self.mobility] * self.count, "mobility")

    @field_validator("models")
    @classmethod
    def _vms(cls, v: list[str]) -> list[str]:
        for name in v:
            _check_name("model", name, MODELS)
        return v

    def model_names(self, default: str) -> list[str]:
        """The model of each device: its group's, else ``models`` in turn, else ``default``."""
        names = [
            self.models[i % len(self.models)] if self.models else default for i in range(self.count)
        ]
        return self._per_device(names, "model")

    _vc = field_validator("compute_profile")(
        lambda v: _check_name("compute profile", v, compute_profiles())
    )
    _vl = field_validator("link_profile")(lambda v: _check_name("link profile", v, link_profiles()))
    _vo = field_validator("modem_profile")(lambda v: _check_modem(v))

    def modem_profiles_of(self) -> list[str | None]:
        """Each device's modem profile: its group's, else ``modem_profile``."""
        return self._per_device([self.modem_profile] * self.count, "modem_profile")

    @model_validator(mode="after")
    def _groups_fit(self) -> DevicesSection:
        for k, g in enumerate(self.groups):
            if g.fraction is not None:  # (a share of count: resolved to a count here)
                n = max(1, math.floor(g.fraction * self.count + 0.5))
                if g.count is not None and g.count != n:
                    raise ValueError(
                        f"groups.{k}: count {g.count} is not fraction {g.fraction:g} of "
                        f"count {self.count} ({n}); give one of them"
                    )
                g.count = n
            elif g.count is None:
                raise ValueError(f"groups.{k}: give count or fraction")
        total = sum(g.count for g in self.groups)
        if total > self.count:
            raise ValueError(f"groups hold {total} devices but count is {self.count}")
        self.compute_overrides.check_profiles(
            [self.compute_profile]
            + [g.compute_profile or self.compute_profile for g in self.groups]
        )
        return self
