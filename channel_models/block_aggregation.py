"""Rayleigh fading blocks taken G at a time (issue 34, item 5): when thousands of flows
share a carrier, each lasts thousands of fading blocks, and the carrier may rate a
flow's blocks in columns of G (its bits per RB over the column at once) instead of one
by one.

Of G blocks with i.i.d. gains h_1..h_G ~ Exp(1) (Rayleigh), a column keeps what decides
the bits it carries and its SNR integral:

* the mean gain ḡ = (1/G)·Σ h_g, drawn exactly: ḡ ~ Gamma(G, 1/G);
* the bits per RB, G·φ_G(SNR·ḡ), with φ_G the mean efficiency of the G blocks *given*
  their mean gain. Given Σh = G·ḡ, each h_g is G·ḡ·U with U ~ Beta(1, G − 1) (the
  normalised gains are uniform on the simplex), so φ_G(s) = E[η(G·s·U)], a function of
  s = SNR·ḡ alone. For an efficiency η that is a step function of the SNR (every CQI and
  BLER table here: steps Δη_j at thresholds θ_j) it is exact in closed form:
  φ_G(s) = Σ_j Δη_j·(1 − θ_j/(G·s))₊^(G−1).

By the law of total expectation the column's mean bits equal those of its G blocks
rated one by one (tested); what the column leaves out is the spread of the blocks'
efficiencies around φ_G at a given mean gain, a small part of the spread of a flow that
lasts many columns (tested against block-by-block rating: completion times)."""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np

__all__ = ["AggregatedEfficiency", "mean_gain_samples"]


def mean_gain_samples(rng: np.random.Generator, blocks: int, size: int) -> np.ndarray:
    """``size`` mean gains of ``blocks`` i.i.d. Exp(1) block gains each: Gamma(G, 1/G)."""
    return rng.gamma(float(blocks), 1.0 / blocks, size)


class AggregatedEfficiency:
    """φ_G: the mean spectral efficiency of ``blocks`` Rayleigh blocks given their mean
    gain, as a function of s = SNR·ḡ (linear), for the step-function efficiency
    ``efficiency`` (SNR → bit/s/Hz).

    The steps of η are found on a ``step_db`` grid over ``range_db`` and each located by
    bisection; φ_G is tabulated on the same grid in s and interpolated linearly in dB (it
    is smooth: an average over U)."""

    def __init__(
        self,
        efficiency: Callable[[np.ndarray], np.ndarray],
        blocks: int,
        range_db: tuple[float, float] = (-40.0, 80.0),
        step_db: float = 0.01,
    ):
        if blocks < 2:
            raise ValueError(f"blocks: {blocks} (an aggregate of at least 2)")
        self.blocks = int(blocks)
        grid = np.arange(range_db[0], range_db[1] + step_db / 2, step_db)
        eta = np.asarray(efficiency(10.0 ** (grid / 10.0)), dtype=float)
        below = float(np.asarray(efficiency(np.array([10.0 ** ((range_db[0] - 10) / 10)])))[0])
        jumps = np.diff(np.concatenate([[below], eta]))
        at = np.flatnonzero(jumps != 0.0)
        # each step's threshold, bisected between the grid points around it (linear SNR)
        hi = 10.0 ** (grid[at] / 10.0)
        lo = 10.0 ** ((grid[at] - step_db) / 10.0)
        after = eta[at]
        for _ in range(40):
            mid = 0.5 * (lo + hi)
            new = np.asarray(efficiency(mid), dtype=float) == after
            hi, lo = np.where(new, mid, hi), np.where(new, lo, mid)
        self._theta = hi  # (step thresholds, linear)
        self._jump = jumps[at]
        self._floor = below
        # φ_G on the s grid (dB) of the thresholds' range, widened by G's spread
        lo = range_db[0] - 10.0 * math.log10(self.blocks) - 1.0
        self._lo, self._step = lo, step_db
        self._grid_db = lo + step_db * np.arange(int(round((range_db[1] - lo) / step_db)) + 1)
        self._values = self.exact(10.0 ** (self._grid_db / 10.0))
        self._slopes = np.append(np.diff(self._values), 0.0)

    def exact(self, s: np.ndarray) -> np.ndarray:
        """φ_G(s) by the closed form (chunked over s)."""
        s = np.atleast_1d(np.asarray(s, dtype=float))
        out = np.empty(s.shape)
        g = self.blocks
        for a in range(0, s.size, 512):
            chunk = s.ravel()[a : a + 512]
            frac = np.clip(1.0 - self._theta[None, :] / (g * chunk[:, None]), 0.0, None)
            out.ravel()[a : a + 512] = self._floor + (frac ** (g - 1)) @ self._jump
        return out

    def __call__(self, s: np.ndarray) -> np.ndarray:
        """φ_G at ``s`` (linear), interpolated linearly in dB on the grid (below it: η's
        floor; above it: its last value) — by index arithmetic on the uniform grid, as
        cheap as the efficiency tables' own look-up (it runs for every column of every
        flow)."""
        x = (10.0 * np.log10(np.maximum(np.asarray(s, dtype=float), 1e-30)) - self._lo) * (
            1.0 / self._step
        )
        x = np.clip(x, 0.0, self._values.size - 1)
        i = x.astype(np.intp)
        return self._values[i] + (x - i) * self._slopes[i]

    def __repr__(self) -> str:
        return f"AggregatedEfficiency(blocks={self.blocks}, steps={self._jump.size})"
