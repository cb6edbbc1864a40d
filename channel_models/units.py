"""Unit conversions: the only place where dB, dBm and Mbit/s meet SI units.

Every function is vectorised (accepts scalars or numpy arrays) and returns
floats or arrays of float64. Inside netfl everything is SI (W, Hz, bit/s);
logarithmic units appear only at the edges (scenario files, profile tables,
plots) and pass through these helpers.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike

__all__ = [
    "db_to_linear",
    "linear_to_db",
    "dbm_to_w",
    "w_to_dbm",
    "mbps_to_bps",
    "bps_to_mbps",
]


def db_to_linear(value_db: ArrayLike) -> np.ndarray | float:
    """Power ratio from decibels: ``10 ** (value_db / 10)`` [dimensionless]."""
    return np.power(10.0, np.asarray(value_db, dtype=float) / 10.0)[()]


def linear_to_db(value: ArrayLike) -> np.ndarray | float:
    """Decibels from a power ratio: ``10 * log10(value)`` [dB]."""
    return (10.0 * np.log10(np.asarray(value, dtype=float)))[()]


def dbm_to_w(power_dbm: ArrayLike) -> np.ndarray | float:
    """Power in watts from dBm: ``10 ** ((p_dbm - 30) / 10)`` [W]."""
    return np.power(10.0, (np.asarray(power_dbm, dtype=float) - 30.0) / 10.0)[()]


def w_to_dbm(power_w: ArrayLike) -> np.ndarray | float:
    """Power in dBm from watts: ``10 * log10(p_w) + 30`` [dBm]."""
    return (10.0 * np.log10(np.asarray(power_w, dtype=float)) + 30.0)[()]


def mbps_to_bps(rate_mbps: ArrayLike) -> np.ndarray | float:
    """Bit rate in bit/s from Mbit/s (decimal mega, 1 Mbit = 1e6 bit)."""
    return (np.asarray(rate_mbps, dtype=float) * 1e6)[()]


def bps_to_mbps(rate_bps: ArrayLike) -> np.ndarray | float:
    """Bit rate in Mbit/s from bit/s (decimal mega)."""
    return (np.asarray(rate_bps, dtype=float) / 1e6)[()]
