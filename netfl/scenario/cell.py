"""The ``cell`` section of scenario files: geometry, link mode, CUEs, BS power."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import (
    Field,
    NonNegativeFloat,
    NonNegativeInt,
    PositiveFloat,
    PositiveInt,
    ValidationInfo,
    field_validator,
    model_validator,
)

from channel_models import link_profiles
from channel_models.channel_profiles import ChannelProfile
from channel_models.fading import FADING_MODELS
from channel_models.pathloss_laws import PATHLOSS_MODELS, build_pathloss
from channel_models.profile_catalog import channel_profiles, parse_channel_profiles
from channel_models.profile_specs import build_fading
from netfl.radio.schedulers import SCHEDULERS
from netfl.scenario.link_resolution import (
    check_scheduler_options,
    refuse_unchosen,
    resolved_profile,
)
from netfl.scenario.reading import cached_per_file
from netfl.scenario.strict import _check_name, _Strict, beside

__all__ = ["CellSection", "LinkSection", "LINK_MODE_KEYS", "MAX_CUES", "MAX_SESSION_RATE_PER_S"]


def _fading_alone() -> list[str]:
    """The fading laws ``cell.link.fading`` may name: those built from a block length
    alone (the others take parameters a channel profile gives)."""
    names = []
    for name in FADING_MODELS:
        try:
            build_fading({"model": name, "coherence_time_s": 1e-3})
        except (TypeError, ValueError):
            continue
        names.append(name)
    return names


#: keys of ``cell.link`` that belong to each link mode
_FIXED_RATE_KEYS = {"shared", "capacity_profile", "uplink_capacity_mbps", "downlink_capacity_mbps"}
_OFDMA_KEYS = {
    "channel_profile",
    "scheduler",
    "scheduler_options",
    "max_rbs_per_transfer",
    "pf_window_blocks",
    "aggregate_above_flows",
    "bandwidth_hz",
    "num_rbs",
    "numerology",
    "fading",
    "coherence_time_s",
    "fading_draw",
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
    "link_abstraction",
    "bler_target",
    "max_mcs",
    "cqi_sinr",
    "downlink_delay_s",
    "downlink_allocation",
    "rbg_configuration",
    "phy_overhead_uplink",
    "phy_overhead_downlink",
    "overheads",
    "pathloss",
    "channel_profile_file",
    "shadowing",
}


class PowerControlSection(_Strict):
    """Uplink power control: TS 38.213 §7.1.1 open loop, or FedDif's full-carrier formula."""

    model: Literal["full_carrier", "open_loop"] = "open_loop"
    p0_dbm: float = Field(
        -87.0, description="P0 [dBm per 15 kHz-RB equivalent]", ge=-202.0, le=24.0
    )
    alpha: float = Field(0.8, ge=0.0, le=1.0, description="fractional path-loss compensation")


def _read_user_profiles(path: str) -> dict[str, ChannelProfile]:
    """The profiles of a ``channel_profile_file`` (the format of
    ``channel_models/data/channel_profiles.yaml``), read as strictly as a scenario:
    a regular file of at most 1 MiB, no duplicate keys, bounded aliases;
    ``ValueError`` names the profile and key at fault."""
    from netfl.errors import ScenarioError
    from netfl.scenario.reading import read_yaml

    try:
        raw = read_yaml(path, "channel-profile file")
    except ScenarioError as err:
        where, msg = err.problems[0]
        raise ValueError(f"{path}: {where + ': ' if where else ''}{msg}") from None
    return parse_channel_profiles(raw, f"{path}: profiles")


#: :func:`_read_user_profiles`, cached per file and modification time
user_channel_profiles = cached_per_file(_read_user_profiles)

#: OFDM symbols of a slot's part (of 14)
_Symbols = Annotated[int, Field(ge=0, le=14)]


