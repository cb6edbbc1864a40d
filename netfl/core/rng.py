"""Named, per-round random streams derived from one seed.

One ``numpy.random.SeedSequence(seed)`` is the root; each component draws from
its own child stream keyed by a name (``"placement"``, ``"fading"``,
``"cue_traffic"``, ``"sampling"``, ``"torch"``) and optional integer keys such
as the round index. Switching a component on or off therefore never shifts
another component's draws, and round ``r`` can be replayed on its own (FedJAX
style: randomness is a function of (seed, name, round)).
"""

from __future__ import annotations

import zlib

import numpy as np

__all__ = ["Streams"]


def _name_key(name: str) -> int:
    return zlib.crc32(name.encode("utf-8"))


class Streams:
    """Factory of independent, reproducible random streams.

    Parameters
    ----------
    seed : int
        The scenario seed (root entropy).
    """

    def __init__(self, seed: int):
        self.seed = int(seed)

    def seed_sequence(self, name: str, *keys: int) -> np.random.SeedSequence:
        """The child ``SeedSequence`` of ``(name, *keys)``."""
        spawn_key = (_name_key(name), *(int(k) for k in keys))
        return np.random.SeedSequence(self.seed, spawn_key=spawn_key)

    def generator(self, name: str, *keys: int) -> np.random.Generator:
        """A fresh ``numpy`` generator for ``(name, *keys)``; same call, same draws."""
        return np.random.Generator(np.random.PCG64(self.seed_sequence(name, *keys)))

    def torch_seed(self, name: str, *keys: int) -> int:
        """A 63-bit integer seed for ``torch.Generator.manual_seed``."""
        state = self.seed_sequence(name, *keys).generate_state(2, dtype=np.uint32)
        return int((int(state[0]) << 31) ^ int(state[1])) & ((1 << 63) - 1)

    def __repr__(self) -> str:
        return f"Streams(seed={self.seed})"
