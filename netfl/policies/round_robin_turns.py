"""``round_robin``: the devices take turns, ``count`` at a time.

Yang, Liu, Quek & Poor, IEEE TCOM 2020, §III-B: the N devices are served in groups of
K in a fixed cyclic order. netfl walks the devices in index order from a pointer kept
across rounds (in checkpoints): each round takes the next ``count`` candidates (those
available) from it, and moves the pointer past the last one taken — with every device
always available and K dividing N, exactly the paper's N/K groups in turn.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from netfl.core.nodes import Node
from netfl.policies.resource_policy import Decision, ResourcePolicy, RoundWork, register_policy

__all__ = ["RoundRobin"]


@register_policy
class RoundRobin(ResourcePolicy):
    """Cyclic turns in device order."""

    name = "round_robin"
    description = "the next count devices in cyclic index order (Yang et al. 2020)"

    def __init__(self, *args: Any):
        super().__init__(*args)
        #: the device index the next round starts from
        self.pointer = 0

    def decide(self, r: int, candidates: Sequence[Node], count: int, work: RoundWork) -> Decision:
        # (cyclic order from the pointer: those at or after it, then the wrap-around)
        order = sorted(candidates, key=lambda d: (d.index < self.pointer, d.index))
        chosen = order[:count]
        if chosen:
            self.pointer = chosen[-1].index + 1
        return Decision(sorted(chosen, key=lambda d: d.index))

    def state_dict(self) -> dict[str, Any]:
        return {"pointer": self.pointer}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self.pointer = int(state["pointer"])
