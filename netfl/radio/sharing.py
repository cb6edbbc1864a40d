"""Event-driven shared media: a capacity shared among flows and sessions.

A :class:`SharedMedium` holds the active *flows* (transfers with bits to
send) and *sessions* (background users holding capacity for a while) of one
carrier. Shares are recomputed only when something starts or ends (or, for
subclasses, when :meth:`SharedMedium._next_change_s` says the channel itself
changes): never per tick. Between changes each flow's share is constant, so
its bits are drained exactly and its completion instant is computed, not
stepped to.

Sessions are kept in aggregate (by demand, and in arrival order), so a
thousand background sessions cost one small array operation per event.

Extension points (SimPy resource style: one family, a few hooks). The
mechanism calls them in this order at every event (a flow or session starts
or ends, a timer fires): ``_advance`` → :meth:`_drain_all` (bits of the
elapsed interval at the old shares) → :meth:`_pop_finished` (timer only) →
:meth:`_allocate` (new shares) → listeners → :meth:`_min_finish_time` and
:meth:`_next_change_s` (the next wake-up). A flow's start defers the steps
from :meth:`_allocate` on to one event at the end of its instant, shared by
every change of that instant (a round's downloads start together).

- :meth:`_insert_flow` — store a new flow (default: append to ``flows``);
- :meth:`_allocate` — set every flow's share, return the sessions' total;
- :meth:`_drain_all` — deliver the bits of ``[t0, t1]`` at current shares;
- :meth:`_min_finish_time` — earliest completion at current shares;
- :meth:`_pop_finished` — remove and return the flows that are done;
- :meth:`_next_change_s` — the next change of the medium itself (default: none);
- :meth:`_shares` and :meth:`_flow_share_totals` — read-outs for the timer
  short-cut and the occupancy record (public: :meth:`held`).

Subclasses: :class:`ProcessorSharing` (rates in bit/s, max-min fair) and
:class:`netfl.radio.ofdma.OfdmaCarrier` (RBs, faded rates; it has a block grid, a
scheduler and a power-control policy, and implements the hooks with them).
"""

from __future__ import annotations

import math
from abc import ABC, abstractmethod
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np
import simpy

from netfl.core.invariants import check_capacity, check_delivery
from netfl.radio.schedulers.shares import equal_share, max_min_fair

__all__ = ["Flow", "SharedMedium", "ProcessorSharing", "max_min_fair"]

#: A flow is complete when fewer than this fraction of its bits remain
#: (float rounding of rate × time); well below one bit for any real payload.
REL_COMPLETION_TOL = 1e-9
#: ... or when what remains would take less than this many units in the last
#: place of the clock: the clock cannot resolve a later instant, and a
#: timer re-armed for "now" would never make progress (small control
#: messages at high rates and late simulated times).
CLOCK_ULPS = 16


def completion_tolerance_bits(size_bits, rate_bps, now_s: float):
    """Bits below which a flow counts as delivered (see :data:`CLOCK_ULPS`)."""
    return np.maximum(
        REL_COMPLETION_TOL * np.asarray(size_bits),
        np.asarray(rate_bps) * CLOCK_ULPS * math.ulp(max(abs(now_s), 1.0)),
    )


@dataclass(eq=False)
class Flow:
    """An active transfer: ``size_bits`` to deliver, holding at most ``cap`` of the capacity."""

    size_bits: float
    cap: float
    done: simpy.Event
    arrival: int = 0
    start_s: float = 0.0
    remaining_bits: float = field(init=False)
    share: float = 0.0
    #: background traffic (a CUE's transfer) rather than an FL transfer
    background: bool = False

    def __post_init__(self) -> None:
        self.remaining_bits = self.size_bits


