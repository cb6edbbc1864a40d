"""Proportional fair: the FL flows' budget handed out anew in every fading block by r/R̄.

Sessions and the FL flows' budget are split as round robin
(:class:`~netfl.radio.schedulers.round_robin.RoundRobin`); then, in fading block b, transfer i could move r_i(b) bit/s per resource block. The
PF rule serves the transfers in decreasing order of r_i(b)/R̄_i, where R̄_i is
an exponentially weighted moving average of the rate it was served, with
weight β = 1/window per block (Kelly's proportional fairness; the classic
"r/R̄" scheduler of HDR/LTE; ns-3 LENA's ``PfFfMacScheduler``). Transfers ride their
fading peaks (multi-user diversity); it is the one built-in scheduler that needs an
event per fading block while two or more transfers are active.
"""

from __future__ import annotations

import math

import numpy as np
from pydantic import Field

from netfl.radio.schedulers.base import Demands, SchedulerConfig, register_scheduler
from netfl.radio.schedulers.round_robin import RoundRobin

__all__ = ["ProportionalFair", "pf_average", "pf_shares"]


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


class ProportionalFairConfig(SchedulerConfig):
    window_blocks: float = Field(
        100.0, gt=0.0, le=1e6, description="time constant of R̄ [fading blocks] (β = 1/window)"
    )


@register_scheduler
class ProportionalFair(RoundRobin):
    """Round robin's budget for the FL flows, given by r/R̄ in every fading block."""

    name = "proportional_fair"
    description = "the FL budget by r/R-bar in every fading block (Kelly; LENA's PF)"
    Config = ProportionalFairConfig
    per_block = True
    whole_rb_groups = False
    #: R̄ [bit/s]: a new transfer has served nothing yet, top priority
    flow_state = {"pf_avg": 1.0}
    link_keys = {"pf_window_blocks": "window_blocks"}

    def __init__(self, config: ProportionalFairConfig | None = None):
        super().__init__(config)
        self._beta = 1.0 / float(self.config.window_blocks)
        self._block = 0  # absolute block up to which the averages are updated

    def flow_arriving(self, now_s: float) -> None:
        """The others' averages up to now; the new one starts here (not decayed over
        the blocks before it arrived)."""
        self._catch_up(now_s)

    def allocate(self, demands: Demands) -> tuple[np.ndarray, float]:
        shares, sessions = super().allocate(demands)
        n = demands.num_flows
        if not n:
            return shares, sessions
        # (the averages credit the shares of the blocks gone: brought up to now first)
        grid = self.grid
        grid.ensure(demands.now_s)
        self._catch_up(demands.now_s)
        block = grid.block_now(demands.now_s)
        rate = grid.bits[:n, block - grid.kb] / grid.block_s
        avg = grid.scalar("pf_avg")[:n]
        return pf_shares(float(shares.sum()), rate, avg, demands.caps, demands.arrivals), sessions

    def next_decision_s(self, now_s: float) -> float:
        """The next block boundary while two or more flows compete."""
        if self.grid.n < 2:
            return math.inf
        return (self.grid.block_now(now_s) + 1) * self.grid.block_s

    def _catch_up(self, now_s: float) -> None:
        """Update the served-rate averages over the blocks since the last decision."""
        grid = self.grid
        n = grid.n
        block = grid.block_now(now_s)
        gap = block - self._block
        if gap > 0 and n:
            grid.ensure(now_s)
            c1 = block - grid.kb
            c0 = max(c1 - gap, 0)
            served = grid.bits[:n, c0:c1].T
            avg = grid.scalar("pf_avg")
            avg[:n] = pf_average(avg[:n], served * (grid.share[:n] / grid.block_s), self._beta, gap)
        self._block = block
