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
#: Coarse step of the two-level completion search [blocks].
_COARSE = 64
#: Below this many (flows × blocks) one direct comparison beats the two-level search.
_DIRECT_SEARCH_LIMIT = 60_000


class BlockGrid:
    """Row arrays of the active flows on a common block grid (see the module docstring)."""

    block_s: float
    flows: list
    _n_path: int = 0  # flows whose SNR follows a path (the carrier's :meth:`_extend_paths`)

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
    )
    #: per-flow block arrays
    _GRIDS = ("_gains", "_bits", "_cum", "_cumg")

    def _alloc_rows(self, rows: int, width: int) -> None:
        self._gains = np.zeros((rows, width))
        self._bits = np.zeros((rows, width))  # bits one RB carries in each block
        self._cum = np.zeros((rows, width + 1))  # cumulative bits per RB at block starts
        self._cumg = np.zeros((rows, width + 1))  # cumulative |h|²·block at block starts
        self._bind_scalars(np.zeros((len(self._SCALARS), rows)))

    def _bind_scalars(self, table: np.ndarray) -> None:
        self._rows = table
        for k, name in enumerate(self._SCALARS):
            setattr(self, name, table[k])

    def _add_rows(self) -> None:
        """Double the number of rows (new flows beyond the allocated ones)."""
        for name in self._GRIDS:
            a = getattr(self, name)
            setattr(self, name, np.concatenate([a, np.zeros_like(a)], axis=0))
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
            self._gains = np.pad(self._gains, ((0, 0), (0, pad)))
            self._bits = np.pad(self._bits, ((0, 0), (0, pad)))
            self._cum = np.pad(self._cum, ((0, 0), (0, pad)))
            self._cumg = np.pad(self._cumg, ((0, 0), (0, pad)))
        w0 = self._width
        for i, f in enumerate(self.flows):
            self._gains[i, w0:new_width] = self._draw(f, extra)
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
        self._width = new_width

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

    def _ensure(self, t_s: float) -> None:
        """Make sure the grid covers ``t_s`` plus a margin (rebasing first)."""
        j = int(math.floor(t_s / self.block_s)) - self._kb
        if j + 16 >= self._width:
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

    def _min_finish_time(self) -> float:
        """Earliest completion within the drawn horizon, else the horizon's end.

        Only the blocks from the clock's onward are searched (a flow's target
        position is never behind its current one). Small grids are searched with
        one comparison; large ones with a coarse pass (every 64th block) and a
        fine search only for the flows whose bracket can hold the minimum.
        """
        now = self.env.now
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
        if within.all():  # the usual case: no index arrays, no copies of the rows
            rows = None
            ahead = self._cum[:n, j + 1 : w + 1]
        elif not within.any():
            return (self._kb + w) * self.block_s
        else:
            rows = within.nonzero()[0]
            target = target[rows]
            ahead = self._cum[rows, j + 1 : w + 1]
        m = ahead.shape[1]
        if target.size * m > _DIRECT_SEARCH_LIMIT:
            # coarse pass every 64th block, then the fine search only where it can matter
            coarse = ahead[:, ::_COARSE]
            k = np.maximum((coarse < target[:, None]).sum(axis=1) - 1, 0) * _COARSE
            keep = k <= np.minimum(k + _COARSE, m - 1).min()
            sub = keep.nonzero()[0]
            target, k = target[sub], k[keep]
            rows = sub if rows is None else rows[sub]
            cols = np.minimum(k[:, None] + np.arange(_COARSE + 1), m - 1)
            # rows are non-decreasing: the first block reaching the target is argmax(≥)
            col = j + k + (ahead[sub[:, None], cols] >= target[:, None]).argmax(axis=1)
        else:  # one comparison over the blocks ahead
            col = j + (ahead >= target[:, None]).argmax(axis=1)
            if rows is None:
                rows = np.arange(n)
        col = np.minimum(col, w - 1)
        per_block = self._bits[rows, col]
        positive = per_block > 0
        safe = np.where(positive, per_block, 1.0)
        frac = np.where(positive, (target - self._cum[rows, col]) / safe, 0.0)
        t_finish = (self._kb + col + np.minimum(np.maximum(frac, 0.0), 1.0)) * self.block_s
        return max(float(t_finish.min()), now)
