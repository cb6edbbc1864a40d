"""Scenario files: YAML → strict pydantic models, with key-path error messages.

A scenario has the sections ``name, seed, cell, devices, server, data, model,
training, algorithm, learning, outputs``. Unknown keys are errors. Every
problem is reported as one line ``FILE: key.path: what is wrong (valid: …)``.
The ``algorithm`` section holds ``name`` plus that algorithm's own options,
validated by the algorithm's ``Config``. Sections with a module of their own:
``cell`` (:mod:`~netfl.scenario.cell`), ``network``
(:mod:`~netfl.scenario.network_section`), ``devices``
(:mod:`~netfl.scenario.devices_section`) and ``data``
(:mod:`~netfl.scenario.data_section`).

This module is the schema only: ``--set`` overrides live in
:mod:`netfl.scenario.files`; reading files with their plugins, checking the
algorithm's options against the registry and the resolved form in
:mod:`netfl.loading.scenarios` (a layer up), which import this module (never the
reverse).
"""

from __future__ import annotations

import math
from typing import Annotated, Any, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    NonNegativeFloat,
    NonNegativeInt,
    PositiveFloat,
    PositiveInt,
    ValidationInfo,
    field_validator,
    model_validator,
)

from netfl.compute.profiles import compute_profiles
from netfl.learning.catalog import MODEL_CATALOG as MODELS
from netfl.radio.uplink_mac import MAX_GRANT_CYCLES
from netfl.scenario.cell import LINK_MODE_KEYS, CellSection
from netfl.scenario.data_section import DataSection
from netfl.scenario.devices_section import ComputeOverrides, DevicesSection
from netfl.scenario.layout import LayoutSection
from netfl.scenario.layout_fit import fit_layouts
from netfl.scenario.network_section import NetworkSection
from netfl.scenario.policy_section import PolicySection
from netfl.scenario.strict import (
    STRICT_CONFIG,
    _check_name,
    _Strict,
    no_bool_for_numbers,
    refuse,
    resolve_plugin_spec,
)

__all__ = ["Scenario", "LINK_MODE_KEYS", "STRICT_CONFIG", "no_bool_for_numbers"]


class ServerSection(_Strict):
    compute_profile: str = "edge_server_cpu"
    compute_overrides: ComputeOverrides = ComputeOverrides()

    _vc = field_validator("compute_profile")(
        lambda v: _check_name("compute profile", v, compute_profiles())
    )

    @model_validator(mode="after")
    def _server_keys(self) -> ServerSection:
        # (the server has no modem — the BS's radio energy is its load-dependent power
        # model — and its idle power is not charged: idle energy is the devices')
        keys = set(ComputeOverrides.model_fields) - {
            "effective_flops_per_s",
            "busy_power_w",
            "parallel_jobs",
            "min_frequency_hz",
            "max_frequency_hz",
            "capacitance",
            "cycles_per_flop",
            "cycles_per_sample",
        }
        stray = [f"compute_overrides.{k}" for k in self.compute_overrides.given(keys)]
        refuse(stray, "to the server (no modem, no idle charge)")
        self.compute_overrides.check_profiles([self.compute_profile])
        return self


class ModelSection(_Strict):
    name: str = "cnn"
    bits_per_param: PositiveInt = Field(32, le=64)
    size_bits: PositiveFloat | None = Field(
        None, description="override the transmitted model size (e.g. FedDif's 40 Mbit)", le=1e12
    )

    _vm = field_validator("name")(lambda v: _check_name("model", v, MODELS))


