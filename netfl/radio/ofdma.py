"""OFDMA carriers: resource blocks shared by a scheduler, rates from faded SNR.

A carrier has ``num_rbs`` resource blocks of ``rb_bandwidth_hz``. Active FL
transfers (flows) and background CUE sessions hold shares of the RBs, set by
the scheduler whenever something starts or ends:

- ``round_robin`` — equal share: every session and flow gets N/k RBs (a
  session never more than its demand, a flow never more than its cap; what
  one cannot use goes to the others). Over slots this is what a round-robin
  RB scheduler gives each user on average.
- ``fcfs`` — first come, first served: in arrival order each takes up to its
  demand (flows: their cap) while RBs remain; later arrivals wait.

Shares are fractional (time-averaged RBs); they always sum to at most N, so no
RB is double-booked.

A flow's rate in fading block b is ``share × rb_bandwidth × SE(SNR̄·|h_b|²)``
(FedDif eqs. (7)-(10); SE is Shannon or the CQI table). Fading is drawn per
flow from its own generator, vectorised, for as many blocks as its remainder
needs. All active flows' per-RB bit curves live in one matrix on a common
block grid, so draining and finding the next completion are a few array
operations per event, whatever the number of flows; fading blocks create no
events (the completion instant is found by a vectorised binary search on the
cumulative bits per RB).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import simpy

from channel_models.fading import BlockFading
from netfl.radio.sharing import REL_COMPLETION_TOL, Flow, SharedMedium

__all__ = ["OfdmaFlow", "OfdmaCarrier", "SCHEDULERS"]

SCHEDULERS = ("round_robin", "fcfs")

#: Fading blocks drawn ahead of the clock for every active flow. Completions
#: beyond the horizon are found after a wake-up at its end (one event per
#: horizon, not per block), which bounds memory to flows × horizon.
HORIZON_BLOCKS = 2048


@dataclass(eq=False)
class OfdmaFlow(Flow):
    """A transfer on an OFDMA carrier: its mean SNR, fading generator and accounting."""

    mean_snr: float = 1.0
    rng: np.random.Generator | None = None
    k0: int = 0
    rb_seconds: float = 0.0
    snr_seconds: float = 0.0  # ∫ SNR(t) dt over the airtime, for the mean SNR


class OfdmaCarrier(SharedMedium):
    """One OFDMA carrier (uplink or downlink) as an event-driven shared medium.

    Parameters
    ----------
    num_rbs : int
        Resource blocks of the carrier.
    rb_bandwidth_hz : float
        Bandwidth of one RB [Hz].
    fading : BlockFading
        Small-scale fading law and coherence time (the block length).
    efficiency : callable
        Linear SNR array → spectral efficiency [bit/s/Hz].
    scheduler : str
        ``"round_robin"`` or ``"fcfs"``.
    """

    def __init__(
        self,
        env: simpy.Environment,
        name: str,
        num_rbs: int,
        rb_bandwidth_hz: float,
        fading: BlockFading,
        efficiency: Callable[[np.ndarray], np.ndarray],
        scheduler: str = "round_robin",
    ):
        super().__init__(env, num_rbs)
        if scheduler not in SCHEDULERS:
            raise KeyError(f"unknown scheduler {scheduler!r} (valid: {', '.join(SCHEDULERS)})")
        self.name = name
        self.num_rbs = int(num_rbs)
        self.rb_bandwidth_hz = float(rb_bandwidth_hz)
        self.fading = fading
        self.block_s = fading.coherence_time_s
        self.efficiency = efficiency
        self.scheduler = scheduler
        # Row i belongs to self.flows[i]; column c is absolute block self._kb + c.
        self._kb = 0
        self._gains = np.zeros((0, 0))
        self._bits = np.zeros((0, 0))  # bits one RB carries in each block
        self._cum = np.zeros((0, 1))  # cumulative bits per RB at block starts

    # -- API -------------------------------------------------------------------
    def send(
        self, size_bits: float, mean_snr: float, rng: np.random.Generator, cap_rbs: float = math.inf
    ) -> OfdmaFlow:
        """Start a flow; ``flow.done`` fires on delivery."""
        flow = OfdmaFlow(
            float(size_bits), float(cap_rbs), self.env.event(), mean_snr=float(mean_snr), rng=rng
        )
        flow.k0 = int(math.floor(self.env.now / self.block_s))
        self.add_flow(flow)
        return flow

    @property
    def width(self) -> int:
        return self._bits.shape[1]

    # -- the block grid ----------------------------------------------------------
    def _draw(self, flow: OfdmaFlow, num_blocks: int) -> tuple[np.ndarray, np.ndarray]:
        gains = self.fading.sample(flow.rng, num_blocks)
        bits = self.rb_bandwidth_hz * self.efficiency(flow.mean_snr * gains) * self.block_s
        return gains, bits

    def _grow(self, new_width: int) -> None:
        """Extend every row to ``new_width`` blocks, drawing each flow's fading."""
        extra = new_width - self.width
        if extra <= 0:
            return
        n = len(self.flows)
        g = np.empty((n, extra))
        b = np.empty((n, extra))
        for i, f in enumerate(self.flows):
            g[i], b[i] = self._draw(f, extra)
        self._gains = np.hstack([self._gains, g])
        self._bits = np.hstack([self._bits, b])
        self._cum = np.hstack([self._cum, self._cum[:, -1:] + np.cumsum(b, axis=1)])

    def _rebase(self) -> None:
        """Drop the columns before the last update's block (they are never read again)."""
        drop = int(math.floor(self._last_update_s / self.block_s)) - self._kb
        if drop <= 0:
            return
        drop = min(drop, self.width)
        self._gains = self._gains[:, drop:]
        self._bits = self._bits[:, drop:]
        self._cum = self._cum[:, drop:] - self._cum[:, drop : drop + 1]
        self._kb += drop

    def _ensure(self, t_s: float) -> None:
        """Make sure the grid covers ``t_s`` plus a margin (rebasing first)."""
        j = int(math.floor(t_s / self.block_s)) - self._kb
        if j + 16 >= self.width:
            self._rebase()
            j = int(math.floor(t_s / self.block_s)) - self._kb
            self._grow(j + HORIZON_BLOCKS)

    def _positions(self, t_s: float) -> np.ndarray:
        """Bits one RB has carried for each flow from column 0 until ``t_s``."""
        x = t_s / self.block_s - self._kb
        j = int(math.floor(x))
        if j >= self.width:
            if j == self.width and x == j:  # exactly at the right edge
                return self._cum[:, j].copy()
            self._grow(j + HORIZON_BLOCKS)
        return self._cum[:, j] + (x - j) * self._bits[:, j]

    # -- SharedMedium hooks ------------------------------------------------------
    def _insert_flow(self, flow: Flow) -> None:
        assert isinstance(flow, OfdmaFlow)
        if not self.flows:
            self._kb, width = flow.k0, HORIZON_BLOCKS
            self._gains = np.zeros((0, 0))
            self._bits = np.zeros((0, 0))
            self._cum = np.zeros((0, 1))
        else:
            self._rebase()
            width = max(self.width, flow.k0 - self._kb + HORIZON_BLOCKS // 4)
            self._grow(width)
        offset = flow.k0 - self._kb
        g, b = self._draw(flow, width - offset)
        gains = np.concatenate([np.full(offset, np.nan), g])
        bits = np.concatenate([np.zeros(offset), b])
        self.flows.append(flow)
        if self._bits.shape[0] == 0:
            self._gains = gains[None, :]
            self._bits = bits[None, :]
        else:
            self._gains = np.vstack([self._gains, gains])
            self._bits = np.vstack([self._bits, bits])
        self._cum = np.hstack([np.zeros((len(self.flows), 1)), np.cumsum(self._bits, axis=1)])

    def _allocate(self) -> float:
        if self.scheduler == "fcfs":
            return self._first_come_first_served()
        return self._equal_share()

    def _shares(self) -> np.ndarray:
        return np.fromiter((f.share for f in self.flows), float, len(self.flows))

    def _drain_all(self, t0_s: float, t1_s: float) -> None:
        shares = self._shares()
        delivered = shares * (self._positions(t1_s) - self._positions(t0_s))
        snr_s = self._snr_integral(t0_s, t1_s)
        for f, d, s, sn in zip(self.flows, delivered, shares, snr_s, strict=True):
            f.remaining_bits -= float(d)
            if s > 0:
                f.rb_seconds += float(s) * (t1_s - t0_s)
                f.snr_seconds += float(sn)

    def _snr_integral(self, t0_s: float, t1_s: float) -> np.ndarray:
        """∫ SNR dt of each flow over ``[t0, t1]`` (blocks clipped to the interval)."""
        c0 = max(int(math.floor(t0_s / self.block_s)) - self._kb, 0)
        c1 = min(int(math.ceil(t1_s / self.block_s)) - self._kb, self.width)
        if c1 <= c0:
            return np.zeros(len(self.flows))
        edges = (self._kb + np.arange(c0, c1 + 1)) * self.block_s
        dur = np.clip(edges[1:], t0_s, t1_s) - np.clip(edges[:-1], t0_s, t1_s)
        snr = (
            np.nan_to_num(self._gains[:, c0:c1])
            * np.array([f.mean_snr for f in self.flows])[:, None]
        )
        return snr @ dur

    def _min_finish_time(self) -> float:
        """Earliest completion within the drawn horizon, else the horizon's end."""
        now = self.env.now
        self._ensure(now)
        shares = self._shares()
        horizon_end = (self._kb + self.width) * self.block_s
        rows = np.flatnonzero(shares > 0)
        if rows.size == 0:
            return math.inf
        rem = np.array([self.flows[i].remaining_bits for i in rows])
        target = self._positions(now)[rows] + rem / shares[rows]
        within = self._cum[rows, -1] >= target
        if not within.any():
            return horizon_end
        rows, target = rows[within], target[within]
        # vectorised binary search: first column c with cum[row, c] >= target
        lo = np.zeros(rows.size, dtype=np.int64)
        hi = np.full(rows.size, self.width, dtype=np.int64)
        while np.any(lo < hi):
            mid = (lo + hi) // 2
            below = self._cum[rows, mid] < target
            lo = np.where(below, mid + 1, lo)
            hi = np.where(below, hi, mid)
        col = np.maximum(lo - 1, 0)  # target falls inside block `col`
        per_block = self._bits[rows, col]
        safe = np.where(per_block > 0, per_block, 1.0)
        frac = np.where(per_block > 0, (target - self._cum[rows, col]) / safe, 0.0)
        t_finish = (self._kb + col + np.clip(frac, 0.0, 1.0)) * self.block_s
        return max(float(t_finish.min()), now)

    def _pop_finished(self) -> list[Flow]:
        keep, done = [], []
        for i, f in enumerate(self.flows):
            (done if f.remaining_bits <= REL_COMPLETION_TOL * f.size_bits else keep).append(i)
        if not done:
            return []
        finished = [self.flows[i] for i in done]
        for f in finished:
            f.remaining_bits = 0.0
        self.flows = [self.flows[i] for i in keep]
        self._gains = self._gains[keep]
        self._bits = self._bits[keep]
        self._cum = self._cum[keep]
        return finished

    def mean_snr(self, flow: OfdmaFlow, airtime_s: float) -> float:
        """Time-average linear SNR of a finished flow over its airtime."""
        return flow.snr_seconds / airtime_s if airtime_s > 0 else flow.mean_snr

    def __repr__(self) -> str:
        return (
            f"OfdmaCarrier({self.name!r}, {self.num_rbs} RBs x {self.rb_bandwidth_hz / 1e3:g} "
            f"kHz, {self.scheduler}, {self.fading!r})"
        )