class LinkSection(_Strict):
    """How transfers get their rate: ``fixed_rate`` profiles or ``ofdma`` carriers."""

    mode: Literal["fixed_rate", "ofdma"] = "fixed_rate"
    # fixed_rate
    shared: bool = Field(False, description="share the BS capacity among concurrent transfers")
    capacity_profile: str | None = Field(
        None, description="link profile giving the BS capacity when shared (default: devices')"
    )
    uplink_capacity_mbps: PositiveFloat | None = Field(None, le=1e6)
    downlink_capacity_mbps: PositiveFloat | None = Field(None, le=1e6)
    # ofdma
    channel_profile: str = Field("feddif", description="named OFDMA channel profile")
    shadowing: bool | None = Field(
        None,
        description="false: no log-normal shadowing on the cellular and D2D laws; true: "
        "the TR 38.901 laws' own shadowing (others need shadowing_std_db in pathloss)",
    )
    channel_profile_file: str | None = Field(
        None,
        description="a YAML file of user-defined profiles (the format of the built-in "
        "channel_models/data/channel_profiles.yaml: profiles: {NAME: {...}}), relative to "
        "the scenario file; its names join the built-in ones",
    )
    scheduler: str = Field(
        "round_robin",
        description="how each carrier shares its RBs: a scheduler of the registry "
        "(`netfl list`; a plugin's: netfl.register_scheduler)",
        # (the registry's names when the schema is written, plugins' included)
        json_schema_extra=lambda schema: schema.update(enum=list(SCHEDULERS)),
    )
    scheduler_options: dict[str, Any] | None = Field(
        None,
        description="the scheduler's options (its Config; e.g. proportional_fair: window_blocks)",
    )
    max_rbs_per_transfer: float | None = Field(
        None, ge=1.0, description="cap on the RBs one transfer holds (at least one RB)", le=1e4
    )
    pf_window_blocks: PositiveFloat | None = Field(
        None,
        description="proportional fair: averaging window [fading blocks] (default 100)",
        le=1e6,
    )
    aggregate_above_flows: NonNegativeInt | None = Field(
        None,
        le=10**7,
        description="a Rayleigh carrier (round robin or fcfs) with at least this many flows "
        "rates its fading blocks G at a time, G the largest power of two ≤ the flows' median "
        "remaining lifetime / 256 blocks (≤ 256): each column's mean gain exact, its bits the "
        "blocks' mean given it (channel_models.block_aggregation); 0: never (default 512)",
    )
    bandwidth_hz: float | None = Field(
        None, ge=1e5, le=1e9, description="override [Hz]; sets num_rbs by TS 38.101"
    )
    num_rbs: PositiveInt | None = Field(None, le=3300)
    numerology: int | None = Field(
        None,
        ge=0,
        le=4,
        description="override: subcarrier spacing 15·2^μ kHz (TS 38.211 Table 4.2-1)",
    )
    fading: str | None = Field(
        None,
        description="override of the profile's fading law: one of the registry "
        "(`netfl list fading-models`) taking no parameter but the block length",
        json_schema_extra=lambda schema: schema.update(enum=_fading_alone()),
    )
    coherence_time_s: float | None = Field(
        None,
        ge=1e-4,
        description="fading block length [s]; at least 0.1 ms (a µ = 3 slot): shorter "
        "blocks only multiply events",
        le=1e3,
    )
    fading_draw: Literal["per_transfer", "per_link"] = Field(
        "per_transfer",
        description="per_transfer: each transfer draws its fading blocks from its own "
        "stream; per_link: a link's gain in a block is the same for every transfer on it "
        "and a policy can sound it (context.states.block_snr_db: the instantaneous SNR "
        "of proportional-fair scheduling); its flows are rated block by block "
        "(aggregate_above_flows has no effect on them)",
    )
    ue_tx_power_dbm: float | None = Field(None, ge=-50.0, le=60.0, description="[dBm]")
    bs_tx_power_dbm: float | None = Field(None, ge=-50.0, le=60.0, description="[dBm]")
    noise_figure_ue_db: NonNegativeFloat | None = Field(None, le=50.0)
    noise_figure_bs_db: NonNegativeFloat | None = Field(None, le=50.0)
    duplex: Literal["fdd", "tdd"] | None = None
    tdd_pattern: str | None = Field(None, description="TDD slots, e.g. DDDSU (D, S, U)")
    special_slot_symbols: tuple[_Symbols, _Symbols, _Symbols] | None = Field(
        None, description="TDD special slot: [downlink, guard, uplink] symbols (sum 14)"
    )
    uplink_power_control: PowerControlSection | None = None
    max_bps_per_hz: PositiveFloat | None = Field(
        None, description="cap on spectral efficiency", le=30.0
    )
    snr_gap_db: NonNegativeFloat | None = Field(
        None, description="Shannon/CQI SNR gap [dB]", le=30.0
    )
    cqi_table: Literal["64qam", "256qam"] | None = Field(
        None, description="TS 38.214 CQI table (profiles with efficiency model cqi)"
    )
    link_abstraction: Literal["gap", "bler"] | None = Field(
        None,
        description="LTE profiles: unset, ns-3 LENA's own (uplink: its schedulers' CQI from a "
        "BER-5e-5 SNR gap; downlink: the CQI its UE reports from LteMiErrorModel at 10 % "
        "BLER, TB errors and HARQ), gap (the gap rule both ways, no errors) or bler (BLER "
        "curves of ns-3's LteMiErrorModel, OLLA to bler_target, HARQ)",
    )
    bler_target: float | None = Field(
        None, gt=0.0, lt=1.0, description="bler abstraction: OLLA's BLER target (default 0.1)"
    )
    cqi_sinr: Literal["wideband", "allocation"] | None = Field(
        None,
        description="full-carrier uplink: link adaptation from the wideband (sounding) "
        "SINR (default) or from the SINR of the UE's power on the RBs it holds",
    )
    max_mcs: NonNegativeInt | None = Field(
        None, description="MCS cap of the LTE/NR link abstractions (LTE 0..28; NR per table)", le=31
    )
    downlink_delay_s: float | None = Field(
        None,
        ge=0.0,
        le=1.0,
        description="from a download's arrival to its first TB [s] "
        "(the LTE profiles: ns-3 LENA's 3 ms; 0 for an idealised scheduler)",
    )
    downlink_allocation: Literal["fractional", "rbg_round_robin"] | None = Field(
        None,
        description="round-robin downlink: whole resource-block groups, ⌊groups/n⌋ per UE "
        "and the rest unused (rbg_round_robin: ns-3 LENA's rule, the LTE profiles' default) "
        "or any fraction of the RBs (fractional: idealised, the NR profiles' default)",
    )
    rbg_configuration: Literal[1, 2] | None = Field(
        None, description="NR RBG size configuration (TS 38.214 Table 5.1.2.2.1-1; default 1)"
    )
    phy_overhead_uplink: float | None = Field(None, ge=0.0, lt=1.0, description="TS 38.306 OH")
    phy_overhead_downlink: float | None = Field(None, ge=0.0, lt=1.0, description="TS 38.306 OH")
    overheads: dict[str, Any] | None = Field(
        None,
        description="named overheads merged into the profile's: cyclic_prefix (normal, "
        "extended, none), reference_signals (lte, nr, none), pdcch_symbols (0..3), "
        "pucch_rbs (uplink RBs kept for PUCCH); channel_models.overheads gives each source",
    )
    pathloss: dict[str, Any] | None = Field(
        None,
        description="cellular path-loss law replacing the profile's: {model: NAME, ...its "
        "parameters} (e.g. log_distance: beta0_db, kappa, d0_m, height_tx_m, height_rx_m)",
    )

    @field_validator("pathloss")
    @classmethod
    def _pathloss_builds(cls, v: dict[str, Any] | None) -> dict[str, Any] | None:
        if v is None:
            return v
        if not isinstance(v.get("model"), str):
            raise ValueError(f"needs model: one of {', '.join(PATHLOSS_MODELS)}")
        try:
            build_pathloss(v, 2.0e9)
        except (KeyError, TypeError, ValueError) as err:
            raise ValueError(str(err).strip('"')) from None
        return v

    _v = field_validator("capacity_profile")(
        lambda v: _check_name("link profile", v, link_profiles())
    )
    _s = field_validator("scheduler")(lambda v: _check_name("scheduler", v, SCHEDULERS))

    @field_validator("fading")
    @classmethod
    def _fading_alone(cls, v: str | None) -> str | None:
        if v is None:
            return v
        _check_name("fading model", v, FADING_MODELS)
        if v not in _fading_alone():
            raise ValueError(
                f"fading {v!r} takes parameters: name it in a channel profile "
                "(cell.link.channel_profile_file)"
            )
        return v

    def scheduler_config(self) -> dict[str, Any]:
        """The scheduler's options: ``scheduler_options``, and the section's keys that
        set one of them (``pf_window_blocks`` → proportional fair's ``window_blocks``)."""
        options = dict(self.scheduler_options or {})
        for key, field in SCHEDULERS[self.scheduler].link_keys.items():
            value = getattr(self, key, None)
            if value is not None:
                if field in options:
                    raise ValueError(f"{key} and scheduler_options.{field} say the same: give one")
                options[field] = value
        return options

    def profiles(self) -> dict[str, ChannelProfile]:
        """The built-in profiles and those of ``channel_profile_file`` (which win)."""
        if self.channel_profile_file is None:
            return channel_profiles()
        return {**channel_profiles(), **user_channel_profiles(self.channel_profile_file)}

    @model_validator(mode="after")
    def _keys_match_mode(self, info: ValidationInfo) -> LinkSection:
        other = _OFDMA_KEYS if self.mode == "fixed_rate" else _FIXED_RATE_KEYS
        given = sorted(k for k in other & self.model_fields_set)
        if given:
            raise ValueError(f"{', '.join(given)} does not apply to mode {self.mode!r}")
        if self.channel_profile_file is not None:
            path = beside(self.channel_profile_file, (info.context or {}).get("base_dir"))
            try:
                user_channel_profiles(path)
            except ValueError as err:
                raise ValueError(f"channel_profile_file: {err}") from None
            # (absolute from here on: the resolved scenario.yaml names the file it used)
            self.__dict__["channel_profile_file"] = path
        try:
            _check_name("channel profile", self.channel_profile, self.profiles())
        except ValueError as err:
            raise ValueError(f"channel_profile: {err}") from None
        if self.mode == "ofdma":
            # (grid, TDD pattern, power control consistent)
            refuse_unchosen(self, self.channel_profile_resolved())
            check_scheduler_options(self.scheduler, self.scheduler_config())
        elif not self.shared:
            refuse_unchosen(self, None)
        return self

    def channel_profile_resolved(self) -> ChannelProfile:
        """The named channel profile with this section's overrides applied
        (:func:`netfl.scenario.link_resolution.resolved_profile`)."""
        return resolved_profile(self)


