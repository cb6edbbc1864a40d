"""Round accounting: one row of ``rounds.csv`` per round, and the device table.

Bits come from the round's transfer records (a multicast's bits count once:
they went on air once); energy from the nodes' meters, read before and after
the round (after the radio settled pending RRC tails and the BS meter), so
every joule a meter holds is in exactly one round. A device's idle energy is
its platform's idle power over the round minus its compute time; modem
energy (tx, rx, wait, tail, promotion) adds to it. ``device_energy_j`` is all of it:
compute + tx + rx + wait + tail + promotion + idle; ``device_active_energy_j`` leaves
out idle (what FL papers usually count).

The time split, the sub-frames on air and the idle energy describe the round's window
[t0, t1] (:func:`window_columns`): every record that overlaps it, clipped to it. In a
synchronous round these are the round's own records; an asynchronous algorithm's rows
(one per server update) have steps running across them, whose records exist only once
they end — a run's rows are brought up to date with every record at its end
(:func:`refine_windows`).
"""

from __future__ import annotations

import bisect
import math
from typing import TYPE_CHECKING, Any

import pandas as pd

from channel_models.numerology import SUBFRAME_S
from netfl.core.meter import METER_FIELDS, EnergyMeter
from netfl.core.nodes import Node
from netfl.core.records import ComputeRecord, TransferRecord
from netfl.core.timeline import split_time, union_length_s

if TYPE_CHECKING:
    from netfl.algorithms.algorithm import RoundSummary
    from netfl.sim.world import World

__all__ = [
    "MeterSnapshot",
    "bits_on_air",
    "devices_frame",
    "rb_subframes_on_air",
    "refine_windows",
    "round_row",
    "snapshot",
    "window_columns",
]

#: node name → values of its meter (in METER_FIELDS order)
MeterSnapshot = dict[str, tuple[float, ...]]


def snapshot(nodes: dict[str, Node]) -> MeterSnapshot:
    """The meters of ``nodes`` now."""
    return {name: n.energy.values() for name, n in nodes.items()}


def _delta(before: MeterSnapshot, after: MeterSnapshot, names: list[str], key: str) -> float:
    i = METER_FIELDS.index(key)
    return sum(after[n][i] - before[n][i] for n in names)


def bits_on_air(transfers: list[TransferRecord]) -> dict[str, float]:
    """Bits per direction that went on air: a transfer cut short (its device left, or
    the deadline passed) counts the bits it delivered; a multicast counts once, as far
    as it got (its receivers that left have fewer)."""
    bits = {"uplink": 0.0, "downlink": 0.0, "d2d": 0.0, "backhaul": 0.0}
    groups: dict[int, TransferRecord] = {}
    for t in transfers:
        if t.multicast_group >= 0:
            best = groups.get(t.multicast_group)
            if best is None or t.delivered_bits > best.delivered_bits:
                groups[t.multicast_group] = t
            continue
        bits[t.direction] += t.delivered_bits
    for t in groups.values():
        bits[t.direction] += t.delivered_bits
    return bits


def rb_subframes_on_air(transfers: list[TransferRecord]) -> float:
    """RB sub-frames the transfers held: a multicast's once (each of its receivers' records
    carries the transmission's; one cut short, the part until its cut: the group counts
    its largest). NaN where a link has none (fixed rate)."""
    total, groups = 0.0, {}
    for t in transfers:
        if t.multicast_group >= 0:
            best = groups.get(t.multicast_group)
            if best is None or math.isnan(best) or t.rb_subframes > best:
                groups[t.multicast_group] = t.rb_subframes
        else:
            total += t.rb_subframes
    return total + sum(groups.values())


def round_row(
    r: int,
    t0_s: float,
    t1_s: float,
    transfers: list[TransferRecord],
    computes: list[ComputeRecord],
    nodes: dict[str, Node],
    before: MeterSnapshot,
    after: MeterSnapshot,
    summary: RoundSummary,
) -> dict[str, Any]:
    """One row of ``rounds.csv`` from the records a round appended and the meter change."""
    bits = bits_on_air(transfers)
    devices = [n for n, node in nodes.items() if node.is_device]
    servers = [n for n, node in nodes.items() if not node.is_device]
    dev = {
        k: _delta(before, after, devices, f"{k}_j")
        for k in ("compute", "tx", "rx", "wait", "tail", "promotion")
    }
    duration = t1_s - t0_s
    window = window_columns(t0_s, t1_s, transfers, computes, nodes)
    idle_j = window.pop("device_idle_energy_j")
    bs_radio_j = _delta(before, after, servers, "bs_radio_j")
    server_compute_j = _delta(before, after, servers, "compute_j")
    air = [t for t in transfers if t.direction != "backhaul"]  # (radio transfers)
    row: dict[str, Any] = {
        "round": r,
        "sim_time_s": t1_s,
        "round_time_s": duration,
        "num_clients": summary.num_clients,
        "train_loss": summary.train_loss,
        "uplink_bits": bits["uplink"],
        "downlink_bits": bits["downlink"],
        "d2d_bits": bits["d2d"],
        "backhaul_bits": bits["backhaul"],
        "subframes": window.pop("subframes"),
        "rb_subframes": rb_subframes_on_air(air),
        # (models that arrived: a transfer cut short carried no whole model)
        "models_sent": sum(t.num_models for t in air if t.outcome == "delivered"),
        **{
            f"models_{d}": sum(
                t.num_models for t in transfers if t.direction == d and t.outcome == "delivered"
            )
            for d in bits
        },
        "num_transfers": len(transfers),
        "device_energy_j": sum(dev.values()) + idle_j,
        "device_active_energy_j": sum(dev.values()),
        "device_compute_energy_j": dev["compute"],
        "device_tx_energy_j": dev["tx"],
        "device_rx_energy_j": dev["rx"],
        "device_wait_energy_j": dev["wait"],
        "device_tail_energy_j": dev["tail"],
        "device_promotion_energy_j": dev["promotion"],
        "device_idle_energy_j": idle_j,
        "server_energy_j": server_compute_j + bs_radio_j,
        "bs_radio_energy_j": bs_radio_j,
        **window,
    }
    row.update(summary.extra)
    return row


