"""Drive an algorithm's rounds on the SimPy clock; stop rules; round table.

Rounds run until ``training.rounds``, until the global model reaches
``training.target_accuracy`` (checked on evaluation rounds), or until the
simulated clock passes ``training.time_budget_s`` (checked at the end of each
round: the round in progress always completes).
"""

from __future__ import annotations

import logging
import math
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from channel_models.numerology import SUBFRAME_S
from netfl.algorithms import Algorithm, RoundSummary, get_algorithm
from netfl.nodes import Node
from netfl.records import ComputeRecord, TransferRecord
from netfl.scenario import Scenario
from netfl.timeline import split_time, union_length_s
from netfl.world import World

__all__ = ["RunResult", "run", "round_row"]

log = logging.getLogger(__name__)


@dataclass
class RunResult:
    """The tables of one run, before or after they are written to disk."""

    scenario: Scenario
    rounds: pd.DataFrame
    transfers: pd.DataFrame
    computes: pd.DataFrame
    devices: pd.DataFrame
    stop_reason: str
    wall_time_s: float
    info: dict[str, Any] = field(default_factory=dict)
    #: further tables of the radio (``occupancy``, ``cues``), written as parquet/csv
    radio_tables: dict[str, pd.DataFrame] = field(default_factory=dict)


def round_row(
    r: int,
    t0_s: float,
    t1_s: float,
    transfers: list[TransferRecord],
    computes: list[ComputeRecord],
    nodes: dict[str, Node],
    summary: RoundSummary,
) -> dict[str, Any]:
    """One row of ``rounds.csv`` from the records a round appended."""
    bits = {"uplink": 0.0, "downlink": 0.0, "d2d": 0.0}
    for t in transfers:
        bits[t.direction] += t.size_bits
    dev_compute_j = sum(c.energy_j for c in computes if nodes[c.node].is_device)
    dev_tx_j = sum(t.tx_energy_j for t in transfers if nodes[t.src].is_device)
    dev_rx_j = sum(t.rx_energy_j for t in transfers if nodes[t.dst].is_device)
    server_j = (
        sum(c.energy_j for c in computes if not nodes[c.node].is_device)
        + sum(t.tx_energy_j for t in transfers if not nodes[t.src].is_device)
        + sum(t.rx_energy_j for t in transfers if not nodes[t.dst].is_device)
    )
    busy_s: dict[str, float] = {}
    for c in computes:
        busy_s[c.node] = busy_s.get(c.node, 0.0) + c.duration_s
    for t in transfers:
        for name in (t.src, t.dst):
            busy_s[name] = busy_s.get(name, 0.0) + t.duration_s
    duration = t1_s - t0_s
    idle_j = sum(
        n.compute.idle_power_w * max(duration - busy_s.get(n.name, 0.0), 0.0)
        for n in nodes.values()
        if n.is_device
    )
    airtime = union_length_s((t.start_s, t.end_s) for t in transfers)
    row: dict[str, Any] = {
        "round": r,
        "sim_time_s": t1_s,
        "round_time_s": duration,
        "num_clients": summary.num_clients,
        "train_loss": summary.train_loss,
        "uplink_bits": bits["uplink"],
        "downlink_bits": bits["downlink"],
        "d2d_bits": bits["d2d"],
        "subframes": math.ceil(airtime / SUBFRAME_S - 1e-9) if airtime > 0 else 0,
        "rb_subframes": sum(t.rb_subframes for t in transfers),
        "models_sent": sum(t.num_models for t in transfers),
        "num_transfers": len(transfers),
        "device_energy_j": dev_compute_j + dev_tx_j + dev_rx_j,
        "device_compute_energy_j": dev_compute_j,
        "device_tx_energy_j": dev_tx_j,
        "device_rx_energy_j": dev_rx_j,
        "device_idle_energy_j": idle_j,
        "server_energy_j": server_j,
        **split_time(
            t0_s,
            t1_s,
            [(t.start_s, t.end_s) for t in transfers],
            [(c.start_s, c.end_s) for c in computes],
        ),
    }
    row.update(summary.extra)
    return row


