"""The critical path of a round: which chain of steps set its end, and its straggler.

Walking back from the step that ended last (in FedAvg the server's aggregation): the
step before a step is the one that ended last, no later than it began, among the steps
of its *actors* — the devices it involves (a transfer's device end, a device's compute)
and, for a transfer from the infrastructure, its sender's steps that involve no device
(a download follows the server's or an edge's work before it: FedZKT's distillation,
HierFAVG's edge aggregation; not another device's transfer with the sender), or
its nodes when it involves no device (the server's compute follows what reached the
server). Each step found is on the critical path; the walk stops at the round's start.

``straggler`` is the last device on the path (the one the round waited for);
``straggler_step`` the longest step on the path (``download``, ``compute``, ``upload``,
``d2d``, ``backhaul`` or ``server_compute``), with its duration ``straggler_step_s``.
A round without device steps has no straggler (empty name, NaN duration).
"""

from __future__ import annotations

import bisect
import math
from typing import Any

from netfl.core.records import ComputeRecord, TransferRecord

__all__ = ["STEP_OF_DIRECTION", "critical_path", "straggler_columns"]

#: the step a transfer of each direction is
STEP_OF_DIRECTION = {
    "uplink": "upload",
    "downlink": "download",
    "d2d": "d2d",
    "backhaul": "backhaul",
}
#: tolerance of "ended no later than it began" [s] (float sums of the clock)
_EPS_S = 1e-9


def _steps(
    transfers: list[TransferRecord],
    computes: list[ComputeRecord],
    devices: set[str],
    aliases: dict[str, str],
) -> list[tuple[float, float, str, str, frozenset[str], frozenset[str]]]:
    """(start, end, step, node, nodes, actors) of every record of the round; a node of
    ``aliases`` counts as the one it stands for."""
    out = []
    for t in transfers:
        src, dst = aliases.get(t.src, t.src), aliases.get(t.dst, t.dst)
        nodes = frozenset((src, dst))
        ends = nodes & devices
        # (a download's sender: its work before it — a step of the sender's that
        # involves no device, so other devices' transfers with it are no predecessor)
        infra = frozenset((("infra", src),)) if src not in devices else frozenset()
        actors = (ends | infra) if ends else nodes
        node = next(iter(sorted(nodes & devices)), t.src)
        out.append(
            (
                t.start_s,
                t.end_s,
                STEP_OF_DIRECTION.get(t.direction, t.direction),
                node,
                nodes,
                actors,
            )
        )
    for c in computes:
        nodes = frozenset((c.node,))
        step = "compute" if c.node in devices else "server_compute"
        out.append((c.start_s, c.end_s, step, c.node, nodes, nodes))
    return out


def critical_path(
    r: int,
    t0_s: float,
    transfers: list[TransferRecord],
    computes: list[ComputeRecord],
    devices: set[str],
    aliases: dict[str, str] | None = None,
) -> list[dict[str, Any]]:
    """The round's critical path, first step first: one row per step (round, node,
    step, start_s, end_s, duration_s); empty for a round with no records. ``aliases``:
    nodes that stand for another (a network's cells at the server's site, which are the
    server's: :meth:`~netfl.radio.radio.Radio.server_aliases`).

    Each node's steps are kept sorted by (end, start), so a step's predecessor is a
    binary search per actor: O(path · log steps), not a scan per step (a split-learning
    round has thousands of steps on its path)."""
    steps = _steps(transfers, computes, devices, aliases or {})
    if not steps:
        return []
    order = sorted(range(len(steps)), key=lambda i: (steps[i][1], steps[i][0]))
    by_node: dict[Any, list[int]] = {}
    for i in order:
        nodes = steps[i][4]
        for node in nodes:
            by_node.setdefault(node, []).append(i)
        if not nodes & devices:  # (the infrastructure's own steps, apart)
            for node in nodes:
                by_node.setdefault(("infra", node), []).append(i)
    ends = {node: [steps[i][1] for i in idx] for node, idx in by_node.items()}
    # the step that ended last (of equal ends: the one that began last, a device's first)
    current = max(
        range(len(steps)), key=lambda i: (steps[i][1], steps[i][0], steps[i][3] in devices)
    )
    path, seen = [current], {current}
    while steps[current][0] > t0_s + _EPS_S:
        start = steps[current][0]
        best = None
        for actor in steps[current][5]:
            idx = by_node.get(actor, [])
            k = bisect.bisect_right(ends.get(actor, []), start + _EPS_S) - 1
            while k >= 0 and idx[k] in seen:
                k -= 1
            if k >= 0 and (best is None or steps[idx[k]][:2][::-1] > steps[best][:2][::-1]):
                best = idx[k]
        if best is None:
            break
        current = best
        path.append(current)
        seen.add(current)
    return [
        {
            "round": r,
            "node": steps[i][3],
            "step": steps[i][2],
            "start_s": steps[i][0],
            "end_s": steps[i][1],
            "duration_s": steps[i][1] - steps[i][0],
        }
        for i in reversed(path)
    ]


def straggler_columns(path: list[dict[str, Any]], devices: set[str]) -> dict[str, Any]:
    """``rounds.csv``'s straggler columns of a round's critical path."""
    on_devices = [p for p in path if p["node"] in devices]
    if not on_devices:
        return {"straggler": "", "straggler_step": "", "straggler_step_s": math.nan}
    longest = max(path, key=lambda p: p["duration_s"])
    return {
        "straggler": on_devices[-1]["node"],
        "straggler_step": longest["step"],
        "straggler_step_s": longest["duration_s"],
    }


class CriticalPaths:
    """The ``critical_path`` table of a run: every round's path, from the recorder's
    records (a resumed run's replayed rounds included)."""

    def __init__(self, recorder: Any, devices: set[str], aliases: dict[str, str] | None = None):
        self.recorder = recorder
        self.devices = devices
        self.aliases = aliases or {}

    def tables(self) -> dict[str, Any]:
        import pandas as pd

        by_round: dict[int, tuple[list, list]] = {}
        for t in self.recorder.transfers:
            by_round.setdefault(t.round, ([], []))[0].append(t)
        for c in self.recorder.computes:
            by_round.setdefault(c.round, ([], []))[1].append(c)
        rows = []
        for r in sorted(by_round):
            transfers, computes = by_round[r]
            t0 = min(x.start_s for x in [*transfers, *computes])
            rows += critical_path(r, t0, transfers, computes, self.devices, self.aliases)
        columns = ["round", "node", "step", "start_s", "end_s", "duration_s"]
        return {"critical_path": pd.DataFrame(rows, columns=columns)}