def window_columns(
    t0_s: float,
    t1_s: float,
    transfers: list[TransferRecord],
    computes: list[ComputeRecord],
    nodes: dict[str, Node],
) -> dict[str, Any]:
    """The columns of the window [t0, t1] from the records that overlap it, each interval
    clipped to it: the time split (:func:`split_time`), ``subframes`` (1 ms sub-frames
    with a radio transfer on air) and ``device_idle_energy_j`` (each device's idle power
    over the window less its compute time in it)."""

    def clip(a: float, b: float) -> tuple[float, float]:
        return max(a, t0_s), max(min(b, t1_s), t0_s)

    comm = [clip(t.start_s, t.end_s) for t in transfers]
    air = [c for c, t in zip(comm, transfers, strict=True) if t.direction != "backhaul"]
    airtime = union_length_s(air)
    work = [clip(c.start_s, c.end_s) for c in computes]
    busy: dict[str, float] = {}
    for c, (a, b) in zip(computes, work, strict=True):
        busy[c.node] = busy.get(c.node, 0.0) + (b - a)
    duration = t1_s - t0_s
    idle_j = sum(
        node.compute.idle_power_w * max(duration - busy.get(name, 0.0), 0.0)
        for name, node in nodes.items()
        if node.is_device
    )
    return {
        "subframes": math.ceil(airtime / SUBFRAME_S - 1e-9) if airtime > 0 else 0,
        "device_idle_energy_j": idle_j,
        **split_time(t0_s, t1_s, comm, work),
    }


def refine_windows(
    rows: list[dict[str, Any]],
    transfers: list[TransferRecord],
    computes: list[ComputeRecord],
    nodes: dict[str, Node],
) -> None:
    """Bring the rows' :func:`window_columns` (and ``device_energy_j``) up to date with
    every record of the run: a step that ran across rows (an asynchronous algorithm's
    training across server updates) counts in each row's window for the part inside it.
    The rows' windows follow each other from the first's start."""
    if not rows:
        return
    t1 = [float(row["sim_time_s"]) for row in rows]
    t0 = [t1[0] - float(rows[0]["round_time_s"]), *t1[:-1]]
    tr: list[list[TransferRecord]] = [[] for _ in rows]
    co: list[list[ComputeRecord]] = [[] for _ in rows]
    for records, into in ((transfers, tr), (computes, co)):
        for rec in records:
            first = bisect.bisect_right(t1, rec.start_s)  # (the first window ending after it)
            last = bisect.bisect_left(t0, rec.end_s) - 1  # (the last beginning before its end)
            for k in range(first, min(last, len(rows) - 1) + 1):
                into[k].append(rec)
    for row, a, b, ts, cs in zip(rows, t0, t1, tr, co, strict=True):
        window = window_columns(a, b, ts, cs, nodes)
        row.update(window)
        row["device_energy_j"] = row["device_active_energy_j"] + window["device_idle_energy_j"]


def devices_frame(
    world: World, meters: MeterSnapshot | None = None, end_s: float | None = None
) -> pd.DataFrame:
    """One row per node: profiles, position, samples, busy times and energy by state —
    from the nodes' meters now, or from ``meters`` taken at ``end_s`` (the end of a run's
    last finished round, when a round in progress was dropped)."""
    end = world.env.now if end_s is None else end_s
    fixed_rate = world.scenario.cell.link.mode == "fixed_rate"  # (an OFDMA cell rates the channel)
    rows = []
    for n in [*world.infrastructure, *world.all_devices]:
        e = n.energy if meters is None else EnergyMeter(*meters[n.name])
        idle_j = n.compute.idle_power_w * max(end - e.compute_s, 0.0) if n.is_device else 0.0
        rows.append(
            {
                "node": n.name,
                "kind": n.kind,
                "compute_profile": n.compute.name,
                "link_profile": n.link.name if n.link and fixed_rate else "",
                # whose modem powers the device draws (its own profile's unless chosen)
                "modem_profile": (n.compute.modem_profile or n.compute.name) if n.is_device else "",
                "num_samples": world.num_samples(n) if n.is_device else 0,
                "x_m": float(n.position_m[0]),
                "y_m": float(n.position_m[1]),
                "height_m": n.height_m,  # (NaN: the path-loss law's UE height)
                **{f: getattr(e, f) for f in METER_FIELDS},
                "idle_energy_j": idle_j,
                "active_energy_j": e.total_j,
                "energy_j": e.total_j + idle_j,
            }
        )
    df = pd.DataFrame(rows)
    return df.rename(
        columns={f: f.replace("_j", "_energy_j") for f in METER_FIELDS if f.endswith("_j")}
    )