class TrainingSection(_Strict):
    rounds: PositiveInt = Field(10, le=1_000_000)
    eval_every: PositiveInt = Field(
        1, le=1_000_000, description="evaluate the model every this many rounds (and the last)"
    )
    eval_every_s: float | None = Field(
        None,
        gt=0.0,
        le=1e9,
        description="also evaluate at the first round ending after each multiple of this "
        "many simulated seconds (asynchronous algorithms: rounds are server updates)",
    )
    target_accuracy: float | None = Field(None, gt=0.0, le=1.0)
    time_budget_s: PositiveFloat | None = Field(None, le=1e9)
    local_epochs: PositiveInt = Field(1, le=10_000)
    batch_size: PositiveInt = Field(32, le=1_000_000)
    lr: PositiveFloat = Field(
        0.1,
        le=1e3,
        description="local SGD step size (0.1: plain SGD as in McMahan et al. 2017, with "
        "which FedAvg learns MNIST-5k in about 10 rounds; docs/scenarios.md)",
    )
    momentum: float = Field(
        0.0,
        ge=0.0,
        lt=1.0,
        description="local SGD momentum (each training job starts its own; 0: plain SGD)",
    )
    weight_decay: NonNegativeFloat = Field(0.0, le=10.0)
    augment: list[Literal["hflip"]] = Field(
        default_factory=list,
        description="data augmentation applied on the fly to every training batch of device "
        "images: hflip flips each image left-right with probability 1/2 (seeded per job); "
        "never to activations (split learning's server part, EcoFed's replay buffer)",
    )
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
    eval_batch_size: PositiveInt = Field(1000, le=1_000_000)
    num_threads: PositiveInt | None = Field(
        None,
        le=1024,
        description="torch intra-op threads of every training job (default, for 'serial' and "
        "'batched': one where a training step is under 100 MFLOP, else this process's — "
        "chosen from the scenario, never the load (netfl.core.threads); for 'process' and "
        "'ray': the cores divided among the workers); results are bit-identical across "
        "executors with the same value",
    )
    executor: Literal["serial", "process", "ray", "batched"] = Field(
        "serial",
        description="where the devices' torch jobs run: in the simulator's process, a local "
        "process pool, Ray actors (this machine or `ray_address`), or batched: the local "
        "trainings pending at one instant with one architecture run together in this "
        "process (torch.func; netfl.learning.batched)",
    )
    workers: PositiveInt | None = Field(
        None,
        le=4096,
        description="parallel workers of the 'process'/'ray' executor (default: the cores / "
        "the cluster's CPUs, divided by num_threads)",
    )
    ray_address: str | None = Field(
        None,
        max_length=200,
        description="an existing Ray cluster for the 'ray' executor ('auto', 'ray://host:port')",
    )

    @model_validator(mode="after")
    def _keys_of_executor(self) -> LearningSection:
        keys = {"serial": set(), "batched": set(), "process": {"workers"}}
        keys["ray"] = {"workers", "ray_address"}
        refuse(
            self.given({"workers", "ray_address"} - keys[self.executor]),
            f"to executor {self.executor!r}",
        )
        return self


class OutputsSection(_Strict):
    dir: str = "runs"
    figures: bool = True
    progress: bool = True
    checkpoint_every: NonNegativeInt = Field(
        0,
        description="save a checkpoint every N rounds in the run directory (0: never); "
        "`netfl run --resume RUN_DIR` continues from it",
        le=1_000_000,
    )


