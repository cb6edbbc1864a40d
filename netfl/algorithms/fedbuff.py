"""**FedBuff** (J. Nguyen, K. Malik, H. Zhan, A. Yousefpour, M. Rabbat, M. Malek, D.
Huba, "Federated Learning with Buffered Asynchronous Aggregation", AISTATS 2022,
Algorithm 1): a device sends its update Δ = y − x_τ (its trained model less the model
it received); the server adds s(t − τ)·Δ to a buffer, and after K updates applies
``x ← x + η_g·(ΣΔ)/K`` and empties the buffer; s(t − τ) = 1/√(1 + t − τ) (their
staleness scaling) or 1.

The slots, versions and rounds: :mod:`netfl.algorithms.asynchronous`.
"""

from __future__ import annotations

from collections.abc import Generator
from typing import TYPE_CHECKING, Any, Literal

import simpy
from pydantic import Field

from netfl.algorithms.algorithm import register
from netfl.algorithms.asynchronous import Arrival, AsyncAlgorithm, AsyncConfig, staleness_weight

if TYPE_CHECKING:
    from netfl.algorithms.context import RoundContext

__all__ = ["FedBuff", "FedBuffConfig", "DEFAULT_BUFFER_SIZE"]


class FedBuffConfig(AsyncConfig):
    buffer_size: int | None = Field(
        None,
        ge=1,
        le=100_000,
        description="K: updates per server step (default: 10, or the number of devices "
        "that train at once if fewer); at most that number",
    )
    server_lr: float = Field(1.0, gt=0.0, le=100.0, description="η_g of the server step")
    staleness: Literal["constant", "inverse_sqrt"] = Field(
        "inverse_sqrt", description="scaling of a stale update: 1/√(1 + t − τ) or none"
    )


#: FedBuff's K when the scenario does not set it (Nguyen et al.'s K = 10), at most the
#: devices that train at once
DEFAULT_BUFFER_SIZE = 10


def _slots(scenario: Any) -> int:
    """How many devices train at once: ``devices.count``, or ``concurrency`` if fewer."""
    concurrency = scenario.algorithm.options().get("concurrency")
    return min(scenario.devices.count, concurrency or scenario.devices.count)


@register
class FedBuff(AsyncAlgorithm):
    """FedBuff (Nguyen et al., AISTATS 2022, Algorithm 1): buffer K updates, then step."""

    name = "fedbuff"
    Config = FedBuffConfig
    config: FedBuffConfig

    @classmethod
    def check_scenario(cls, scenario: Any) -> list[tuple[str, str]]:
        """``buffer_size`` K within what can arrive: at most one update per device is in
        flight, so a server step waits for K updates from ``devices.count`` devices
        (and at most ``concurrency`` at once); K above that would make every device
        train K / count times per step — a run that seems to hang."""
        problems = super().check_scenario(scenario)
        options = scenario.algorithm.options()
        k, slots = options.get("buffer_size"), _slots(scenario)
        if k is not None and k > slots:
            problems.append(
                (
                    "algorithm.buffer_size",
                    f"{k} updates per server step, but at most {slots} devices train at "
                    f"once (devices.count {scenario.devices.count}"
                    + (
                        f", concurrency {options['concurrency']}"
                        if options.get("concurrency")
                        else ""
                    )
                    + f"): use a buffer_size of at most {slots}",
                )
            )
        return problems

    def __init__(self, world: RoundContext, config: FedBuffConfig):
        super().__init__(world, config)
        #: K, the updates per server step
        self.buffer_size = config.buffer_size or min(DEFAULT_BUFFER_SIZE, _slots(world.scenario))
        self.buffer: list[Arrival] = []
        self._sum: dict | None = None
        #: the sums of the flushes whose server step is running, by flush number (two
        #: flushes may overlap: arrivals during one step fill and flush the next buffer)
        self._applying: dict[int, tuple[dict | None, list[Arrival]]] = {}
        self._flushes = 0

    def absorb(self, device: str, version: int) -> Generator[simpy.Event, Any, None]:
        c = self.config
        yield self.server_step(2.0 * self.world.model.num_params)  # (the buffer's sum)
        arrival = self.arrival(device, version)
        if arrival.state is not None:
            from netfl.learning.params import add_scaled_delta

            weight = staleness_weight(c.staleness, arrival.staleness)
            self._sum = add_scaled_delta(
                self._sum, arrival.state, self.versions[arrival.version], weight
            )
            arrival.state = None
        self.buffer.append(arrival)
        if len(self.buffer) < self.buffer_size:
            return
        # (taken now: arrivals during the step below fill the next buffer; the sum being
        # applied is an attribute, so a checkpoint during the step keeps it)
        flush, self._flushes = self._flushes, self._flushes + 1
        self._applying[flush] = (self._sum, self.buffer)
        self.buffer, self._sum = [], None
        yield self.server_step(2.0 * self.world.model.num_params)  # x + η_g·ΣΔ/K
        new, (total, arrivals) = None, self._applying.pop(flush)
        if total is not None and self.global_state is not None:
            from netfl.learning.params import apply_delta

            new = apply_delta(self.global_state, total, c.server_lr / self.buffer_size)
        self.publish(new, arrivals)

    def state_dict(self) -> dict[str, Any]:
        from netfl.learning.params import clone_state

        out = super().state_dict()
        out["buffer_sum"] = clone_state(self._sum) if self._sum is not None else None
        out["applying_sums"] = {
            n: (clone_state(t) if t is not None else None, [a.loss for a in arrivals])
            for n, (t, arrivals) in self._applying.items()
        }
        out["buffer_losses"] = [a.loss for a in self.buffer]
        return out

    def load_state_dict(self, state: dict[str, Any]) -> None:
        super().load_state_dict(state)
        self._sum = state["buffer_sum"]
        for n, (total, losses) in state["applying_sums"].items():
            arrivals = self._applying[n][1]  # (the replay's: their losses were not learned)
            for arrival, loss in zip(arrivals, losses, strict=True):
                arrival.loss = float(loss)
            self._applying[n] = (total, arrivals)
        for arrival, loss in zip(self.buffer, state["buffer_losses"], strict=True):
            arrival.loss = float(loss)
