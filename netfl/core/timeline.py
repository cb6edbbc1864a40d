"""Interval arithmetic on a round's records: unions and the time split."""

from __future__ import annotations

from collections.abc import Iterable

__all__ = ["union_length_s", "split_time"]


def union_length_s(intervals: Iterable[tuple[float, float]]) -> float:
    """Measure of the union of ``[start, end)`` intervals [s]."""
    total = 0.0
    cur_start = cur_end = None
    for start, end in sorted(intervals):
        if cur_end is None or start > cur_end:
            if cur_end is not None:
                total += cur_end - cur_start
            cur_start, cur_end = start, end
        else:
            cur_end = max(cur_end, end)
    if cur_end is not None:
        total += cur_end - cur_start
    return total


def split_time(
    t0_s: float,
    t1_s: float,
    comm: Iterable[tuple[float, float]],
    compute: Iterable[tuple[float, float]],
) -> dict[str, float]:
    """Split ``[t0, t1]`` into communication only, compute only, both, and neither.

    Returns ``comm_time_s``, ``compute_time_s``, ``overlap_time_s`` and
    ``idle_time_s``, which sum to ``t1 - t0``.
    """
    comm_list = list(comm)
    compute_list = list(compute)
    comm_u = union_length_s(comm_list)
    compute_u = union_length_s(compute_list)
    both = comm_u + compute_u - union_length_s(comm_list + compute_list)
    comm_only = comm_u - both
    compute_only = compute_u - both
    idle = (t1_s - t0_s) - comm_only - compute_only - both
    return {
        "compute_time_s": compute_only,
        "comm_time_s": comm_only,
        "overlap_time_s": both,
        "idle_time_s": max(idle, 0.0),
    }
