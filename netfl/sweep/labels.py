"""Sweep parameters as people read them: ``bandwidth_hz = 2e7`` is "bandwidth=20 MHz" in
a report and ``bandwidth=20MHz`` in a run's name; groups in the numeric order of their
values (20 MHz before 100 MHz), never the text order.

A key's unit is its suffix (``_hz``, ``_m``, ``_s``, ``_db``, ``_dbm``, ``_w``, ``_j``,
``_bps``, ``_bytes``); hertz, bit/s and bytes take SI prefixes, seconds below one
become ms or µs. A compound unit (``_per_hz``, ``_per_s``, ``_per_km2``) keeps the
plain number.
"""

from __future__ import annotations

import math
from typing import Any

__all__ = ["param_label", "quantity", "value_sort_key"]

#: suffix → (unit, scale with SI prefixes)
_UNITS = {
    "hz": ("Hz", True),
    "bps": ("bit/s", True),
    "bytes": ("B", True),
    "m": ("m", False),
    "s": ("s", False),
    "db": ("dB", False),
    "dbm": ("dBm", False),
    "w": ("W", False),
    "j": ("J", False),
}
_PREFIXES = ((1e12, "T"), (1e9, "G"), (1e6, "M"), (1e3, "k"))


def _number(value: float) -> str:
    return f"{value:.4g}"


def quantity(key: str, value: Any) -> tuple[str, str, str] | None:
    """``(name, number, unit)`` of a numeric parameter whose last key ends in a unit
    (``cell.bandwidth_hz``, 2e7 → ``("bandwidth", "20", "MHz")``); None otherwise."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        return None
    last = key.split(".")[-1]
    head, _, suffix = last.rpartition("_")
    if not head or suffix not in _UNITS or head.endswith("_per") or "_per_" in f"_{head}_":
        return None
    unit, si = _UNITS[suffix]
    v = float(value)
    if si:
        for factor, prefix in _PREFIXES:
            if abs(v) >= factor:
                return head, _number(v / factor), prefix + unit
    if suffix == "s" and 0 < abs(v) < 1:
        return (head, _number(v * 1e3), "ms") if abs(v) >= 1e-3 else (head, _number(v * 1e6), "µs")
    return head, _number(v), unit


def param_label(key: str, value: Any, short: str, space: str = " ") -> str:
    """``short=value``, the value with its unit where the key has one (``space`` between
    number and unit: ``" "`` in a report, ``""`` in a run's name)."""
    q = quantity(key, value)
    if q is None:
        text = f"{value:g}" if isinstance(value, float) else str(value)
        return f"{short}={text}"
    name, number, unit = q
    short = short.removesuffix("_" + key.split(".")[-1].rpartition("_")[2]) or name
    return f"{short}={number}{space}{unit}"


def value_sort_key(value: Any) -> tuple:
    """Numbers first in numeric order, then everything else as text (NaN last)."""
    try:
        v = float(value)
    except (TypeError, ValueError):
        return (1, str(value))
    return (2, 0.0) if math.isnan(v) else (0, v)
