"""Per-transfer cost of the LTE link model against the Shannon one (issue 22, item 6).

The same timing-only FedAvg (100 PUEs on a 150 m cell, Rayleigh fading, round robin)
on the ``feddif`` profile (Shannon rate per fading block) and on ``lte_20mhz`` (ns-3
LENA's link adaptation with TS 36.213 TBS, and the uplink's buffer-status grant
cycles: a few more events per upload). Target: the LTE model costs at most 1.3× the
Shannon model's wall time per transfer.

    .venv/bin/python benchmarks/link_models.py [--rounds 20] [--devices 100]
"""

from __future__ import annotations

import argparse
import time

from _result import report  # (benchmarks/ is on sys.path when run as a script)

from netfl.scenario.files import parse_scenario
from netfl.sim.runner import run


def scenario(profile: str, devices: int, rounds: int) -> dict:
    return {
        "name": f"link_{profile}",
        "seed": 1,
        "cell": {"radius_m": 150.0, "link": {"mode": "ofdma", "channel_profile": profile}},
        "devices": {"count": devices, "compute_profile": "smartphone"},
        "data": {"dataset": "mnist5k"},
        "model": {"name": "lenet"},
        "training": {"rounds": rounds},
        "learning": {"mode": "timing"},
        "outputs": {"figures": False, "progress": False},
    }


def per_transfer_s(profile: str, devices: int, rounds: int, repeats: int = 3) -> float:
    best = float("inf")
    for _ in range(repeats):
        s = parse_scenario(scenario(profile, devices, rounds))
        t0 = time.perf_counter()
        result = run(s)
        wall = time.perf_counter() - t0
        best = min(best, wall / len(result.transfers))
    return best


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=20)
    ap.add_argument("--devices", type=int, default=100)
    args = ap.parse_args()
    per_transfer_s("feddif", 5, 1, 1)  # warm imports and caches
    shannon = per_transfer_s("feddif", args.devices, args.rounds)
    lte = per_transfer_s("lte_20mhz", args.devices, args.rounds)
    print(f"per transfer: shannon (feddif) {shannon * 1e3:.3f} ms, lte_20mhz {lte * 1e3:.3f} ms")
    report("lte_20mhz / shannon wall time per transfer", lte / shannon, 1.3, "x")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
