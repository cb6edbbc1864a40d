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
- ``proportional_fair`` — sessions get their round-robin share; the FL
  transfers' round-robin budget is given, in every fading block, to the
  transfers with the highest r_i(b)/R̄_i (instantaneous rate over an EWMA of
  served rate with a window of ``pf_window_blocks``; each up to its cap),
  so transfers ride their fading peaks (multi-user diversity). This is the
  one scheduler that needs an event per fading block while two or more
  transfers are active.

Shares are fractional (time-averaged RBs); they always sum to at most N, so no
RB is double-booked.

A flow's rate in fading block b is ``share × f × rb_bandwidth × SE(SNR·|h_b|²)``
(FedDif eqs. (7)-(10); SE is Shannon or the CQI table, after PHY overhead; f
the direction's time fraction, 1 for FDD, the slot-pattern share for TDD).

Per-RB SNR of uplink flows under open-loop power control
(:mod:`channel_models.power_control`): ``SNR(M) = min(SNR_total/M, SNR_psd)``
with M the flow's share in RBs; it is recomputed, for the blocks ahead,
whenever the shares change. A power-limited flow is given at most the RBs at
which its mean per-RB SNR still reaches the lowest usable efficiency (what
link adaptation does), so it never holds RBs it cannot use. Other flows
(downlink, full-carrier uplink) have a fixed SNR. A multicast flow's SNR in a
block is the smallest over its receivers (each with its own fading). Fading is drawn per
flow from its own generator, vectorised, for a horizon of blocks ahead. All
active flows' per-RB bit curves are rows of one matrix on a common block grid,
so draining and finding the next completion are a few array operations per
event, whatever the number of flows; fading blocks create no events (the
completion instant is found by a vectorised search on the cumulative bits per RB,
which reads only the flows whose bound says they may end first; a wake-up at the
horizon's end extends it).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol

import numpy as np
import simpy

from channel_models.fading import BlockFading
from channel_models.registry import lookup
from channel_models.resource_groups import round_robin_group_rbs
from netfl.errors import LinkBudgetError
from netfl.radio.block_grid import HORIZON_BLOCKS, BlockGrid
from netfl.radio.columns import ColumnRule
from netfl.radio.proportional_fair import pf_average, pf_shares
from netfl.radio.schedulers import SCHEDULERS, uncapped_equal_share
from netfl.radio.sharing import Flow, SharedMedium, completion_tolerance_bits

__all__ = ["CARRIER_INTERFACE", "LinkPath", "OfdmaFlow", "OfdmaCarrier", "SCHEDULERS"]

#: what a network's parts use of a cell's carrier (tested; the cell that owns it uses
#: more)
CARRIER_INTERFACE = (
    "num_rbs",
    "efficiency",
    "fading",
    "flows",
    "held",
    "listen",
    "reachable",
    "reachable_all",
    "usable_caps",
    "set_cap",
    "withdraw",
    "refresh_paths",
    "rescale_snr",
)


@dataclass(eq=False)
class OfdmaFlow(Flow):
    """A transfer on an OFDMA carrier: its mean SNR, fading generator and accounting.

    While active, its remaining bits, share and accounting live in the
    carrier's arrays; they are written back here when it completes.
    """

    mean_snr: float = 1.0
    rng: np.random.Generator | None = None
    k0: int = 0
    rb_seconds: float = 0.0
    snr_seconds: float = 0.0  # ∫ SNR(t) dt from start to delivery, for the mean SNR
    airtime_s: float = 0.0  # time holding RBs (share > 0)
    #: power control: SNR of one RB if the UE put all its power into it (inf: no PC)
    snr_total: float = math.inf
    #: multicast: the mean SNR of every receiver (the flow's SNR is their block-wise min)
    multicast_snrs: np.ndarray | None = None
    #: the link ``(src, dst)`` the flow carries (None: background traffic)
    link: tuple | None = None
    #: SINR / SNR factor in its SNRs now (interference; 1: none)
    snr_scale: float = 1.0
    #: the cap asked for, before the power-limited one (``cap`` is their minimum)
    requested_cap: float = math.inf
    #: a moving UE's link (:class:`LinkPath`): its SNR terms per block along the path;
    #: the row's gains then hold fading × the block's per-RB SNR, its SNR scalar is 1
    path: LinkPath | None = None
    #: a path flow's fading gains from its first block on (the path's SNR multiplies them)
    fading: np.ndarray | None = None
    #: a path flow's share when its blocks ahead were last rated
    path_share: float = -1.0
    #: columns of G blocks: mean gains drawn ahead from ``rng`` (a chunk per draw call)
    drawn: np.ndarray | None = None


class LinkPath(Protocol):
    """The link of a flow whose SNR changes along a known path (a moving UE)."""

    def terms(self, blocks: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """``(per-RB SNR, SNR of all power in one RB)`` [linear] in each absolute fading
        block of ``blocks`` (interference included; the second inf without power
        control): the per-RB SNR of a share of M RBs is ``min(second/M, first)``."""
        ...


def _min_usable_snr(efficiency: Callable[[np.ndarray], np.ndarray]) -> float:
    """Smallest linear SNR with a positive efficiency (0 if every SNR > 0 has one)."""
    if efficiency(np.array([1e-12]))[0] > 0:
        return 0.0
    lo, hi = -120.0, 60.0  # dB
    for _ in range(60):
        mid = 0.5 * (lo + hi)
        if efficiency(np.array([10.0 ** (mid / 10.0)]))[0] > 0:
            hi = mid
        else:
            lo = mid
    return 10.0 ** (hi / 10.0)


class OfdmaCarrier(BlockGrid, SharedMedium):
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
        ``"round_robin"``, ``"fcfs"`` or ``"proportional_fair"``.
    pf_window_blocks : float
        Proportional fair: time constant of the served-rate average [blocks].
    time_fraction : float
        Share of time the carrier serves this direction (TDD slot pattern; 1 for FDD).
    rb_groups : ndarray, optional
        RBs in each resource-block group where round robin hands out whole groups
        (:func:`channel_models.resource_groups.round_robin_group_rbs`: ⌊groups/n⌋ per
        flow, the rest unused); None: any fraction of the RBs.
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
        pf_window_blocks: float = 100.0,
        time_fraction: float = 1.0,
        rb_groups: np.ndarray | None = None,
        aggregate_above_flows: int = 0,
    ):
        super().__init__(env, num_rbs)
        #: how the RBs are shared (:data:`netfl.radio.schedulers.SCHEDULERS`)
        self.scheduler = lookup(SCHEDULERS, scheduler, "scheduler")
        self.name = name
        self.num_rbs = int(num_rbs)
        self.rb_bandwidth_hz = float(rb_bandwidth_hz)
        self.fading = fading
        #: the grid's column [s]: one fading block, or G of them (:attr:`columns`)
        self.block_s = fading.coherence_time_s
        self.efficiency = efficiency
        #: many flows: how many blocks a column holds (a part: :mod:`netfl.radio.columns`)
        self.columns = ColumnRule(
            aggregate_above_flows, fading, efficiency, self.scheduler.per_block
        )
        self._n_multicast = 0
        self.time_fraction = float(time_fraction)
        #: whole groups under a scheduler that allocates them (None: fractional RBs)
        self.rb_groups = None
        if rb_groups is not None and self.scheduler.whole_rb_groups:
            self.rb_groups = np.asarray(rb_groups, dtype=float)
        #: bits one RB carries in one block per bit/s/Hz
        self._bit_scale = self.rb_bandwidth_hz * self.time_fraction * self.block_s
        self._min_usable_snr = _min_usable_snr(efficiency)
        self._peak_gain = fading.peak_gain(1e-9)
        self._n_pc = 0
        self._n_path = 0  # flows along a path (:class:`LinkPath`)
        self._pf_beta = 1.0 / float(pf_window_blocks)
        self._pf_block = 0  # absolute block up to which the PF averages are updated
        self._n_background = 0
        self._n_capped = 0
        # Row i < n belongs to self.flows[i]; column c is absolute block self._kb + c.
        self._kb = 0
        self._width = 0
        self._alloc_rows(8, HORIZON_BLOCKS)

    # -- API -------------------------------------------------------------------
    def send(
        self,
        size_bits: float,
        mean_snr: float,
        rng: np.random.Generator,
        cap_rbs: float = math.inf,
        background: bool = False,
        snr_total: float = math.inf,
        multicast_snrs: np.ndarray | None = None,
        link: tuple | None = None,
        snr_scale: float = 1.0,
        path: LinkPath | None = None,
    ) -> OfdmaFlow:
        """Start a flow; ``flow.done`` fires on delivery. ``background`` marks CUE traffic.

        ``path``: the link's SNR terms change along a known path (a moving UE): every
        fading block is rated at the path's terms of that block, re-rated from now on
        when the flow's share changes or :meth:`refresh_paths` is called — no event per
        change of the path; ``mean_snr``/``snr_total`` are then those of now and set the
        power-limited cap, which the caller keeps up to date (:meth:`set_cap`).

        ``mean_snr`` is the per-RB SNR without fading; with ``snr_total`` finite
        (open-loop power control) the per-RB SNR is ``min(snr_total/M, mean_snr)``
        for a share of M RBs. ``multicast_snrs``: one mean SNR per receiver.

        Raises :class:`~netfl.errors.LinkBudgetError` if even a fading peak exceeded
        with probability 1e-9 gives no rate (e.g. below the lowest CQI): such a
        transfer would never end.
        """
        if multicast_snrs is not None:
            multicast_snrs = np.asarray(multicast_snrs, dtype=float)
            mean_snr = float(multicast_snrs.min())
        requested_cap = float(cap_rbs)
        if path is None:  # (a path flow's cap is its caller's, kept by :meth:`set_cap`)
            cap_rbs = self._usable_cap(requested_cap, snr_total)
        if size_bits > 0 and not self.reachable(mean_snr, snr_total):
            raise LinkBudgetError(
                f"{self.name}: a transfer with mean SNR {10 * math.log10(max(mean_snr, 1e-300)):.1f} dB "
                "can never be delivered (no rate even at a 1e-9 fading peak); shrink "
                "cell.radius_m, raise the transmit power or change the channel profile"
            )
        flow = OfdmaFlow(
            float(size_bits),
            float(cap_rbs),
            self.env.event(),
            mean_snr=float(mean_snr),
            rng=rng,
            background=background,
            snr_total=float(snr_total),
            multicast_snrs=multicast_snrs,
            link=link,
            snr_scale=float(snr_scale),
            requested_cap=requested_cap,
            path=path,
        )
        self.add_flow(flow)
        return flow

    def _usable_cap(self, cap_rbs: float, snr_total: float) -> float:
        """A power-limited flow holds at most the RBs at which its mean per-RB SNR still
        reaches the lowest usable efficiency."""
        if math.isfinite(snr_total) and self._min_usable_snr > 0:
            usable_rbs = max(snr_total / self._min_usable_snr, 1.0)
            if usable_rbs < self.num_rbs:  # else the cap never binds: keep the fast path
                return min(cap_rbs, usable_rbs)
        return cap_rbs

    @property
    def min_usable_snr(self) -> float:
        """The smallest linear SNR with a positive efficiency (0: every SNR > 0 has one)."""
        return self._min_usable_snr

    def reachable(self, mean_snr: float, snr_total: float = math.inf) -> bool:
        """Whether a transfer at this mean per-RB SNR can ever be delivered: some rate at
        a fading peak exceeded with probability 1e-9 (without fading: at the mean SNR).
        Below it — e.g. under the lowest CQI — a scheduler never serves the UE: it is
        *starved* (``snr_total``: power control's SNR of all power in one RB)."""
        return bool(self.reachable_all(np.array([mean_snr]), np.array([snr_total]))[0])

    def reachable_all(self, mean_snrs: np.ndarray, snr_totals: np.ndarray) -> np.ndarray:
        """:meth:`reachable` of each pair of SNRs (vectorised)."""
        best = np.minimum(mean_snrs, snr_totals) * self._peak_gain
        return self.efficiency(best) > 0

    # -- the block grid ----------------------------------------------------------
    def _draw(self, flow: OfdmaFlow, num_blocks: int) -> np.ndarray:
        """Fading gains of the next ``num_blocks`` blocks of ``flow``.

        Multicast: the gain is the receivers' block-wise minimum of SNR_k·|h_k|²,
        relative to the flow's reference SNR (the weakest mean SNR).
        """
        if flow.multicast_snrs is None:
            if self._g > 1:  # (a column's mean gain: :mod:`channel_models.block_aggregation`)
                return self.columns.mean_gains(flow, self._g, num_blocks)
            return self.fading.sample(flow.rng, num_blocks)
        per_rx = self.fading.sample(flow.rng, (flow.multicast_snrs.size, num_blocks))
        return (flow.multicast_snrs[:, None] * per_rx).min(axis=0) / flow.mean_snr

    def _bits_per_rb(self, snr: np.ndarray, gains: np.ndarray) -> np.ndarray:
        """Bits one RB carries in each column at per-RB SNR ``snr`` and fading ``gains``
        (columns of G blocks: the blocks' mean efficiency given their mean gain)."""
        return self._bit_scale * self.columns.efficiency(self._g)(snr * gains)

    # -- many flows: fading blocks G at a time ---------------------------------------
    def _target_g(self) -> int:
        """Blocks per column for the flows now (:meth:`ColumnRule.target`)."""
        n = len(self.flows)
        return self.columns.target(
            self._g,
            self._share[:n],
            self._rem[:n],
            self._snr[:n],
            self._bit_scale / self._g,
            bool(self._n_path or self._n_multicast),
            self._horizon_due(self.env.now),
        )

    def _set_aggregate(self, g: int) -> None:
        """Columns of ``g`` fading blocks from now on (:meth:`BlockGrid._regrid`)."""
        for f in self.flows:  # (gains drawn ahead for the old G: not used)
            f.drawn = None
        self._g = g
        self.block_s = g * self.fading.coherence_time_s
        self._bit_scale = self.rb_bandwidth_hz * self.time_fraction * self.block_s

    # -- SharedMedium hooks ------------------------------------------------------
    def _insert_flow(self, flow: Flow) -> None:
        assert isinstance(flow, OfdmaFlow)
        special = flow.multicast_snrs is not None or flow.path is not None
        if self._g > 1 and (special or not self.flows):  # (block by block again)
            self._regrid(1)
        flow.k0 = int(math.floor(self.env.now / self.block_s))
        self._n_multicast += int(flow.multicast_snrs is not None)
        if self.scheduler.per_block:
            self._pf_catch_up()  # the others' averages up to now; the new one starts here
        n = len(self.flows)
        if n == 0:
            self._kb, self._width = flow.k0, 0
            self._grow(HORIZON_BLOCKS)
        else:
            self._ensure(self.env.now)
        if n == self._rem.shape[0]:  # more rows
            self._add_rows()
        offset = flow.k0 - self._kb
        snr0 = min(flow.mean_snr, flow.snr_total)  # until its first share is known
        g = self._draw(flow, self._width - offset)
        self._gains[n, :offset] = 0.0  # before the flow starts: no SNR, no bits
        self._bits[n, :offset] = 0.0
        if flow.path is not None:  # (its SNR per block in the gains, scalars neutral)
            flow.fading, flow.path_share = g, 0.0
            g = g * self._path_snr(flow, flow.k0, self._kb + self._width, 0.0)
            snr0, self._n_path = 1.0, self._n_path + 1
        bits = self._bits_per_rb(snr0, g)
        w = self._width
        self._gains[n, offset:w] = g
        self._bits[n, offset:w] = bits
        # (sums of the flow's own contiguous arrays: a row of the grid is strided)
        self._cum[n, : offset + 1] = self._cumg[n, : offset + 1] = 0.0
        self._cum[n, offset + 1 : w + 1] = np.cumsum(bits)
        self._cumg[n, offset + 1 : w + 1] = self.block_s * np.cumsum(g)
        self._bmax[n] = bits.max(initial=0.0)
        self._rem[n] = flow.remaining_bits
        self._size[n] = flow.size_bits
        self._n_capped += int(math.isfinite(flow.cap))
        self._cap[n] = flow.cap
        self._arrival[n] = flow.arrival
        self._snr[n] = snr0
        path = flow.path is not None
        self._snr_total[n] = math.inf if path else flow.snr_total
        self._snr_psd[n] = 1.0 if path else flow.mean_snr
        self._snracc[n] = self._air[n] = 0.0
        self._n_pc += int(math.isfinite(self._snr_total[n]))
        self._rbs[n] = self._share[n] = 0.0
        self._avg[n] = 1.0  # a new transfer has served nothing yet: top PF priority
        self._bg[n] = float(flow.background)
        self._n_background += int(flow.background)
        self.flows.append(flow)
        self._gstart[n] = self._gain_integral(n, self.env.now)

    def _allocate(self) -> float:
        session_total = self._allocate_shares()
        if self._n_pc:
            self._apply_power_control()
        if self._n_path:
            rows = [
                i
                for i, f in enumerate(self.flows)
                if f.path is not None and f.path_share != self._share[i]
            ]
            if rows:
                self._rerate_paths(np.array(rows))
        return session_total

    # -- flows along a path ------------------------------------------------------
    def _path_snr(self, flow: OfdmaFlow, k0: int, k1: int, share: float) -> np.ndarray:
        """Per-RB SNR of path ``flow`` in absolute blocks [k0, k1) at a share of
        ``share`` RBs: ``min(total/M, psd)`` (power control), the path's terms."""
        psd, total = flow.path.terms(np.arange(k0, k1))
        if share > 0:
            return np.minimum(np.divide(total, share), psd)
        return np.minimum(psd, total)

    def _extend_paths(self, w0: int, w1: int) -> None:
        """Columns [w0, w1) were just drawn: path rows keep their fading and carry their
        path's SNR in them."""
        for i, f in enumerate(self.flows):
            if f.path is not None:
                g = self._gains[i, w0:w1]
                f.fading = np.concatenate([f.fading, g])
                k0 = self._kb + w0
                g *= self._path_snr(f, k0, self._kb + w1, float(self._share[i]))

    def _rerate_paths(self, rows: np.ndarray) -> None:
        """Path rows ``rows`` are rated again from the current block on, at their share
        now and their paths' terms now (the SNR integral so far banked at the old)."""
        now = self.env.now
        self._ensure(now)
        w = self._width
        c = min(max(int(math.floor(now / self.block_s + 1e-9)) - self._kb, 0), w - 1)
        self._snracc[rows] += self._gain_integrals(rows, now) - self._gstart[rows]
        k0, k1 = self._kb + c, self._kb + w
        for i in rows:
            f = self.flows[i]
            f.path_share = float(self._share[i])
            fade = f.fading[k0 - f.k0 : k1 - f.k0]
            self._gains[i, c:w] = fade * self._path_snr(f, k0, k1, f.path_share)
        bits = self._bits_per_rb(self._snr[rows, None], self._gains[rows, c:w])
        self._bits[rows, c:w] = bits
        self._cum[rows, c + 1 : w + 1] = self._cum[rows, c : c + 1] + bits.cumsum(axis=1)
        self._bound_rows(rows, c)
        self._cumg[rows, c + 1 : w + 1] = self._cumg[rows, c : c + 1] + self.block_s * (
            self._gains[rows, c:w].cumsum(axis=1)
        )
        self._gstart[rows] = self._gain_integrals(rows, now)

    def refresh_paths(self, flows: list[OfdmaFlow]) -> None:
        """Path flows' terms changed from now on (interference elsewhere): re-rate their
        blocks ahead and find the next completion again."""
        if not flows:
            return
        self._advance()
        index = {id(f): i for i, f in enumerate(self.flows)}
        self._rerate_paths(np.array([index[id(f)] for f in flows]))
        if self._flush_pending:
            self._dirty = True
        else:
            self._reschedule(flows_changed=True)

    def set_cap(self, flow: OfdmaFlow, cap_rbs: float) -> None:
        """An active flow's cap [RBs] is ``cap_rbs`` from now (a moving UE's power-limited
        RBs, kept up to date by its transfer): re-allocated at this instant."""
        if cap_rbs == flow.cap:
            return
        self._advance()
        i = next(k for k, f in enumerate(self.flows) if f is flow)
        self._n_capped += int(math.isfinite(cap_rbs)) - int(math.isfinite(flow.cap))
        flow.cap = self._cap[i] = float(cap_rbs)
        if self._flush_pending:
            self._dirty = True
        else:
            self._reschedule(flows_changed=True)

    def usable_caps(self, requested_cap: float, snr_totals: np.ndarray) -> np.ndarray:
        """The RBs a power-limited flow may hold at each of ``snr_totals`` (the cap
        :meth:`send` gives a flow at that SNR), vectorised."""
        totals = np.asarray(snr_totals, dtype=float)
        if self._min_usable_snr <= 0:
            return np.full(totals.shape, float(requested_cap))
        with np.errstate(invalid="ignore"):
            usable = np.maximum(totals / self._min_usable_snr, 1.0)
        binding = np.isfinite(totals) & (usable < self.num_rbs)
        return np.where(binding, np.minimum(requested_cap, usable), float(requested_cap))

    def _apply_power_control(self) -> None:
        """Per-RB SNR of power-controlled flows for their new shares, for the blocks ahead."""
        n = len(self.flows)
        share = self._share[:n]
        pc = np.isfinite(self._snr_total[:n]) & (share > 0)
        if not pc.any():
            return
        new = np.minimum(self._snr_total[:n] / np.where(pc, share, 1.0), self._snr_psd[:n])
        old = self._snr[:n]
        rows = (pc & (np.abs(new - old) > 1e-12 * old)).nonzero()[0]
        if rows.size:
            self._rerate(rows, new[rows])

    def rescale_snr(self, flows: list[OfdmaFlow], scales: np.ndarray) -> None:
        """Set active unicast flows' SNR factor (interference changed elsewhere): their mean
        and power-control SNRs become base × ``scales`` from now on; the bits before now
        were carried at the old rates, the blocks ahead are re-rated, and the next
        completion is found again."""
        if not flows:
            return
        scales = np.asarray(scales, dtype=float)
        ratio = scales / np.array([f.snr_scale for f in flows])
        self.relink(
            flows,
            np.array([f.mean_snr for f in flows]) * ratio,
            np.array([f.snr_total for f in flows]) * ratio,
            scales,
        )

    def relink(
        self,
        flows: list[OfdmaFlow],
        mean_snrs: np.ndarray,
        snr_totals: np.ndarray,
        scales: np.ndarray,
    ) -> None:
        """Active unicast flows' link changed (interference elsewhere, or their UE moved):
        from now on their per-RB and power-control SNRs are ``mean_snrs`` / ``snr_totals``
        (SINR factor ``scales`` included); the bits before now were carried at the old
        rates, the blocks ahead are re-rated, and the next completion is found again."""
        if not flows:
            return
        self._advance()  # (the bits up to now at the old rates)
        index = {id(f): i for i, f in enumerate(self.flows)}
        rows = np.array([index[id(f)] for f in flows])
        mean_snrs = np.asarray(mean_snrs, dtype=float)
        snr_totals = np.asarray(snr_totals, dtype=float)
        for f, sc, m, t in zip(
            flows, np.asarray(scales, float), mean_snrs, snr_totals, strict=True
        ):
            f.snr_scale, f.mean_snr, f.snr_total = float(sc), float(m), float(t)
        self._n_pc += int(np.isfinite(snr_totals).sum() - np.isfinite(self._snr_total[rows]).sum())
        self._snr_psd[rows] = mean_snrs
        self._snr_total[rows] = snr_totals
        for f, r in zip(flows, rows, strict=True):  # (the power-limited cap follows)
            cap = self._usable_cap(f.requested_cap, f.snr_total)
            if cap != f.cap:
                self._n_capped += int(math.isfinite(cap)) - int(math.isfinite(f.cap))
                f.cap = self._cap[r] = cap
        share = self._share[rows]
        total, psd = self._snr_total[rows], self._snr_psd[rows]
        pc = np.isfinite(total) & (share > 0)
        new = np.where(
            pc, np.minimum(total / np.where(pc, share, 1.0), psd), np.minimum(psd, total)
        )
        self._rerate(rows, new)
        if self._flush_pending:  # (this instant's re-allocation comes anyway)
            self._dirty = True
        else:
            self._reschedule(flows_changed=True)

    def withdraw(self, flow: OfdmaFlow) -> float:
        """Take an active flow off the carrier now (its UE handed over): its accounting up
        to now is written to it as on delivery, the others are re-allocated at this
        instant; returns its bits not yet delivered. Its ``done`` never fires."""
        self._advance()
        i = next(k for k, f in enumerate(self.flows) if f is flow)
        flow.remaining_bits = max(float(self._rem[i]), 0.0)
        self._bank(i)
        self._defer_reschedule()
        return flow.remaining_bits

    def progress(self, flow: Flow) -> tuple[float, float]:
        """An active flow's bits delivered and airtime (time holding RBs) until now."""
        i = next((k for k, f in enumerate(self.flows) if f is flow), None)
        if i is None:  # (finished or withdrawn: its banked accounting)
            assert isinstance(flow, OfdmaFlow)
            return flow.size_bits - flow.remaining_bits, flow.airtime_s
        self._advance()
        return flow.size_bits - max(float(self._rem[i]), 0.0), float(self._air[i])

    def rb_seconds(self, flow: OfdmaFlow) -> float:
        """A flow's RBs held × time [RB·s] until now (finished or withdrawn: banked)."""
        i = next((k for k, f in enumerate(self.flows) if f is flow), None)
        if i is None:
            return flow.rb_seconds
        self._advance()
        return float(self._rbs[i])

    def _bank(self, i: int) -> None:
        """Write row ``i``'s accounting to its flow and remove the row (swap with the last)."""
        f = self.flows[i]
        assert isinstance(f, OfdmaFlow)
        f.rb_seconds, f.share = float(self._rbs[i]), 0.0
        self._n_background -= int(f.background)
        self._n_capped -= int(math.isfinite(f.cap))
        self._n_pc -= int(math.isfinite(self._snr_total[i]))
        self._n_path -= int(f.path is not None)
        self._n_multicast -= int(f.multicast_snrs is not None)
        f.airtime_s = float(self._air[i])
        f.snr_seconds = float(self._snracc[i]) + float(self._snr[i]) * (
            self._gain_integral(i, self.env.now) - self._gstart[i]
        )
        last = len(self.flows) - 1
        if i != last:
            self.flows[i] = self.flows[last]
            self._move_row(last, i)
        self.flows.pop()

    def _rerate(self, rows: np.ndarray, new: np.ndarray) -> None:
        """Rows ``rows`` carry per-RB SNR ``new`` from now on: the SNR integral so far is
        banked at the old SNR; bits and cumulative bits are recomputed from the current
        block on."""
        old = self._snr
        now = self.env.now
        self._ensure(now)
        g_now = self._gain_integrals(rows, now)
        self._snracc[rows] += old[rows] * (g_now - self._gstart[rows])
        self._gstart[rows] = g_now
        self._snr[rows] = new
        w = self._width
        c = min(max(int(math.floor(now / self.block_s + 1e-9)) - self._kb, 0), w - 1)
        bits = self._bits_per_rb(new[:, None], self._gains[rows, c:w])
        self._bits[rows, c:w] = bits
        self._cum[rows, c + 1 : w + 1] = self._cum[rows, c : c + 1] + bits.cumsum(axis=1)
        self._bound_rows(rows, c)

    def _allocate_shares(self) -> float:
        n = len(self.flows)
        if self.scheduler.base == "arrival":
            shares, session_total = self._first_come_first_served(self._cap[:n], self._arrival[:n])
        elif not self._n_capped and len(self._demand_counts) < 8:
            # all flows uncapped: sessions grouped by demand plus one group of n flows
            share, session_total = uncapped_equal_share(self.capacity, self._demand_counts, n)
            if n and self.rb_groups is not None:
                share = round_robin_group_rbs(self.rb_groups, n, n * share)
            if n:
                if self.scheduler.per_block:  # (the averages credit the shares of the blocks
                    # gone, so they are brought up to now before the shares change)
                    self._share[:n] = self._proportional_fair(np.full(n, share))
                else:
                    self._share[:n] = share
            return session_total
        else:
            shares, session_total = self._equal_share(self._cap[:n])
            if n and self.rb_groups is not None and not self._n_capped:
                shares = np.full(n, round_robin_group_rbs(self.rb_groups, n, shares.sum()))
            if self.scheduler.per_block and n > 0:
                shares = self._proportional_fair(shares)
        self._share[:n] = shares
        return session_total

    def _block_now(self) -> int:
        """Absolute index of the fading block the clock is in (boundary-safe)."""
        return int(math.floor(self.env.now / self.block_s + 1e-9))

    def _pf_catch_up(self) -> None:
        """Update the served-rate averages over the blocks since the last decision."""
        n = len(self.flows)
        block = self._block_now()
        gap = block - self._pf_block
        if gap > 0 and n:
            self._ensure(self.env.now)
            c1 = block - self._kb
            c0 = max(c1 - gap, 0)
            served = self._bits[:n, c0:c1].T
            self._avg[:n] = pf_average(
                self._avg[:n], served * (self._share[:n] / self.block_s), self._pf_beta, gap
            )
        self._pf_block = block

    def _proportional_fair(self, rr_shares: np.ndarray) -> np.ndarray:
        """The flows' round-robin budget, handed out by r/R̄ in the current block."""
        n = len(self.flows)
        self._ensure(self.env.now)
        self._pf_catch_up()
        block = self._block_now()
        rate = self._bits[:n, block - self._kb] / self.block_s
        return pf_shares(
            float(rr_shares.sum()), rate, self._avg[:n], self._cap[:n], self._arrival[:n]
        )

    def _next_change_s(self) -> float:
        """Proportional fair re-decides at every block boundary while flows compete."""
        if not self.scheduler.per_block or len(self.flows) < 2:
            return math.inf
        return (self._block_now() + 1) * self.block_s

    def _shares(self) -> np.ndarray:
        return self._share[: len(self.flows)]

    def _flow_share_totals(self) -> tuple[float, float]:
        n = len(self.flows)
        total = float(self._share[:n].sum())
        if not self._n_background:
            return 0.0, total
        bg = float(self._share[:n][self._bg[:n] > 0].sum())
        return bg, total - bg

    def _drain_all(self, t0_s: float, t1_s: float) -> None:
        n = len(self.flows)
        share = self._share[:n]
        self._rem[:n] -= share * (self._positions(t1_s) - self._positions(t0_s))
        self._rbs[:n] += share * (t1_s - t0_s)
        self._air[:n] += (share > 0) * (t1_s - t0_s)

    def _pop_finished(self) -> list[Flow]:
        n = len(self.flows)
        now = self.env.now
        j = min(max(int(math.floor(now / self.block_s)) - self._kb, 0), self._width - 1)
        rate = self._share[:n] * self._bits[:n, j] / self.block_s
        done = (self._rem[:n] <= completion_tolerance_bits(self._size[:n], rate, now)).nonzero()[0]
        finished = []
        for i in sorted(done.tolist(), reverse=True):  # swap-remove from the back
            f = self.flows[i]
            f.remaining_bits = 0.0
            self._bank(i)
            finished.append(f)
        finished.sort(key=lambda f: f.arrival)
        return finished

    def mean_snr(self, flow: OfdmaFlow, airtime_s: float) -> float:
        """Time-average linear SNR of a finished flow over its airtime."""
        return flow.snr_seconds / airtime_s if airtime_s > 0 else flow.mean_snr

    def __repr__(self) -> str:
        return (
            f"OfdmaCarrier({self.name!r}, {self.num_rbs} RBs x {self.rb_bandwidth_hz / 1e3:g} "
            f"kHz, {self.scheduler.name}, {self.fading!r})"
        )
