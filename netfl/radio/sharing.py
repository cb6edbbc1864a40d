"""Event-driven shared media: processor sharing of a capacity among flows.

A :class:`SharedMedium` holds the active flows of one direction of a link.
Rates are recomputed only when a flow starts or ends (or, for subclasses,
when :meth:`SharedMedium._next_change_s` says the channel itself changes, e.g.
a fading block ends): never per tick. Between changes every flow drains at a
constant rate, so its bits are conserved exactly up to float rounding.

Extension point (SimPy resource style): subclasses override
:meth:`_allocate` (who gets which rate) and optionally :meth:`_next_change_s`.
"""

from __future__ import annotations

import math
from abc import ABC, abstractmethod
from dataclasses import dataclass, field

import numpy as np
import simpy

__all__ = ["Flow", "SharedMedium", "ProcessorSharing", "max_min_fair"]

#: A flow is complete when fewer than this fraction of its bits remain
#: (float rounding of rate × time); well below one bit for any real payload.
REL_COMPLETION_TOL = 1e-9


def max_min_fair(capacity_bps: float, caps_bps: np.ndarray) -> np.ndarray:
    """Max-min fair (water-filling) split of a capacity among capped flows.

    Each flow gets ``min(cap_i, fair share)``; capacity a capped flow cannot
    use is shared among the others. With equal or absent caps this is plain
    processor sharing (``capacity / n`` each).

    Parameters
    ----------
    capacity_bps : float
        Total capacity [bit/s].
    caps_bps : ndarray, shape (n,)
        Each flow's own maximum rate [bit/s] (``inf`` for none).

    Returns
    -------
    ndarray, shape (n,)
        Rates [bit/s], summing to ``min(capacity, sum(caps))``.
    """
    caps = np.asarray(caps_bps, dtype=float)
    n = caps.size
    rates = np.zeros(n)
    remaining = float(capacity_bps)
    for i, idx in enumerate(np.argsort(caps, kind="stable")):
        share = remaining / (n - i)
        rates[idx] = min(caps[idx], share)
        remaining -= rates[idx]
    return rates


@dataclass(eq=False)
class Flow:
    """An active transfer on a shared medium."""

    size_bits: float
    cap_bps: float
    done: simpy.Event
    remaining_bits: float = field(init=False)
    rate_bps: float = 0.0

    def __post_init__(self) -> None:
        self.remaining_bits = self.size_bits


class SharedMedium(ABC):
    """Base class: flows share a medium; rates change only at events."""

    def __init__(self, env: simpy.Environment):
        self.env = env
        self.flows: list[Flow] = []
        self._last_update_s = env.now
        self._generation = 0

    # -- extension points -------------------------------------------------
    @abstractmethod
    def _allocate(self, flows: list[Flow]) -> np.ndarray:
        """Rates [bit/s] of ``flows`` at the current instant."""

    def _next_change_s(self) -> float:
        """Absolute time of the next change of the medium itself (default: none)."""
        return math.inf

    # -- mechanism ----------------------------------------------------------
    def send(self, size_bits: float, cap_bps: float = math.inf) -> simpy.Event:
        """Start a flow of ``size_bits``; the returned event fires on delivery."""
        done = self.env.event()
        if size_bits <= 0:
            done.succeed()
            return done
        self._advance()
        self.flows.append(Flow(float(size_bits), float(cap_bps), done))
        self._reschedule()
        return done

    def _advance(self) -> None:
        dt = self.env.now - self._last_update_s
        if dt > 0:
            for f in self.flows:
                f.remaining_bits -= f.rate_bps * dt
        self._last_update_s = self.env.now

    def _reschedule(self) -> None:
        self._generation += 1
        if not self.flows:
            return
        rates = self._allocate(self.flows)
        for f, r in zip(self.flows, rates, strict=True):
            f.rate_bps = float(r)
        finish = min(
            (f.remaining_bits / f.rate_bps for f in self.flows if f.rate_bps > 0),
            default=math.inf,
        )
        wake_s = min(self.env.now + finish, self._next_change_s())
        if math.isinf(wake_s):
            raise RuntimeError(
                "shared medium stalled: active flows but no rate and no change ahead"
            )
        generation = self._generation
        timer = self.env.timeout(max(wake_s - self.env.now, 0.0))
        timer.callbacks.append(lambda _ev: self._on_timer(generation))

    def _on_timer(self, generation: int) -> None:
        if generation != self._generation:
            return  # superseded by a later change
        self._advance()
        finished = [f for f in self.flows if f.remaining_bits <= REL_COMPLETION_TOL * f.size_bits]
        for f in finished:
            self.flows.remove(f)
            f.remaining_bits = 0.0
        self._reschedule()
        for f in finished:
            f.done.succeed()


class ProcessorSharing(SharedMedium):
    """A capacity shared max-min fairly, each flow capped by its own link rate."""

    def __init__(self, env: simpy.Environment, capacity_bps: float):
        super().__init__(env)
        if capacity_bps <= 0:
            raise ValueError("capacity_bps must be positive")
        self.capacity_bps = float(capacity_bps)

    def _allocate(self, flows: list[Flow]) -> np.ndarray:
        return max_min_fair(self.capacity_bps, np.array([f.cap_bps for f in flows]))

    def __repr__(self) -> str:
        return f"ProcessorSharing(capacity={self.capacity_bps / 1e6:g} Mbit/s, flows={len(self.flows)})"
