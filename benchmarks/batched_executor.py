"""Training many clients at once (issues 38 and 53): ``learning.executor: batched``
against ``serial``, end to end (the whole run's wall time), both warm — each executor
runs a one-round job first, so neither pays torch's first-use costs (its optimiser's
lazy imports: about 2.5 s) inside the timed run — in one process:

- FedAvg on MNIST-5k, 50 clients × the 2NN × 5 rounds (batch 16, SGD with momentum),
  the thread count netfl chooses for each executor (``netfl.core.threads``);
- the peer-configured job: the quickstart scenario (Raspberry Pi profiles, dedicated 4G
  links) with 50 devices, the 2NN, batch 16, IID, 3 rounds, ``learning.num_threads: 1``;
- the same peer job on a Dirichlet (α = 0.5) partition: clients of very unequal sizes,
  which the batched executor stacks by their number of steps;
- McMahan's CNN, 10 clients, 2 rounds: on a CPU the batched executor trains it serially
  (grouped convolutions lose there), so the two should take the same time.

Targets (issue 53): ≥ 2.5× on the first two on a CPU, never slower than serial (≥ 1×)
on the Dirichlet job; ``--device cuda --clients 100`` ≥ 10×. ``--repeats`` takes the
best of several runs of each.

    .venv/bin/python benchmarks/batched_executor.py [--device cpu] [--clients 50] [--repeats 2]
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

from _result import report  # (benchmarks/ is on sys.path when run as a script)

from netfl import parse_scenario, run
from netfl.loading.scenarios import load_scenario

QUICKSTART = Path(__file__).resolve().parent.parent / "scenarios" / "quickstart.yaml"


def plain(executor: str, model: str, clients: int, rounds: int, device: str):
    return parse_scenario(
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


def peer(
    executor: str, model: str, clients: int, rounds: int, device: str, partition="{scheme: iid}"
):
    return load_scenario(
        QUICKSTART,
        [
            f"devices.count={clients}",
            f"model.name={model}",
            "training.batch_size=16",
            f"data.partition={partition}",
            f"training.rounds={rounds}",
            f"learning.executor={executor}",
            f"learning.device={device}",
            "learning.num_threads=1",
            "outputs.figures=false",
            "outputs.progress=false",
        ],
    )


def dirichlet(executor: str, model: str, clients: int, rounds: int, device: str):
    """The peer job on a Dirichlet (α = 0.5) partition: clients of very unequal sizes."""
    return peer(executor, model, clients, rounds, device, "{scheme: dirichlet, alpha: 0.5}")


def wall(scenario) -> tuple[float, float, int]:
    """Wall time [s] of the run, its last accuracy and its jobs' threads."""
    t0 = time.perf_counter()
    result = run(scenario)
    return (
        time.perf_counter() - t0,
        float(result.rounds["accuracy"].iloc[-1]),
        result.info["torch_num_threads"],
    )


def compare(name: str, build, model: str, clients: int, rounds: int, args) -> float:
    """Serial over batched wall time (best of ``args.repeats``), printed."""
    best = {}
    for executor in ("serial", "batched"):
        wall(build(executor, model, min(clients, 5), 1, args.device))  # (warm)
    for _ in range(args.repeats):
        for executor in ("serial", "batched"):
            t, acc, threads = wall(build(executor, model, clients, rounds, args.device))
            best[executor] = min(best.get(executor, t), t)
            print(
                f"{name}: {executor} {t:.2f} s ({threads} thread(s), accuracy {acc:.4f})",
                flush=True,
            )
    ratio = best["serial"] / best["batched"]
    print(f"{name}: serial / batched {ratio:.2f}x (best of {args.repeats})", flush=True)
    return ratio


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--clients", type=int, default=50)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--repeats", type=int, default=2)
    args = ap.parse_args()
    target = 2.5 if args.device == "cpu" else 10.0
    ratio = compare(f"2nn, {args.clients} clients", plain, "2nn", args.clients, args.rounds, args)
    report(
        f"batched / serial executor, {args.clients} clients x 2NN ({args.device})",
        ratio,
        target,
        "x",
        higher_is_better=True,
    )
    if args.device == "cpu":
        ratio = compare("peer job, 50 devices, one thread", peer, "2nn", 50, 3, args)
        report(
            "batched / serial executor, peer-configured 50-device job, one thread",
            ratio,
            target,
            "x",
            higher_is_better=True,
        )
        ratio = compare("peer job, Dirichlet 0.5 (unequal clients)", dirichlet, "2nn", 50, 3, args)
        report(
            "batched / serial executor, the peer job on a Dirichlet partition, one thread",
            ratio,
            1.0,
            "x",
            higher_is_better=True,
        )
    compare("cnn, 10 clients", plain, "cnn", 10, 2, args)


if __name__ == "__main__":
    main()
