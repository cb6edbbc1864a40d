"""The block grid of an OFDMA carrier: every active flow's faded bits on one array.

Row i belongs to the carrier's i-th active flow; column c is the absolute
fading block ``_kb + c``. ``_bits[i, c]`` is what one RB carries for flow i in
block c, ``_cum`` its running sum (bits per RB since column 0), ``_gains`` and
``_cumg`` the fading gains and their time integral (for the mean SNR). A flow
that holds a constant share x between two events drains
``x · (pos(t1) − pos(t0))`` bits, with ``pos`` interpolated inside a block;
its completion instant is where ``pos`` reaches ``pos(now) + remaining/x``,
found by a vectorised search over the drawn horizon, so fading blocks cost no
events. The grid keeps ``HORIZON_BLOCKS`` ahead of the clock, drawn per flow
(:meth:`_draw` and :meth:`_bits_per_rb`, supplied by the carrier), and drops columns behind it.

A column is one fading block, or — with thousands of flows on the carrier, each lasting
thousands of blocks — G of them (``block_s`` is then G blocks long; :meth:`_regrid`
switches at an instant where the flows are drained, the carrier says when and rates a
column from its blocks' mean gain: :mod:`channel_models.block_aggregation`).

:class:`BlockGrid` is a mixin of :class:`~netfl.radio.ofdma.OfdmaCarrier`; it
implements the :class:`~netfl.radio.sharing.SharedMedium` hook
``_min_finish_time`` on the grid.
"""

from __future__ import annotations

import math

import numpy as np

__all__ = ["BlockGrid", "HORIZON_BLOCKS"]

#: Fading blocks drawn ahead of the clock for every active flow. Completions
#: beyond the horizon are found after a wake-up at its end (one event per
#: horizon, not per block), which bounds memory to flows × horizon.
HORIZON_BLOCKS = 256
#: Coarse and middle steps of the three-level completion search [blocks].
_COARSE = 64
_MIDDLE = 8
#: Below this many (flows × blocks) one direct comparison beats the two-level search.
_DIRECT_SEARCH_LIMIT = 60_000


def _count_below(
    ahead: np.ndarray, rows: np.ndarray, k: np.ndarray, offsets: np.ndarray, target: np.ndarray
) -> np.ndarray:
    """For each of ``rows``, how many of its columns ``k + offsets`` (clipped to the
    last) hold less than its ``target``. Rows that share a ``k`` (flows started together
    cross together) are read column by column — each a contiguous column of the
    column-major grid — instead of element by element."""
    last = ahead.shape[1] - 1
    if not k.size:
        return np.zeros(0, dtype=np.intp)
    first = k[0]
    starts = k[:1] if (k == first).all() else np.unique(k)
    if starts.size > 16:
        cols = np.minimum(k[:, None] + offsets, last)
        return (ahead[rows[:, None], cols] < target[:, None]).sum(axis=1)
    out = np.zeros(rows.size, dtype=np.intp)
    for start in starts.tolist():
        sel = np.flatnonzero(k == start) if starts.size > 1 else slice(None)
        r, t = rows[sel], target[sel]
        count = np.zeros(t.size, dtype=np.intp)
        for off in offsets.tolist():
            count += ahead[:, min(start + off, last)].take(r) < t
        out[sel] = count
    return out


