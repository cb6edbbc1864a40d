"""Scale of split learning's per-batch exchange: timing-only vanilla DPFL over 4G.

Target (issue 7): 20 devices × 50 batches per round (activations up and
gradients down every batch, VGG11 split at PP2, dedicated 4G LTE-Advanced
links) simulate in at most 0.2 s of wall time per round. Prints the wall
seconds per simulated round, the events and transfers per round, and the
ratio to the target.

    .venv/bin/python benchmarks/split_scale.py [--rounds 5] [--devices 20] [--batches 50]
"""

from __future__ import annotations

import argparse
import time

from _result import report  # (benchmarks/ is on sys.path when run as a script)

from netfl.loading.scenarios import parse_scenario
from netfl.sim.runner import run

TARGET_S = 0.2


def scenario(devices: int, batches: int, rounds: int, batch_size: int = 10) -> dict:
    samples = devices * batches * batch_size
    return {
        "name": "split_scale",
        "seed": 1,
        "cell": {"link": {"mode": "fixed_rate", "shared": False}},
        "devices": {"count": devices, "link_profile": "4g_lte_advanced"},
        "server": {"compute_profile": "edge_server_cpu"},
        "data": {
            "dataset": "synthetic",
            # test_fraction 0.2: the training split holds devices × batches × batch_size
            "synthetic": {"shape": [3, 32, 32], "num_samples": int(samples / 0.8)},
            "partition": {"scheme": "iid"},
        },
        "model": {"name": "vgg11"},
        "training": {"rounds": rounds, "batch_size": batch_size},
        "algorithm": {"name": "vanilla_dpfl", "partition_point": "PP2"},
        "learning": {"mode": "timing"},
        "outputs": {"figures": False, "progress": False},
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--devices", type=int, default=20)
    ap.add_argument("--batches", type=int, default=50)
    args = ap.parse_args()
    s = parse_scenario(scenario(args.devices, args.batches, args.rounds))
    t0 = time.perf_counter()
    result = run(s)
    wall = time.perf_counter() - t0 - result.info["setup_wall_s"]
    per_round = wall / len(result.rounds)
    r = result.rounds
    print(
        f"vanilla DPFL, {args.devices} devices × {args.batches} batches, "
        f"{len(result.rounds)} rounds: {per_round:.3f} s wall per round "
        f"({r['num_transfers'].mean():.0f} transfers, "
        f"{len(result.computes) / len(r):.0f} compute steps per round; "
        f"simulated {r['round_time_s'].mean():.1f} s per round)"
    )
    print(f"target ≤ {TARGET_S} s per round: ratio {per_round / TARGET_S:.2f}")
    report("vanilla DPFL wall per round", per_round, TARGET_S, "s")


if __name__ == "__main__":
    main()
