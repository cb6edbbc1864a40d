"""OFDMA carriers: resource blocks shared by a scheduler, rates from faded SNR.

A carrier has ``num_rbs`` resource blocks of ``rb_bandwidth_hz``. Active FL
transfers (flows) and background CUE sessions hold shares of the RBs, set by
the scheduler whenever something starts or ends:

- ``round_robin`` — equal share (max-min fair over time: sessions and flows
  alike get N/k RBs, a session never more than its demand, a flow never more
  than its cap; what one cannot use goes to the others);
- ``fcfs`` — first come, first served: in arrival order each takes up to its
  demand (flows: their cap) while RBs remain; later arrivals wait.

A flow's rate is ``share × rb_bandwidth × efficiency(SNR_b)`` where
SNR_b = SNR̄ · |h_b|² in fading block b (FedDif eqs. (7)-(10)). Fading is
drawn per flow, vectorised, for as many blocks of its remainder as needed;
the completion instant is found by inverting the flow's cumulative bits per
RB (``searchsorted``), so fading blocks create no events.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np
import simpy

from channel_models.fading import BlockFading
from netfl.radio.sharing import Flow, SharedMedium, max_min_fair

__all__ = ["OfdmaFlow", "OfdmaCarrier", "SCHEDULERS"]

#: Upper bound on fading blocks drawn for one flow before declaring it undeliverable.
MAX_BLOCKS = 50_000_000


@dataclass(eq=False)
class OfdmaFlow(Flow):
    """A transfer on an OFDMA carrier, with its own fading sequence.

    ``gains[j]`` is |h|² in absolute block ``k0 + j``; ``cum[j]`` the bits one
    RB carries from the start of block ``k0`` to the start of block ``k0 + j``.
    """

    mean_snr: float = 1.0
    rng: np.random.Generator | None = None
    k0: int = 0
    gains: np.ndarray = field(default_factory=lambda: np.zeros(0))
    bits_per_rb: np.ndarray = field(default_factory=lambda: np.zeros(0))
    cum: np.ndarray = field(default_factory=lambda: np.zeros(1))
    rb_seconds: float = 0.0


def _round_robin(carrier: OfdmaCarrier) -> None:
    entities = [*carrier.sessions, *carrier.flows]
    caps = np.array([s.demand for s in carrier.sessions] + [f.cap for f in carrier.flows])
    for e, share in zip(entities, max_min_fair(carrier.num_rbs, caps), strict=True):
        e.share = float(share)


def _fcfs(carrier: OfdmaCarrier) -> None:
    left = float(carrier.num_rbs)
    entities = sorted([*carrier.sessions, *carrier.flows], key=lambda e: e.arrival)
    for e in entities:
        want = e.demand if hasattr(e, "demand") else e.cap
        e.share = min(want, left)
        left -= e.share


SCHEDULERS: dict[str, Callable[[OfdmaCarrier], None]] = {
    "round_robin": _round_robin,
    "fcfs": _fcfs,
}


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
        super().__init__(env)
        if scheduler not in SCHEDULERS:
            raise KeyError(f"unknown scheduler {scheduler!r} (valid: {', '.join(SCHEDULERS)})")
        self.name = name
        self.num_rbs = int(num_rbs)
        self.rb_bandwidth_hz = float(rb_bandwidth_hz)
        self.fading = fading
        self.block_s = fading.coherence_time_s
        self.efficiency = efficiency
        self.scheduler = scheduler
        self._schedule = SCHEDULERS[scheduler]

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

    # -- per-flow fading curve ---------------------------------------------------
    def _extend(self, flow: OfdmaFlow, num_blocks: int) -> None:
        gains = self.fading.sample(flow.rng, num_blocks)
        bits = self.rb_bandwidth_hz * self.efficiency(flow.mean_snr * gains) * self.block_s
        flow.gains = np.concatenate([flow.gains, gains])
        flow.bits_per_rb = np.concatenate([flow.bits_per_rb, bits])
        flow.cum = np.concatenate([flow.cum, flow.cum[-1] + np.cumsum(bits)])

    def _position(self, flow: OfdmaFlow, t_s: float) -> float:
        """Bits one RB has carried for this flow from block k0's start until ``t_s``."""
        x = t_s / self.block_s - flow.k0
        j = int(math.floor(x))
        if j < 0:
            return 0.0
        while j >= len(flow.bits_per_rb):
            self._extend(flow, max(64, len(flow.gains)))
        return float(flow.cum[j] + (x - j) * flow.bits_per_rb[j])

    def _time_at(self, flow: OfdmaFlow, target: float) -> float:
        """Inverse of :meth:`_position`: when one RB has carried ``target`` bits."""
        while flow.cum[-1] < target:
            if len(flow.gains) >= MAX_BLOCKS:
                raise RuntimeError(
                    f"{self.name}: a transfer cannot complete (mean SNR {flow.mean_snr:.3g} "
                    f"gives no rate over {MAX_BLOCKS} fading blocks)"
                )
            per_block = max(float(flow.bits_per_rb.mean()) if len(flow.bits_per_rb) else 0.0, 1e-12)
            need = int(min(MAX_BLOCKS, 1.25 * (target - flow.cum[-1]) / per_block + 64))
            self._extend(flow, max(need, len(flow.gains) // 2))
        j = int(np.searchsorted(flow.cum, target, side="left")) - 1
        j = max(j, 0)
        rate = flow.bits_per_rb[j]
        frac = (target - flow.cum[j]) / rate if rate > 0 else 0.0
        return float((flow.k0 + j + min(max(frac, 0.0), 1.0)) * self.block_s)

    # -- SharedMedium hooks ------------------------------------------------------
    def add_flow(self, flow: Flow) -> simpy.Event:
        assert isinstance(flow, OfdmaFlow)
        if len(flow.gains) == 0:
            self._extend(flow, 64)
        return super().add_flow(flow)

    def _allocate(self) -> None:
        self._schedule(self)

    def _drain(self, flow: Flow, t0_s: float, t1_s: float) -> None:
        assert isinstance(flow, OfdmaFlow)
        flow.remaining_bits -= flow.share * (
            self._position(flow, t1_s) - self._position(flow, t0_s)
        )
        flow.rb_seconds += flow.share * (t1_s - t0_s)

    def _finish_time(self, flow: Flow) -> float:
        assert isinstance(flow, OfdmaFlow)
        if flow.share <= 0:
            return math.inf
        target = self._position(flow, self.env.now) + flow.remaining_bits / flow.share
        return max(self._time_at(flow, target), self.env.now)

    def mean_snr_over(self, flow: OfdmaFlow, t0_s: float, t1_s: float) -> float:
        """Time-average linear SNR of ``flow`` over ``[t0, t1]``."""
        if t1_s <= t0_s:
            return flow.mean_snr * float(flow.gains[0]) if len(flow.gains) else flow.mean_snr
        edges = np.arange(flow.k0, flow.k0 + len(flow.gains) + 1) * self.block_s
        lo = np.clip(edges[:-1], t0_s, t1_s)
        hi = np.clip(edges[1:], t0_s, t1_s)
        return float(flow.mean_snr * np.sum(flow.gains * (hi - lo)) / (t1_s - t0_s))

    def __repr__(self) -> str:
        return (
            f"OfdmaCarrier({self.name!r}, {self.num_rbs} RBs x {self.rb_bandwidth_hz / 1e3:g} "
            f"kHz, {self.scheduler}, {self.fading!r})"
        )
