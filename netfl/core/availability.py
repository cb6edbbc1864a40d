"""Client availability (issue 33, item 3): whether a device can take part, as a
function of time or of the round.

- :class:`MarkovOnOff` — a two-state continuous-time Markov chain in simulated time:
  on-periods ~ Exp(mean ``mean_on_s``), off-periods ~ Exp(mean ``mean_off_s``),
  started in its stationary distribution (on with probability
  ``mean_on / (mean_on + mean_off)``; by memorylessness the first sojourn is a full
  exponential). Its switching instants are drawn lazily from the device's own
  generator, so the state at any time is a function of time (no event of its own,
  like a trajectory) and a resume replays it.
- :class:`TraceAvailability` — the on-intervals a trace gives a device.
- Bernoulli availability is per round (each device on with probability ``p`` in each
  round, independently): :func:`bernoulli_round`.

Pure numpy; the world asks them at each round's start
(:meth:`netfl.sim.world.World.available_devices`).
"""

from __future__ import annotations

import bisect
from dataclasses import dataclass, field

import numpy as np

__all__ = ["MarkovOnOff", "TraceAvailability", "bernoulli_round"]


@dataclass
class MarkovOnOff:
    """On/off periods with exponential lengths, stationary at time 0."""

    mean_on_s: float
    mean_off_s: float
    rng: np.random.Generator
    _switches: list[float] = field(default_factory=list, repr=False)
    _on_at_zero: bool = field(default=True, repr=False)

    def __post_init__(self) -> None:
        if not (self.mean_on_s > 0 and self.mean_off_s > 0):
            raise ValueError("mean_on_s and mean_off_s must be positive")
        share = self.mean_on_s / (self.mean_on_s + self.mean_off_s)
        self._on_at_zero = bool(self.rng.random() < share)

    def _extend(self, t: float) -> None:
        """Draw switching instants until past ``t``."""
        last = self._switches[-1] if self._switches else 0.0
        while last <= t:
            on = self._on_at_zero == (len(self._switches) % 2 == 0)  # state before the switch
            last += float(self.rng.exponential(self.mean_on_s if on else self.mean_off_s))
            self._switches.append(last)

    def is_on(self, t: float) -> bool:
        """Whether the device is available at time ``t`` [s]."""
        self._extend(t)
        k = bisect.bisect_right(self._switches, t)  # switches at or before t
        return self._on_at_zero == (k % 2 == 0)

    def next_switch(self, t: float) -> float:
        """The first switching instant after ``t`` [s]."""
        self._extend(t)
        return self._switches[bisect.bisect_right(self._switches, t)]

    def switches(self, t_end: float) -> tuple[bool, np.ndarray]:
        """The state at time 0 and every switching instant up to ``t_end``."""
        self._extend(t_end)
        s = np.asarray(self._switches)
        return self._on_at_zero, s[s <= t_end]


@dataclass(frozen=True)
class TraceAvailability:
    """A device's on-intervals ``[(on_s, off_s), ...]`` (sorted, disjoint) from a trace;
    off outside them."""

    intervals: tuple[tuple[float, float], ...]

    def is_on(self, t: float) -> bool:
        starts = [a for a, _ in self.intervals]
        k = bisect.bisect_right(starts, t) - 1
        return k >= 0 and t < self.intervals[k][1]


def bernoulli_round(p: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """Which devices are on in one round: device ``i`` with probability ``p[i]``,
    independently (one uniform per device, in device order)."""
    return rng.random(len(p)) < np.asarray(p)
