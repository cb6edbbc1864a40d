"""Fading drawn per link and block: a channel state that can be sounded before a transfer.

By default an OFDMA transfer draws its fading blocks from its own generator (the k-th
transfer's stream): two transfers on one link in one block see independent gains, and
nothing about a link's fading exists between transfers. With ``cell.link.fading_draw:
per_link`` the gain of link ``(src, dst)`` in absolute block ``k = ⌊t / T_c⌋`` is a
function of the run's seed, the link and ``k`` alone (:class:`LinkBlockFading`): every
transfer on the link in that block sees it, and a resource policy may sound it before
deciding (:meth:`DeviceStates.block_snr_db
<netfl.policies.states.DeviceStates.block_snr_db>`) — the instantaneous SNR of Yang et
al. 2020's proportional-fair scheduling. Blocks are drawn :data:`CHUNK_BLOCKS` at a
time from a generator keyed by ``(seed, link, chunk)``; the law is the carrier's.
Direction matters (the key is ordered): an FDD uplink and downlink fade independently.
"""

from __future__ import annotations

import math
import zlib
from collections import OrderedDict
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    from channel_models.fading import BlockFading

__all__ = ["CHUNK_BLOCKS", "FADING_DRAWS", "LinkBlockFading"]

#: fading blocks drawn per keyed generator
CHUNK_BLOCKS = 256
#: chunks kept drawn (least recently used dropped; a redraw gives the same gains)
_CACHED_CHUNKS = 4096
#: the values of ``cell.link.fading_draw``
FADING_DRAWS = ("per_transfer", "per_link")


class LinkBlockFading:
    """Gains ``|h|²`` of every link in every fading block, from keyed generators.

    Parameters
    ----------
    law : BlockFading
        The fading law (its ``coherence_time_s`` is the block length).
    seed : int
        The run's seed for these draws (a child stream's draw).
    """

    def __init__(self, law: BlockFading, seed: int):
        self.law = law
        self.seed = int(seed)
        self._chunks: OrderedDict[tuple[int, int], np.ndarray] = OrderedDict()

    @staticmethod
    def link_key(src: str, dst: str) -> int:
        """The ordered link's key (CRC-32 of the two names: stable across runs)."""
        return zlib.crc32(f"{src}\x00{dst}".encode())

    def block_of(self, t_s: float) -> int:
        """The absolute fading block holding instant ``t_s``."""
        return int(math.floor(t_s / self.law.coherence_time_s))

    def _chunk(self, key: int, c: int) -> np.ndarray:
        got = self._chunks.get((key, c))
        if got is None:
            rng = np.random.default_rng([self.seed, key, c])
            got = self._chunks[(key, c)] = self.law.sample(rng, CHUNK_BLOCKS)
            if len(self._chunks) > _CACHED_CHUNKS:
                self._chunks.popitem(last=False)
        else:
            self._chunks.move_to_end((key, c))
        return got

    def gains(self, key: int, k0: int, num_blocks: int) -> np.ndarray:
        """Gains of link ``key`` in blocks ``k0 … k0 + num_blocks − 1``."""
        if num_blocks <= 0:
            return np.empty(0)
        c0, c1 = k0 // CHUNK_BLOCKS, (k0 + num_blocks - 1) // CHUNK_BLOCKS
        run = np.concatenate([self._chunk(key, c) for c in range(c0, c1 + 1)])
        start = k0 - c0 * CHUNK_BLOCKS
        return run[start : start + num_blocks].copy()

    def gain(self, key: int, t_s: float) -> float:
        """Gain of link ``key`` in the block holding ``t_s``."""
        k = self.block_of(t_s)
        return float(self._chunk(key, k // CHUNK_BLOCKS)[k % CHUNK_BLOCKS])
