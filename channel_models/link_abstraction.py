"""The ``bler`` link abstraction: MCS/TBS tables + transport-block error curves + outer
loop link adaptation (OLLA) + HARQ, as a spectral efficiency of the SINR.

Shared by LTE (:class:`channel_models.lte.LteBlerEfficiency`: TS 36.213 tables, ns-3's
``LteMiErrorModel`` curves) and NR (:class:`channel_models.nr.NrBlerEfficiency`:
TS 38.214 MCS tables and TBS procedure, Sionna's LDPC BLER tables). Both read curves
precomputed from those references into package data; nothing here calls them.

OLLA offsets the SINR an MCS is chosen from until the long-run BLER equals the target
``T`` (10 % by default; Pedersen et al., "Frequency domain scheduling for OFDMA with
limited and noisy channel feedback", VTC 2007 Fall). On a static SINR it settles on the
two MCSs around the target — ``m`` (the highest with ``BLER_m ≤ T``) and the next one
``m'`` — used in the time shares ``1 − p`` and ``p`` that make the mean BLER ``T``:
``p = (T − BLER_m)/(BLER_m' − BLER_m)``. The goodput of a grant is ``Σ share·TBS·(1 −
BLER)`` per slot (a failed block's resources are spent, its bits arrive with a HARQ
retransmission charged the same way). Where even the lowest MCS misses ``T`` the UE is
out of range: 0, not scheduled (starved). MCSs without a curve are never chosen.

A fixed rule may choose the MCS instead of OLLA (``choose_mcs``: SINR → MCS): ns-3
LENA's LTE downlink, whose UE reports the CQI of the highest MCS with a TB error rate
of at most 10 % (:class:`channel_models.lte.LteMiCqiEfficiency`); the goodput is then
that MCS's ``TBS·(1 − BLER)`` and its BLER the first transmission's.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np

__all__ = ["BlerLinkAdaptation", "fixed_mcs", "olla_steady_state"]


def olla_steady_state(
    bler: np.ndarray, tbs_bits: np.ndarray, target: float
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """OLLA's steady state at each SINR (columns of ``bler``, shape (MCS, points), MCSs in
    increasing order): goodput per slot [bit], first-transmission BLER (1 out of range)
    and the lower MCS row ``m`` (−1 out of range)."""
    ok = bler <= target
    k = bler.shape[0]
    m = np.where(ok.any(axis=0), k - 1 - np.argmax(ok[::-1], axis=0), -1)
    cols = np.arange(bler.shape[1])
    lo = np.clip(m, 0, None)
    hi = np.clip(m + 1, 0, k - 1)
    b0, b1 = bler[lo, cols], bler[hi, cols]
    top = (m == k - 1) | (b1 <= b0)
    p = np.where(top, 0.0, (target - b0) / np.where(top, 1.0, b1 - b0))
    goodput = (1 - p) * tbs_bits[lo] * (1 - b0) + p * tbs_bits[hi] * (1 - b1)
    first = (1 - p) * b0 + p * b1
    out = m < 0
    return np.where(out, 0.0, goodput), np.where(out, 1.0, first), m


def fixed_mcs(
    bler: np.ndarray, tbs_bits: np.ndarray, rows: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """:func:`olla_steady_state`'s outputs for an MCS row chosen at each SINR (``rows``,
    −1 out of range): that MCS's goodput ``TBS·(1 − BLER)`` and BLER."""
    cols = np.arange(bler.shape[1])
    r = np.clip(rows, 0, None)
    b = bler[r, cols]
    out = rows < 0
    return np.where(out, 0.0, tbs_bits[r] * (1 - b)), np.where(out, 1.0, b), rows


