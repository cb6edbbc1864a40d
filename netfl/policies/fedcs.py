"""``fedcs``: as many clients as fit the round's deadline, chosen greedily.

T. Nishio, R. Yonetani, "Client Selection for Federated Learning with Heterogeneous
Resources in Mobile Edge", ICC 2019, §IV (Protocol 2, Algorithm 2). The candidates are
the clients the server asked for their resources (netfl: the algorithm's ``count`` of
those available, drawn as the ``random`` policy draws them — FedAvg's ``fraction`` is
the paper's C). For each candidate k the server estimates its update time t_k^UD and
its upload time t_k^UL with the whole uplink (the paper schedules uploads one after
another); the selection S grows greedily, each step taking the remaining candidate
that adds the least to the elapsed time of the "scheduled update and upload" step,

    Θ' = Θ + t_x^UL + max(0, t_x^UD − Θ),

and keeping it if the round still fits, ``T_cs + T_S∪x^d + Θ' + T_agg < T_round``
(``overhead_s`` = T_cs + T_agg; T^d the download to S: :func:`download_time_s`;
T_round: ``algorithm.deadline_s``). The others are not selected; a selected client
whose update is still late is cut at the deadline, as in FedLim (``random`` with the
same deadline). Each participant's expected time is T^d + its Θ.

Where netfl differs: its uplink carries the selected uploads concurrently under the
cell's scheduler rather than one after another, so the last upload ends near Θ (a
work-conserving scheduler spends the same airtime) but each one's end differs; the
``policy`` table puts the estimates beside what happened.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from pydantic import Field

from netfl.core.nodes import Node
from netfl.policies.random_selection import sample_candidates
from netfl.policies.resource_policy import (
    Allocation,
    Decision,
    PolicyConfig,
    ResourcePolicy,
    RoundWork,
    download_time_s,
    register_policy,
    step_times_s,
)

__all__ = ["FedCS", "FedCSConfig"]


class FedCSConfig(PolicyConfig):
    overhead_s: float = Field(
        0.0,
        ge=0.0,
        le=1e6,
        description="T_cs + T_agg: the round's time outside download, update and upload [s]",
    )


@register_policy
class FedCS(ResourcePolicy):
    """Nishio & Yonetani's greedy selection under the round deadline."""

    name = "fedcs"
    description = "the most candidates that fit algorithm.deadline_s, greedily (FedCS)"
    Config = FedCSConfig
    config: FedCSConfig
    #: it needs ``algorithm.deadline_s``
    needs_deadline = True

    def decide(self, r: int, candidates: Sequence[Node], count: int, work: RoundWork) -> Decision:
        asked = sample_candidates(self.streams, r, candidates, count)
        deadline = work.deadline_s if work.deadline_s is not None else math.inf
        times = {d.name: step_times_s(self.states, d, work)[1:] for d in asked}
        left = list(asked)
        chosen: list[Node] = []
        ends: dict[str, float] = {}
        theta = t_d = 0.0
        memo: dict[tuple[str, int], float] = {}
        while left:
            # (Algorithm 2: the candidate whose addition lengthens the round least)
            steps = {
                k.name: (
                    download_time_s(self.states, [*chosen, k], work, memo),
                    times[k.name][1] + max(0.0, times[k.name][0] - theta),
                )
                for k in left
            }
            x = min(left, key=lambda k: (steps[k.name][0] - t_d + steps[k.name][1], k.index))
            left.remove(x)
            t_d_x, delta = steps[x.name]
            if self.config.overhead_s + t_d_x + theta + delta < deadline:
                chosen.append(x)
                theta, t_d = theta + delta, t_d_x
                ends[x.name] = theta
        chosen.sort(key=lambda d: d.index)
        return Decision(
            chosen, {d.name: Allocation(expected_time_s=t_d + ends[d.name]) for d in chosen}
        )