class CueSection(_Strict):
    """Background cellular UEs: spatial PPP, Poisson sessions holding RBs (ofdma only)."""

    density_per_km2: NonNegativeFloat = Field(0.0, le=1e6)
    session_rate_per_s: NonNegativeFloat = Field(
        0.1, description="sessions per CUE per second", le=1e3
    )
    mean_session_s: PositiveFloat = Field(
        10.0, description="mean (exponential) session length", le=1e6
    )
    demand_rbs: PositiveFloat = Field(
        4.0, description="RBs a session holds (at most, if sized)", le=1e4
    )
    uplink_fraction: float = Field(0.5, ge=0.0, le=1.0)
    mean_session_bits: PositiveFloat | None = Field(
        None,
        description="if set, sessions are transfers of Exp(mean) bits instead of durations",
        le=1e12,
    )


class BsPowerSection(_Strict):
    """Load-dependent BS power (EARTH, Auer et al. 2011, Table 2 macro values)."""

    p0_w: NonNegativeFloat = Field(130.0, description="power at zero load while active [W]", le=1e4)
    delta_p: NonNegativeFloat = Field(4.7, description="slope of the load-dependent part", le=100.0)
    max_tx_power_w: PositiveFloat | None = Field(
        None,
        description="RF power at full load [W] (default: the channel profile's BS power)",
        le=1e3,
    )
    num_trx: PositiveInt = Field(1, description="transceiver chains charged", le=1024)


