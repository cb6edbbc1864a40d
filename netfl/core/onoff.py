"""Client availability (issue 33, item 3): whether a device can take part, as a
function of time or of the round.

- :class:`MarkovOnOff` — a two-state continuous-time Markov chain in simulated time:
  on-periods ~ Exp(mean ``mean_on_s``), off-periods ~ Exp(mean ``mean_off_s``),
  started in its stationary distribution (on with probability
  ``mean_on / (mean_on + mean_off)``; by memorylessness the first sojourn is a full
  exponential). Its switching instants are drawn lazily from the device's own
  generator, so the state at any time is a function of time (no event of its own,
  like a trajectory) and a resume replays it.
- :class:`TraceAvailability` — the on-intervals a trace gives a device (a CSV, or
  FedScale's client availability trace, :func:`read_fedscale_trace`, which repeats).
- Bernoulli availability is per round (each device on with probability ``p`` in each
  round, independently): :func:`bernoulli_round`.

Pure numpy; the world asks them at each round's start
(:meth:`netfl.sim.world.World.available_devices`).
"""

from __future__ import annotations

import bisect
import math
from dataclasses import dataclass, field

import numpy as np

__all__ = ["MarkovOnOff", "TraceAvailability", "bernoulli_round", "read_fedscale_trace"]


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

    def next_off(self, t: float) -> float | None:
        """When the device, on at ``t`` [s], turns off (None: off at ``t``)."""
        return self.next_switch(t) if self.is_on(t) else None

    def next_on(self, t: float) -> float | None:
        """When the device, off at ``t`` [s], turns on (None: on at ``t``)."""
        return None if self.is_on(t) else self.next_switch(t)

    def switches(self, t_end: float) -> tuple[bool, np.ndarray]:
        """The state at time 0 and every switching instant up to ``t_end``."""
        self._extend(t_end)
        s = np.asarray(self._switches)
        return self._on_at_zero, s[s <= t_end]


@dataclass(frozen=True)
class TraceAvailability:
    """A device's on-intervals ``[(on_s, off_s), ...]`` (sorted, disjoint) from a trace;
    off outside them. With a ``period_s`` the trace repeats (FedScale's traces: time is
    taken modulo their ``finish_time``, and an interval includes both its ends)."""

    intervals: tuple[tuple[float, float], ...]
    period_s: float | None = None

    def is_on(self, t: float) -> bool:
        u = t % self.period_s if self.period_s else t
        starts = [a for a, _ in self.intervals]
        k = bisect.bisect_right(starts, u) - 1
        if k < 0:
            return False
        end = self.intervals[k][1]
        return u <= end if self.period_s else u < end

    def next_off(self, t: float) -> float | None:
        """When the device, on at ``t`` [s], turns off: the end of its on-interval, or of
        the next one where that starts as this one ends (adjacent intervals, a repeating
        trace that wraps around its period); None if it is off at ``t`` or never turns
        off."""
        if not self.is_on(t):
            return None
        starts = [a for a, _ in self.intervals]
        for _ in range(len(self.intervals) + 1):
            u = t % self.period_s if self.period_s else t
            t_end = t - u + self.intervals[bisect.bisect_right(starts, u) - 1][1]
            later = math.nextafter(t_end, math.inf)
            if not self.is_on(later):
                return t_end
            t = later
        return None  # (on all the time: a trace that covers its whole period)

    def next_on(self, t: float) -> float | None:
        """The first interval start after ``t`` [s] (None if there is none)."""
        if not self.intervals:
            return None
        if not self.period_s:
            return next((a for a, _ in self.intervals if a > t), None)
        base = t - t % self.period_s
        u = t - base
        later = [a for a, _ in self.intervals if a > u]
        return base + (later[0] if later else self.period_s + self.intervals[0][0])


def bernoulli_round(p: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """Which devices are on in one round: device ``i`` with probability ``p[i]``,
    independently (one uniform per device, in device order)."""
    return rng.random(len(p)) < np.asarray(p)


#: a FedScale trace (a pickle of plain dicts and lists) larger than this is refused
MAX_FEDSCALE_BYTES = 256 << 20


class _PlainUnpickler:
    """Unpickling restricted to plain containers and numbers: any class or function a
    pickle names (the way a pickle runs code) is refused."""

    def __init__(self, raw: bytes):
        import io
        import pickle

        class Restricted(pickle.Unpickler):
            def find_class(self, module: str, name: str):
                raise pickle.UnpicklingError(f"it names {module}.{name}; only plain data loads")

        self._unpickler = Restricted(io.BytesIO(raw))

    def load(self):
        return self._unpickler.load()


def read_fedscale_trace(raw: bytes) -> list[tuple[tuple[tuple[float, float], ...], float]]:
    """FedScale's client availability trace (``client_behave_trace``: a pickled dict of
    client id → ``{'active': [s], 'inactive': [s], 'finish_time': s, ...}``) as one
    ``(on-intervals, period)`` per client, in the dict's order; loaded without running
    code (:class:`_PlainUnpickler`). ``ValueError`` says what is wrong."""
    import pickle

    try:
        data = _PlainUnpickler(raw).load()
    except (pickle.UnpicklingError, EOFError, ValueError, TypeError, IndexError) as err:
        raise ValueError(f"not a FedScale availability trace ({err})") from None
    if not isinstance(data, dict) or not data:
        raise ValueError("not a FedScale availability trace (expected a dict of clients)")
    out = []
    for key, trace in data.items():
        try:
            active = [float(v) for v in trace["active"]]
            inactive = [float(v) for v in trace["inactive"]]
            period = float(trace["finish_time"])
        except (KeyError, TypeError, ValueError):
            raise ValueError(
                f"client {str(key)[:20]}: needs active, inactive (lists) and finish_time"
            ) from None
        spans = list(zip(active, inactive, strict=False))
        ok = all(0 <= a <= b <= period for a, b in spans) and len(active) == len(inactive)
        if not (ok and np.isfinite(period) and period > 0 and spans):
            raise ValueError(
                f"client {str(key)[:20]}: needs 0 ≤ active[k] ≤ inactive[k] ≤ finish_time "
                "and as many of each"
            )
        out.append((tuple(sorted(spans)), period))
    return out
