"""Proportional-fair scheduling math (pure numpy), used by the OFDMA carrier.

In fading block b, transfer i could move r_i(b) bit/s per resource block. The
PF rule serves the transfers in decreasing order of r_i(b)/R̄_i, where R̄_i is
an exponentially weighted moving average of the rate it was served, with
weight β = 1/window per block (Kelly's proportional fairness; the classic
"r/R̄" scheduler of HDR/LTE).
"""

from __future__ import annotations

import numpy as np

__all__ = ["pf_shares", "pf_average"]


def pf_shares(
    budget_rbs: float,
    rate_per_rb: np.ndarray,
    average_bps: np.ndarray,
    caps_rbs: np.ndarray,
    arrivals: np.ndarray,
) -> np.ndarray:
    """Give ``budget_rbs`` to the transfers with the best r/R̄ (ties: earliest), each up to its cap.

    Parameters
    ----------
    budget_rbs : float
        RBs to hand out.
    rate_per_rb, average_bps : ndarray, shape (n,)
        Instantaneous rate per RB and served-rate average [bit/s].
    caps_rbs, arrivals : ndarray, shape (n,)
        Per-transfer RB caps and arrival order.

    Returns
    -------
    ndarray, shape (n,)
        RBs per transfer, summing to ``min(budget, sum(caps))``.
    """
    metric = rate_per_rb / np.maximum(average_bps, 1e-12)
    order = np.lexsort((arrivals, -metric))  # best metric first, then earliest
    shares = np.zeros(len(rate_per_rb))
    left = float(budget_rbs)
    for i in order:
        if left <= 0:
            break
        shares[i] = min(caps_rbs[i], left)
        left -= shares[i]
    return shares


def pf_average(
    average_bps: np.ndarray, served_bps: np.ndarray, beta: float, gap_blocks: int
) -> np.ndarray:
    """R̄ after ``gap_blocks`` blocks: R̄ ← (1 − β)·R̄ + β·served, once per block.

    ``served_bps`` has shape (m, n) for the last m ≤ gap blocks (earlier blocks of
    the gap served nothing and only decay the average).
    """
    m = served_bps.shape[0]
    decay = (1.0 - beta) ** np.arange(m - 1, -1, -1)
    return (1.0 - beta) ** gap_blocks * average_bps + beta * (decay @ served_bps)