#: bounds that keep a valid-looking scenario from running for days or exhausting memory
MAX_CUES = 100_000
MAX_SESSION_RATE_PER_S = 10_000


class CellSection(_Strict):
    radius_m: PositiveFloat = Field(250.0, le=1e5)
    redrop_every_round: bool = Field(False, description="re-drop all UEs at every round start")
    link: LinkSection = LinkSection()
    cues: CueSection = CueSection()
    bs_power: BsPowerSection = BsPowerSection()

    @model_validator(mode="after")
    def _cues_need_ofdma(self) -> CellSection:
        if self.cues.density_per_km2 > 0 and self.link.mode != "ofdma":
            raise ValueError("background CUEs (cues.density_per_km2 > 0) need link.mode: ofdma")
        return self

    def check_cue_load(self, area_km2: float, where: str) -> None:
        """``ValueError`` when the CUEs dropped over ``area_km2`` (the cell's disc, or a
        network's whole area: ``where``) or their sessions would be more than netfl
        simulates (:data:`MAX_CUES`, :data:`MAX_SESSION_RATE_PER_S`)."""
        expected = self.cues.density_per_km2 * area_km2
        if expected > MAX_CUES:
            raise ValueError(
                f"cell.cues: density_per_km2 × {where} area gives {expected:,.0f} CUEs on "
                f"average; at most {MAX_CUES:,} are simulated"
            )
        if expected * self.cues.session_rate_per_s > MAX_SESSION_RATE_PER_S:
            raise ValueError(
                f"cell.cues: {expected * self.cues.session_rate_per_s:,.0f} sessions start per "
                f"second in the {where}; at most {MAX_SESSION_RATE_PER_S:,} are simulated"
            )


#: ``cell.link`` keys by link mode (the resolved form drops the other mode's keys)
LINK_MODE_KEYS = {"fixed_rate": _FIXED_RATE_KEYS, "ofdma": _OFDMA_KEYS}