class BlockGrid:
    """Row arrays of the active flows on a common block grid (see the module docstring)."""

    block_s: float
    flows: list
    _n_path: int = 0  # flows whose SNR follows a path (the carrier's :meth:`_extend_paths`)
    _g: int = 1  # fading blocks per column (:meth:`_regrid`)

    #: per-flow scalars: rows of one matrix (``_rows``), each name a view of its row
    _SCALARS = (
        "_gstart",  # G(start) of each flow on the current base
        "_rem",
        "_size",
        "_share",
        "_cap",
        "_arrival",
        "_snr",
        "_rbs",
        "_avg",  # PF: EWMA of the served rate [bit/s]
        "_bg",  # 1 for background (CUE) flows
        "_snr_total",  # power control: SNR with all power in one RB
        "_snr_psd",  # SNR per RB at the flow's target PSD
        "_snracc",  # ∫ SNR dt before the last SNR change
        "_air",  # airtime [s]
        "_bmax",  # most bits per RB of any column ahead (at least: bounds the search)
    )
    #: per-flow block arrays
    _GRIDS = ("_gains", "_bits", "_cum", "_cumg")

    def _alloc_rows(self, rows: int, width: int) -> None:
        # column-major: what every event reads is a column (all flows at the block now)
        self._gains = np.zeros((rows, width), order="F")
        self._bits = np.zeros((rows, width), order="F")  # bits one RB carries in each block
        self._cum = np.zeros((rows, width + 1), order="F")  # cumulative bits per RB at block starts
        self._cumg = np.zeros((rows, width + 1), order="F")  # cumulative |h|²·block at block starts
        self._bind_scalars(np.zeros((len(self._SCALARS), rows)))

    def _bind_scalars(self, table: np.ndarray) -> None:
        self._rows = table
        for k, name in enumerate(self._SCALARS):
            setattr(self, name, table[k])

    def _add_rows(self) -> None:
        """Double the number of rows (new flows beyond the allocated ones)."""
        for name in self._GRIDS:
            a = getattr(self, name)
            setattr(self, name, np.asfortranarray(np.concatenate([a, np.zeros_like(a)], axis=0)))
        self._bind_scalars(np.concatenate([self._rows, np.zeros_like(self._rows)], axis=1))

    def _move_row(self, src: int, dst: int) -> None:
        """Copy flow row ``src`` onto row ``dst`` (swap-remove)."""
        self._rows[:, dst] = self._rows[:, src]
        for name in self._GRIDS:
            a = getattr(self, name)
            a[dst] = a[src]

    @property
    def width(self) -> int:
        return self._width

    def _grow(self, new_width: int) -> None:
        """Extend every active row to ``new_width`` blocks, drawing each flow's fading."""
        extra = new_width - self._width
        if extra <= 0:
            return
        n = len(self.flows)
        if new_width > self._bits.shape[1]:
            cap = max(new_width, 2 * self._bits.shape[1])
            pad = cap - self._bits.shape[1]
            for name in self._GRIDS:
                setattr(
                    self, name, np.asfortranarray(np.pad(getattr(self, name), ((0, 0), (0, pad))))
                )
        w0 = self._width
        if n:  # (each flow's draws from its own generator, written as one block)
            self._gains[:n, w0:new_width] = np.stack([self._draw(f, extra) for f in self.flows])
        if self._n_path:
            self._extend_paths(w0, new_width)
        self._bits[:n, w0:new_width] = self._bits_per_rb(
            self._snr[:n, None], self._gains[:n, w0:new_width]
        )
        self._cum[:n, w0 + 1 : new_width + 1] = self._cum[:n, w0 : w0 + 1] + np.cumsum(
            self._bits[:n, w0:new_width], axis=1
        )
        self._cumg[:n, w0 + 1 : new_width + 1] = self._cumg[:n, w0 : w0 + 1] + self.block_s * (
            np.cumsum(self._gains[:n, w0:new_width], axis=1)
        )
        if n:
            np.maximum(self._bmax[:n], self._bits[:n, w0:new_width].max(axis=1), out=self._bmax[:n])
        self._width = new_width

    def _bound_rows(self, rows: np.ndarray, c: int) -> None:
        """Rows ``rows`` were re-rated from column ``c`` on: their bound on the bits of a
        column ahead, from the column before it (an instant a hair before a block's end
        is rated from the next) to the horizon."""
        self._bmax[rows] = self._bits[rows, max(c - 1, 0) : self._width].max(axis=1)

    def _rebase(self) -> None:
        """Drop the columns before the last update's block (they are never read again)."""
        drop = min(int(math.floor(self._last_update_s / self.block_s)) - self._kb, self._width)
        if drop <= 0:
            return
        n, w = len(self.flows), self._width
        keep = w - drop
        self._gains[:n, :keep] = self._gains[:n, drop:w]
        self._bits[:n, :keep] = self._bits[:n, drop:w]
        self._cum[:n, : keep + 1] = self._cum[:n, drop : w + 1] - self._cum[:n, drop : drop + 1]
        self._gstart[:n] -= self._cumg[:n, drop]
        self._cumg[:n, : keep + 1] = self._cumg[:n, drop : w + 1] - self._cumg[:n, drop : drop + 1]
        self._kb += drop
        self._width = keep

    def _horizon_due(self, t_s: float) -> bool:
        """Whether the grid must be extended to cover ``t_s`` plus a margin."""
        return int(math.floor(t_s / self.block_s)) - self._kb + 16 >= self._width

    def _ensure(self, t_s: float) -> None:
        """Make sure the grid covers ``t_s`` plus a margin (rebasing first)."""
        if self._horizon_due(t_s):
            self._rebase()
            j = int(math.floor(t_s / self.block_s)) - self._kb
            self._grow(j + HORIZON_BLOCKS)

    def _positions(self, t_s: float) -> np.ndarray:
        """Bits one RB has carried for each active flow from column 0 until ``t_s``."""
        n = len(self.flows)
        x = t_s / self.block_s - self._kb
        j = int(math.floor(x))
        if j >= self._width:
            if j == self._width and x == j:  # exactly at the right edge
                return self._cum[:n, j].copy()
            self._grow(j + HORIZON_BLOCKS)
        return self._cum[:n, j] + (x - j) * self._bits[:n, j]

    def _gain_integral(self, row: int, t_s: float) -> float:
        """∫ |h|² dt of ``row`` from column 0 until ``t_s`` [s]."""
        return float(self._gain_integrals(np.array([row]), t_s)[0])

    def _gain_integrals(self, rows: np.ndarray, t_s: float) -> np.ndarray:
        x = t_s / self.block_s - self._kb
        j = min(int(math.floor(x)), self._width - 1)
        return self._cumg[rows, j] + (x - j) * self.block_s * self._gains[rows, j]

    def _target_g(self) -> int:
        """Fading blocks per column the grid should hold now (the carrier's rule)."""
        return 1

    def _set_aggregate(self, g: int) -> None:
        """Make a column ``g`` fading blocks (the carrier's column width and bit scale)."""
        raise AssertionError("a grid of one block per column only")

    def _regrid(self, g: int) -> None:
        """Columns of ``g`` fading blocks from now on. The flows are drained to now; each
        flow's SNR integral so far is banked, its columns ahead redrawn from its own
        generator (fading not yet used: drawn anew), the grid starting at the column
        that holds now."""
        now = self.env.now
        n = len(self.flows)
        rows = np.arange(n)
        if n:
            self._ensure(now)
            self._snracc[:n] += self._snr[:n] * (self._gain_integrals(rows, now) - self._gstart[:n])
        self._set_aggregate(g)
        self._kb, self._width = int(math.floor(now / self.block_s)), 0
        if n:
            self._cum[:n, 0] = self._cumg[:n, 0] = self._bmax[:n] = 0.0
            self._grow(HORIZON_BLOCKS)
            self._gstart[:n] = self._gain_integrals(rows, now)

    def _contenders(
        self, rows: np.ndarray, need: np.ndarray, target: np.ndarray, x: float, j: int, w: int
    ) -> np.ndarray:
        """The rows among ``rows`` (each reaching its ``target`` within the horizon) that
        may complete first. No row completes before column x + need/bmax (it carries at
        most ``_bmax`` bits per RB a column): the row of the earliest such bound is
        searched exactly, and only the rows whose bound is not past its completion kept
        (the same minimum, most rows never read)."""
        need = need[rows]
        with np.errstate(divide="ignore"):  # (no bits ahead: only a row with none to send)
            bound = x + np.divide(need, self._bmax[rows], out=np.zeros(rows.size), where=need > 0)
        first = int(np.argmin(bound))
        best = int(rows[first])
        # the first column whose end reaches the target (cumulative bits never decrease)
        col = j + int(np.searchsorted(self._cum[best, j + 1 : w + 1], target[best]))
        col = min(col, w - 1)
        per_block = self._bits[best, col]
        frac = (target[best] - self._cum[best, col]) / per_block if per_block > 0 else 0.0
        finish = col + min(max(frac, 0.0), 1.0)
        # (a margin far above rounding: a row at its bound is kept; the row searched
        # exactly always is)
        keep = bound <= finish + 1e-6
        keep[first] = True
        return rows[keep]

    def _min_finish_time(self) -> float:
        """Earliest completion within the drawn horizon, else the horizon's end.

        Only the blocks from the clock's onward are searched (a flow's target
        position is never behind its current one). On large grids only the flows
        that may end first are searched (:meth:`_contenders`). Small grids are
        searched with one comparison; large ones with a coarse pass (every 64th
        block), a middle one (every 8th) and a fine search, each only for the flows
        whose bracket can hold the minimum.
        """
        now = self.env.now
        # columns of how many blocks: looked at when the horizon is extended (the flows
        # are drained to now here)
        if self._g > 1 or self._horizon_due(now):
            g = self._target_g()
            if g != self._g:
                self._regrid(g)
        self._ensure(now)
        n, w = len(self.flows), self._width
        share = self._share[:n]
        active = share > 0
        if not active.any():
            return math.inf
        x = now / self.block_s - self._kb
        j = int(math.floor(x))
        need = np.full(n, np.inf)
        np.divide(self._rem[:n], share, out=need, where=active)
        # target position (bits per RB since column 0) = position now + what remains
        target = self._cum[:n, j] + (x - j) * self._bits[:n, j]
        target += need
        within = self._cum[:n, w] >= target
        if not within.any():
            return (self._kb + w) * self.block_s
        m = w - j
        rows = np.arange(n) if within.all() else within.nonzero()[0]
        if rows.size * m > _DIRECT_SEARCH_LIMIT:
            rows = self._contenders(rows, need, target, x, j, w)
        target = target[rows]
        if rows.size * m > _DIRECT_SEARCH_LIMIT:
            # (views of all rows: only the contenders' are read)
            ahead = self._cum[:n, j + 1 : w + 1]
            # coarse pass every 64th block, a middle pass every 8th within the brackets
            # that can hold the minimum, the fine search within theirs
            coarse = ahead[:, ::_COARSE][rows]
            k = np.maximum((coarse < target[:, None]).sum(axis=1) - 1, 0) * _COARSE
            keep = k <= np.minimum(k + _COARSE, m - 1).min()
            rows, target, k = rows[keep], target[keep], k[keep]
            mids = _MIDDLE * np.arange(_COARSE // _MIDDLE + 1)
            below = _count_below(ahead, rows, k, mids, target)
            k = k + np.maximum(below - 1, 0) * _MIDDLE
            keep = k <= np.minimum(k + _MIDDLE, m - 1).min()
            rows, target, k = rows[keep], target[keep], k[keep]
            # rows are non-decreasing: the first block reaching the target is the count of
            # those below it
            col = j + k + _count_below(ahead, rows, k, np.arange(_MIDDLE + 1), target)
        else:  # one comparison over the blocks ahead
            ahead = self._cum[rows, j + 1 : w + 1]
            col = j + (ahead >= target[:, None]).argmax(axis=1)
        col = np.minimum(col, w - 1)
        per_block = self._bits[rows, col]
        positive = per_block > 0
        safe = np.where(positive, per_block, 1.0)
        frac = np.where(positive, (target - self._cum[rows, col]) / safe, 0.0)
        t_finish = (self._kb + col + np.minimum(np.maximum(frac, 0.0), 1.0)) * self.block_s
        return max(float(t_finish.min()), now)
