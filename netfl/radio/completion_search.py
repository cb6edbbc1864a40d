"""The next completion on a block grid: a vectorised search, no event per fading block.

A flow holding a constant share x drains ``x · (pos(t1) − pos(t0))`` bits, ``pos`` its
cumulative bits per RB on the grid (:class:`~netfl.radio.block_grid.BlockGrid`); it
completes where ``pos`` reaches ``pos(now) + remaining/x``. :func:`earliest_completion`
finds the earliest such instant among all flows within the drawn horizon.

Small grids are searched with one comparison; large ones read only the flows whose
bound says they may end first (:func:`contenders`), then a coarse pass (every 64th
block), a middle one (every 8th) and a fine search, each only for the flows whose
bracket can hold the minimum.
"""

from __future__ import annotations

import math

import numpy as np

__all__ = ["contenders", "count_below", "earliest_completion"]

#: Coarse and middle steps of the three-level completion search [blocks].
_COARSE = 64
_MIDDLE = 8
#: Below this many (flows × blocks) one direct comparison beats the two-level search.
_DIRECT_SEARCH_LIMIT = 60_000


def count_below(
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


def contenders(
    cum: np.ndarray,
    bits: np.ndarray,
    bmax: np.ndarray,
    rows: np.ndarray,
    need: np.ndarray,
    target: np.ndarray,
    x: float,
    j: int,
    w: int,
) -> np.ndarray:
    """The rows among ``rows`` (each reaching its ``target`` within the horizon) that
    may complete first. No row completes before column x + need/bmax (it carries at
    most ``bmax`` bits per RB a column): the row of the earliest such bound is
    searched exactly, and only the rows whose bound is not past its completion kept
    (the same minimum, most rows never read)."""
    need = need[rows]
    with np.errstate(divide="ignore"):  # (no bits ahead: only a row with none to send)
        bound = x + np.divide(need, bmax[rows], out=np.zeros(rows.size), where=need > 0)
    first = int(np.argmin(bound))
    best = int(rows[first])
    # the first column whose end reaches the target (cumulative bits never decrease)
    col = j + int(np.searchsorted(cum[best, j + 1 : w + 1], target[best]))
    col = min(col, w - 1)
    per_block = bits[best, col]
    frac = (target[best] - cum[best, col]) / per_block if per_block > 0 else 0.0
    finish = col + min(max(frac, 0.0), 1.0)
    # (a margin far above rounding: a row at its bound is kept; the row searched
    # exactly always is)
    keep = bound <= finish + 1e-6
    keep[first] = True
    return rows[keep]


def earliest_completion(
    cum: np.ndarray,
    bits: np.ndarray,
    bmax: np.ndarray,
    share: np.ndarray,
    remaining: np.ndarray,
    x: float,
    w: int,
    kb: int,
    block_s: float,
) -> float:
    """Earliest completion [s] of the ``n = share.size`` first rows of a grid whose
    column 0 is absolute column ``kb`` of ``block_s``; the horizon's end (column ``w``)
    if none completes within it, inf if no row holds a share.

    ``x`` is now in columns from column 0; only the columns from now's on are searched (a flow's
    target position is never behind its current one).
    """
    n = share.size
    active = share > 0
    if not active.any():
        return math.inf
    j = int(math.floor(x))
    need = np.full(n, np.inf)
    np.divide(remaining, share, out=need, where=active)
    # target position (bits per RB since column 0) = position now + what remains
    target = cum[:n, j] + (x - j) * bits[:n, j]
    target += need
    within = cum[:n, w] >= target
    if not within.any():
        return (kb + w) * block_s
    m = w - j
    rows = np.arange(n) if within.all() else within.nonzero()[0]
    if rows.size * m > _DIRECT_SEARCH_LIMIT:
        rows = contenders(cum, bits, bmax, rows, need, target, x, j, w)
    target = target[rows]
    if rows.size * m > _DIRECT_SEARCH_LIMIT:
        # (views of all rows: only the contenders' are read)
        ahead = cum[:n, j + 1 : w + 1]
        # coarse pass every 64th block, a middle pass every 8th within the brackets
        # that can hold the minimum, the fine search within theirs
        coarse = ahead[:, ::_COARSE][rows]
        k = np.maximum((coarse < target[:, None]).sum(axis=1) - 1, 0) * _COARSE
        keep = k <= np.minimum(k + _COARSE, m - 1).min()
        rows, target, k = rows[keep], target[keep], k[keep]
        mids = _MIDDLE * np.arange(_COARSE // _MIDDLE + 1)
        below = count_below(ahead, rows, k, mids, target)
        k = k + np.maximum(below - 1, 0) * _MIDDLE
        keep = k <= np.minimum(k + _MIDDLE, m - 1).min()
        rows, target, k = rows[keep], target[keep], k[keep]
        # rows are non-decreasing: the first block reaching the target is the count of
        # those below it
        col = j + k + count_below(ahead, rows, k, np.arange(_MIDDLE + 1), target)
    else:  # one comparison over the blocks ahead
        ahead = cum[rows, j + 1 : w + 1]
        col = j + (ahead >= target[:, None]).argmax(axis=1)
    col = np.minimum(col, w - 1)
    per_block = bits[rows, col]
    positive = per_block > 0
    safe = np.where(positive, per_block, 1.0)
    frac = np.where(positive, (target - cum[rows, col]) / safe, 0.0)
    t_finish = (kb + col + np.minimum(np.maximum(frac, 0.0), 1.0)) * block_s
    return float(t_finish.min())
