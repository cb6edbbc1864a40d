"""Python's cyclic garbage collector during a run.

A run keeps every transfer's and computation's record, the flows on the carriers and
SimPy's pending events alive to its end, so the objects a full collection scans grow
with the run, and with the default thresholds (a young collection every 700 net
allocations, a full one every 100 young ones) the full collections grow in number
too: their cost grows as the square of a run's length. 10,000 devices on one carrier
(``benchmarks/carrier_scale.py``) spent 4.3 s of 48 s collecting, 1,000 devices 0.15 s
of 3.6 s. :func:`fewer_collections` collects young objects every 10,000 allocations
and fully every 400 young collections while a run lasts (1.0 s of 41 s); reference
counting still frees at once everything that is not in a cycle.
"""

from __future__ import annotations

import gc
import threading
from collections.abc import Iterator
from contextlib import contextmanager

__all__ = ["RUN_THRESHOLDS", "fewer_collections"]

#: ``gc.set_threshold`` while a run lasts
RUN_THRESHOLDS = (10_000, 20, 20)

_lock = threading.Lock()
_inside = 0  # (blocks under way, in any thread: the thresholds are the process's)
_before: tuple[int, ...] = ()


@contextmanager
def fewer_collections() -> Iterator[None]:
    """Collect less often inside the block (:data:`RUN_THRESHOLDS`); the thresholds
    before it are restored after, whatever happens. The thresholds are the process's:
    with blocks under way in several threads (runs in a thread pool) the first to enter
    sets them and the last to leave restores those from before the first."""
    global _inside, _before
    with _lock:
        if _inside == 0:
            _before = gc.get_threshold()
            gc.set_threshold(*RUN_THRESHOLDS)
        _inside += 1
    try:
        yield
    finally:
        with _lock:
            _inside -= 1
            if _inside == 0:
                gc.set_threshold(*_before)
