"""Scenario files: YAML → strict pydantic models, with key-path error messages.

A scenario has the sections ``name, seed, cell, devices, server, data, model,
training, algorithm, learning, outputs``. Unknown keys are errors. Every
problem is reported as one line ``FILE: key.path: what is wrong (valid: …)``.
The ``algorithm`` section holds ``name`` plus that algorithm's own options,
validated by the algorithm's ``Config``.

This module is the schema only: reading files, ``--set`` overrides, checking
the algorithm's options against the registry and the resolved form live in
:mod:`netfl.scenario_io`, which imports this module (never the reverse).
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
from channel_models.channel_profiles import ChannelProfile, channel_profiles, get_channel_profile
from channel_models.numerology import num_resource_blocks
from channel_models.registry import UnknownNameError, check_name
from netfl.compute.profiles import compute_profiles
from netfl.learning.datasets import DATASETS
from netfl.learning.models import MODELS

__all__ = ["Scenario", "LINK_MODE_KEYS"]


def _allows_bool(annotation: Any) -> bool:
    """Whether a field's type admits ``bool`` (directly or in a union)."""
    import typing

    if annotation is bool:
        return True
    return any(_allows_bool(a) for a in typing.get_args(annotation))


def no_bool_for_numbers(cls: type[BaseModel], value: Any, info: Any) -> Any:
    """YAML reads ``yes``/``true`` as booleans and pydantic would take them as 1:
    a boolean is accepted only where the field is one."""
    if isinstance(value, bool) and info.field_name is not None:
        field = cls.model_fields.get(info.field_name)
        if field is not None and not _allows_bool(field.annotation):
            raise ValueError(f"expected {_type_name(field.annotation)}, got a boolean ({value})")
    return value


def _type_name(annotation: Any) -> str:
    import typing

    args = [a for a in typing.get_args(annotation) if a is not type(None)]
    base = args[0] if args else annotation
    return {int: "an integer", float: "a number", str: "a string"}.get(
        typing.get_origin(base) or base, "a value of another type"
    )


#: every user-facing model: unknown keys, NaN/inf and booleans-as-numbers are errors
STRICT_CONFIG = ConfigDict(extra="forbid", validate_assignment=True, allow_inf_nan=False)


class _Strict(BaseModel):
    model_config = STRICT_CONFIG

    _no_bool = field_validator("*", mode="before")(classmethod(no_bool_for_numbers))


def _check_name(kind: str, name: str | None, valid: dict) -> str | None:
    try:
        return check_name(name, valid, kind)
    except UnknownNameError as err:  # pydantic reports ValueError with the key path
        raise ValueError(str(err)) from None


#: keys of ``cell.link`` that belong to each link mode
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
    "noise_figure_ue_db",
    "noise_figure_bs_db",
    "duplex",
    "tdd_pattern",
    "special_slot_symbols",
    "uplink_power_control",
    "max_bps_per_hz",
    "snr_gap_db",
    "cqi_table",
    "phy_overhead_uplink",
    "phy_overhead_downlink",
}


