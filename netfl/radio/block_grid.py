"""The block grid of an OFDMA carrier: every active flow's faded bits on one array.

Row i belongs to the carrier's i-th active flow; column c is the absolute fading
block ``kb + c``. ``bits[i, c]`` is what one RB carries for flow i in block c, ``cum``
its running sum (bits per RB since column 0), ``gains`` and ``cumg`` the fading gains
and their time integral (for the mean SNR). A flow that holds a constant share x
between two events drains ``x · (pos(t1) − pos(t0))`` bits, with ``pos`` interpolated
inside a block; its completion instant is found by a vectorised search over the drawn
horizon (:mod:`netfl.radio.completion_search`), so fading blocks cost no events. The
grid keeps :data:`HORIZON_BLOCKS` ahead of the clock, drawn per flow from its own
generator, and drops columns behind it.

A flow's rate in block b is ``share × f × rb_bandwidth × SE(SNR·|h_b|²)`` (FedDif eqs.
(7)-(10); SE is Shannon or the CQI table after PHY overhead; f the direction's time
fraction). A multicast flow's gain in a block is its receivers' block-wise minimum. A
flow along a known path (a moving UE, :class:`LinkPath`) carries its per-RB SNR of
each block in its gains (its SNR scalar 1), re-rated when its share changes.

A column is one fading block, or — with thousands of flows on the carrier, each lasting
thousands of blocks — G of them (``block_s`` is then G blocks long; :meth:`_regrid`
switches at an instant where the flows are drained and rates a column from its blocks'
mean gain: :mod:`netfl.radio.columns`).

The grid is a part the carrier (:class:`~netfl.radio.ofdma.OfdmaCarrier`) has; the
rows a scheduler keeps of its own (:attr:`Scheduler.flow_state
<netfl.radio.schedulers.Scheduler.flow_state>`) move with their flows. What the
carrier, its scheduler and its power control use of it is :data:`GRID_INTERFACE`.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any, Protocol

import numpy as np

from channel_models.fading import BlockFading
from netfl.radio.columns import ColumnRule
from netfl.radio.completion_search import earliest_completion
from netfl.radio.sharing import completion_tolerance_bits

__all__ = ["BlockGrid", "GRID_INTERFACE", "HORIZON_BLOCKS", "LinkPath", "ROW_NAMES"]

#: Fading blocks drawn ahead of the clock for every active flow. Completions
#: beyond the horizon are found after a wake-up at its end (one event per
#: horizon, not per block), which bounds memory to flows × horizon.
HORIZON_BLOCKS = 256

#: per-flow scalars: rows of one matrix, each name a view of its row
_SCALARS = (
    "gstart",  # G(start) of each flow on the current base
    "rem",  # bits left
    "size",  # bits of the transfer
    "share",  # RBs held
    "cap",  # most RBs it may hold
    "arrival",  # arrival number
    "snr",  # per-RB SNR (linear) the row's bits are rated at
    "rbs",  # RB·s held
    "bg",  # 1 for background (CUE) flows
    "snr_total",  # power control: SNR with all power in one RB
    "snr_psd",  # SNR per RB at the flow's target PSD
    "snracc",  # ∫ SNR dt before the last SNR change
    "air",  # airtime [s]
    "bmax",  # most bits per RB of any column ahead (at least: bounds the search)
)
#: the grid's own per-flow rows (a scheduler's rows take other names)
ROW_NAMES = _SCALARS
#: per-flow block arrays
_GRIDS = ("gains", "bits", "cum", "cumg")

#: what the carrier, its scheduler and its power control use of a grid (tested)
GRID_INTERFACE = (
    # per-flow rows
    "rem",
    "share",
    "cap",
    "arrival",
    "snr",
    "snr_total",
    "snr_psd",
    "rbs",
    "air",
    "bg",
    "scalar",
    # the columns and the clock
    "bits",
    "kb",
    "block_s",
    "block_now",
    "ensure",
    # flows coming and going, bits delivered, SNR changes
    "n",
    "n_path",
    "insert",
    "bank",
    "drain",
    "finished",
    "rerate",
    "rerate_paths",
    "min_finish_time",
)


class LinkPath(Protocol):
    """The link of a flow whose SNR changes along a known path (a moving UE)."""

    def terms(self, blocks: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """``(per-RB SNR, SNR of all power in one RB)`` [linear] in each absolute fading
        block of ``blocks`` (interference included; the second inf without power
        control): the per-RB SNR of a share of M RBs is ``min(second/M, first)``."""
        ...


class BlockGrid:
    """Row arrays of a carrier's active flows on a common block grid (module docstring).

    Parameters
    ----------
    flows : list
        The carrier's active flows; row i is ``flows[i]`` (the grid appends and
        swap-removes them with their rows: :meth:`insert`, :meth:`bank`).
    fading : BlockFading
        Small-scale fading law and coherence time (one block).
    rb_hz : float
        One RB's bandwidth times the direction's time fraction [Hz].
    columns : ColumnRule
        How many blocks a column holds, and its efficiency.
    flow_state : mapping
        Rows kept for the scheduler: name → value of a new flow.
    """

    def __init__(
        self,
        flows: list,
        fading: BlockFading,
        rb_hz: float,
        columns: ColumnRule,
        flow_state: Mapping[str, float] | None = None,
    ):
        self.flows = flows
        self.fading = fading
        self.columns = columns
        self._rb_hz = float(rb_hz)
        self.g = 1  # fading blocks per column
        #: a column [s]: one fading block, or G of them
        self.block_s = fading.coherence_time_s
        #: bits one RB carries in one column per bit/s/Hz
        self.bit_scale = self._rb_hz * self.block_s
        self.kb = 0  # absolute column of column 0
        self.width = 0  # columns drawn
        self.n_path = 0  # rows along a path
        self.n_multicast = 0  # multicast rows
        self.n_keyed = 0  # rows with their link's keyed fading
        self._initial = dict(flow_state or {})
        clash = sorted(set(self._initial) & set(_SCALARS))
        if clash:
            raise ValueError(f"scheduler rows {', '.join(clash)} are the grid's own: rename them")
        self._names = _SCALARS + tuple(self._initial)
        self._index = {name: k for k, name in enumerate(self._names)}
        self._alloc_rows(8, HORIZON_BLOCKS)

    # -- rows --------------------------------------------------------------------
    @property
    def n(self) -> int:
        """Active rows."""
        return len(self.flows)

    def scalar(self, name: str) -> np.ndarray:
        """The per-flow row ``name`` (a view: valid until the next flow is added)."""
        return self._rows[self._index[name]]

    def _alloc_rows(self, rows: int, width: int) -> None:
        # column-major: what every event reads is a column (all flows at the block now)
        self.gains = np.zeros((rows, width), order="F")
        self.bits = np.zeros((rows, width), order="F")  # bits one RB carries in each block
        self.cum = np.zeros((rows, width + 1), order="F")  # cumulative bits per RB at block starts
        self.cumg = np.zeros((rows, width + 1), order="F")  # cumulative |h|²·block at starts
        self._bind_scalars(np.zeros((len(self._names), rows)))

    def _bind_scalars(self, table: np.ndarray) -> None:
        self._rows = table
        for k, name in enumerate(_SCALARS):
            setattr(self, name, table[k])

    def _add_rows(self) -> None:
        """Double the number of rows (new flows beyond the allocated ones)."""
        for name in _GRIDS:
            a = getattr(self, name)
            setattr(self, name, np.asfortranarray(np.concatenate([a, np.zeros_like(a)], axis=0)))
        self._bind_scalars(np.concatenate([self._rows, np.zeros_like(self._rows)], axis=1))

    def insert(self, flow: Any, now_s: float) -> None:
        """Add ``flow`` as the last row at ``now_s``, drawing its fading up to the
        horizon; rated at ``min(mean_snr, snr_total)`` until its first share is known."""
        special = (
            flow.multicast_snrs is not None or flow.path is not None or flow.block_gains is not None
        )
        if self.g > 1 and (special or not self.flows):  # (block by block again)
            self._regrid(1, now_s)
        flow.k0 = flow.next_block = int(math.floor(now_s / self.block_s))
        self.n_multicast += int(flow.multicast_snrs is not None)
        self.n_keyed += int(flow.block_gains is not None)
        n = len(self.flows)
        if n == 0:
            self.kb, self.width = flow.k0, 0
            self._grow(HORIZON_BLOCKS)
        else:
            self.ensure(now_s)
        if n == self.rem.shape[0]:  # more rows
            self._add_rows()
        offset = flow.k0 - self.kb
        snr0 = min(flow.mean_snr, flow.snr_total)  # until its first share is known
        g = self._draw(flow, self.width - offset)
        self.gains[n, :offset] = 0.0  # before the flow starts: no SNR, no bits
        self.bits[n, :offset] = 0.0
        path = flow.path is not None
        if path:  # (its SNR per block in the gains, scalars neutral)
            flow.fading, flow.path_share = g, 0.0
            g = g * self._path_snr(flow, flow.k0, self.kb + self.width, 0.0)
            snr0, self.n_path = 1.0, self.n_path + 1
        bits = self._bits_per_rb(snr0, g)
        w = self.width
        self.gains[n, offset:w] = g
        self.bits[n, offset:w] = bits
        # (sums of the flow's own contiguous arrays: a row of the grid is strided)
        self.cum[n, : offset + 1] = self.cumg[n, : offset + 1] = 0.0
        self.cum[n, offset + 1 : w + 1] = np.cumsum(bits)
        self.cumg[n, offset + 1 : w + 1] = self.block_s * np.cumsum(g)
        self.bmax[n] = bits.max(initial=0.0)
        self.rem[n] = flow.remaining_bits
        self.size[n] = flow.size_bits
        self.cap[n] = flow.cap
        self.arrival[n] = flow.arrival
        self.snr[n] = snr0
        self.snr_total[n] = math.inf if path else flow.snr_total
        self.snr_psd[n] = 1.0 if path else flow.mean_snr
        self.snracc[n] = self.air[n] = 0.0
        self.rbs[n] = self.share[n] = 0.0
        self.bg[n] = float(flow.background)
        for name, value in self._initial.items():
            self.scalar(name)[n] = value
        self.flows.append(flow)
        self.gstart[n] = self._gain_integrals(np.array([n]), now_s)[0]

    def bank(self, i: int, now_s: float) -> None:
        """Write row ``i``'s accounting to its flow (RB·s, airtime, ∫SNR dt) and remove
        the row (swapped with the last)."""
        f = self.flows[i]
        f.rb_seconds, f.share = float(self.rbs[i]), 0.0
        self.n_path -= int(f.path is not None)
        self.n_multicast -= int(f.multicast_snrs is not None)
        self.n_keyed -= int(f.block_gains is not None)
        f.airtime_s = float(self.air[i])
        f.snr_seconds = float(self.snracc[i]) + float(self.snr[i]) * (
            self._gain_integrals(np.array([i]), now_s)[0] - self.gstart[i]
        )
        last = len(self.flows) - 1
        if i != last:
            self.flows[i] = self.flows[last]
            self._rows[:, i] = self._rows[:, last]
            for name in _GRIDS:
                a = getattr(self, name)
                a[i] = a[last]
        self.flows.pop()

    # -- drawing and rating --------------------------------------------------------
    def _draw(self, flow: Any, num_blocks: int) -> np.ndarray:
        """Fading gains of the next ``num_blocks`` columns of ``flow`` (multicast: the
        receivers' block-wise minimum of SNR_k·|h_k|², relative to the weakest mean
        SNR; columns of G blocks: their mean gain; a flow with keyed ``block_gains``:
        its link's gains of those blocks, :mod:`netfl.radio.link_fading`)."""
        if flow.block_gains is not None:  # (always block by block: a special flow)
            k = flow.next_block
            flow.next_block += num_blocks
            return flow.block_gains(k, num_blocks)
        if flow.multicast_snrs is None:
            if self.g > 1:
                return self.columns.mean_gains(flow, self.g, num_blocks)
            return self.fading.sample(flow.rng, num_blocks)
        per_rx = self.fading.sample(flow.rng, (flow.multicast_snrs.size, num_blocks))
        return (flow.multicast_snrs[:, None] * per_rx).min(axis=0) / flow.mean_snr

    def _bits_per_rb(self, snr: np.ndarray | float, gains: np.ndarray) -> np.ndarray:
        """Bits one RB carries in each column at per-RB SNR ``snr`` and fading ``gains``."""
        return self.bit_scale * self.columns.efficiency(self.g)(snr * gains)

    def _grow(self, new_width: int) -> None:
        """Extend every active row to ``new_width`` columns, drawing each flow's fading."""
        extra = new_width - self.width
        if extra <= 0:
            return
        n = len(self.flows)
        if new_width > self.bits.shape[1]:
            cap = max(new_width, 2 * self.bits.shape[1])
            pad = cap - self.bits.shape[1]
            for name in _GRIDS:
                setattr(
                    self, name, np.asfortranarray(np.pad(getattr(self, name), ((0, 0), (0, pad))))
                )
        w0 = self.width
        if n:  # (each flow's draws from its own generator, written as one block)
            self.gains[:n, w0:new_width] = np.stack([self._draw(f, extra) for f in self.flows])
        if self.n_path:
            self._extend_paths(w0, new_width)
        self.bits[:n, w0:new_width] = self._bits_per_rb(
            self.snr[:n, None], self.gains[:n, w0:new_width]
        )
        self.cum[:n, w0 + 1 : new_width + 1] = self.cum[:n, w0 : w0 + 1] + np.cumsum(
            self.bits[:n, w0:new_width], axis=1
        )
        self.cumg[:n, w0 + 1 : new_width + 1] = self.cumg[:n, w0 : w0 + 1] + self.block_s * (
            np.cumsum(self.gains[:n, w0:new_width], axis=1)
        )
        if n:
            np.maximum(self.bmax[:n], self.bits[:n, w0:new_width].max(axis=1), out=self.bmax[:n])
        self.width = new_width

    def rerate(self, rows: np.ndarray, new: np.ndarray, now_s: float) -> None:
        """Rows ``rows`` carry per-RB SNR ``new`` from now on: the SNR integral so far is
        banked at the old SNR; bits and cumulative bits are recomputed from the current
        block on."""
        self.ensure(now_s)
        g_now = self._gain_integrals(rows, now_s)
        self.snracc[rows] += self.snr[rows] * (g_now - self.gstart[rows])
        self.gstart[rows] = g_now
        self.snr[rows] = new
        w = self.width
        c = min(max(int(math.floor(now_s / self.block_s + 1e-9)) - self.kb, 0), w - 1)
        bits = self._bits_per_rb(new[:, None], self.gains[rows, c:w])
        self.bits[rows, c:w] = bits
        self.cum[rows, c + 1 : w + 1] = self.cum[rows, c : c + 1] + bits.cumsum(axis=1)
        self._bound_rows(rows, c)

    def _bound_rows(self, rows: np.ndarray, c: int) -> None:
        """Rows ``rows`` were re-rated from column ``c`` on: their bound on the bits of a
        column ahead, from the column before it (an instant a hair before a block's end
        is rated from the next) to the horizon."""
        self.bmax[rows] = self.bits[rows, max(c - 1, 0) : self.width].max(axis=1)

    # -- flows along a path ------------------------------------------------------
    def _path_snr(self, flow: Any, k0: int, k1: int, share: float) -> np.ndarray:
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
                g = self.gains[i, w0:w1]
                f.fading = np.concatenate([f.fading, g])
                k0 = self.kb + w0
                g *= self._path_snr(f, k0, self.kb + w1, float(self.share[i]))

    def rerate_paths(self, rows: np.ndarray, now_s: float) -> None:
        """Path rows ``rows`` are rated again from the current block on, at their share
        now and their paths' terms now (the SNR integral so far banked at the old)."""
        self.ensure(now_s)
        w = self.width
        c = min(max(int(math.floor(now_s / self.block_s + 1e-9)) - self.kb, 0), w - 1)
        self.snracc[rows] += self._gain_integrals(rows, now_s) - self.gstart[rows]
        k0, k1 = self.kb + c, self.kb + w
        for i in rows:
            f = self.flows[i]
            f.path_share = float(self.share[i])
            fade = f.fading[k0 - f.k0 : k1 - f.k0]
            self.gains[i, c:w] = fade * self._path_snr(f, k0, k1, f.path_share)
        bits = self._bits_per_rb(self.snr[rows, None], self.gains[rows, c:w])
        self.bits[rows, c:w] = bits
        self.cum[rows, c + 1 : w + 1] = self.cum[rows, c : c + 1] + bits.cumsum(axis=1)
        self._bound_rows(rows, c)
        self.cumg[rows, c + 1 : w + 1] = self.cumg[rows, c : c + 1] + self.block_s * (
            self.gains[rows, c:w].cumsum(axis=1)
        )
        self.gstart[rows] = self._gain_integrals(rows, now_s)

    # -- the clock ---------------------------------------------------------------
    def block_now(self, now_s: float) -> int:
        """Absolute index of the column the clock is in (boundary-safe)."""
        return int(math.floor(now_s / self.block_s + 1e-9))

    def _horizon_due(self, t_s: float) -> bool:
        """Whether the grid must be extended to cover ``t_s`` plus a margin."""
        return int(math.floor(t_s / self.block_s)) - self.kb + 16 >= self.width

    def ensure(self, now_s: float) -> None:
        """Make sure the grid covers ``now_s`` plus a margin, first dropping the columns
        before now's (the carrier has drained its flows up to now: never read again)."""
        if not self._horizon_due(now_s):
            return
        drop = min(int(math.floor(now_s / self.block_s)) - self.kb, self.width)
        if drop > 0:
            n, w = len(self.flows), self.width
            keep = w - drop
            self.gains[:n, :keep] = self.gains[:n, drop:w]
            self.bits[:n, :keep] = self.bits[:n, drop:w]
            self.cum[:n, : keep + 1] = self.cum[:n, drop : w + 1] - self.cum[:n, drop : drop + 1]
            self.gstart[:n] -= self.cumg[:n, drop]
            self.cumg[:n, : keep + 1] = self.cumg[:n, drop : w + 1] - self.cumg[:n, drop : drop + 1]
            self.kb += drop
            self.width = keep
        j = int(math.floor(now_s / self.block_s)) - self.kb
        self._grow(j + HORIZON_BLOCKS)

    def _positions(self, t_s: float) -> np.ndarray:
        """Bits one RB has carried for each active flow from column 0 until ``t_s``."""
        n = len(self.flows)
        x = t_s / self.block_s - self.kb
        j = int(math.floor(x))
        if j >= self.width:
            if j == self.width and x == j:  # exactly at the right edge
                return self.cum[:n, j].copy()
            self._grow(j + HORIZON_BLOCKS)
        return self.cum[:n, j] + (x - j) * self.bits[:n, j]

    def _gain_integrals(self, rows: np.ndarray, t_s: float) -> np.ndarray:
        """∫ |h|² dt of ``rows`` from column 0 until ``t_s`` [s]."""
        x = t_s / self.block_s - self.kb
        j = min(int(math.floor(x)), self.width - 1)
        return self.cumg[rows, j] + (x - j) * self.block_s * self.gains[rows, j]

    def drain(self, t0_s: float, t1_s: float) -> None:
        """Deliver the bits of ``[t0, t1]`` at the current shares; add RB·s and airtime."""
        n = len(self.flows)
        share = self.share[:n]
        self.rem[:n] -= share * (self._positions(t1_s) - self._positions(t0_s))
        self.rbs[:n] += share * (t1_s - t0_s)
        self.air[:n] += (share > 0) * (t1_s - t0_s)

    def finished(self, now_s: float) -> list[int]:
        """The rows whose bits are delivered (within rounding), last first."""
        n = len(self.flows)
        j = min(max(int(math.floor(now_s / self.block_s)) - self.kb, 0), self.width - 1)
        rate = self.share[:n] * self.bits[:n, j] / self.block_s
        done = (self.rem[:n] <= completion_tolerance_bits(self.size[:n], rate, now_s)).nonzero()[0]
        return sorted(done.tolist(), reverse=True)

    # -- columns of G blocks -------------------------------------------------------
    def _target_g(self, now_s: float) -> int:
        """Blocks per column for the flows now (:meth:`ColumnRule.target`)."""
        n = len(self.flows)
        return self.columns.target(
            self.g,
            self.share[:n],
            self.rem[:n],
            self.snr[:n],
            self.bit_scale / self.g,
            bool(self.n_path or self.n_multicast or self.n_keyed),
            self._horizon_due(now_s),
        )

    def _regrid(self, g: int, now_s: float) -> None:
        """Columns of ``g`` fading blocks from now on. The flows are drained to now; each
        flow's SNR integral so far is banked, its columns ahead redrawn from its own
        generator (fading not yet used: drawn anew; gains drawn ahead for the old G
        dropped), the grid starting at the column that holds now."""
        n = len(self.flows)
        rows = np.arange(n)
        if n:
            self.ensure(now_s)
            self.snracc[:n] += self.snr[:n] * (self._gain_integrals(rows, now_s) - self.gstart[:n])
        for f in self.flows:
            f.drawn = None
        self.g = g
        self.block_s = g * self.fading.coherence_time_s
        self.bit_scale = self._rb_hz * self.block_s
        self.kb, self.width = int(math.floor(now_s / self.block_s)), 0
        for f in self.flows:  # (keyed draws restart at the grid's first column)
            f.next_block = self.kb
        if n:
            self.cum[:n, 0] = self.cumg[:n, 0] = self.bmax[:n] = 0.0
            self._grow(HORIZON_BLOCKS)
            self.gstart[:n] = self._gain_integrals(rows, now_s)

    def min_finish_time(self, now_s: float) -> float:
        """Earliest completion within the drawn horizon, else the horizon's end (inf: no
        flow holds a share). Columns of how many blocks are looked at here, when the
        horizon is extended (the flows are drained to now)."""
        if self.g > 1 or self._horizon_due(now_s):
            g = self._target_g(now_s)
            if g != self.g:
                self._regrid(g, now_s)
        self.ensure(now_s)
        n = len(self.flows)
        t = earliest_completion(
            self.cum,
            self.bits,
            self.bmax,
            self.share[:n],
            self.rem[:n],
            now_s / self.block_s - self.kb,
            self.width,
            self.kb,
            self.block_s,
        )
        return t if math.isinf(t) else max(t, now_s)
