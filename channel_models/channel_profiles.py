"""A channel profile: one OFDMA cell's carrier, resource grid, laws, powers and
duplexing (:class:`ChannelProfile`), checked on construction. The named profiles
(package data, user YAML files) are read in :mod:`channel_models.profile_catalog`; what
its ``efficiency`` and ``fading`` specs build lives in :mod:`channel_models.profile_specs`."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from channel_models.duplex import tdd_time_fraction, validate_tdd_pattern
from channel_models.fading import BlockFading
from channel_models.link_budget import cqi_efficiency, noise_power_w, shannon_efficiency
from channel_models.lte import (
    HARQ_RTT_S,
    LteAmcEfficiency,
    LteBlerEfficiency,
    LteMiCqiEfficiency,
)
from channel_models.nr import NrBlerEfficiency
from channel_models.numerology import SUBFRAME_S, max_resource_blocks, rb_bandwidth_hz
from channel_models.overheads import overhead_share, validate_overheads
from channel_models.pathloss import PathLoss
from channel_models.pathloss_laws import build_pathloss, pathloss_parameters
from channel_models.profile_specs import (
    EFFICIENCY_MODELS,
    TBS_MODELS,
    Efficiency,
    build_fading,
    link_adaptation,
)
from channel_models.resource_groups import group_sizes, rbg_size
from channel_models.units import dbm_to_w
from channel_models.value_ranges import (
    LTE_NUM_RBS,
    PROFILE_BOUNDS,
    UPLINK_GRANT_BOUNDS,
    check_range,
)

#: ``build_pathloss`` and ``pathloss_parameters`` are re-exported from
#: :mod:`channel_models.pathloss_laws`
__all__ = ["ChannelProfile", "build_pathloss", "pathloss_parameters"]


@dataclass(frozen=True)
class ChannelProfile:
    """An OFDMA cell: carrier, resource grid, path loss, fading, noise, powers, duplexing.

    Downlink SNR of a link (FedDif eq. (9)): p·β·|h|² / (N0·B·F_UE) with B the
    carrier bandwidth (full-carrier PSD). Uplink and D2D: open-loop power
    control per allocation (``uplink_power_control: {model: open_loop, p0_dbm,
    alpha}``, :mod:`channel_models.power_control`) or FedDif's full-carrier
    formula (``{model: full_carrier}``). A resource block then carries
    ``time_fraction × rb_bandwidth_hz × (1 − OH) × efficiency(SNR)`` bit/s
    (FedDif eq. (10); OH of TS 38.306 §4.1.2; time fraction 1 for FDD, the
    slot-pattern share for TDD).

    Noise figures are per receiver: ``noise_figure_bs_db`` on the uplink,
    ``noise_figure_ue_db`` on the downlink and D2D.
    """

    name: str
    carrier_hz: float
    bandwidth_hz: float
    numerology: int
    num_rbs: int
    pathloss: dict[str, Any]
    d2d_pathloss: dict[str, Any]
    fading: dict[str, Any]
    noise_dbm_per_hz: float
    noise_figure_ue_db: float
    noise_figure_bs_db: float
    ue_tx_power_dbm: float
    bs_tx_power_dbm: float
    efficiency: dict[str, Any]
    uplink_power_control: dict[str, Any] = field(default_factory=lambda: {"model": "full_carrier"})
    duplex: str = "fdd"
    tdd_pattern: str = "DDDSU"
    special_slot_symbols: tuple[int, int, int] = (10, 2, 2)
    phy_overhead: dict[str, float] = field(default_factory=lambda: {"uplink": 0.0, "downlink": 0.0})
    #: named overheads (:mod:`channel_models.overheads`): cyclic_prefix,
    #: reference_signals, pdcch_symbols, pucch_rbs
    overheads: dict[str, Any] = field(default_factory=dict)
    #: what a full-power transmission spreads over: the whole ``carrier`` bandwidth
    #: (FedDif eq. (9)) or its resource blocks (``rbs``: LTE/NR, no power in the guards)
    power_spread: str = "carrier"
    #: uplink scheduling cycle of a buffer-status-driven MAC (None: none): an uplink
    #: transfer starts ``startup_delay_s`` late (scheduling request → grant → buffer
    #: status report → grant) and is granted at most ``bsr_max_bytes`` (the top level
    #: of a buffer status report) per cycle, cycles ``cycle_gap_s`` apart
    uplink_grant: dict[str, float] | None = None
    #: time from a downlink transfer's arrival at the BS to its first transport block
    #: [s] (the scheduler's and PDCCH's pipeline; ns-3 LENA: about 3 ms), 0: none
    downlink_delay_s: float = 0.0
    #: how the round-robin downlink hands out RBs: ``fractional`` (any share of the RBs,
    #: an idealised scheduler) or ``rbg_round_robin`` (whole resource-block groups, ns-3
    #: LENA's rule: ⌊groups/n⌋ each, the rest unused; :mod:`channel_models.resource_groups`)
    downlink_allocation: str = "fractional"
    #: NR RBG size configuration (TS 38.214 Table 5.1.2.2.1-1: 1 or 2; LTE has one table)
    rbg_configuration: int = 1
    #: the SINR link adaptation follows on a full-carrier uplink: ``wideband`` (power
    #: over the carrier, as a full-band sounding signal measures it; ns-3's rule) or
    #: ``allocation`` (the UE's power on the RBs it holds). Open-loop power control
    #: always gives the allocation's SINR.
    cqi_sinr: str = "wideband"
    #: HARQ of the ``lte_bler`` abstraction: a failed transport block is resent
    #: ``rtt_s`` later, at most ``max_transmissions`` times in all
    harq: dict[str, float] = field(
        default_factory=lambda: {"rtt_s": HARQ_RTT_S, "max_transmissions": 4}
    )
    #: the beamforming gain of a serving link [dB]: the BS's and the UE's arrays steered
    #: at each other (a mmWave cell's link budget), added to every BS–UE link's gain
    #: (not D2D) — a single cell's; a network's BS antennas are its sectors'
    antenna_gain_db: float = 0.0
    #: the compute profile whose modem powers match this radio technology (a measured
    #: phone's; ``devices.modem_profile: link`` takes it), None: no measured match
    modem_profile: str | None = None
    description: str = ""
    source: str = field(default="", compare=False)

    def __post_init__(self) -> None:
        self.validate()

    def validate(self) -> None:
        """``ValueError`` naming the inconsistent value (grid, duplexing, power control)."""
        for key, (lo, hi) in PROFILE_BOUNDS.items():
            check_range(key, getattr(self, key), lo, hi)
        if isinstance(self.num_rbs, bool) or not isinstance(self.num_rbs, int):
            raise ValueError(f"num_rbs: expected an integer, got {str(self.num_rbs)[:40]!r}")
        if self.numerology not in range(0, 5):
            raise ValueError(f"numerology: {self.numerology} outside 0..4")
        if self.num_rbs < 1:
            raise ValueError(f"num_rbs: {self.num_rbs} must be at least 1")
        check_range("bandwidth_hz", self.bandwidth_hz, 1e5, 1e9)
        occupied_hz = self.num_rbs * self.rb_bandwidth_hz
        if occupied_hz > self.bandwidth_hz:
            raise ValueError(
                f"num_rbs: {self.num_rbs} RBs of {self.rb_bandwidth_hz / 1e3:g} kHz occupy "
                f"{occupied_hz / 1e6:g} MHz, more than the {self.bandwidth_hz / 1e6:g} MHz carrier "
                f"(at most {max_resource_blocks(self.bandwidth_hz, self.numerology, self.carrier_hz)})"
            )
        lte = self.efficiency.get("model") in ("lte_amc", "lte_bler")
        if (
            lte
            and self.bandwidth_hz in LTE_NUM_RBS
            and self.num_rbs > LTE_NUM_RBS[self.bandwidth_hz]
        ):
            raise ValueError(
                f"num_rbs: {self.num_rbs} on an LTE carrier of {self.bandwidth_hz / 1e6:g} MHz "
                f"(TS 36.101 Table 5.6-1: at most {LTE_NUM_RBS[self.bandwidth_hz]})"
            )
        if self.duplex not in ("fdd", "tdd"):
            raise ValueError(f"duplex: {self.duplex!r} is not 'fdd' or 'tdd'")
        if self.duplex == "tdd":
            validate_tdd_pattern(self.tdd_pattern, tuple(self.special_slot_symbols))
        if self.uplink_grant is not None:
            keys = {"startup_delay_s", "bsr_max_bytes", "cycle_gap_s"}
            if set(self.uplink_grant) != keys:
                raise ValueError(f"uplink_grant: needs exactly {', '.join(sorted(keys))}")
            for k, v in self.uplink_grant.items():
                check_range(f"uplink_grant.{k}", v, *UPLINK_GRANT_BOUNDS[k])
        check_range("downlink_delay_s", self.downlink_delay_s, 0.0, 1.0)
        if self.downlink_allocation not in ("fractional", "rbg_round_robin"):
            raise ValueError(
                f"downlink_allocation: {self.downlink_allocation!r} "
                "(valid: fractional, rbg_round_robin)"
            )
        if self.downlink_allocation == "rbg_round_robin":
            self.rbg_size()  # (the RB count within the standard's table, a known configuration)
        if self.cqi_sinr not in ("wideband", "allocation"):
            raise ValueError(f"cqi_sinr: {self.cqi_sinr!r} (valid: wideband, allocation)")
        if self.power_spread not in ("carrier", "rbs"):
            raise ValueError(f"power_spread: {self.power_spread!r} (valid: carrier, rbs)")
        eff = self.efficiency.get("model")
        if eff not in EFFICIENCY_MODELS:
            raise ValueError(f"efficiency.model: {eff!r} (valid: {', '.join(EFFICIENCY_MODELS)})")
        if self.efficiency.get("downlink_cqi", "gap") not in ("gap", "mi_error_model"):
            raise ValueError(
                f"efficiency.downlink_cqi: {self.efficiency['downlink_cqi']!r} "
                "(valid: gap, mi_error_model)"
            )
        if eff in TBS_MODELS:
            self.link_adaptation("uplink")  # (reference_prbs within the TBS table)
        if set(self.harq) != {"rtt_s", "max_transmissions"}:
            raise ValueError("harq: needs exactly max_transmissions, rtt_s")
        check_range("harq.rtt_s", self.harq["rtt_s"], 0.0, 1.0)
        if int(self.harq["max_transmissions"]) != self.harq["max_transmissions"] or not (
            1 <= self.harq["max_transmissions"] <= 8
        ):
            raise ValueError(
                f"harq.max_transmissions: {self.harq['max_transmissions']!r} must be an integer 1..8"
            )
        pc = self.uplink_power_control.get("model")
        if pc not in ("full_carrier", "open_loop"):
            raise ValueError(f"uplink_power_control.model: {pc!r} (valid: full_carrier, open_loop)")
        for d, oh in self.phy_overhead.items():
            if d not in ("uplink", "downlink") or not 0.0 <= oh < 1.0:
                raise ValueError(f"phy_overhead.{d}: {oh} must be in [0, 1) for uplink/downlink")
        validate_overheads(self.overheads, eff, self.num_rbs)
        if eff in TBS_MODELS and any(self.phy_overhead.values()):
            raise ValueError(
                f"phy_overhead: efficiency model {eff!r} is a transport block size, which "
                "counts data resource elements only (use overheads.pdcch_symbols / pucch_rbs)"
            )
        named = {k for k, v in self.overheads.items() if v not in (0, "none")} - {"pucch_rbs"}
        if named and any(self.phy_overhead.values()):
            raise ValueError(
                f"overheads.{sorted(named)[0]}: phy_overhead (TS 38.306's lumped factor) "
                "counts the same resources; set one of the two"
            )

    def overhead(self, direction: str) -> float:
        """Share of ``direction``'s rate lost to overheads: TS 38.306's lumped
        ``phy_overhead`` or the named ones (:func:`channel_models.overheads.overhead_share`)."""
        lumped = self.phy_overhead.get(direction, 0.0)
        return lumped or overhead_share(self.overheads, self.efficiency["model"], direction)

    def data_rbs(self, direction: str) -> int:
        """RBs a carrier of ``direction`` schedules data on (uplink: less the PUCCH RBs)."""
        if direction == "downlink":
            return self.num_rbs
        return self.num_rbs - int(self.overheads.get("pucch_rbs", 0))

    @property
    def rbg_standard(self) -> str:
        """Whose RBG table applies: ``lte`` for the LTE link abstractions, else ``nr``."""
        return "lte" if self.efficiency.get("model") in ("lte_amc", "lte_bler") else "nr"

    def rbg_size(self) -> int:
        """The downlink RBG size P [RBs] (TS 36.213 Table 7.1.6.1-1 / TS 38.214 Table
        5.1.2.2.1-1, :func:`channel_models.resource_groups.rbg_size`)."""
        return rbg_size(self.num_rbs, self.rbg_standard, self.rbg_configuration)

    def rb_groups(self, direction: str) -> np.ndarray | None:
        """RBs in each downlink group where the round robin hands out whole groups
        (``downlink_allocation: rbg_round_robin``); None: any fraction of the RBs."""
        if direction != "downlink" or self.downlink_allocation != "rbg_round_robin":
            return None
        return group_sizes(self.data_rbs(direction), self.rbg_size())

    @property
    def rb_bandwidth_hz(self) -> float:
        return rb_bandwidth_hz(self.numerology)

    @property
    def subframe_s(self) -> float:
        return SUBFRAME_S

    @property
    def spread_bandwidth_hz(self) -> float:
        """The bandwidth a full-power transmission spreads over [Hz] (``power_spread``)."""
        return (
            self.bandwidth_hz
            if self.power_spread == "carrier"
            else self.num_rbs * self.rb_bandwidth_hz
        )

    def noise_w(self, receiver: str = "bs", bandwidth_hz: float | None = None) -> float:
        """Noise power N0·F·B at a ``"bs"`` or ``"ue"`` receiver [W] (B default: the
        bandwidth full power spreads over, :attr:`spread_bandwidth_hz`)."""
        nf = self.noise_figure_bs_db if receiver == "bs" else self.noise_figure_ue_db
        b = self.spread_bandwidth_hz if bandwidth_hz is None else bandwidth_hz
        return float(noise_power_w(b, nf, self.noise_dbm_per_hz))

    @property
    def ue_tx_power_w(self) -> float:
        return float(dbm_to_w(self.ue_tx_power_dbm))

    @property
    def bs_tx_power_w(self) -> float:
        return float(dbm_to_w(self.bs_tx_power_dbm))

    def time_fraction(self, direction: str) -> float:
        """Share of time ``direction`` owns the carrier: 1 for FDD, the slot share for TDD."""
        if self.duplex == "fdd":
            return 1.0
        return tdd_time_fraction(self.tdd_pattern, direction, tuple(self.special_slot_symbols))

    def build_pathloss(self, d2d: bool = False) -> PathLoss:
        return build_pathloss(self.d2d_pathloss if d2d else self.pathloss, self.carrier_hz)

    def build_fading(self) -> BlockFading:
        return build_fading(self.fading)

    def efficiency_bps_per_hz(self, snr: np.ndarray, direction: str = "downlink") -> np.ndarray:
        """Data bits per s per Hz at linear SNR: Shannon (gap, cap) or CQI table, × (1 − OH)
        (:meth:`overhead`); or a TBS model — ``lte_amc`` (ns-3's LTE link adaptation),
        ``lte_bler`` / ``nr_bler`` (BLER curves, OLLA) — whose TBS holds RS and CP (only a
        named PDCCH region applies)."""
        params = dict(self.efficiency)
        model = params.pop("model")
        cap = params.pop("max_bps_per_hz", None)
        gap = params.pop("gap_db", 0.0)
        if model == "cqi":
            se = cqi_efficiency(snr, gap, params.pop("table", "64qam"))
            if cap is not None:
                se = np.minimum(se, cap)
        elif model in TBS_MODELS:  # the TBS holds RS and CP: only named PDCCH; no cap
            se = self.link_adaptation(direction)(snr)
        else:
            se = shannon_efficiency(snr, cap, gap)
        oh = self.overhead(direction)
        return se * (1.0 - oh) if oh else se

    def link_adaptation(
        self, direction: str
    ) -> LteAmcEfficiency | LteBlerEfficiency | LteMiCqiEfficiency | NrBlerEfficiency:
        """The TBS-based link abstraction of ``direction`` (``lte_amc``, ``lte_bler`` or
        ``nr_bler``: :func:`channel_models.profile_specs.link_adaptation`)."""
        return link_adaptation(
            self.efficiency, direction, self.num_rbs, self.numerology, self.rb_bandwidth_hz
        )

    def efficiency_for(self, direction: str) -> Efficiency:
        """``snr → efficiency`` of one direction (a carrier's rate function): equal to
        :meth:`efficiency_bps_per_hz`, with the profile's parameters looked up once
        (a carrier calls it at every allocation change)."""
        oh = self.overhead(direction)
        tbs = self.efficiency["model"] in TBS_MODELS
        return Efficiency(self.efficiency, oh, self.link_adaptation(direction) if tbs else None)

    def with_overrides(self, **overrides: Any) -> ChannelProfile:
        from dataclasses import replace

        return replace(self, **{k: v for k, v in overrides.items() if v is not None})