class PowerControlSection(_Strict):
    """Uplink power control: TS 38.213 §7.1.1 open loop, or FedDif's full-carrier formula."""

    model: Literal["full_carrier", "open_loop"] = "open_loop"
    p0_dbm: float = Field(-87.0, description="P0 [dBm per 15 kHz-RB equivalent]")
    alpha: float = Field(0.8, ge=0.0, le=1.0, description="fractional path-loss compensation")


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
    max_rbs_per_transfer: float | None = Field(
        None, ge=1.0, description="cap on the RBs one transfer holds (at least one RB)"
    )
    pf_window_blocks: PositiveFloat | None = Field(
        None, description="proportional fair: averaging window [fading blocks] (default 100)"
    )
    bandwidth_hz: float | None = Field(
        None, ge=1e5, le=1e9, description="override [Hz]; sets num_rbs by TS 38.101"
    )
    num_rbs: PositiveInt | None = None
    numerology: int | None = Field(None, ge=0, le=2)
    fading: Literal["none", "rayleigh"] | None = None
    coherence_time_s: float | None = Field(
        None,
        ge=1e-4,
        description="fading block length [s]; at least 0.1 ms (a µ = 3 slot): shorter "
        "blocks only multiply events",
    )
    ue_tx_power_dbm: float | None = Field(None, ge=-50.0, le=60.0, description="[dBm]")
    bs_tx_power_dbm: float | None = Field(None, ge=-50.0, le=60.0, description="[dBm]")
    noise_figure_ue_db: NonNegativeFloat | None = None
    noise_figure_bs_db: NonNegativeFloat | None = None
    duplex: Literal["fdd", "tdd"] | None = None
    tdd_pattern: str | None = Field(None, description="TDD slots, e.g. DDDSU (D, S, U)")
    special_slot_symbols: tuple[NonNegativeInt, NonNegativeInt, NonNegativeInt] | None = Field(
        None, description="TDD special slot: [downlink, guard, uplink] symbols (sum 14)"
    )
    uplink_power_control: PowerControlSection | None = None
    max_bps_per_hz: PositiveFloat | None = Field(None, description="cap on spectral efficiency")
    snr_gap_db: NonNegativeFloat | None = Field(None, description="Shannon/CQI SNR gap [dB]")
    cqi_table: Literal["64qam", "256qam"] | None = Field(
        None, description="TS 38.214 CQI table (profiles with efficiency model cqi)"
    )
    phy_overhead_uplink: float | None = Field(None, ge=0.0, lt=1.0, description="TS 38.306 OH")
    phy_overhead_downlink: float | None = Field(None, ge=0.0, lt=1.0, description="TS 38.306 OH")

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
        if self.mode == "ofdma":
            self.channel_profile_resolved()  # grid, TDD pattern, power control consistent
        return self

    def channel_profile_resolved(self) -> ChannelProfile:
        """The named channel profile with this section's overrides applied.

        A ``bandwidth_hz`` or ``numerology`` override without ``num_rbs`` takes N_RB
        from TS 38.101-1 Table 5.3.2-1; ``ValueError`` names an inconsistent value
        (e.g. more RBs than the bandwidth holds, a bandwidth with no N_RB entry).
        """
        base = get_channel_profile(self.channel_profile)
        numerology = self.numerology if self.numerology is not None else base.numerology
        bandwidth = self.bandwidth_hz or base.bandwidth_hz
        num_rbs = self.num_rbs
        if num_rbs is None and (self.bandwidth_hz is not None or self.numerology is not None):
            try:
                num_rbs = num_resource_blocks(bandwidth, numerology)
            except (KeyError, ValueError) as err:
                raise ValueError(
                    f"bandwidth_hz/numerology: {str(err).strip(chr(34))}; set num_rbs to use "
                    "another bandwidth"
                ) from None
        fading = dict(base.fading)
        if self.fading is not None:
            fading = {
                "model": self.fading,
                "coherence_time_s": fading.get("coherence_time_s", 1e-3),
            }
        if self.coherence_time_s is not None:
            fading["coherence_time_s"] = self.coherence_time_s
        efficiency = dict(base.efficiency)
        if self.max_bps_per_hz is not None:
            efficiency["max_bps_per_hz"] = self.max_bps_per_hz
        if self.snr_gap_db is not None:
            efficiency["gap_db"] = self.snr_gap_db
        if self.cqi_table is not None:
            if efficiency["model"] != "cqi":
                raise ValueError(
                    f"cqi_table: channel profile {base.name!r} uses {efficiency['model']!r} "
                    "efficiency, not a CQI table"
                )
            efficiency["table"] = self.cqi_table
        overhead = dict(base.phy_overhead)
        if self.phy_overhead_uplink is not None:
            overhead["uplink"] = self.phy_overhead_uplink
        if self.phy_overhead_downlink is not None:
            overhead["downlink"] = self.phy_overhead_downlink
        pc = self.uplink_power_control.model_dump() if self.uplink_power_control else None
        return base.with_overrides(
            numerology=numerology,
            bandwidth_hz=bandwidth,
            num_rbs=num_rbs,
            fading=fading,
            ue_tx_power_dbm=self.ue_tx_power_dbm,
            bs_tx_power_dbm=self.bs_tx_power_dbm,
            noise_figure_ue_db=self.noise_figure_ue_db,
            noise_figure_bs_db=self.noise_figure_bs_db,
            duplex=self.duplex,
            tdd_pattern=self.tdd_pattern,
            special_slot_symbols=self.special_slot_symbols,
            uplink_power_control=pc,
            efficiency=efficiency,
            phy_overhead=overhead,
        )


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


class BsPowerSection(_Strict):
    """Load-dependent BS power (EARTH, Auer et al. 2011, Table 2 macro values)."""

    p0_w: NonNegativeFloat = Field(130.0, description="power at zero load while active [W]")
    delta_p: NonNegativeFloat = Field(4.7, description="slope of the load-dependent part")
    max_tx_power_w: PositiveFloat | None = Field(
        None, description="RF power at full load [W] (default: the channel profile's BS power)"
    )
    num_trx: PositiveInt = Field(1, description="transceiver chains charged")


