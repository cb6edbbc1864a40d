"""The physical ranges of the values a channel profile or a path-loss mapping gives
(issue 32): checked where the physics is built, so a value from a user's profile file
or a ``pathloss`` mapping is held to the same bounds as a scenario key."""

from __future__ import annotations

import math
from typing import Any

__all__ = [
    "PATHLOSS_BOUNDS",
    "FADING_BOUNDS",
    "PROFILE_BOUNDS",
    "UPLINK_GRANT_BOUNDS",
    "LTE_NUM_RBS",
    "check_range",
    "check_pathloss_values",
]


#: the physical range of each numeric path-loss parameter (inclusive; a parameter's
#: value must be a finite real number, not a boolean): β0 a gain at d0, κ an exponent
#: (free space 2, dense urban up to ~6), heights above ground (TR 38.901's BSs ≤ 150 m,
#: aerial UEs ≤ 300 m), d0 a reference distance, σ_SF a log-normal spread, RMa's
#: building height and street width (TR 38.901 Table 7.4.1-1: 5–50 m each)
PATHLOSS_BOUNDS: dict[str, tuple[float, float]] = {
    "beta0_db": (-250.0, 50.0),
    "kappa": (1.0, 8.0),
    "d0_m": (0.01, 1000.0),
    "height_tx_m": (0.0, 1000.0),
    "height_rx_m": (0.0, 1000.0),
    "shadowing_std_db": (0.0, 30.0),
    "building_height_m": (5.0, 50.0),
    "street_width_m": (5.0, 50.0),
}


def check_pathloss_values(
    params: dict[str, Any], own: dict[str, tuple[float, float]] | None = None
) -> None:
    """``ValueError`` naming the first parameter outside :data:`PATHLOSS_BOUNDS` or a
    law's ``own`` bounds (or not a finite real number)."""
    for key, (lo, hi) in {**PATHLOSS_BOUNDS, **(own or {})}.items():
        if key not in params or params[key] is None:
            continue
        v = params[key]
        if isinstance(v, bool) or not isinstance(v, (int, float)):
            raise ValueError(f"{key}: expected a number, got {str(v)[:40]!r}")
        if not (math.isfinite(v) and lo <= v <= hi):
            raise ValueError(f"{key}: {v:g} is outside {lo:g} … {hi:g}")
    for key in ("los", "shadowing"):
        v = params.get(key)
        if v is not None and not isinstance(v, bool):
            raise ValueError(f"{key}: expected true or false, got {str(v)[:40]!r}")


#: fading parameters' physical ranges: a block of at least 0.1 ms (shorter blocks cost
#: an event each; 500 km/h at 6 GHz gives 0.15 ms), a Rician K of at most 40 dB
FADING_BOUNDS = {"coherence_time_s": (1e-4, 1e3), "k_factor": (0.0, 1e4)}


#: a profile's scalar values and their physical ranges (inclusive)
PROFILE_BOUNDS = {
    "carrier_hz": (1e8, 1e11),
    "noise_dbm_per_hz": (-210.0, -100.0),
    "noise_figure_ue_db": (0.0, 50.0),
    "noise_figure_bs_db": (0.0, 50.0),
    "ue_tx_power_dbm": (-50.0, 60.0),
    "bs_tx_power_dbm": (-50.0, 60.0),
    # a serving link's beamforming gain (BS array + UE array), e.g. 64 + 8 elements
    "antenna_gain_db": (0.0, 60.0),
}
#: a buffer-status grant cycle's ranges: startup and gap of at most 1 s, a grant of at
#: least one byte (TS 36.321's largest BSR level is 150,000 bytes; 5G's 81 MB)
UPLINK_GRANT_BOUNDS = {
    "startup_delay_s": (0.0, 1.0),
    "cycle_gap_s": (0.0, 1.0),
    "bsr_max_bytes": (1.0, 1e8),
}


def check_range(where: str, v: Any, lo: float, hi: float) -> None:
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        raise ValueError(f"{where}: expected a number, got {str(v)[:40]!r}")
    if not (math.isfinite(v) and lo <= v <= hi):
        raise ValueError(f"{where}: {v:g} is outside {lo:g} … {hi:g}")


#: LTE transmission bandwidth configuration N_RB per channel bandwidth (TS 36.101
#: Table 5.6-1)
LTE_NUM_RBS = {1.4e6: 6, 3e6: 15, 5e6: 25, 10e6: 50, 15e6: 75, 20e6: 100}
