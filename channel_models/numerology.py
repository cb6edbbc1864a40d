"""5G NR numerology (3GPP TS 38.211 §4.2-4.3) and resource blocks (TS 38.101-1).

- Subcarrier spacing Δf = 15·2^μ kHz (TS 38.211 Table 4.2-1).
- A sub-frame lasts 1 ms for every μ; it holds 2^μ slots of 14 OFDM symbols
  (TS 38.211 §4.3.1, Table 4.3.2-1).
- A resource block is 12 subcarriers (TS 38.211 §4.4.4.1): 180 kHz at μ = 0.
- N_RB per channel bandwidth: TS 38.101-1 Table 5.3.2-1 (FR1) and TS 38.101-2 Table
  5.3.2-1 (FR2, above 7.125 GHz) (package data).
"""

from __future__ import annotations

from functools import lru_cache
from importlib import resources

import yaml

__all__ = [
    "SUBFRAME_S",
    "SUBCARRIERS_PER_RB",
    "subcarrier_spacing_hz",
    "slot_duration_s",
    "slots_per_subframe",
    "rb_bandwidth_hz",
    "num_resource_blocks",
    "max_resource_blocks",
    "FR1_MAX_HZ",
]

SUBFRAME_S = 1e-3
SUBCARRIERS_PER_RB = 12
SYMBOLS_PER_SLOT = 14


def subcarrier_spacing_hz(mu: int) -> float:
    """Δf = 15 kHz · 2^μ."""
    if mu not in range(0, 7):
        raise ValueError(f"numerology mu={mu} outside 0..6")
    return 15e3 * 2**mu


def slots_per_subframe(mu: int) -> int:
    return 2**mu


def slot_duration_s(mu: int) -> float:
    """1 ms / 2^μ."""
    return SUBFRAME_S / slots_per_subframe(mu)


def rb_bandwidth_hz(mu: int) -> float:
    """12 subcarriers × Δf."""
    return SUBCARRIERS_PER_RB * subcarrier_spacing_hz(mu)


#: the top of FR1 (TS 38.101-1 Table 5.1-1): carriers above it are FR2 (TS 38.101-2)
FR1_MAX_HZ = 7.125e9


@lru_cache(maxsize=2)
def _nrb_table(fr2: bool = False) -> dict[int, dict[int, int]]:
    text = resources.files("channel_models").joinpath("data/nr_bandwidth_38101.yaml").read_text()
    return {
        int(k): {int(b): int(n) for b, n in v.items()}
        for k, v in yaml.safe_load(text)["n_rb_fr2" if fr2 else "n_rb"].items()
    }


def num_resource_blocks(bandwidth_hz: float, mu: int, carrier_hz: float | None = None) -> int:
    """N_RB of a carrier: TS 38.101-1 Table 5.3.2-1 (FR1), or TS 38.101-2 Table 5.3.2-1
    where ``carrier_hz`` is above :data:`FR1_MAX_HZ` (FR2); ``KeyError`` lists valid
    bandwidths."""
    fr = "FR2" if carrier_hz is not None and carrier_hz > FR1_MAX_HZ else "FR1"
    scs_khz = int(subcarrier_spacing_hz(mu) / 1e3)
    table = _nrb_table(fr == "FR2")
    if scs_khz not in table:
        raise KeyError(f"no {fr} N_RB table for {scs_khz} kHz (valid: {sorted(table)})")
    bw_mhz = bandwidth_hz / 1e6
    row = table[scs_khz]
    if bw_mhz not in row:
        raise KeyError(
            f"no {bw_mhz:g} MHz carrier at {scs_khz} kHz in {fr} (valid MHz: {sorted(row)})"
        )
    return row[int(bw_mhz)]


def max_resource_blocks(bandwidth_hz: float, mu: int, carrier_hz: float | None = None) -> int:
    """Most RBs a carrier can hold: the TS 38.101 N_RB where the table has the
    bandwidth (:func:`num_resource_blocks`), else ⌊B / (12·Δf)⌋ (no guard bands)."""
    try:
        return num_resource_blocks(bandwidth_hz, mu, carrier_hz)
    except KeyError:
        return int(bandwidth_hz // rb_bandwidth_hz(mu))