#: bounds that keep a valid-looking scenario from running for days or exhausting memory
MAX_CUES = 100_000
MAX_SESSION_RATE_PER_S = 10_000
MAX_DEVICES = 100_000
MAX_SYNTHETIC_BYTES = 4 << 30


class CellSection(_Strict):
    radius_m: PositiveFloat = 250.0
    redrop_every_round: bool = Field(False, description="re-drop all UEs at every round start")
    link: LinkSection = LinkSection()
    cues: CueSection = CueSection()
    bs_power: BsPowerSection = BsPowerSection()

    @model_validator(mode="after")
    def _cues_need_ofdma(self) -> CellSection:
        if self.cues.density_per_km2 > 0 and self.link.mode != "ofdma":
            raise ValueError("background CUEs (cues.density_per_km2 > 0) need link.mode: ofdma")
        area_km2 = 3.141592653589793 * (self.radius_m / 1e3) ** 2
        expected = self.cues.density_per_km2 * area_km2
        if expected > MAX_CUES:
            raise ValueError(
                f"cues: density_per_km2 × cell area gives {expected:,.0f} CUEs on average; "
                f"at most {MAX_CUES:,} are simulated"
            )
        if expected * self.cues.session_rate_per_s > MAX_SESSION_RATE_PER_S:
            raise ValueError(
                f"cues: {expected * self.cues.session_rate_per_s:,.0f} sessions start per "
                f"second in the cell; at most {MAX_SESSION_RATE_PER_S:,} are simulated"
            )
        return self


class ComputeOverrides(_Strict):
    """Per-scenario replacements of compute-profile values."""

    effective_flops_per_s: PositiveFloat | None = None
    busy_power_w: NonNegativeFloat | None = None
    idle_power_w: NonNegativeFloat | None = None
    tx_power_w: NonNegativeFloat | None = None
    rx_power_w: NonNegativeFloat | None = None
    parallel_jobs: PositiveInt | None = None
    radio_wait_power_w: NonNegativeFloat | None = None
    rrc_tail_power_w: NonNegativeFloat | None = None
    rrc_tail_s: NonNegativeFloat | None = None


class DeviceGroup(_Strict):
    """A group of devices with their own profiles (heterogeneous fleets)."""

    count: PositiveInt
    compute_profile: str | None = None
    link_profile: str | None = None
    model: str | None = Field(
        None,
        description="this group's on-device model (heterogeneous-model algorithms: fedzkt, fedmd)",
    )

    _vm = field_validator("model")(lambda v: _check_name("model", v, MODELS))
    _vc = field_validator("compute_profile")(
        lambda v: _check_name("compute profile", v, compute_profiles())
    )
    _vl = field_validator("link_profile")(lambda v: _check_name("link profile", v, link_profiles()))


class DevicesSection(_Strict):
    count: PositiveInt = Field(10, le=MAX_DEVICES, description="participating devices (PUEs)")
    compute_profile: str = "raspberry_pi_4"
    link_profile: str = "4g_lte"
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
        i = 0
        for g in self.groups:
            if g.model is not None:
                names[i : i + g.count] = [g.model] * g.count
            i += g.count
        return names

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

    @model_validator(mode="after")
    def _fits_memory(self) -> SyntheticSection:
        c, h, w = self.shape
        size = self.num_samples * c * h * w * 4
        if size > MAX_SYNTHETIC_BYTES:
            raise ValueError(
                f"num_samples × shape needs {size / 2**30:,.1f} GiB of float32 images; "
                f"at most {MAX_SYNTHETIC_BYTES >> 30} GiB"
            )
        return self


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
    on_nonfinite: Literal["drop", "abort"] = Field(
        "drop",
        description="a device update with NaN/Inf values: leave it out of the round's "
        "aggregation and count it (drop), or stop the run (abort)",
    )


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
    checkpoint_every: NonNegativeInt = Field(
        0,
        description="save a checkpoint every N rounds in the run directory (0: never); "
        "`netfl run --resume RUN_DIR` continues from it",
    )


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


#: ``cell.link`` keys by link mode (the resolved form drops the other mode's keys)
LINK_MODE_KEYS = {"fixed_rate": _FIXED_RATE_KEYS, "ofdma": _OFDMA_KEYS}
