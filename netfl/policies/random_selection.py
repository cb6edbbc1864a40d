"""``random``: ``count`` participants uniformly without replacement, nothing allocated.

Yang, Liu, Quek & Poor, "Scheduling Policies for Federated Learning in Wireless
Networks", IEEE TCOM 2020, §III-A (random scheduling: K of the N devices chosen
uniformly each round); McMahan et al. 2017's client sampling; with a round deadline
(``algorithm.deadline_s``) Nishio & Yonetani's FedLim baseline. It draws from the
``sampling`` stream of the round — the draw netfl made before policies existed, so a run
without a ``policy`` section is event-identical to one before.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from netfl.core.nodes import Node
from netfl.policies.resource_policy import Decision, ResourcePolicy, RoundWork, register_policy

__all__ = ["RandomSelection", "sample_candidates"]


def sample_candidates(streams, r: int, candidates: Sequence[Node], count: int) -> list[Node]:
    """``count`` of ``candidates`` drawn uniformly without replacement from the
    ``sampling`` stream of round ``r``, in device order."""
    rng = streams.generator("sampling", r)
    chosen = np.sort(rng.choice(len(candidates), size=count, replace=False))
    return [candidates[i] for i in chosen]


@register_policy
class RandomSelection(ResourcePolicy):
    """Uniform sampling (the default): ``count`` devices, no allocation."""

    name = "random"
    description = "count devices uniformly at random, nothing allocated (the default)"

    def decide(self, r: int, candidates: Sequence[Node], count: int, work: RoundWork) -> Decision:
        return Decision(sample_candidates(self.streams, r, candidates, count))
