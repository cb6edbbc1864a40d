"""Duplexing: FDD carriers per direction, or one TDD carrier with a slot pattern.

A TDD pattern is a string of slots ``D`` (downlink), ``U`` (uplink) and ``S``
(special: ``dl``/``guard``/``ul`` OFDM symbols out of 14, TS 38.213 §11.1 and
TS 38.331 TDD-UL-DL-ConfigCommon). Over the pattern's period a direction
holds the carrier for the fraction of symbols it owns; netfl charges that
fraction of the carrier's rate (time-averaged over one period: a delivery
instant is exact to within one pattern period, e.g. 2.5 ms for DDDSU at
30 kHz).
"""

from __future__ import annotations

from channel_models.numerology import SYMBOLS_PER_SLOT

__all__ = ["tdd_time_fraction", "validate_tdd_pattern"]


def validate_tdd_pattern(pattern: str, special_symbols: tuple[int, int, int]) -> None:
    """``ValueError`` naming what is wrong with a pattern or special-slot split."""
    if not pattern or set(pattern) - set("DSU"):
        raise ValueError(f"TDD pattern {pattern!r} must be a non-empty string of D, S and U")
    if "U" not in pattern and "S" not in pattern or "D" not in pattern and "S" not in pattern:
        raise ValueError(f"TDD pattern {pattern!r} leaves a direction with no slots")
    if len(special_symbols) != 3 or any(n < 0 for n in special_symbols):
        raise ValueError("special slot symbols must be three counts [dl, guard, ul] >= 0")
    if sum(special_symbols) != SYMBOLS_PER_SLOT:
        raise ValueError(
            f"special slot symbols {list(special_symbols)} must add up to {SYMBOLS_PER_SLOT}"
        )
    dl, _, ul = special_symbols
    for direction, slot, symbols in (("uplink", "U", ul), ("downlink", "D", dl)):
        if slot not in pattern and symbols == 0:  # (a transfer that way would never end)
            raise ValueError(
                f"TDD pattern {pattern!r} with special slot symbols {list(special_symbols)} "
                f"leaves the {direction} no symbol"
            )


def tdd_time_fraction(
    pattern: str, direction: str, special_symbols: tuple[int, int, int] = (10, 2, 2)
) -> float:
    """Fraction of the pattern's symbols that carry ``direction`` (``uplink``/``downlink``)."""
    validate_tdd_pattern(pattern, special_symbols)
    dl, _, ul = special_symbols
    own, special = ("D", dl) if direction == "downlink" else ("U", ul)
    symbols = pattern.count(own) * SYMBOLS_PER_SLOT + pattern.count("S") * special
    return symbols / (len(pattern) * SYMBOLS_PER_SLOT)