class Scenario(_Strict):
    name: str = Field(pattern=r"^[A-Za-z0-9_.-]+$")
    seed: NonNegativeInt = Field(0, le=2**63 - 1)
    plugins: list[Annotated[str, Field(min_length=1, max_length=500)]] = Field(
        default_factory=list,
        max_length=32,
        description="modules or .py files (relative to this file) that register algorithms "
        "before the scenario is validated (netfl.loading.plugins); the resolved scenario "
        "names the files by absolute path",
    )
    cell: CellSection = CellSection()
    network: NetworkSection | None = Field(
        None, description="several cells (netfl.scenario.network_section); none: one BS, one cell"
    )
    devices: DevicesSection = DevicesSection()
    server: ServerSection = ServerSection()
    data: DataSection = DataSection()
    model: ModelSection = ModelSection()
    training: TrainingSection = TrainingSection()
    algorithm: AlgorithmSection = AlgorithmSection()
    policy: PolicySection = Field(
        PolicySection(),
        description="who takes part each round and with what share, power and CPU "
        "frequency (docs/policies.md; default random: FedAvg's sampling)",
    )
    learning: LearningSection = LearningSection()
    outputs: OutputsSection = OutputsSection()

    @field_validator("plugins")
    @classmethod
    def _plugin_paths(cls, value: list[str], info: ValidationInfo) -> list[str]:
        base_dir = (info.context or {}).get("base_dir")
        return [resolve_plugin_spec(v.strip(), base_dir) for v in value]

    @model_validator(mode="after")
    def _layouts_fit(self, info: ValidationInfo) -> Scenario:
        """The devices' layouts read and placed (:func:`~netfl.scenario.layout_fit.fit_layouts`)."""
        base_dir = (info.context or {}).get("base_dir")
        fitted = fit_layouts(self.layout_slots(), self.cell.radius_m, self.network, base_dir)
        for group, layout in fitted.items():  # (a CSV layout: the positions it holds)
            if group is None:
                self.devices.layout = layout
            else:
                self.devices.groups[group].layout = layout
        return self

    @model_validator(mode="after")
    def _mobility_fits(self) -> Scenario:
        if any(m.moves for m in self.devices.mobility_of()):
            # (the key that makes them move: the devices', else the first moving group's)
            d = self.devices
            key = (
                "devices.mobility"
                if d.mobility.moves
                else next(
                    f"devices.groups.{i}.mobility"
                    for i, g in enumerate(d.groups)
                    if g.mobility is not None and g.mobility.moves
                )
            )
            if self.cell.redrop_every_round:
                raise ValueError(
                    f"{key}: moving devices with cell.redrop_every_round (a re-drop "
                    "would teleport them); set one of the two"
                )
            if self.cell.link.mode != "ofdma":
                raise ValueError(f"{key}: moving devices need cell.link.mode: ofdma")
        return self

    def grant_cycles(self, size_bits: float) -> float:
        """Buffer-status grant cycles an uplink of ``size_bits`` takes on this cell (0
        without a grant-cycle MAC: fixed-rate links, NR profiles)."""
        if self.cell.link.mode != "ofdma":
            return 0.0
        grant = self.cell.link.channel_profile_resolved().uplink_grant
        return 0.0 if grant is None else size_bits / (8.0 * grant["bsr_max_bytes"])

    @model_validator(mode="after")
    def _transfers_fit(self) -> Scenario:
        """An uplink of the model's size takes at most :data:`MAX_GRANT_CYCLES` grant
        cycles (each costs events; a 10^14-bit model would take millions)."""
        size = self.model.size_bits
        if size is not None and self.grant_cycles(size) > MAX_GRANT_CYCLES:
            raise ValueError(
                f"model.size_bits: {size:g} bits take {self.grant_cycles(size):,.0f} uplink grant "
                f"cycles on this LTE cell (at most {MAX_GRANT_CYCLES:,}: "
                f"{MAX_GRANT_CYCLES * self.grant_cycles(1.0) ** -1:.3g} bits)"
            )
        return self

    @model_validator(mode="after")
    def _cue_load_fits(self) -> Scenario:
        """The CUEs a run drops: over the cell's disc, or a network's whole area."""
        if self.cell.cues.density_per_km2 > 0:
            self.cell.check_cue_load(
                self.cues_area_km2(), "cell" if self.network is None else "network"
            )
        return self

    def cues_area_km2(self) -> float:
        """The area the background CUEs are dropped over [km²]."""
        if self.network is None:
            return math.pi * (self.cell.radius_m / 1e3) ** 2
        return self.network.deployment(self.cell.radius_m, 25.0).area_m2() / 1e6

    @model_validator(mode="after")
    def _timing_evaluates_nothing(self) -> Scenario:
        if self.learning.mode == "timing":
            stray = [f"training.{k}" for k in self.training.given({"target_accuracy"})]
            refuse(stray, "in learning.mode: timing (no model is trained or evaluated)")
        return self

    @model_validator(mode="after")
    def _network_fits(self) -> Scenario:
        if self.network is None:
            return self
        if self.cell.link.mode != "ofdma":
            raise ValueError("network: needs cell.link.mode: ofdma (every cell has carriers)")
        if self.network.site_positions_m is None:
            refuse(
                [f"cell.{k}" for k in self.cell.given({"radius_m"})],
                "to a hexagonal network (its cells are the sites' hexagons: network.isd_m; "
                "sites at site_positions_m serve discs of it)",
            )
        if self.cell.cues.mean_session_bits is not None:
            raise ValueError(
                "network: size-based CUE sessions (cell.cues.mean_session_bits) are not "
                "simulated in a network yet; use duration-based sessions"
            )
        return self

    def layout_slots(self) -> list[tuple[str, LayoutSection, list[int], int | None]]:
        """``(key path, layout, device indices, group index)`` of each group with a layout
        (a group holds the next ``count`` devices, in group order), then
        ``devices.layout`` with every other device (group ``None``; left out when no
        device is left)."""
        d = self.devices
        slots, others, start = [], [], 0
        for i, g in enumerate(d.groups):
            members = list(range(start, start + g.count))
            if g.layout is not None:
                slots.append((f"devices.groups.{i}.layout", g.layout, members, i))
            else:
                others += members
            start += g.count
        others += list(range(start, d.count))
        if others or not slots:
            slots.append(("devices.layout", d.layout, others, None))
        return slots
