"""Scale of a multi-cell network (issue 23, item 6): timing-only FedAvg on 19 sites ×
3 sectors (57 cells, TR 38.901 UMa, ISD 500 m, wrap-around, load-factor interference)
with 10 FL devices per cell and CUE sessions loading every cell, 20 rounds.

Prints the wall time (set-up — drops, association, interference — and simulation),
the SimPy events, the wall time per event, and beside it the same figures of one cell
with the same per-cell load (10 devices, the same CUE density, the same profile), so
the network's per-event overhead shows. Targets (ours; the issue sets none): the
network's simulation wall per event at most 2× the single cell's, and the whole
20-round run within 2 minutes on this 2-core machine.

    .venv/bin/python benchmarks/multicell_scale.py [--rounds 20]
"""

from __future__ import annotations

import argparse
import time

import simpy
from _result import report  # (benchmarks/ is on sys.path when run as a script)

import netfl.sim.world
from netfl.scenario.files import parse_scenario
from netfl.sim.runner import run


class CountingEnvironment(simpy.Environment):
    """A SimPy environment that counts processed events."""

    events = 0

    def step(self) -> None:
        CountingEnvironment.events += 1
        super().step()


CUES = {
    "density_per_km2": 40.0,
    "session_rate_per_s": 0.05,
    "mean_session_s": 10.0,
    "demand_rbs": 4,
}


def scenario(network: bool, rounds: int) -> dict:
    data = {
        "name": "multicell_scale" if network else "multicell_scale_one_cell",
        "seed": 1,
        "cell": {
            # one cell: the disc of a hexagon's area (ISD 500 m: 0.2165 km²)
            "radius_m": 262.5,
            "link": {"mode": "ofdma", "channel_profile": "nr_fr1_uma"},
            "cues": CUES,
        },
        "devices": {"count": 570 if network else 10, "compute_profile": "smartphone"},
        "data": {"dataset": "mnist5k"},
        "model": {"name": "lenet"},
        "training": {"rounds": rounds},
        "learning": {"mode": "timing"},
        "outputs": {"figures": False, "progress": False},
    }
    if network:
        data["network"] = {
            "sites": 19,
            "sectors": 3,
            "isd_m": 500,
            "interference": {"model": "load_factor", "load": 0.5},
            "server_site": "cloud",
        }
    return data


def measure(network: bool, rounds: int) -> dict:
    CountingEnvironment.events = 0
    s = parse_scenario(scenario(network, rounds))
    t0 = time.perf_counter()
    result = run(s)
    wall = time.perf_counter() - t0
    setup = result.info["setup_wall_s"]
    return {
        "wall_s": wall,
        "setup_s": setup,
        "sim_wall_s": wall - setup,
        "events": CountingEnvironment.events,
        "transfers": len(result.transfers),
        "sim_time_s": float(result.rounds["sim_time_s"].iloc[-1]),
        "cells": len(result.tables["cells"]) if "cells" in result.tables else 1,
        "cues": len(result.tables["cues"]),
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=20)
    args = ap.parse_args()
    netfl.sim.world.simpy.Environment = CountingEnvironment
    rows = {}
    for label, network in (("one cell, 10 devices", False), ("19 x 3 cells, 570 devices", True)):
        m = rows[label] = measure(network, args.rounds)
        print(
            f"{label}: {m['cells']} cells, {m['cues']} CUEs, {args.rounds} rounds: wall "
            f"{m['wall_s']:.2f} s (setup {m['setup_s']:.2f} s, simulation "
            f"{m['sim_wall_s']:.2f} s), {m['events']} events, {m['transfers']} transfers, "
            f"{m['sim_wall_s'] / m['events'] * 1e6:.1f} µs/event, simulated "
            f"{m['sim_time_s']:.0f} s",
            flush=True,
        )
    one, net = rows.values()
    per_event = (net["sim_wall_s"] / net["events"]) / (one["sim_wall_s"] / one["events"])
    report("network / one-cell simulation wall per event", per_event, 2.0, "x")
    report(f"19 x 3 cells, 570 devices, {args.rounds} rounds: wall", net["wall_s"], 120.0, "s")


if __name__ == "__main__":
    main()
