"""The sharing rules schedulers build on (pure numpy): who holds how much of a capacity.

- :func:`max_min_fair` — water-filling among capped claimants;
- :func:`equal_share` / :func:`uncapped_equal_share` — max-min fair shares of
  sessions (grouped by demand: ``demand → count``) and flows with caps;
- :func:`first_come_first_served` — in arrival order each takes up to its demand
  (sessions given as ``arrival → demand``).
"""

from __future__ import annotations

import math
from collections.abc import Mapping

import numpy as np

__all__ = ["equal_share", "first_come_first_served", "max_min_fair", "uncapped_equal_share"]


def max_min_fair(capacity: float, caps: np.ndarray, counts: np.ndarray | None = None) -> np.ndarray:
    """Max-min fair (water-filling) split of a capacity among capped claimants.

    Each claimant gets ``min(cap_i, level)`` where the level is such that the
    shares use the whole capacity (or every claimant is capped). With no
    binding caps this is plain processor sharing / equal share.

    Parameters
    ----------
    capacity : float
        What is shared (bit/s, or resource blocks).
    caps : ndarray, shape (n,)
        Each claimant's own maximum (``inf`` for none).
    counts : ndarray, shape (n,), optional
        Multiplicity of each claimant (identical claimants grouped); default 1.

    Returns
    -------
    ndarray, shape (n,)
        The share of *one* claimant of each row; ``sum(counts · shares)`` equals
        ``min(capacity, sum(counts · caps))``.
    """
    caps = np.asarray(caps, dtype=float)
    n = caps.size
    if n == 0:
        return caps.copy()
    if n <= 8:  # few claimants (grouped sessions and flows): plain loop, no array overhead
        return _max_min_fair_small(
            float(capacity), caps.tolist(), [1.0] * n if counts is None else list(counts)
        )
    w = np.ones(n) if counts is None else np.asarray(counts, dtype=float)
    order = np.argsort(caps, kind="stable")
    c, wc = caps[order], w[order]
    # level_k: the equal share left for claimants k.. if all before k are capped
    before = np.concatenate([[0.0], np.cumsum((c * wc)[:-1])])
    left = np.cumsum(wc[::-1])[::-1]
    level = (float(capacity) - before) / left
    shares_sorted = c.copy()
    uncapped = np.flatnonzero(c > level)
    if uncapped.size:
        m = uncapped[0]
        shares_sorted[m:] = level[m]
    shares = np.empty(n)
    shares[order] = shares_sorted
    return shares


def _max_min_fair_small(capacity: float, caps: list[float], counts: list[float]) -> np.ndarray:
    order = sorted(range(len(caps)), key=caps.__getitem__)
    left_count = float(sum(counts))
    remaining = capacity
    shares = [0.0] * len(caps)
    for pos, i in enumerate(order):
        level = remaining / left_count
        if caps[i] > level:  # this and all larger caps get the level
            for j in order[pos:]:
                shares[j] = level
            break
        shares[i] = caps[i]
        remaining -= caps[i] * counts[i]
        left_count -= counts[i]
    return np.array(shares)


def equal_share(
    capacity: float, demand_counts: Mapping[float, int], caps: np.ndarray
) -> tuple[np.ndarray, float]:
    """Max-min fair shares of sessions (grouped by demand) and flows with ``caps``.

    Returns the flows' shares and the sessions' total.
    """
    k = len(demand_counts)
    if k < 8 and np.isinf(caps).all():  # uncapped flows (or none): one group, small
        share, sessions = uncapped_equal_share(capacity, demand_counts, caps.size)
        return np.full(caps.size, share), sessions
    demands = np.fromiter(demand_counts.keys(), float, k)
    counts = np.fromiter(demand_counts.values(), float, k)
    shares = max_min_fair(
        capacity,
        np.concatenate([demands, caps]),
        np.concatenate([counts, np.ones(len(caps))]),
    )
    return shares[k:], float(np.dot(shares[:k], counts))


def uncapped_equal_share(
    capacity: float, demand_counts: Mapping[float, int], num_flows: int
) -> tuple[float, float]:
    """:func:`equal_share` of ``num_flows`` uncapped flows and a few session demands
    (plain loop, no arrays): one flow's share (0 without flows) and the sessions' total."""
    k = len(demand_counts)
    demands = [*demand_counts.keys()] + [math.inf] * (num_flows > 0)
    counts = [*demand_counts.values()] + [num_flows] * (num_flows > 0)
    shares = _max_min_fair_small(capacity, demands, counts)
    sessions = float(sum(s * c for s, c in zip(shares[:k], counts[:k], strict=True)))
    return (float(shares[k]) if num_flows else 0.0), sessions


def first_come_first_served(
    capacity: float, sessions: Mapping[int, float], caps: np.ndarray, arrivals: np.ndarray
) -> tuple[np.ndarray, float]:
    """In arrival order each takes up to its demand/cap while capacity remains.

    ``sessions`` maps arrival number → demand. Returns the flows' shares and the
    sessions' total.
    """
    k = len(sessions)
    keys = np.fromiter(sessions.keys(), float, k)
    demands = np.fromiter(sessions.values(), float, k)
    all_keys = np.concatenate([keys, arrivals])
    order = np.argsort(all_keys, kind="stable")
    want = np.concatenate([demands, caps])[order]
    before = np.concatenate([[0.0], np.cumsum(want[:-1])]) if want.size else want
    got = np.empty_like(want)
    got[order] = np.minimum(want, np.maximum(0.0, capacity - before))
    return got[k:], float(got[:k].sum())
