"""SNR, spectral efficiency and outage.

- Noise: N = N0·B·F with N0 = −174 dBm/Hz (thermal noise at 290 K) and noise
  figure F; FedDif: σ² = σ0·B (eq. (9)).
- SNR: |g|²·p / σ² with |g|² = β·|h|² (FedDif eqs. (7)-(9)).
- Shannon spectral efficiency log2(1 + SNR/Γ) (FedDif eq. (9) with Γ = 1),
  with an optional SNR gap Γ and cap; or the 3GPP TS 38.214 CQI tables
  (Table 5.2.2.1-2, up to 64QAM; Table 5.2.2.1-3, up to 256QAM) with an
  SNR → CQI mapping through a Shannon gap.
- PHY overhead factors of TS 38.306 §4.1.2 (control and reference signals):
  the data rate is (1 − OH) of the raw one.
- Outage probability of Rayleigh fading at target efficiency R:
  P_out = 1 − exp(−(2^R − 1)/SNR̄) (FedDif eq. (A.1)).
"""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike

from channel_models.units import db_to_linear, dbm_to_w

__all__ = [
    "THERMAL_NOISE_DBM_PER_HZ",
    "noise_power_w",
    "snr_linear",
    "shannon_efficiency",
    "CQI_TABLE_38214_5_2_2_1_2",
    "CQI_TABLE_38214_5_2_2_1_3",
    "CQI_TABLES",
    "PHY_OVERHEAD_38306",
    "cqi_from_snr",
    "cqi_efficiency",
    "outage_probability",
    "min_snr_for_outage",
]

#: Thermal noise power spectral density at 290 K [dBm/Hz].
THERMAL_NOISE_DBM_PER_HZ = -174.0


def noise_power_w(
    bandwidth_hz: ArrayLike,
    noise_figure_db: float = 0.0,
    noise_dbm_per_hz: float = THERMAL_NOISE_DBM_PER_HZ,
) -> np.ndarray | float:
    """Noise power σ² = N0·B·F [W]."""
    return dbm_to_w(noise_dbm_per_hz + noise_figure_db) * np.asarray(bandwidth_hz, dtype=float)


def snr_linear(
    tx_power_w: ArrayLike, path_loss_db: ArrayLike, fading_gain: ArrayLike, noise_w: ArrayLike
) -> np.ndarray:
    """SNR = p·β·|h|² / σ² with β = 10^(−loss/10) (FedDif eq. (9)) [dimensionless]."""
    beta = db_to_linear(-np.asarray(path_loss_db, dtype=float))
    return np.asarray(tx_power_w) * beta * np.asarray(fading_gain) / np.asarray(noise_w)


def shannon_efficiency(
    snr: ArrayLike, max_bps_per_hz: float | None = None, gap_db: float = 0.0
) -> np.ndarray:
    """log2(1 + SNR/Γ) [bit/s/Hz] with SNR gap Γ [dB], capped at ``max_bps_per_hz`` if given."""
    snr = np.asarray(snr, dtype=float)
    se = np.log2(1.0 + (snr if gap_db == 0.0 else snr / db_to_linear(gap_db)))
    return se if max_bps_per_hz is None else np.minimum(se, max_bps_per_hz)


#: 3GPP TS 38.214 Table 5.2.2.1-2 (4-bit CQI Table 1): (modulation order, code rate × 1024,
#: efficiency [bit/s/Hz]) for CQI 1..15; CQI 0 is "out of range".
CQI_TABLE_38214_5_2_2_1_2 = np.array(
    [
        (2, 78, 0.1523),
        (2, 120, 0.2344),
        (2, 193, 0.3770),
        (2, 308, 0.6016),
        (2, 449, 0.8770),
        (2, 602, 1.1758),
        (4, 378, 1.4766),
        (4, 490, 1.9141),
        (4, 616, 2.4063),
        (6, 466, 2.7305),
        (6, 567, 3.3223),
        (6, 666, 3.9023),
        (6, 772, 4.5234),
        (6, 873, 5.1152),
        (6, 948, 5.5547),
    ]
)


#: 3GPP TS 38.214 Table 5.2.2.1-3 (4-bit CQI Table 2, up to 256QAM), same columns.
CQI_TABLE_38214_5_2_2_1_3 = np.array(
    [
        (2, 78, 0.1523),
        (2, 193, 0.3770),
        (2, 449, 0.8770),
        (4, 378, 1.4766),
        (4, 490, 1.9141),
        (4, 616, 2.4063),
        (6, 466, 2.7305),
        (6, 567, 3.3223),
        (6, 666, 3.9023),
        (6, 772, 4.5234),
        (6, 873, 5.1152),
        (8, 711, 5.5547),
        (8, 797, 6.2266),
        (8, 885, 6.9141),
        (8, 948, 7.4063),
    ]
)

#: CQI tables by name: ``64qam`` (Table 5.2.2.1-2) and ``256qam`` (Table 5.2.2.1-3).
CQI_TABLES = {"64qam": CQI_TABLE_38214_5_2_2_1_2, "256qam": CQI_TABLE_38214_5_2_2_1_3}

#: TS 38.306 §4.1.2 overhead OH^(j) of the maximum data rate formula, by range and direction.
PHY_OVERHEAD_38306 = {
    ("fr1", "downlink"): 0.14,
    ("fr1", "uplink"): 0.08,
    ("fr2", "downlink"): 0.18,
    ("fr2", "uplink"): 0.10,
}


def cqi_from_snr(snr: ArrayLike, gap_db: float = 0.0, table: str = "64qam") -> np.ndarray:
    """Highest CQI whose efficiency ≤ log2(1 + SNR/Γ) (Shannon-gap mapping; 0 = out of range)."""
    usable = np.log2(1.0 + np.asarray(snr, dtype=float) / db_to_linear(gap_db))
    return np.searchsorted(CQI_TABLES[table][:, 2], usable, side="right")


def cqi_efficiency(snr: ArrayLike, gap_db: float = 0.0, table: str = "64qam") -> np.ndarray:
    """Spectral efficiency of the CQI chosen for ``snr`` (0 when out of range) [bit/s/Hz]."""
    eff = np.concatenate([[0.0], CQI_TABLES[table][:, 2]])
    return eff[cqi_from_snr(snr, gap_db, table)]


def outage_probability(target_bps_per_hz: ArrayLike, mean_snr: ArrayLike) -> np.ndarray:
    """P_out = P(log2(1 + SNR̄·|h|²) < R) = 1 − exp(−(2^R − 1)/SNR̄) (FedDif eq. (A.1))."""
    r = np.asarray(target_bps_per_hz, dtype=float)
    need = 2.0**r - 1.0
    snr = np.asarray(mean_snr, dtype=float)
    with np.errstate(divide="ignore", invalid="ignore"):
        p = 1.0 - np.exp(-need / snr)
    # R = 0 never fails; an SNR of 0 always fails a positive R
    return np.where(need <= 0, 0.0, np.where(snr > 0, p, 1.0))


def min_snr_for_outage(target_bps_per_hz: float, max_outage: float) -> float:
    """Smallest mean SNR with P_out ≤ ``max_outage``: (2^R − 1)/(−ln(1 − ε))."""
    return (2.0**target_bps_per_hz - 1.0) / -np.log1p(-max_outage)
