"""Round robin: max-min fair shares of the RBs (what a round-robin scheduler gives each
user on average over slots).

Every session and flow gets an equal share, a session never more than its demand, a
flow never more than its cap; what one cannot use goes to the others
(:func:`~netfl.radio.schedulers.shares.equal_share`). Where a profile's downlink is
handed out in whole resource-block groups (``downlink_allocation: rbg_round_robin``;
TS 38.214 Table 5.1.2.2.1-1's RBG sizes) each of n uncapped flows holds ⌊groups/n⌋
groups and the rest go unused (:func:`channel_models.resource_groups.round_robin_group_rbs`).
"""

from __future__ import annotations

import numpy as np

from channel_models.resource_groups import round_robin_group_rbs
from netfl.radio.schedulers.base import Demands, Scheduler, register_scheduler
from netfl.radio.schedulers.shares import equal_share, uncapped_equal_share

__all__ = ["RoundRobin"]


@register_scheduler
class RoundRobin(Scheduler):
    """Max-min fair shares; whole RB groups on a profile's ``rbg_round_robin`` downlink."""

    name = "round_robin"
    description = "max-min fair shares (round robin on average)"
    whole_rb_groups = True

    def allocate(self, demands: Demands) -> tuple[np.ndarray, float]:
        n, groups = demands.num_flows, demands.rb_groups
        if not demands.any_capped and len(demands.demand_counts) < 8:
            # all flows uncapped: sessions grouped by demand plus one group of n flows
            share, sessions = uncapped_equal_share(demands.capacity, demands.demand_counts, n)
            if n and groups is not None:
                share = round_robin_group_rbs(groups, n, n * share)
            return np.full(n, share), sessions
        shares, sessions = equal_share(demands.capacity, demands.demand_counts, demands.caps)
        if n and groups is not None and not demands.any_capped:
            shares = np.full(n, round_robin_group_rbs(groups, n, shares.sum()))
        return shares, sessions
