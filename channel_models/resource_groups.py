"""Downlink resource allocation in resource-block groups (RBGs).

A downlink scheduler of resource allocation type 0 hands out RBs in groups of P
consecutive RBs, not one by one:

- LTE, TS 36.213 §7.1.6.1, Table 7.1.6.1-1: P = 1, 2, 3, 4 for ≤ 10, 11–26, 27–63,
  64–110 downlink RBs;
- NR, TS 38.214 §5.1.2.2.1, Table 5.1.2.2.1-1 (nominal RBG size by bandwidth-part
  size, configuration 1 / 2): 1–36 RBs → 2 / 4, 37–72 → 4 / 8, 73–144 → 8 / 16,
  145–275 → 16 / 16.

There are ⌈N/P⌉ groups; the last holds N − P·⌊N/P⌋ RBs when P does not divide N.

:func:`round_robin_group_rbs` is ns-3 LENA's downlink round robin
(``RrFfMacScheduler::DoSchedDlTriggerReq``): with n UEs holding data it gives each
⌊G/n⌋ groups per TTI (at least one), in group order, and leaves the rest of the
groups unused in that TTI; with more UEs than groups every group carries one UE and
the UEs take turns. Over TTIs each UE then holds, on average, the RBs returned.
"""

from __future__ import annotations

import math

import numpy as np

__all__ = ["group_sizes", "rbg_size", "round_robin_group_rbs"]

#: TS 36.213 Table 7.1.6.1-1: (largest downlink RB count, RBG size P)
_LTE_RBG = ((10, 1), (26, 2), (63, 3), (110, 4))
#: TS 38.214 Table 5.1.2.2.1-1: (largest BWP size, P of configuration 1, of configuration 2)
_NR_RBG = ((36, 2, 4), (72, 4, 8), (144, 8, 16), (275, 16, 16))


def rbg_size(num_rbs: int, standard: str, configuration: int = 1) -> int:
    """The RBG size P [RBs] of a downlink of ``num_rbs`` RBs (``standard``: ``lte`` or ``nr``;
    ``configuration`` 1 or 2, NR only). ``ValueError`` outside the tables."""
    if standard == "lte":
        table = [(hi, p) for hi, p in _LTE_RBG]
    elif standard == "nr":
        if configuration not in (1, 2):
            raise ValueError(f"rbg configuration: {configuration!r} (valid: 1, 2)")
        table = [(hi, p1 if configuration == 1 else p2) for hi, p1, p2 in _NR_RBG]
    else:
        raise ValueError(f"rbg standard: {standard!r} (valid: lte, nr)")
    if num_rbs >= 1:
        for hi, p in table:
            if num_rbs <= hi:
                return p
    raise ValueError(f"num_rbs: {num_rbs} is outside the {standard.upper()} RBG table (1..{hi})")


def group_sizes(num_rbs: int, size: int) -> np.ndarray:
    """RBs in each of the ⌈N/P⌉ groups (the last one short when P does not divide N)."""
    full, rest = divmod(int(num_rbs), int(size))
    return np.array([size] * full + ([rest] if rest else []), dtype=float)


def round_robin_group_rbs(sizes: np.ndarray, num_ues: int, budget_rbs: float = math.inf) -> float:
    """RBs each of ``num_ues`` UEs holds on average under LENA's downlink round robin.

    Only whole groups within ``budget_rbs`` (what other traffic leaves, counted from the
    first group) are handed out. With n ≤ G usable groups each UE gets ⌊G/n⌋ groups in
    group order and the n·⌊G/n⌋-th group on stays empty; with n > G each group carries
    one UE per TTI and the n UEs share them equally over time. A budget smaller than the
    first group is shared as it is (no whole group fits).
    """
    if num_ues <= 0:
        return 0.0
    ends = np.cumsum(sizes)
    usable = int(np.searchsorted(ends, budget_rbs * (1 + 1e-12), side="right"))
    if usable == 0:
        return min(float(budget_rbs), float(ends[-1])) / num_ues
    per_ue = usable // num_ues
    if per_ue == 0:  # more UEs than groups: every usable group carries one UE per TTI
        return float(ends[usable - 1]) / num_ues
    return float(ends[num_ues * per_ue - 1]) / num_ues
