"""Scenario files: YAML → strict pydantic models, with key-path error messages.

A scenario has the sections ``name, seed, cell, devices, server, data, model,
training, algorithm, learning, outputs``. Unknown keys are errors. Every
problem is reported as one line ``FILE: key.path: what is wrong (valid: …)``.
The ``algorithm`` section holds ``name`` plus that algorithm's own options,
validated by the algorithm's ``Config``.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    NonNegativeFloat,
    NonNegativeInt,
    PositiveFloat,
    PositiveInt,
    field_validator,
    model_validator,
)

from channel_models import link_profiles
from channel_models.channel_profiles import channel_profiles
from netfl.compute.profiles import compute_profiles
from netfl.learning.datasets import DATASETS
from netfl.learning.models import MODELS

__all__ = ["Scenario", "load_scenario", "parse_scenario", "apply_overrides", "scenario_schema"]


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", validate_assignment=True)


def _check_name(kind: str, name: str | None, valid: dict) -> str | None:
    if name is not None and name not in valid:
        raise ValueError(f"unknown {kind} {name!r} (valid: {', '.join(sorted(valid))})")
    return name


_FIXED_RATE_KEYS = {"shared", "capacity_profile", "uplink_capacity_mbps", "downlink_capacity_mbps"}
_OFDMA_KEYS = {
    "channel_profile",
    "scheduler",
    "max_rbs_per_transfer",
    "pf_window_blocks",
    "bandwidth_hz",
    "num_rbs",
    "numerology",
    "fading",
    "coherence_time_s",
    "ue_tx_power_dbm",
    "bs_tx_power_dbm",
}


class LinkSection(_Strict):
    """How transfers get their rate: ``fixed_rate`` profiles or ``ofdma`` carriers."""

    mode: Literal["fixed_rate", "ofdma"] = "fixed_rate"
    # fixed_rate
    shared: bool = Field(False, description="share the BS capacity among concurrent transfers")
    capacity_profile: str | None = Field(
        None, description="link profile giving the BS capacity when shared (default: devices')"
    )
    uplink_capacity_mbps: PositiveFloat | None = None
    downlink_capacity_mbps: PositiveFloat | None = None
    # ofdma
    channel_profile: str = Field("feddif", description="named OFDMA channel profile")
    scheduler: Literal["round_robin", "fcfs", "proportional_fair"] = "round_robin"
    max_rbs_per_transfer: PositiveFloat | None = None
    pf_window_blocks: PositiveFloat | None = Field(
        None, description="proportional fair: averaging window [fading blocks] (default 100)"
    )
    bandwidth_hz: PositiveFloat | None = Field(
        None, description="override; sets num_rbs by TS 38.101"
    )
    num_rbs: PositiveInt | None = None
    numerology: int | None = Field(None, ge=0, le=2)
    fading: Literal["none", "rayleigh"] | None = None
    coherence_time_s: PositiveFloat | None = None
    ue_tx_power_dbm: float | None = None
    bs_tx_power_dbm: float | None = None

    _v = field_validator("capacity_profile")(
        lambda v: _check_name("link profile", v, link_profiles())
    )
    _vc = field_validator("channel_profile")(
        lambda v: _check_name("channel profile", v, channel_profiles())
    )

    @model_validator(mode="after")
    def _keys_match_mode(self) -> LinkSection:
        other = _OFDMA_KEYS if self.mode == "fixed_rate" else _FIXED_RATE_KEYS
        given = sorted(k for k in other & self.model_fields_set)
        if given:
            raise ValueError(f"{', '.join(given)} does not apply to mode {self.mode!r}")
        return self


class CueSection(_Strict):
    """Background cellular UEs: spatial PPP, Poisson sessions holding RBs (ofdma only)."""

    density_per_km2: NonNegativeFloat = 0.0
    session_rate_per_s: NonNegativeFloat = Field(0.1, description="sessions per CUE per second")
    mean_session_s: PositiveFloat = Field(10.0, description="mean (exponential) session length")
    demand_rbs: PositiveFloat = Field(4.0, description="RBs a session holds (at most, if sized)")
    uplink_fraction: float = Field(0.5, ge=0.0, le=1.0)
    mean_session_bits: PositiveFloat | None = Field(
        None, description="if set, sessions are transfers of Exp(mean) bits instead of durations"
    )


class CellSection(_Strict):
    radius_m: PositiveFloat = 250.0
    redrop_every_round: bool = Field(False, description="re-drop all UEs at every round start")
    link: LinkSection = LinkSection()
    cues: CueSection = CueSection()

    @model_validator(mode="after")
    def _cues_need_ofdma(self) -> CellSection:
        if self.cues.density_per_km2 > 0 and self.link.mode != "ofdma":
            raise ValueError("background CUEs (cues.density_per_km2 > 0) need link.mode: ofdma")
        return self


class ComputeOverrides(_Strict):
    """Per-scenario replacements of compute-profile values."""

    effective_flops_per_s: PositiveFloat | None = None
    busy_power_w: NonNegativeFloat | None = None
    idle_power_w: NonNegativeFloat | None = None
    tx_power_w: NonNegativeFloat | None = None
    rx_power_w: NonNegativeFloat | None = None
    parallel_jobs: PositiveInt | None = None


class DeviceGroup(_Strict):
    """A group of devices with their own profiles (heterogeneous fleets)."""

    count: PositiveInt
    compute_profile: str | None = None
    link_profile: str | None = None

    _vc = field_validator("compute_profile")(
        lambda v: _check_name("compute profile", v, compute_profiles())
    )
    _vl = field_validator("link_profile")(lambda v: _check_name("link profile", v, link_profiles()))


class DevicesSection(_Strict):
    count: PositiveInt = 10
    compute_profile: str = "raspberry_pi_4"
    link_profile: str = "4g_lte"
    compute_overrides: ComputeOverrides = ComputeOverrides()
    groups: list[DeviceGroup] = Field(
        default_factory=list,
        description="the first devices take these groups' profiles in order; the rest the defaults",
    )

    _vc = field_validator("compute_profile")(
        lambda v: _check_name("compute profile", v, compute_profiles())
    )
    _vl = field_validator("link_profile")(lambda v: _check_name("link profile", v, link_profiles()))

    @model_validator(mode="after")
    def _groups_fit(self) -> DevicesSection:
        total = sum(g.count for g in self.groups)
        if total > self.count:
            raise ValueError(f"groups hold {total} devices but count is {self.count}")
        return self


class ServerSection(_Strict):
    compute_profile: str = "edge_server_cpu"
    compute_overrides: ComputeOverrides = ComputeOverrides()

    _vc = field_validator("compute_profile")(
        lambda v: _check_name("compute profile", v, compute_profiles())
    )


_PARTITION_PARAMS: dict[str, set[str]] = {
    "iid": set(),
    "dirichlet": {"alpha", "min_samples"},
    "shards": {"shards_per_device"},
    "dominant_label": {"fraction"},
    "classes_per_device": {"classes"},
}


class PartitionSection(_Strict):
    scheme: Literal["iid", "dirichlet", "shards", "dominant_label", "classes_per_device"] = "iid"
    alpha: PositiveFloat | None = None
    min_samples: PositiveInt | None = None
    shards_per_device: PositiveInt | None = None
    fraction: float | None = Field(None, ge=0.0, le=1.0)
    classes: PositiveInt | None = None

    @model_validator(mode="after")
    def _params_match_scheme(self) -> PartitionSection:
        given = {
            k
            for k in _PARTITION_PARAMS["dirichlet"] | {"shards_per_device", "fraction", "classes"}
            if getattr(self, k) is not None
        }
        extra = given - _PARTITION_PARAMS[self.scheme]
        if extra:
            allowed = ", ".join(sorted(_PARTITION_PARAMS[self.scheme])) or "none"
            raise ValueError(
                f"{', '.join(sorted(extra))} does not apply to scheme {self.scheme!r} "
                f"(its parameters: {allowed})"
            )
        return self

    def params(self) -> dict[str, Any]:
        return {
            k: getattr(self, k)
            for k in _PARTITION_PARAMS[self.scheme]
            if getattr(self, k) is not None
        }


class SyntheticSection(_Strict):
    num_samples: PositiveInt = 2000
    num_classes: int = Field(10, ge=2)
    shape: tuple[PositiveInt, PositiveInt, PositiveInt] = (1, 28, 28)
    noise: PositiveFloat = 1.0


class DataSection(_Strict):
    dataset: str = "mnist5k"
    root: str | None = Field(None, description="local folder of torchvision data sets")
    test_fraction: float = Field(0.2, gt=0.0, lt=1.0)
    partition: PartitionSection = PartitionSection()
    synthetic: SyntheticSection = SyntheticSection()

    _vd = field_validator("dataset")(lambda v: _check_name("data set", v, DATASETS))


class ModelSection(_Strict):
    name: str = "cnn"
    bits_per_param: PositiveInt = 32
    size_bits: PositiveFloat | None = Field(
        None, description="override the transmitted model size (e.g. FedDif's 40 Mbit)"
    )

    _vm = field_validator("name")(lambda v: _check_name("model", v, MODELS))


class TrainingSection(_Strict):
    rounds: PositiveInt = 10
    eval_every: PositiveInt = 1
    target_accuracy: float | None = Field(None, gt=0.0, le=1.0)
    time_budget_s: PositiveFloat | None = None
    local_epochs: PositiveInt = 1
    batch_size: PositiveInt = 32
    lr: PositiveFloat = 0.01
    momentum: float = Field(0.0, ge=0.0, lt=1.0)
    weight_decay: NonNegativeFloat = 0.0


class AlgorithmSection(BaseModel):
    """``name`` plus the options of that algorithm (checked against its Config)."""

    model_config = ConfigDict(extra="allow")
    name: str = "fedavg"

    def options(self) -> dict[str, Any]:
        return dict(self.model_extra or {})


class LearningSection(_Strict):
    mode: Literal["learn", "timing"] = Field(
        "learn", description="'timing' runs every transfer and compute but no torch training"
    )
    device: str = Field("cpu", pattern=r"^(cpu|auto|cuda(:\d+)?)$")
    eval_batch_size: PositiveInt = 1000
    num_threads: PositiveInt | None = None


class OutputsSection(_Strict):
    dir: str = "runs"
    figures: bool = True
    progress: bool = True


class Scenario(_Strict):
    name: str = Field(pattern=r"^[A-Za-z0-9_.-]+$")
    seed: NonNegativeInt = 0
    cell: CellSection = CellSection()
    devices: DevicesSection = DevicesSection()
    server: ServerSection = ServerSection()
    data: DataSection = DataSection()
    model: ModelSection = ModelSection()
    training: TrainingSection = TrainingSection()
    algorithm: AlgorithmSection = AlgorithmSection()
    learning: LearningSection = LearningSection()
    outputs: OutputsSection = OutputsSection()

    def algorithm_config(self) -> BaseModel:
        """The algorithm's validated ``Config`` (see :func:`parse_scenario`)."""
        from netfl.algorithms import get_algorithm

        return get_algorithm(self.algorithm.name).Config(**self.algorithm.options())

    def resolved(self) -> dict[str, Any]:
        """The scenario with every default filled in, as plain data."""
        data = self.model_dump(mode="json")
        link = data["cell"]["link"]
        for key in _OFDMA_KEYS if link["mode"] == "fixed_rate" else _FIXED_RATE_KEYS:
            link.pop(key, None)  # keys of the other link mode would not validate
        data["algorithm"] = {
            "name": self.algorithm.name,
            **self.algorithm_config().model_dump(mode="json"),
        }
        return data


# Reading, overriding, validating and describing scenario files live in
# netfl.scenario_io; re-exported here as the public entry points.
from netfl.scenario_io import (  # noqa: E402
    apply_overrides,
    load_scenario,
    parse_scenario,
    scenario_schema,
)
