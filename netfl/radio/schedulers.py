"""RB/capacity schedulers of the shared media: who holds how much, between events.

- ``round_robin`` (:func:`equal_share`) — max-min fair: every session and flow
  gets an equal share, a session never more than its demand, a flow never
  more than its cap; what one cannot use goes to the others. Over slots this
  is what a round-robin scheduler gives each user on average.
- ``fcfs`` (:func:`first_come_first_served`) — in arrival order each takes up
  to its demand (flows: their cap) while capacity remains; later arrivals wait.
- ``proportional_fair`` — sessions and the FL budget as round robin, then the
  budget handed out per fading block by r/R̄ (:mod:`netfl.radio.proportional_fair`).

Sessions are given in aggregate: ``demand → count`` for round robin and
``arrival → demand`` (arrival order) for FCFS.

:data:`SCHEDULERS` is the registry: each :class:`Scheduler` says how a carrier splits
its RBs (its base split, and whether it re-decides at every fading block); the scenario
schema's choices for ``cell.link.scheduler`` are its names.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Literal

import numpy as np

__all__ = [
    "SCHEDULERS",
    "Scheduler",
    "equal_share",
    "first_come_first_served",
    "max_min_fair",
    "uncapped_equal_share",
]


@dataclass(frozen=True)
class Scheduler:
    """How a carrier shares its RBs between events.

    ``base`` is the split of the capacity among sessions and flows (``fair``: max-min
    fair, :func:`equal_share`; ``arrival``: in arrival order,
    :func:`first_come_first_served`); ``per_block`` schedulers then hand the FL flows'
    budget out anew in every fading block (:mod:`netfl.radio.proportional_fair`), so a
    carrier wakes at every block boundary while two or more flows compete;
    ``whole_rb_groups`` schedulers hand a profile's downlink out in whole resource-block
    groups (``downlink_allocation: rbg_round_robin``, TS 38.214's RBG sizes) where the
    others share RBs fractionally.
    """

    name: str
    base: Literal["fair", "arrival"]
    per_block: bool
    description: str
    whole_rb_groups: bool = False


#: the schedulers by name (``cell.link.scheduler``)
SCHEDULERS: dict[str, Scheduler] = {
    s.name: s
    for s in (
        Scheduler(
            "round_robin",
            "fair",
            False,
            "max-min fair shares (round robin on average)",
            whole_rb_groups=True,
        ),
        Scheduler("fcfs", "arrival", False, "first come, first served up to each demand"),
        Scheduler(
            "proportional_fair",
            "fair",
            True,
            "the FL budget by r/R-bar in every fading block (Kelly; LENA's PF)",
        ),
    )
}


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
