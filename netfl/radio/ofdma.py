"""OFDMA carriers: resource blocks shared by a scheduler, rates from faded SNR.

A carrier has ``num_rbs`` resource blocks of ``rb_bandwidth_hz``. Active FL
transfers (flows) and background CUE sessions hold shares of the RBs, set by
the scheduler whenever something starts or ends. Shares are fractional
(time-averaged RBs); they always sum to at most N, so no RB is double-booked.

The carrier is a :class:`~netfl.radio.sharing.SharedMedium` that *has* three parts,
each behind the interface it declares:

- a **block grid** (:class:`~netfl.radio.block_grid.BlockGrid`): every active flow's
  faded bits per RB, block by block, its remaining bits and accounting; draining and
  finding the next completion are a few array operations per event, whatever the
  number of flows, and fading blocks create no events;
- a **scheduler** (:mod:`netfl.radio.schedulers`): the flows' and sessions' shares at
  each event, and when it next decides by itself (proportional fair: every block);
- a **power-control policy** (:class:`~netfl.radio.rb_power.RbPowerControl`): the
  per-RB SNR of a power-controlled uplink flow at its share, and the RBs a
  power-limited flow can use.

At every event the mechanism (:class:`~netfl.radio.sharing.SharedMedium`) drains the
grid at the old shares, asks the scheduler for new ones, lets power control re-rate
the blocks ahead, and searches the grid for the next completion.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from typing import Any

import numpy as np
import simpy

from channel_models.fading import BlockFading
from netfl.core.usercode import user_code_error
from netfl.errors import LinkBudgetError
from netfl.radio.block_grid import ROW_NAMES, BlockGrid, LinkPath
from netfl.radio.columns import ColumnRule
from netfl.radio.ofdma_flow import OfdmaFlow
from netfl.radio.rb_power import RbPowerControl
from netfl.radio.schedulers import (
    SCHEDULERS,
    Demands,
    Scheduler,
    allocation_problem,
    build_scheduler,
)
from netfl.radio.sharing import Flow, SharedMedium

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
    scheduler : str or Scheduler
        A name of :data:`~netfl.radio.schedulers.SCHEDULERS` (built with
        ``scheduler_options``), or a scheduler of this carrier's own.
    scheduler_options : mapping, optional
        The named scheduler's options (its ``Config``; e.g. proportional fair's
        ``window_blocks``, the time constant of the served-rate average [blocks]).
    time_fraction : float
        Share of time the carrier serves this direction (TDD slot pattern; 1 for FDD).
    rb_groups : ndarray, optional
        RBs in each resource-block group where the scheduler hands out whole groups
        (:attr:`Scheduler.whole_rb_groups`); None: any fraction of the RBs.
    aggregate_above_flows : int
        At least this many flows before a column may hold several fading blocks
        (:class:`~netfl.radio.columns.ColumnRule`; 0: never).
    """

    def __init__(
        self,
        env: simpy.Environment,
        name: str,
        num_rbs: int,
        rb_bandwidth_hz: float,
        fading: BlockFading,
        efficiency: Callable[[np.ndarray], np.ndarray],
        scheduler: str | Scheduler = "round_robin",
        scheduler_options: Mapping[str, Any] | None = None,
        time_fraction: float = 1.0,
        rb_groups: np.ndarray | None = None,
        aggregate_above_flows: int = 0,
    ):
        super().__init__(env, num_rbs)
        if isinstance(scheduler, str):
            scheduler = build_scheduler(scheduler, scheduler_options)
        #: how the RBs are shared (a strategy: :mod:`netfl.radio.schedulers`)
        self.scheduler = scheduler
        self.name = name
        self.num_rbs = int(num_rbs)
        self.rb_bandwidth_hz = float(rb_bandwidth_hz)
        self.fading = fading
        self.efficiency = efficiency
        self.time_fraction = float(time_fraction)
        #: whole groups under a scheduler that allocates them (None: fractional RBs)
        self.rb_groups = None
        if rb_groups is not None and scheduler.whole_rb_groups:
            self.rb_groups = np.asarray(rb_groups, dtype=float)
        clash = sorted(set(scheduler.flow_state) & set(ROW_NAMES))
        if clash:
            raise user_code_error(
                type(scheduler),
                f"scheduler {scheduler.name!r}: flow_state rows {', '.join(clash)} are the "
                "grid's own: name them otherwise",
            )
        #: power over the RBs a flow holds (:mod:`netfl.radio.rb_power`)
        self.power = RbPowerControl(efficiency, self.num_rbs)
        #: the flows' faded bits block by block (:mod:`netfl.radio.block_grid`)
        self.grid = BlockGrid(
            self.flows,
            fading,
            self.rb_bandwidth_hz * self.time_fraction,
            ColumnRule(aggregate_above_flows, fading, efficiency, scheduler.per_block),
            scheduler.flow_state,
        )
        scheduler.attach(self.grid)
        #: netfl's own scheduler (a plugin's answers are checked at every allocation)
        self._scheduler_trusted = type(scheduler).__module__.startswith("netfl.radio.schedulers")
        self._peak_gain = fading.peak_gain(1e-9)
        self._n_pc = 0  # flows under power control
        self._n_background = 0
        self._n_capped = 0

    @property
    def block_s(self) -> float:
        """The grid's column [s]: one fading block, or G of them."""
        return self.grid.block_s

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
        block_gains: Callable[[int, int], np.ndarray] | None = None,
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
        ``block_gains``: its link's fading per absolute block (fading drawn per link,
        :mod:`netfl.radio.link_fading`) instead of draws from ``rng``.

        Raises :class:`~netfl.errors.LinkBudgetError` if even a fading peak exceeded
        with probability 1e-9 gives no rate (e.g. below the lowest CQI): such a
        transfer would never end.
        """
        if multicast_snrs is not None:
            multicast_snrs = np.asarray(multicast_snrs, dtype=float)
            mean_snr = float(multicast_snrs.min())
        requested_cap = float(cap_rbs)
        if path is None:  # (a path flow's cap is its caller's, kept by :meth:`set_cap`)
            cap_rbs = self.power.usable_cap(requested_cap, snr_total)
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
            block_gains=block_gains,
        )
        self.add_flow(flow)
        return flow

    @property
    def min_usable_snr(self) -> float:
        """The smallest linear SNR with a positive efficiency (0: every SNR > 0 has one)."""
        return self.power.min_usable_snr

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

    def usable_caps(self, requested_cap: float, snr_totals: np.ndarray) -> np.ndarray:
        """The RBs a power-limited flow may hold at each of ``snr_totals`` (the cap
        :meth:`send` gives a flow at that SNR), vectorised."""
        return self.power.usable_caps(requested_cap, snr_totals)

    def _row(self, flow: Flow) -> int | None:
        return next((k for k, f in enumerate(self.flows) if f is flow), None)

    def _changed_now(self) -> None:
        """Something of the active flows changed at this instant: re-allocate (with the
        instant's pending re-allocation, if one is due)."""
        if self._flush_pending:
            self._dirty = True
        else:
            self._reschedule(flows_changed=True)

    def refresh_paths(self, flows: list[OfdmaFlow]) -> None:
        """Path flows' terms changed from now on (interference elsewhere): re-rate their
        blocks ahead and find the next completion again."""
        if not flows:
            return
        self._advance()
        index = {id(f): i for i, f in enumerate(self.flows)}
        self.grid.rerate_paths(np.array([index[id(f)] for f in flows]), self.env.now)
        self._changed_now()

    def set_cap(self, flow: OfdmaFlow, cap_rbs: float) -> None:
        """An active flow's cap [RBs] is ``cap_rbs`` from now (a moving UE's power-limited
        RBs, kept up to date by its transfer): re-allocated at this instant."""
        if cap_rbs == flow.cap:
            return
        i = self._row(flow)
        if i is None:  # (finished or withdrawn: nothing to re-allocate)
            flow.cap = float(cap_rbs)
            return
        self._advance()
        self._n_capped += int(math.isfinite(cap_rbs)) - int(math.isfinite(flow.cap))
        flow.cap = self.grid.cap[i] = float(cap_rbs)
        self._changed_now()

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
        grid = self.grid
        index = {id(f): i for i, f in enumerate(self.flows)}
        rows = np.array([index[id(f)] for f in flows])
        mean_snrs = np.asarray(mean_snrs, dtype=float)
        snr_totals = np.asarray(snr_totals, dtype=float)
        for f, sc, m, t in zip(
            flows, np.asarray(scales, float), mean_snrs, snr_totals, strict=True
        ):
            f.snr_scale, f.mean_snr, f.snr_total = float(sc), float(m), float(t)
        self._n_pc += int(np.isfinite(snr_totals).sum() - np.isfinite(grid.snr_total[rows]).sum())
        grid.snr_psd[rows] = mean_snrs
        grid.snr_total[rows] = snr_totals
        for f, r in zip(flows, rows, strict=True):  # (the power-limited cap follows)
            cap = self.power.usable_cap(f.requested_cap, f.snr_total)
            if cap != f.cap:
                self._n_capped += int(math.isfinite(cap)) - int(math.isfinite(f.cap))
                f.cap = grid.cap[r] = cap
        new = self.power.per_rb_snr(grid.snr_total[rows], grid.snr_psd[rows], grid.share[rows])
        grid.rerate(rows, new, self.env.now)
        self._changed_now()

    def withdraw(self, flow: OfdmaFlow) -> float:
        """Take an active flow off the carrier now (its UE handed over): its accounting up
        to now is written to it as on delivery, the others are re-allocated at this
        instant; returns its bits not yet delivered. Its ``done`` never fires."""
        i = self._row(flow)
        if i is None:  # (finished this instant, or withdrawn before: none left to take)
            return 0.0 if flow.done.triggered else max(flow.remaining_bits, 0.0)
        self._advance()
        flow.remaining_bits = max(float(self.grid.rem[i]), 0.0)
        self._bank(i)
        self._defer_reschedule()
        return flow.remaining_bits

    def progress(self, flow: Flow) -> tuple[float, float]:
        """An active flow's bits delivered and airtime (time holding RBs) until now."""
        i = self._row(flow)
        if i is None:  # (finished or withdrawn: its banked accounting)
            assert isinstance(flow, OfdmaFlow)
            return flow.size_bits - flow.remaining_bits, flow.airtime_s
        self._advance()
        return flow.size_bits - max(float(self.grid.rem[i]), 0.0), float(self.grid.air[i])

    def rb_seconds(self, flow: OfdmaFlow) -> float:
        """A flow's RBs held × time [RB·s] until now (finished or withdrawn: banked)."""
        i = self._row(flow)
        if i is None:
            return flow.rb_seconds
        self._advance()
        return float(self.grid.rbs[i])

    def mean_snr(self, flow: OfdmaFlow, airtime_s: float) -> float:
        """Time-average linear SNR of a finished flow over its airtime."""
        return flow.snr_seconds / airtime_s if airtime_s > 0 else flow.mean_snr

    # -- SharedMedium hooks ------------------------------------------------------
    def _insert_flow(self, flow: Flow) -> None:
        assert isinstance(flow, OfdmaFlow)
        now = self.env.now
        self.scheduler.flow_arriving(now)
        self.grid.insert(flow, now)
        self._n_capped += int(math.isfinite(flow.cap))
        self._n_pc += int(flow.path is None and math.isfinite(flow.snr_total))
        self._n_background += int(flow.background)

    def _bank(self, i: int) -> None:
        """Write row ``i``'s accounting to its flow and take it off the grid."""
        f = self.flows[i]
        self._n_background -= int(f.background)
        self._n_capped -= int(math.isfinite(f.cap))
        self._n_pc -= int(math.isfinite(self.grid.snr_total[i]))
        self.grid.bank(i, self.env.now)

    def _allocate(self) -> float:
        grid, n, now = self.grid, len(self.flows), self.env.now
        shares, session_total = self.scheduler.allocate(
            Demands(
                self.capacity,
                self._demand_counts,
                self.sessions,
                grid.cap[:n],
                grid.arrival[:n],
                bool(self._n_capped),
                self.rb_groups,
                now,
            )
        )
        if not self._scheduler_trusted:
            self._check_shares(shares, session_total, grid.cap[:n])
        grid.share[:n] = shares
        if self._n_pc:
            self.power.apply(grid, now)
        if grid.n_path:
            rows = [
                i
                for i, f in enumerate(self.flows)
                if f.path is not None and f.path_share != grid.share[i]
            ]
            if rows:
                grid.rerate_paths(np.array(rows), now)
        return session_total

    def _check_shares(self, shares: Any, sessions: float, caps: np.ndarray) -> None:
        """A scheduler not netfl's own answered well (:func:`allocation_problem`), else
        one line naming it (:func:`~netfl.core.usercode.user_code_error`)."""
        problem = allocation_problem(shares, sessions, caps, self.capacity)
        if problem:
            name = self.scheduler.name
            raise user_code_error(type(self.scheduler), f"scheduler {name!r}: allocate: {problem}")

    def _next_change_s(self) -> float:
        """The scheduler's own next decision (proportional fair: the next block boundary
        while flows compete); a plugin's that is not after now is refused."""
        t = self.scheduler.next_decision_s(self.env.now)
        if not self._scheduler_trusted and not t > self.env.now:
            raise user_code_error(
                type(self.scheduler),
                f"scheduler {self.scheduler.name!r}: next_decision_s gave {t!r}, not after "
                f"now ({self.env.now!r})",
            )
        return t

    def _min_finish_time(self) -> float:
        return self.grid.min_finish_time(self.env.now)

    def _shares(self) -> np.ndarray:
        return self.grid.share[: len(self.flows)]

    def _flow_share_totals(self) -> tuple[float, float]:
        n = len(self.flows)
        share = self.grid.share[:n]
        total = float(share.sum())
        if not self._n_background:
            return 0.0, total
        bg = float(share[self.grid.bg[:n] > 0].sum())
        return bg, total - bg

    def _drain_all(self, t0_s: float, t1_s: float) -> None:
        self.grid.drain(t0_s, t1_s)

    def _pop_finished(self) -> list[Flow]:
        finished = []
        for i in self.grid.finished(self.env.now):  # (last first: swap-removes)
            f = self.flows[i]
            f.remaining_bits = 0.0
            self._bank(i)
            finished.append(f)
        finished.sort(key=lambda f: f.arrival)
        return finished

    def __repr__(self) -> str:
        return (
            f"OfdmaCarrier({self.name!r}, {self.num_rbs} RBs x {self.rb_bandwidth_hz / 1e3:g} "
            f"kHz, {self.scheduler.name}, {self.fading!r})"
        )
