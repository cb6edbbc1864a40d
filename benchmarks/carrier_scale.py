"""Scale on one carrier (issue 34, item 5): ``scenarios/cell_5g_ppp.yaml`` in timing
mode on synthetic data (three samples per device), 2 rounds, with 1,000 and with 10,000
devices on its one 5G NR carrier (273 RBs, round robin, CUE sessions). Prints both wall
times and their ratio against the target of 10× (issue 53: linear in the devices).

Where the time goes at 10,000 devices: with n flows sharing the carrier each lasts ∝ n
fading blocks, so rated block by block the flow-blocks grow as n²; from 512 flows the
carrier rates its Rayleigh blocks G at a time (``cell.link.aggregate_above_flows``,
docs/time-energy.md), so they grow as n; the completion search reads only the flows
whose bound says they may end first. What remains above linear is per event: every flow
arrival, completion and CUE session re-allocates the shares of all active flows.

    .venv/bin/python benchmarks/carrier_scale.py [--small 1000] [--large 10000]
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import yaml
from _result import report  # (benchmarks/ is on sys.path when run as a script)

from netfl.loading.scenarios import parse_scenario
from netfl.sim.runner import run

SCENARIO = Path(__file__).resolve().parents[1] / "scenarios" / "cell_5g_ppp.yaml"


def measure(devices: int) -> tuple[float, float]:
    """Wall time [s] and simulated time [s] of the 2-round timing run."""
    data = yaml.safe_load(SCENARIO.read_text())
    data["devices"]["count"] = devices
    data["training"]["rounds"] = 2
    data["learning"] = {"mode": "timing"}
    data["data"] = {"dataset": "synthetic", "synthetic": {"num_samples": 3 * devices}}
    data.setdefault("outputs", {}).update({"figures": False, "progress": False})
    scenario = parse_scenario(data)
    t0 = time.perf_counter()
    result = run(scenario)
    return time.perf_counter() - t0, float(result.rounds["sim_time_s"].iloc[-1])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--small", type=int, default=1000)
    ap.add_argument("--large", type=int, default=10000)
    args = ap.parse_args()
    walls = {}
    for n in (args.small, args.large):
        wall, sim = measure(n)
        walls[n] = wall
        print(f"{n} devices, 2 rounds: wall {wall:.1f} s, simulated {sim:.0f} s", flush=True)
    report(
        f"{args.large} / {args.small} devices on one carrier: wall",
        walls[args.large] / walls[args.small],
        10.0,
        "x",
    )


if __name__ == "__main__":
    main()
