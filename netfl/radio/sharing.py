"""Event-driven shared media: a capacity shared among flows and sessions.

A :class:`SharedMedium` holds the active flows (transfers with bits to send)
and sessions (background users holding capacity for a while) of one carrier.
Shares are recomputed only when something starts or ends (or, for subclasses,
when :meth:`SharedMedium._next_change_s` says the channel itself changes):
never per tick. Between changes each flow's share is constant, so its bits
are drained exactly and its completion instant is computed, not stepped to.

Extension points (SimPy resource style, one family with few hooks):

- :meth:`_allocate` — the shares of all active entities (the scheduler);
- :meth:`_drain` — bits a flow delivers between two instants at its share;
- :meth:`_finish_time` — when a flow would finish at its current share;
- :meth:`_next_change_s` — the next change of the medium itself.
"""

from __future__ import annotations

import math
from abc import ABC, abstractmethod
from dataclasses import dataclass, field

import numpy as np
import simpy

__all__ = ["Flow", "Session", "SharedMedium", "ProcessorSharing", "max_min_fair"]

#: A flow is complete when fewer than this fraction of its bits remain
#: (float rounding of rate × time); well below one bit for any real payload.
REL_COMPLETION_TOL = 1e-9


def max_min_fair(capacity: float, caps: np.ndarray) -> np.ndarray:
    """Max-min fair (water-filling) split of a capacity among capped claimants.

    Each claimant gets ``min(cap_i, fair share)``; what a capped claimant
    cannot use is shared among the others. With no binding caps this is plain
    processor sharing / equal share (``capacity / n`` each).

    Parameters
    ----------
    capacity : float
        What is shared (bit/s, or resource blocks).
    caps : ndarray, shape (n,)
        Each claimant's own maximum (``inf`` for none).

    Returns
    -------
    ndarray, shape (n,)
        Shares, summing to ``min(capacity, sum(caps))``.
    """
    caps = np.asarray(caps, dtype=float)
    n = caps.size
    shares = np.zeros(n)
    remaining = float(capacity)
    for i, idx in enumerate(np.argsort(caps, kind="stable")):
        share = remaining / (n - i)
        shares[idx] = min(caps[idx], share)
        remaining -= shares[idx]
    return shares


@dataclass(eq=False)
class Flow:
    """An active transfer: ``size_bits`` to deliver, at most ``cap`` of the capacity."""

    size_bits: float
    cap: float
    done: simpy.Event
    arrival: int = 0
    start_s: float = 0.0
    remaining_bits: float = field(init=False)
    share: float = 0.0

    def __post_init__(self) -> None:
        self.remaining_bits = self.size_bits


@dataclass(eq=False)
class Session:
    """A background session holding up to ``demand`` of the capacity (no bits)."""

    demand: float
    arrival: int = 0
    share: float = 0.0


class SharedMedium(ABC):
    """Base class: flows and sessions share a medium; shares change only at events."""

    def __init__(self, env: simpy.Environment):
        self.env = env
        self.flows: list[Flow] = []
        self.sessions: list[Session] = []
        self._last_update_s = env.now
        self._generation = 0
        self._arrivals = 0
        #: (time, share held by sessions, share held by flows) after every change
        self.occupancy: list[tuple[float, float, float]] = []

    # -- extension points -------------------------------------------------
    @abstractmethod
    def _allocate(self) -> None:
        """Set ``share`` on every active flow and session."""

    def _drain(self, flow: Flow, t0_s: float, t1_s: float) -> None:
        """Deliver the bits of ``[t0, t1]`` (default: share is a rate in bit/s)."""
        flow.remaining_bits -= flow.share * (t1_s - t0_s)

    def _finish_time(self, flow: Flow) -> float:
        """Absolute time the flow would finish at its current share (default: rate)."""
        return self.env.now + flow.remaining_bits / flow.share if flow.share > 0 else math.inf

    def _next_change_s(self) -> float:
        """Absolute time of the next change of the medium itself (default: none)."""
        return math.inf

    # -- mechanism ----------------------------------------------------------
    def _next_arrival(self) -> int:
        self._arrivals += 1
        return self._arrivals

    def add_flow(self, flow: Flow) -> simpy.Event:
        """Start ``flow``; its ``done`` event fires on delivery of the last bit."""
        if flow.size_bits <= 0:
            flow.done.succeed()
            return flow.done
        self._advance()
        flow.arrival = self._next_arrival()
        flow.start_s = self.env.now
        self.flows.append(flow)
        self._reschedule()
        return flow.done

    def add_session(self, demand: float) -> Session:
        """A background session starts holding capacity."""
        self._advance()
        session = Session(float(demand), self._next_arrival())
        self.sessions.append(session)
        self._reschedule()
        return session

    def remove_session(self, session: Session) -> None:
        self._advance()
        self.sessions.remove(session)
        self._reschedule()

    def _advance(self) -> None:
        now = self.env.now
        if now > self._last_update_s:
            for f in self.flows:
                if f.share > 0:
                    self._drain(f, self._last_update_s, now)
        self._last_update_s = now

    def _reschedule(self) -> None:
        self._generation += 1
        self._allocate()
        self.occupancy.append(
            (self.env.now, sum(s.share for s in self.sessions), sum(f.share for f in self.flows))
        )
        if not self.flows:
            return
        finish = min(self._finish_time(f) for f in self.flows)
        wake_s = min(finish, self._next_change_s())
        if math.isinf(wake_s):
            if self.sessions:
                return  # flows wait until a session leaves
            raise RuntimeError("shared medium stalled: active flows but no capacity")
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
    """A capacity [bit/s] shared max-min fairly, each flow capped by its own link rate."""

    def __init__(self, env: simpy.Environment, capacity_bps: float):
        super().__init__(env)
        if capacity_bps <= 0:
            raise ValueError("capacity_bps must be positive")
        self.capacity_bps = float(capacity_bps)

    def send(self, size_bits: float, cap_bps: float = math.inf) -> simpy.Event:
        """Start a flow of ``size_bits``; the returned event fires on delivery."""
        return self.add_flow(Flow(float(size_bits), float(cap_bps), self.env.event()))

    def _allocate(self) -> None:
        entities = [*self.sessions, *self.flows]
        caps = np.array([s.demand for s in self.sessions] + [f.cap for f in self.flows])
        for e, share in zip(entities, max_min_fair(self.capacity_bps, caps), strict=True):
            e.share = float(share)

    def __repr__(self) -> str:
        return (
            f"ProcessorSharing(capacity={self.capacity_bps / 1e6:g} Mbit/s, "
            f"flows={len(self.flows)})"
        )
