"""Training many clients at once (issue 38): FedAvg on MNIST-5k, 50 clients × 2NN × 5
rounds (batch 16, SGD with momentum) with ``learning.executor: batched`` against
``serial``, in one run each, wall time of the whole run; then 10 clients with McMahan's
CNN (reported, no target: compute-bound on 2 cores). ``--device cuda`` runs both on a
GPU (issue 38's target there: ≥ 10× serial at 100 clients).

    .venv/bin/python benchmarks/batched_executor.py [--device cpu] [--clients 50]
"""

from __future__ import annotations

import argparse
import time

from _result import report  # (benchmarks/ is on sys.path when run as a script)

from netfl import parse_scenario, run


def wall(executor: str, model: str, clients: int, rounds: int, device: str) -> tuple[float, float]:
    """Wall time [s] of the run and its last accuracy."""
    scenario = parse_scenario(
        {
            "name": f"batched-{executor}",
            "seed": 1,
            "devices": {"count": clients},
            "data": {"dataset": "mnist5k", "partition": {"scheme": "iid"}},
            "model": {"name": model},
            "training": {"rounds": rounds, "batch_size": 16, "lr": 0.05, "momentum": 0.9},
            "learning": {"mode": "learn", "executor": executor, "device": device},
            "outputs": {"figures": False, "progress": False},
        }
    )
    t0 = time.perf_counter()
    result = run(scenario)
    return time.perf_counter() - t0, float(result.rounds["accuracy"].iloc[-1])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--clients", type=int, default=50)
    ap.add_argument("--rounds", type=int, default=5)
    args = ap.parse_args()
    times = {}
    for executor in ("serial", "batched"):
        times[executor], acc = wall(executor, "2nn", args.clients, args.rounds, args.device)
        print(
            f"2nn, {args.clients} clients, {args.rounds} rounds, {executor}: "
            f"{times[executor]:.2f} s (accuracy {acc:.4f})",
            flush=True,
        )
    report(
        f"batched / serial executor, {args.clients} clients x 2NN ({args.device})",
        times["serial"] / times["batched"],
        2.5 if args.device == "cpu" else 10.0,
        "x",
        higher_is_better=True,
    )
    cnn = {e: wall(e, "cnn", 10, 2, args.device)[0] for e in ("serial", "batched")}
    print(
        f"cnn, 10 clients, 2 rounds: serial {cnn['serial']:.2f} s, batched "
        f"{cnn['batched']:.2f} s ({cnn['serial'] / cnn['batched']:.2f}x)"
    )


if __name__ == "__main__":
    main()
