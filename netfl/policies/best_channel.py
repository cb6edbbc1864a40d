"""``best_channel``: the ``count`` devices whose uplink is expected to be fastest now.

Channel-aware selection in its simplest form, a common baseline of wireless-FL studies
(not one of Yang et al. 2020's three policies: their proportional fair ranks by the
instantaneous-to-average SNR): the candidates ranked by their expected uplink rate at
an equal share, 1/``count`` of the uplink each
(:meth:`netfl.policies.states.DeviceStates.expected_rate_bps`: the mean SNR's rate over
the fading, what can be known before a transfer), ties in device order; nothing
allocated.
"""

from __future__ import annotations

from collections.abc import Sequence

from netfl.core.nodes import Node
from netfl.policies.resource_policy import (
    Allocation,
    Decision,
    ResourcePolicy,
    RoundWork,
    download_time_s,
    register_policy,
    step_times_s,
)

__all__ = ["BestChannel"]


@register_policy
class BestChannel(ResourcePolicy):
    """Top ``count`` by expected uplink rate."""

    name = "best_channel"
    description = "the count devices with the highest expected uplink rate"

    def decide(self, r: int, candidates: Sequence[Node], count: int, work: RoundWork) -> Decision:
        if count == 0:
            return Decision([])
        share = 1.0 / count
        rates = [self.states.expected_rate_bps(d, "uplink", share) for d in candidates]
        order = sorted(range(len(candidates)), key=lambda i: (-rates[i], i))
        chosen = sorted((candidates[i] for i in order[:count]), key=lambda d: d.index)
        down = download_time_s(self.states, chosen, work)
        expected = {}
        for d in chosen:
            _, update, up = step_times_s(self.states, d, work, share)
            expected[d.name] = Allocation(expected_time_s=down + update + up)
        return Decision(chosen, expected)
