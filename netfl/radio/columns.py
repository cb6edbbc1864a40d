"""How many fading blocks a column of an OFDMA carrier's grid holds (issue 34, item 5):
one, or — thousands of flows sharing a Rayleigh carrier, each lasting thousands of
blocks — G of them, each column rated from its blocks' mean gain
(:mod:`channel_models.block_aggregation`). A part the carrier composes
(:class:`~netfl.radio.ofdma.OfdmaCarrier`): it decides G from the flows' state the
carrier hands it, and draws and rates the columns; the carrier rebuilds its grid
(:meth:`~netfl.radio.block_grid.BlockGrid._regrid`)."""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np

from channel_models.block_aggregation import AggregatedEfficiency, mean_gain_samples
from channel_models.fading import BlockFading, RayleighBlockFading

__all__ = [
    "AGGREGATE_ABOVE_FLOWS",
    "COLUMNS_PER_FLOW",
    "ColumnRule",
    "GAIN_CHUNK",
    "MAX_AGGREGATE",
]

#: a scenario's default ``cell.link.aggregate_above_flows``: the flows on a carrier from
#: which it may rate its Rayleigh fading blocks G at a time
AGGREGATE_ABOVE_FLOWS = 512
#: the most fading blocks a column of a carrier's grid holds
MAX_AGGREGATE = 256
#: columns a flow's remaining lifetime should span at least when blocks are taken G at
#: a time
COLUMNS_PER_FLOW = 256
#: columns of mean gains a flow draws at a time (columns of G > 1 blocks)
GAIN_CHUNK = 1024


class ColumnRule:
    """G for a carrier's flows, and its columns' gains and efficiency.

    Parameters
    ----------
    above_flows
        At least this many flows before G may exceed 1 (0: never).
    fading, efficiency
        The carrier's block fading (only Rayleigh is taken G at a time) and its
        SNR → bit/s/Hz table.
    per_block
        The scheduler decides per block (proportional fair): never more than one.
    """

    def __init__(
        self,
        above_flows: int,
        fading: BlockFading,
        efficiency: Callable[[np.ndarray], np.ndarray],
        per_block: bool,
    ):
        self.above_flows = int(above_flows)
        self.enabled = (
            self.above_flows > 0 and isinstance(fading, RayleighBlockFading) and not per_block
        )
        self.base = efficiency
        self._phi: dict[int, AggregatedEfficiency] = {}

    def target(
        self,
        g: int,
        share: np.ndarray,
        remaining_bits: np.ndarray,
        snr: np.ndarray,
        block_bits: float,
        special: bool,
        due: bool,
    ) -> int:
        """Blocks per column for flows of ``share`` RBs, ``remaining_bits`` and per-RB
        ``snr`` (``block_bits``: bits per RB per block at 1 bit/s/Hz), now at ``g``: 1,
        or — at least ``above_flows`` flows, none ``special`` (multicast, along a path) —
        the largest power of two at most the flows' median remaining lifetime [blocks,
        at their share and mean SNR now] over :data:`COLUMNS_PER_FLOW`, at most
        :data:`MAX_AGGREGATE`: a column stays a small part of a flow (the carrier's share
        is split n ways: each lasts ∝ n). Looked at again only when ``due`` (the grid's
        horizon is extended) once above 1; it goes down once the lifetimes call for a
        quarter of G (no flapping)."""
        n = len(share)
        if not self.enabled or special:
            return 1
        if n < self.above_flows:
            return 1 if 4 * n < self.above_flows or g == 1 else g
        if g > 1 and not due:
            return g
        served = share > 0
        if not served.any():
            return g
        rate = share[served] * block_bits * self.base(snr[served])
        with np.errstate(divide="ignore"):
            ratio = float(np.median(remaining_bits[served] / rate)) / COLUMNS_PER_FLOW
        want = (
            1 if not ratio >= 2.0 else min(2 ** int(math.log2(min(ratio, 2.0**30))), MAX_AGGREGATE)
        )
        return want if want > g or 4 * want <= g else g

    def efficiency(self, g: int) -> Callable[[np.ndarray], np.ndarray]:
        """SNR·(column gain) → bit/s/Hz of a column of ``g`` blocks (the table itself for
        one block; built once per G)."""
        if g == 1:
            return self.base
        if g not in self._phi:
            self._phi[g] = AggregatedEfficiency(self.base, g)
        return self._phi[g]

    @staticmethod
    def mean_gains(flow: Any, g: int, num: int) -> np.ndarray:
        """The next ``num`` columns' mean gains of ``flow`` (its generator ``rng``, its
        buffer ``drawn``) drawn in chunks of :data:`GAIN_CHUNK` or more: fewer calls for
        thousands of flows (while G holds, the same values as drawing each grid
        extension's on its own: the draws are sequential; a change of G drops the
        buffer)."""
        drawn = flow.drawn
        if drawn is None or drawn.size < num:
            more = mean_gain_samples(flow.rng, g, max(num, GAIN_CHUNK))
            drawn = more if drawn is None else np.concatenate([drawn, more])
        flow.drawn = drawn[num:]
        return drawn[:num]
