"""Run-time invariants, checked cheaply during every run.

A simulator whose numbers can drift silently is worse than none: each check
below raises :class:`InvariantError` naming the invariant it found broken (an
internal error — a bug in netfl, never bad input):

- ``resources_within_capacity``: a shared medium never hands out more than its
  capacity (OFDMA: resource blocks; shared fixed-rate BS: bit/s);
- ``bits_delivered_equal_requested``: a transfer ends with its bits delivered,
  neither short nor over (within the clock's resolution);
- ``durations_nonnegative``, ``energy_nonnegative``, ``sizes_nonnegative``:
  every transfer and compute record;
- ``time_monotone``: a round ends no earlier than it began, records end by then;
- ``energy_meters_monotone``: no node's energy meter decreases;
- ``accuracy_in_unit_interval``: evaluated accuracy in [0, 1] (or not evaluated).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

__all__ = [
    "InvariantError",
    "check_capacity",
    "check_delivery",
    "check_records",
    "check_round",
]

#: relative slack of floating-point sums (shares, bits)
REL_TOL = 1e-9


class InvariantError(RuntimeError):
    """An internal invariant broke; ``name`` says which."""

    def __init__(self, name: str, detail: str):
        self.name = name
        super().__init__(f"internal invariant {name!r} violated: {detail}")


def check_capacity(held: float, capacity: float, where: object) -> None:
    """``resources_within_capacity``: ``held`` ≤ ``capacity`` (with float slack);
    ``where`` (e.g. the medium) is formatted only on failure."""
    if not held <= capacity * (1.0 + REL_TOL) + 1e-9:
        raise InvariantError(
            "resources_within_capacity", f"{where!r}: {held!r} held of a capacity of {capacity!r}"
        )


def check_delivery(size_bits: float, remaining_bits: float, tolerance_bits: float) -> None:
    """``bits_delivered_equal_requested``: at delivery, |remaining| ≤ tolerance."""
    slack = max(tolerance_bits, REL_TOL * size_bits, 1e-9)
    if not abs(remaining_bits) <= slack:
        raise InvariantError(
            "bits_delivered_equal_requested",
            f"a transfer of {size_bits!r} bits ended with {remaining_bits!r} bits "
            "not delivered (negative: delivered beyond its size)",
        )


def _nonneg(name: str, value: float, what: str) -> None:
    if not (value >= 0.0 and math.isfinite(value)):
        raise InvariantError(name, f"{what} = {value!r}")


def check_records(transfers: Iterable[Any], computes: Iterable[Any], now_s: float) -> None:
    """Sizes, durations and energies of the round's records are finite and ≥ 0, and
    every record ends by ``now_s``."""
    for t in transfers:
        what = f"transfer {t.kind} {t.src}→{t.dst} at {t.start_s!r} s"
        _nonneg("sizes_nonnegative", t.size_bits, f"{what}: size_bits")
        _nonneg("durations_nonnegative", t.end_s - t.start_s, f"{what}: duration")
        _nonneg("energy_nonnegative", t.tx_energy_j, f"{what}: tx_energy_j")
        _nonneg("energy_nonnegative", t.rx_energy_j, f"{what}: rx_energy_j")
        if t.end_s > now_s * (1 + REL_TOL):
            raise InvariantError("time_monotone", f"{what} ends at {t.end_s!r} s after {now_s!r} s")
    for c in computes:
        what = f"compute {c.kind} on {c.node} at {c.start_s!r} s"
        _nonneg("sizes_nonnegative", c.flops, f"{what}: flops")
        _nonneg("durations_nonnegative", c.end_s - c.start_s, f"{what}: duration")
        _nonneg("energy_nonnegative", c.energy_j, f"{what}: energy_j")
        if c.end_s > now_s * (1 + REL_TOL):
            raise InvariantError("time_monotone", f"{what} ends at {c.end_s!r} s after {now_s!r} s")


def check_round(
    r: int,
    t0_s: float,
    t1_s: float,
    before: Mapping[str, Sequence[float]],
    after: Mapping[str, Sequence[float]],
    accuracy: float,
) -> None:
    """Round-level invariants: time, energy meters, accuracy."""
    if not t1_s >= t0_s:
        raise InvariantError("time_monotone", f"round {r} ends at {t1_s!r} s before {t0_s!r} s")
    for node, values in after.items():
        for i, (a, b) in enumerate(zip(before[node], values, strict=True)):
            if not b >= a * (1 - REL_TOL) - 1e-12:
                raise InvariantError(
                    "energy_meters_monotone",
                    f"round {r}: meter {i} of {node} went from {a!r} to {b!r}",
                )
    if not (math.isnan(accuracy) or 0.0 <= accuracy <= 1.0):
        raise InvariantError("accuracy_in_unit_interval", f"round {r}: accuracy {accuracy!r}")