def _devices_frame(world: World) -> pd.DataFrame:
    end = world.env.now
    rows = []
    for n in [world.bs, *world.devices]:
        e = n.energy
        busy = e.compute_s + e.tx_s + e.rx_s
        idle_j = n.compute.idle_power_w * max(end - busy, 0.0)
        rows.append(
            {
                "node": n.name,
                "kind": n.kind,
                "compute_profile": n.compute.name,
                "link_profile": n.link.name if n.link else "",
                "num_samples": world.num_samples(n) if n.is_device else 0,
                "x_m": float(n.position_m[0]),
                "y_m": float(n.position_m[1]),
                "compute_s": e.compute_s,
                "tx_s": e.tx_s,
                "rx_s": e.rx_s,
                "compute_energy_j": e.compute_j,
                "tx_energy_j": e.tx_j,
                "rx_energy_j": e.rx_j,
                "idle_energy_j": idle_j,
                "energy_j": e.total_j,
            }
        )
    return pd.DataFrame(rows)


def run(
    scenario: Scenario,
    source: str = "scenario",
    on_round: Callable[[dict[str, Any]], None] | None = None,
) -> RunResult:
    """Build the world, run the algorithm's rounds, and return the tables.

    ``on_round`` is called with each finished row (the CLI's progress bar).
    """
    wall0 = time.perf_counter()
    world = World(scenario, source)
    setup_wall_s = time.perf_counter() - wall0
    algorithm: Algorithm = get_algorithm(scenario.algorithm.name)(
        world, scenario.algorithm_config()
    )
    tr = scenario.training
    env, rec = world.env, world.recorder
    nodes = {n.name: n for n in [world.bs, *world.devices]}
    rows: list[dict[str, Any]] = []
    stop_reason = "rounds"
    for r in range(tr.rounds):
        rec.round = r
        world.begin_round(r)
        t0 = env.now
        n_tr, n_co = len(rec.transfers), len(rec.computes)
        proc = env.process(algorithm.round(r))
        env.run(until=proc)
        row = round_row(
            r, t0, env.now, rec.transfers[n_tr:], rec.computes[n_co:], nodes, proc.value
        )
        over_budget = tr.time_budget_s is not None and env.now >= tr.time_budget_s
        last = r == tr.rounds - 1 or over_budget
        acc = loss = float("nan")
        if world.learn and ((r + 1) % tr.eval_every == 0 or last):
            acc, loss = algorithm.evaluate()
        row["accuracy"], row["loss"] = acc, loss
        rows.append(row)
        if on_round is not None:
            on_round(row)
        if tr.target_accuracy is not None and acc >= tr.target_accuracy:
            stop_reason = "target_accuracy"
            break
        if over_budget:
            stop_reason = "time_budget"
            break
    rounds = pd.DataFrame(rows)
    radio_tables = {}
    if world.channel is not None:
        radio_tables["occupancy"] = pd.DataFrame(
            [
                (name, t, s, f)
                for name, c in world.radio.carriers.items()
                for t, s, f in c.occupancy
            ],
            columns=["carrier", "time_s", "session_rbs", "flow_rbs"],
        )
        pos = world.cues.positions_m if world.cues is not None else np.zeros((0, 2))
        radio_tables["cues"] = pd.DataFrame({"x_m": pos[:, 0], "y_m": pos[:, 1]})
    first = ["round", "sim_time_s", "accuracy", "loss"]
    rounds = rounds[first + [c for c in rounds.columns if c not in first]]
    return RunResult(
        scenario=scenario,
        rounds=rounds,
        transfers=rec.transfers_frame(),
        computes=rec.computes_frame(),
        devices=_devices_frame(world),
        stop_reason=stop_reason,
        wall_time_s=time.perf_counter() - wall0,
        radio_tables=radio_tables,
        info={
            "setup_wall_s": setup_wall_s,
            "model_params": world.model.num_params,
            "model_size_bits": world.model.size_bits,
            "train_flops_per_sample": world.model.flops.train_per_sample,
            "inference_flops_per_sample": world.model.flops.inference_per_sample,
            "num_train_samples": len(world.dataset.train_y),
            "num_test_samples": len(world.dataset.test_y),
        },
    )