class BlerLinkAdaptation:
    """OLLA's steady state and HARQ over per-MCS transport block sizes and error curves.

    Parameters
    ----------
    tbs_bits : array (M,)
        Transport block size of each MCS on the reference grant [bit].
    curve : callable
        ``(mcs, sinr_db array) → TB error rate`` (None for an MCS without a curve).
    slot_s : float
        Transmission time interval [s] (LTE 1 ms; NR 1 ms / 2^μ).
    grant_hz : float
        Bandwidth of the reference grant [Hz] (PRBs × PRB bandwidth).
    bler_target : float
        OLLA's target BLER.
    choose_mcs : callable, optional
        ``sinr_db array → MCS`` (−1: out of range) in place of OLLA (:func:`fixed_mcs`).

    Tabulated once on a 0.01-dB grid from −12 to 35 dB; a call reads the grid point at
    or below the SINR (never optimistic by more than 0.01 dB).
    """

    STEP_DB = 0.01
    GRID_DB = (-12.0, 35.0)

    def __init__(
        self,
        tbs_bits: np.ndarray,
        curve: Callable[[int, np.ndarray], np.ndarray | None],
        slot_s: float,
        grant_hz: float,
        bler_target: float = 0.1,
        label: str = "",
        choose_mcs: Callable[[np.ndarray], np.ndarray] | None = None,
    ):
        if not 0.0 < bler_target < 1.0:
            raise ValueError(f"bler_target: {bler_target} must be in (0, 1)")
        self.bler_target = float(bler_target)
        self.label = label
        self.grid_db = np.arange(self.GRID_DB[0], self.GRID_DB[1] + self.STEP_DB / 2, self.STEP_DB)
        rows = [(m, curve(m, self.grid_db)) for m in range(len(tbs_bits))]
        #: the MCS indices with a curve, in increasing order, and their curves
        self.mcs = np.array([m for m, b in rows if b is not None], dtype=int)
        if not self.mcs.size:
            raise ValueError(f"{label}: no MCS has a BLER curve")
        self._curve = curve
        self.bler = np.array([b for _, b in rows if b is not None])
        self.tbs_bits = np.asarray(tbs_bits, dtype=float)[self.mcs]
        if choose_mcs is None:
            goodput, self.first_bler, self.lower = olla_steady_state(
                self.bler, self.tbs_bits, self.bler_target
            )
        else:
            chosen = np.asarray(choose_mcs(self.grid_db), dtype=int)
            rows = np.searchsorted(self.mcs, chosen)
            known = (chosen >= 0) & (rows < self.mcs.size)
            known[known] = self.mcs[rows[known]] == chosen[known]
            if not known[chosen >= 0].all():
                raise ValueError(f"{label}: the rule chose an MCS without a BLER curve")
            rows = np.where(chosen >= 0, rows, -1)
            goodput, self.first_bler, self.lower = fixed_mcs(self.bler, self.tbs_bits, rows)
        self.eff = goodput / (grant_hz * slot_s)
        self._eff0 = np.concatenate([[0.0], self.eff])  # (index −1: below the grid)
        self.thresholds = 10.0 ** (self.grid_db / 10.0)

    def _index(self, sinr: np.ndarray) -> np.ndarray:
        """Grid index at or below each SINR (−1 below the grid, capped at its top): from
        the dB value, ~5× cheaper than a search of the 4,701 grid points (it runs for
        every block of every flow whose share changes)."""
        db = 10.0 * np.log10(np.maximum(sinr, 1e-30))
        i = np.floor((db - self.GRID_DB[0]) * (1.0 / self.STEP_DB)).astype(np.intp)
        return np.minimum(np.maximum(i, -1), self.eff.size - 1)

    def __call__(self, sinr: np.ndarray) -> np.ndarray:
        return self._eff0[self._index(np.asarray(sinr, dtype=float)) + 1]

    def retransmissions(
        self, sinr: float, rng: np.random.Generator, max_transmissions: int = 4
    ) -> int:
        """HARQ retransmissions of a transfer's last transport block at mean SINR ``sinr``:
        the first transmission fails with OLLA's BLER at that SINR (``T`` where OLLA
        dithers), the k-th with the lower MCS's BLER at ``k·SINR`` (chase combining of k
        copies); at most ``max_transmissions − 1`` (beyond, RLC would recover: not
        modelled)."""
        i = int(self._index(np.array([sinr]))[0])
        if max_transmissions <= 1 or i < 0 or rng.random() >= self.first_bler[i]:
            return 0
        mcs = int(self.mcs[max(int(self.lower[i]), 0)])
        n = 1
        while n < max_transmissions - 1:
            combined_db = np.array([10.0 * math.log10((n + 1) * sinr)])
            if rng.random() >= float(self._curve(mcs, combined_db)[0]):
                break
            n += 1
        return n

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.label}, target={self.bler_target:g})"
