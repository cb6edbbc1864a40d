"""Peak memory of a 1,000-device FedAvg learning round (MNIST-5k, the 2NN).

Issue 10's bar: ≤ 1.5 GB peak RSS (no per-device model copies kept between
rounds). Measured as the process's peak resident set (``ru_maxrss``) after one
round, and the part added by the round over the process after building the world.

    .venv/bin/python benchmarks/memory_1000.py [--devices 1000] [--rounds 1] [--executor process]

With ``--executor process`` (2 workers × 1 thread) it also prints the largest
worker's peak; the simulator's own peak is the one held to the bar.
"""

from __future__ import annotations

import argparse
import resource
import time

from _result import report  # (benchmarks/ is on sys.path when run as a script)

from netfl import parse_scenario, run

TARGET_GB = 1.5


def peak_gb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1e6  # kB on Linux


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--devices", type=int, default=1000)
    ap.add_argument("--rounds", type=int, default=1)
    ap.add_argument("--executor", choices=["serial", "process"], default="serial")
    args = ap.parse_args()
    learning = {"mode": "learn", "executor": args.executor}
    if args.executor == "process":
        learning.update(workers=2, num_threads=1)
    scenario = parse_scenario(
        {
            "name": "memory",
            "devices": {"count": args.devices},
            "data": {"dataset": "mnist5k", "partition": {"scheme": "iid"}},
            "model": {"name": "2nn"},
            "training": {"rounds": args.rounds, "batch_size": 16},
            "learning": learning,
            "outputs": {"figures": False, "progress": False},
        }
    )
    before = peak_gb()
    t0 = time.perf_counter()
    result = run(scenario)
    print(
        f"{args.devices} devices, {args.rounds} round(s) of FedAvg with the 2NN "
        f"({result.info['model_params']:,} parameters): peak RSS {peak_gb():.2f} GB "
        f"(after imports {before:.2f} GB), wall {time.perf_counter() - t0:.1f} s, "
        f"executor {args.executor}"
    )
    if args.executor != "serial":
        worker = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1e6
        print(f"largest worker's peak RSS {worker:.2f} GB")
    report(f"1000-device round peak RSS ({args.executor})", peak_gb(), TARGET_GB, "GB")


if __name__ == "__main__":
    main()