class SharedMedium(ABC):
    """Base class: flows and sessions share a medium; shares change only at events."""

    def __init__(self, env: simpy.Environment, capacity: float):
        if capacity <= 0:
            raise ValueError("capacity must be positive")
        self.env = env
        self.capacity = float(capacity)
        self.flows: list[Flow] = []
        #: active sessions: arrival number → demand (insertion order = arrival order)
        self.sessions: dict[int, float] = {}
        self._demand_counts: Counter[float] = Counter()
        self.session_share = 0.0
        self._held = (0.0, 0.0)
        self._last_update_s = env.now
        self._generation = 0
        self._timer_pending = False
        self._flush_pending = False  # a re-allocation is scheduled for this instant
        self._dirty = False  # something changed since the last re-allocation
        self._pending_flows_changed = False  # ... and flows came or went meanwhile
        self._arrivals = 0
        #: (time, share held by background sessions and flows, share held by FL flows)
        #: after every change
        self.occupancy: list[tuple[float, float, float]] = []
        self._listeners: list[Callable[[], None]] = []

    def listen(self, callback: Callable[[], None]) -> None:
        """Run ``callback`` after every re-allocation (e.g. the BS energy meter, a
        network's interference under activity)."""
        self._listeners.append(callback)

    # -- extension points -------------------------------------------------
    @abstractmethod
    def _allocate(self) -> float:
        """Set ``share`` on every flow; return the total share held by sessions."""

    def _drain_all(self, t0_s: float, t1_s: float) -> None:
        """Deliver the bits of ``[t0, t1]`` (default: shares are rates in bit/s)."""
        dt = t1_s - t0_s
        for f in self.flows:
            f.remaining_bits -= f.share * dt

    def _min_finish_time(self) -> float:
        """Earliest absolute completion time at current shares (default: rates)."""
        return self.env.now + min(
            (f.remaining_bits / f.share for f in self.flows if f.share > 0), default=math.inf
        )

    def _pop_finished(self) -> list[Flow]:
        """Remove and return the flows with no bits left."""
        now = self.env.now
        done = [
            f
            for f in self.flows
            if f.remaining_bits <= completion_tolerance_bits(f.size_bits, f.share, now)
        ]
        for f in done:
            check_delivery(
                f.size_bits, f.remaining_bits, completion_tolerance_bits(f.size_bits, f.share, now)
            )
            self.flows.remove(f)
            f.remaining_bits = 0.0
        return done

    def _insert_flow(self, flow: Flow) -> None:
        self.flows.append(flow)

    def _flow_share_totals(self) -> tuple[float, float]:
        """Shares held by background flows and by FL flows."""
        bg = sum(f.share for f in self.flows if f.background)
        return float(bg), float(sum(f.share for f in self.flows) - bg)

    def held(self) -> tuple[float, float]:
        """Resources held now: ``(by background sessions and flows, by FL flows)``
        (as of the last re-allocation: shares change only there)."""
        return self._held

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
        self._insert_flow(flow)
        self._defer_reschedule()
        return flow.done

    def withdraw(self, flow: Flow) -> float:
        """Take an active flow off the medium now (its device left): the others are
        re-allocated at this instant; returns its bits not yet delivered. Its ``done``
        never fires. (A flow no longer on the medium — finished this instant, or of
        no bits — has none left to withdraw.)"""
        if not any(f is flow for f in self.flows):
            return 0.0 if flow.done.triggered else max(flow.remaining_bits, 0.0)
        self._advance()
        self.flows.remove(flow)
        flow.remaining_bits = max(flow.remaining_bits, 0.0)
        flow.share = 0.0
        self._defer_reschedule()
        return flow.remaining_bits

    def progress(self, flow: Flow) -> tuple[float, float]:
        """An active flow's bits delivered and airtime [s] until now."""
        self._advance()
        return flow.size_bits - flow.remaining_bits, self.env.now - flow.start_s

    def add_session(self, demand: float) -> int:
        """A background session starts holding up to ``demand``; returns its handle."""
        self._advance()
        handle = self._next_arrival()
        self.sessions[handle] = float(demand)
        self._demand_counts[float(demand)] += 1
        self._reschedule_session()
        return handle

    def remove_session(self, handle: int) -> None:
        self._advance()
        demand = self.sessions.pop(handle)
        self._demand_counts[demand] -= 1
        if not self._demand_counts[demand]:
            del self._demand_counts[demand]
        self._reschedule_session()

    def _reschedule_session(self) -> None:
        """A session came or went: joins this instant's pending re-allocation, if any."""
        if self._flush_pending:
            self._dirty = True
        else:
            self._reschedule()

    def _defer_reschedule(self) -> None:
        """A flow started: re-allocate once for all the changes of this instant.

        Flows that start at the same simulated instant (a round's downloads), and
        sessions that come or go meanwhile, are allocated together by one event at
        that instant, after the changes already scheduled for it: no time passes
        between them, so no bit is carried at the shares in between, and the
        search for the next completion runs once.
        """
        self._pending_flows_changed = True
        self._dirty = True
        if self._flush_pending:
            return
        self._flush_pending = True
        self.env.timeout(0.0).callbacks.append(self._flush)

    def _flush(self, _event: simpy.Event) -> None:
        self._flush_pending = False
        if self._dirty:
            self._reschedule()

    def _advance(self) -> None:
        now = self.env.now
        if now > self._last_update_s and self.flows:
            self._drain_all(self._last_update_s, now)
        self._last_update_s = now

    def _shares(self) -> np.ndarray:
        """Current share of every active flow (in ``self.flows`` order)."""
        return np.array([f.share for f in self.flows])

    def _reschedule(self, flows_changed: bool = False) -> None:
        """Re-allocate; re-arm the timer unless the pending one is still a valid wake-up.

        When no flow came or went and no flow's share grew (e.g. a session
        arrived), no completion can come sooner than the pending timer, which
        then at worst fires early and re-arms: the exact next completion need
        not be recomputed on such events.
        """
        flows_changed |= self._pending_flows_changed
        self._pending_flows_changed = False
        self._dirty = False
        before = None if flows_changed or not self._timer_pending else self._shares().copy()
        self.session_share = self._allocate()
        bg, fl = self._flow_share_totals()
        check_capacity(self.session_share + bg + fl, self.capacity, self)
        self._held = (self.session_share + bg, fl)
        if not self.occupancy or self.occupancy[-1][1:] != self._held:
            self.occupancy.append((self.env.now, *self._held))
        for listener in self._listeners:
            listener()
        if before is not None and np.all(self._shares() <= before):
            return
        self._generation += 1
        self._timer_pending = False
        if not self.flows:
            return
        wake_s = min(self._min_finish_time(), self._next_change_s())
        if math.isinf(wake_s):
            if self.sessions:
                return  # flows wait until a session leaves
            raise RuntimeError("shared medium stalled: active flows but no capacity")
        generation = self._generation
        timer = self.env.timeout(max(wake_s - self.env.now, 0.0))
        timer.callbacks.append(lambda _ev: self._on_timer(generation))
        self._timer_pending = True

    def _on_timer(self, generation: int) -> None:
        if generation != self._generation:
            return  # superseded by a later change
        self._timer_pending = False
        self._advance()
        finished = self._pop_finished()
        self._reschedule(flows_changed=bool(finished))
        for f in finished:
            f.done.succeed()


class ProcessorSharing(SharedMedium):
    """A capacity [bit/s] shared max-min fairly, each flow capped by its own link rate."""

    def __init__(self, env: simpy.Environment, capacity_bps: float):
        super().__init__(env, capacity_bps)

    @property
    def capacity_bps(self) -> float:
        return self.capacity

    def send(self, size_bits: float, cap_bps: float = math.inf) -> simpy.Event:
        """Start a flow of ``size_bits``; the returned event fires on delivery."""
        return self.add(size_bits, cap_bps).done

    def add(self, size_bits: float, cap_bps: float = math.inf) -> Flow:
        """Start a flow of ``size_bits`` and return it (``flow.done`` fires on delivery)."""
        flow = Flow(float(size_bits), float(cap_bps), self.env.event())
        self.add_flow(flow)
        return flow

    def _allocate(self) -> float:
        caps = np.array([f.cap for f in self.flows])
        shares, session_total = equal_share(self.capacity, self._demand_counts, caps)
        for f, share in zip(self.flows, shares, strict=True):
            f.share = float(share)
        return session_total

    def __repr__(self) -> str:
        return f"ProcessorSharing(capacity={self.capacity / 1e6:g} Mbit/s, flows={len(self.flows)})"
