"""Uplink open-loop power control and the SNR of one resource block.

TS 38.213 §7.1.1 (PUSCH, open loop: no closed-loop term f, Δ_TF = 0)::

    P_PUSCH = min(P_CMAX, P0 + 10·log10(2^μ·M_RB) + α·PL)   [dBm]

so the power per RB is min(P_CMAX/M_RB, P0·2^μ·PL^α) [W] and the SNR of one
RB of bandwidth B_RB is ``P_RB·β / (N0·NF·B_RB)`` with β = 1/PL. Below the
P_CMAX limit the per-RB SNR does not depend on the allocation (the UE keeps a
target power spectral density); at the limit it falls as 1/M_RB.

FedDif's full-carrier formula (its eq. (9)) is the other option: the UE's
power over the whole carrier, SNR = P·β/(N0·NF·B), whatever it holds.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike

from channel_models.units import db_to_linear, dbm_to_w

__all__ = ["pusch_power_dbm", "per_rb_snr"]


def pusch_power_dbm(
    num_rbs: ArrayLike,
    path_loss_db: ArrayLike,
    p_cmax_dbm: float,
    p0_dbm: float,
    alpha: float,
    numerology: int,
) -> np.ndarray:
    """Open-loop PUSCH transmit power [dBm] (TS 38.213 §7.1.1, eq. 7.1.1-1 without f, Δ_TF)."""
    m = np.asarray(num_rbs, dtype=float)
    olpc = p0_dbm + 10.0 * np.log10(2.0**numerology * m) + alpha * np.asarray(path_loss_db)
    return np.minimum(p_cmax_dbm, olpc)


def per_rb_snr(
    num_rbs: ArrayLike,
    path_loss_db: float,
    p_cmax_dbm: float,
    p0_dbm: float,
    alpha: float,
    numerology: int,
    noise_per_rb_w: float,
) -> np.ndarray:
    """SNR of one RB under open-loop power control: P_PUSCH·β/(M_RB·N0·NF·B_RB) [linear]."""
    m = np.asarray(num_rbs, dtype=float)
    p_w = dbm_to_w(pusch_power_dbm(m, path_loss_db, p_cmax_dbm, p0_dbm, alpha, numerology))
    return p_w / m * db_to_linear(-path_loss_db) / noise_per_rb_w
