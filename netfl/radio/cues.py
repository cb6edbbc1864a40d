"""Background cellular UEs (CUEs): a spatial Poisson point process with Poisson sessions.

- Space: the number of CUEs is Poisson(λ·area) and they are uniform over the
  cell's disc (a homogeneous PPP restricted to the disc); in a multi-cell network
  the PPP covers the deployment and each cell gets the CUEs that attach to it.
- Time: each CUE starts sessions as a Poisson process of rate ``a``; the
  superposition over M CUEs is Poisson of rate M·a, simulated as one stream.
  A session holds ``demand_rbs`` resource blocks of its carrier for an
  exponentially distributed duration, so the number of concurrent sessions
  is M/M/∞: Poisson with mean M·a·E[D] (Little's law). The run starts in that
  stationary state (Poisson(M·a·E[D]) sessions with exponential residual
  durations), so there is no warm-up transient.
- Size-based sessions (``mean_session_bits`` set): a session is instead a
  transfer of Exp(mean) bits between the CUE and the BS, holding at most
  ``demand_rbs`` RBs at the rate its own channel gives (path loss from its
  position, fading); it ends when delivered. These start from an empty cell.
"""

from __future__ import annotations

import heapq
from collections.abc import Callable, Generator
from dataclasses import dataclass
from typing import Any

import numpy as np
import simpy

from netfl.errors import LinkBudgetError
from netfl.radio.geometry import drop_uniform_disc
from netfl.radio.ofdma import OfdmaCarrier

__all__ = ["CueTrafficConfig", "CueTraffic"]


@dataclass(frozen=True)
class CueTrafficConfig:
    """Parameters of background traffic (units in names)."""

    density_per_km2: float = 0.0
    session_rate_per_s: float = 0.1
    mean_session_s: float = 10.0
    demand_rbs: float = 4.0
    uplink_fraction: float = 0.5
    mean_session_bits: float | None = None


class CueTraffic:
    """Drops CUEs and runs their sessions on the carriers as SimPy processes."""

    def __init__(
        self,
        env: simpy.Environment,
        carriers: dict[str, OfdmaCarrier],
        config: CueTrafficConfig,
        radius_m: float,
        rng: np.random.Generator,
        mean_snr: Callable[[np.ndarray, str, np.random.Generator, float], float] | None = None,
        positions_m: np.ndarray | None = None,
    ):
        self.env = env
        self.carriers = carriers
        self.config = config
        self.rng = rng
        self._mean_snr = mean_snr
        if config.mean_session_bits is not None and mean_snr is None:
            raise ValueError(
                "size-based CUE sessions need the radio's mean_snr(position, direction)"
            )
        if positions_m is None:  # the PPP over the cell's disc
            area_km2 = np.pi * (radius_m / 1e3) ** 2
            self.num_cues = int(rng.poisson(config.density_per_km2 * area_km2))
            self.positions_m = drop_uniform_disc(rng, self.num_cues, radius_m)
        else:  # (a multi-cell network drops them over its area and attaches them)
            self.positions_m = np.asarray(positions_m, dtype=float).reshape(-1, 2)
            self.num_cues = len(self.positions_m)
        self.sessions_started = 0
        self.sessions_blocked = 0  # size-based sessions of CUEs out of coverage
        self.active = 0
        if self.num_cues > 0 and config.session_rate_per_s > 0:
            env.process(self._run())

    @property
    def arrival_rate_per_s(self) -> float:
        return self.num_cues * self.config.session_rate_per_s

    @property
    def mean_concurrent(self) -> float:
        """M·a·E[D]: mean number of concurrent sessions (Little's law)."""
        return self.arrival_rate_per_s * self.config.mean_session_s

    def _start(self, departures: list, duration_s: float) -> None:
        direction = "uplink" if self.rng.random() < self.config.uplink_fraction else "downlink"
        carrier = self.carriers[direction]
        self.sessions_started += 1
        self.active += 1
        if self.config.mean_session_bits is not None:
            cue = int(self.rng.integers(self.num_cues))
            size_bits = float(self.rng.exponential(self.config.mean_session_bits))
            snr = self._mean_snr(self.positions_m[cue], direction, self.rng, self.config.demand_rbs)
            try:
                flow = carrier.send(
                    size_bits,
                    snr,
                    np.random.default_rng(self.rng.integers(2**63)),
                    cap_rbs=self.config.demand_rbs,
                    background=True,
                )
            except LinkBudgetError:  # this CUE is out of coverage: its session is blocked
                self.sessions_blocked += 1
                self.active -= 1
                return
            flow.done.callbacks.append(self._transfer_done)
            return
        handle = carrier.add_session(self.config.demand_rbs)
        heapq.heappush(departures, (self.env.now + duration_s, handle, direction))

    def _transfer_done(self, _event: simpy.Event) -> None:
        self.active -= 1

    def _run(self) -> Generator[simpy.Event, Any, None]:
        """One process for all sessions: it wakes only at the next arrival or departure."""
        cfg = self.config
        departures: list[tuple[float, int, str]] = []
        if cfg.mean_session_bits is None:  # duration-based: start in the stationary state
            for _ in range(int(self.rng.poisson(self.mean_concurrent))):
                self._start(departures, float(self.rng.exponential(cfg.mean_session_s)))
        mean_gap_s = 1.0 / self.arrival_rate_per_s
        next_arrival = self.env.now + float(self.rng.exponential(mean_gap_s))
        while True:
            if departures and departures[0][0] < next_arrival:
                end_s, handle, direction = heapq.heappop(departures)
                yield self.env.timeout(max(end_s - self.env.now, 0.0))
                self.carriers[direction].remove_session(handle)
                self.active -= 1
            else:
                yield self.env.timeout(max(next_arrival - self.env.now, 0.0))
                self._start(departures, float(self.rng.exponential(cfg.mean_session_s)))
                next_arrival = self.env.now + float(self.rng.exponential(mean_gap_s))

    def __repr__(self) -> str:
        return (
            f"CueTraffic({self.num_cues} CUEs, {self.arrival_rate_per_s:g} sessions/s, "
            f"~{self.mean_concurrent:.0f} concurrent)"
        )
