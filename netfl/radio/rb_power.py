"""Power over a share of resource blocks: the power-control policy of an OFDMA carrier.

Uplink flows under open-loop power control (:mod:`channel_models.power_control`, TS
38.213 7.1.1 / TS 36.213 5.1.1) spread a UE's power over the RBs it holds: the per-RB
SNR at a share of M RBs is ``SNR(M) = min(SNR_total/M, SNR_psd)``, recomputed for the
blocks ahead whenever the shares change. A power-limited flow is given at most the RBs
at which its mean per-RB SNR still reaches the lowest usable efficiency (what link
adaptation does), so it never holds RBs it cannot use. Other flows (downlink,
full-carrier uplink) have ``SNR_total`` inf: a fixed per-RB SNR.

What the carrier uses of it is :data:`POWER_INTERFACE` (tested).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    from netfl.radio.block_grid import BlockGrid

__all__ = ["POWER_INTERFACE", "RbPowerControl", "min_usable_snr"]

#: what a carrier uses of its power-control policy
POWER_INTERFACE = ("min_usable_snr", "usable_cap", "usable_caps", "per_rb_snr", "apply")


def min_usable_snr(efficiency: Callable[[np.ndarray], np.ndarray]) -> float:
    """Smallest linear SNR with a positive efficiency (0 if every SNR > 0 has one)."""
    if efficiency(np.array([1e-12]))[0] > 0:
        return 0.0
    lo, hi = -120.0, 60.0  # dB
    for _ in range(60):
        mid = 0.5 * (lo + hi)
        if efficiency(np.array([10.0 ** (mid / 10.0)]))[0] > 0:
            hi = mid
        else:
            lo = mid
    return 10.0 ** (hi / 10.0)


class RbPowerControl:
    """A UE's power over the RBs it holds, and the RBs a power-limited UE can use.

    Parameters
    ----------
    efficiency : callable
        The carrier's linear SNR → spectral efficiency [bit/s/Hz].
    num_rbs : int
        The carrier's RBs.
    """

    def __init__(self, efficiency: Callable[[np.ndarray], np.ndarray], num_rbs: int):
        #: the smallest linear SNR with a positive efficiency (0: every SNR > 0 has one)
        self.min_usable_snr = min_usable_snr(efficiency)
        self.num_rbs = int(num_rbs)

    def usable_cap(self, cap_rbs: float, snr_total: float) -> float:
        """A power-limited flow holds at most the RBs at which its mean per-RB SNR still
        reaches the lowest usable efficiency (``cap_rbs``: what it asked for)."""
        if math.isfinite(snr_total) and self.min_usable_snr > 0:
            usable_rbs = max(snr_total / self.min_usable_snr, 1.0)
            if usable_rbs < self.num_rbs:  # else the cap never binds: keep the fast path
                return min(cap_rbs, usable_rbs)
        return cap_rbs

    def usable_caps(self, requested_cap: float, snr_totals: np.ndarray) -> np.ndarray:
        """:meth:`usable_cap` at each of ``snr_totals`` (vectorised)."""
        totals = np.asarray(snr_totals, dtype=float)
        if self.min_usable_snr <= 0:
            return np.full(totals.shape, float(requested_cap))
        with np.errstate(invalid="ignore"):
            usable = np.maximum(totals / self.min_usable_snr, 1.0)
        binding = np.isfinite(totals) & (usable < self.num_rbs)
        return np.where(binding, np.minimum(requested_cap, usable), float(requested_cap))

    @staticmethod
    def per_rb_snr(total: np.ndarray, psd: np.ndarray, share: np.ndarray) -> np.ndarray:
        """Per-RB SNR at a share of ``share`` RBs: ``min(total/M, psd)`` where power is
        controlled and RBs are held, else ``min(psd, total)``."""
        pc = np.isfinite(total) & (share > 0)
        return np.where(
            pc, np.minimum(total / np.where(pc, share, 1.0), psd), np.minimum(psd, total)
        )

    @staticmethod
    def apply(grid: BlockGrid, now_s: float) -> None:
        """Per-RB SNR of the grid's power-controlled rows for their new shares, for the
        blocks ahead (rows whose SNR did not change are left alone)."""
        n = grid.n
        share = grid.share[:n]
        pc = np.isfinite(grid.snr_total[:n]) & (share > 0)
        if not pc.any():
            return
        new = np.minimum(grid.snr_total[:n] / np.where(pc, share, 1.0), grid.snr_psd[:n])
        old = grid.snr[:n]
        rows = (pc & (np.abs(new - old) > 1e-12 * old)).nonzero()[0]
        if rows.size:
            grid.rerate(rows, new[rows], now_s)
