"""Client executors: a round's device training on a local process pool vs a bare loop.

Issue 10's bar: FedAvg on MNIST-5k with the 2NN, 20 devices × 5 rounds, batch 16,
run through netfl with the process-pool executor (2 workers × 1 torch thread on
2 cores) in ≤ 0.65× the wall time of the serial bare torch loop doing the same
SGD steps (``overhead.bare_loop``, torch's default threads). Both are timed in
this process after one untimed warm-up of each (interpreter start and imports,
the same for both, are not counted; netfl's time includes building the world and
starting its pool). Also printed: netfl with the serial executor, the floor two
workers can reach on this machine (the serial run on one thread per job, divided by
the throughput two single-threaded processes get together, measured with two copies
of the bare loop), and the same comparison at ``--heavy-epochs`` local epochs.

    .venv/bin/python benchmarks/client_executor.py [--repeats 2]
"""

from __future__ import annotations

import argparse
import time

import numpy as np
import torch
from _result import report  # (benchmarks/ is on sys.path when run as a script)
from overhead import bare_loop

from netfl import parse_scenario, run
from netfl.learning.parallel import mp_context

TARGET = 0.65


def scenario(executor: str, epochs: int = 1, devices: int = 20, threads: int | None = None):
    learning = {"mode": "learn", "executor": executor}
    if executor != "serial":
        learning.update(workers=2, num_threads=1)
    elif threads:
        learning.update(num_threads=threads)
    return parse_scenario(
        {
            "name": "client_executor",
            "seed": 1,
            "devices": {"count": devices},
            "data": {"dataset": "mnist5k", "partition": {"scheme": "iid"}},
            "model": {"name": "2nn"},
            "training": {"rounds": 5, "batch_size": 16, "lr": 0.05, "local_epochs": epochs},
            "learning": learning,
            "outputs": {"figures": False, "progress": False},
        }
    )


def best_wall(fn, repeats: int) -> tuple[float, object, float]:
    """Best wall time of ``fn`` after a warm-up (lazy imports, the data set, torch's
    kernels), its result, and the CPU time this process spent in that run."""
    fn()
    best, out, cpu = float("inf"), None, 0.0
    for _ in range(repeats):
        t0, c0 = time.perf_counter(), time.process_time()
        result = fn()
        wall = time.perf_counter() - t0
        if wall < best:
            best, out, cpu = wall, result, time.process_time() - c0
    return best, out, cpu


def _bare_one_thread(epochs: int) -> float:
    """Wall time of the bare loop on one torch thread (after one untimed warm-up)."""
    torch.set_num_threads(1)
    bare_loop(scenario("serial", epochs))
    t0 = time.perf_counter()
    bare_loop(scenario("serial", epochs))
    return time.perf_counter() - t0


def two_process_throughput(epochs: int) -> tuple[float, float, float]:
    """The bare loop on one thread in one forked process alone, then in two at once:
    ``(alone s, slower of the two s, throughput of two relative to one)`` — 2 where two
    cores each run one process as fast as one runs alone."""
    ctx = mp_context()
    with ctx.Pool(1) as pool:
        alone = pool.apply(_bare_one_thread, (epochs,))
    with ctx.Pool(2) as pool:
        both = max(pool.map(_bare_one_thread, [epochs, epochs]))
    return alone, both, 2 * alone / both


def compare(epochs: int, repeats: int) -> float:
    bare, acc_bare, _ = best_wall(lambda: bare_loop(scenario("serial", epochs)), repeats)
    serial, res_s, _ = best_wall(lambda: run(scenario("serial", epochs)), repeats)
    pool, res_p, pool_cpu = best_wall(lambda: run(scenario("process", epochs)), repeats)
    one_thread, _, _ = best_wall(lambda: run(scenario("serial", epochs, threads=1)), repeats)
    acc_s = float(res_s.rounds["accuracy"].iloc[-1])
    acc_p = float(res_p.rounds["accuracy"].iloc[-1])
    if not np.isclose(acc_p, acc_bare, atol=0.02):
        raise SystemExit(f"process pool {acc_p} vs bare {acc_bare}: not the same job")
    print(
        f"{epochs} local epoch(s): bare loop {bare:.2f} s (acc {acc_bare:.4f}), netfl serial "
        f"{serial:.2f} s (acc {acc_s:.4f}), netfl process pool {pool:.2f} s "
        f"(acc {acc_p:.4f}): pool / bare = {pool / bare:.2f}"
    )
    # the floor two single-threaded workers could reach: the serial run with one thread
    # per job, split in two with no pool, no barriers and an idle simulator, at the
    # throughput two processes really get on this machine's two cores
    alone, both, gain = two_process_throughput(epochs)
    print(
        f"  serial with 1 thread per job {one_thread:.2f} s: half of it is {one_thread / 2 / bare:.2f}x "
        f"the bare loop; the simulator's own CPU in the pool run {pool_cpu:.2f} s "
        f"({pool_cpu / pool:.0%} of a core while 2 workers share 2 cores)\n"
        f"  the bare loop on 1 thread: {alone:.2f} s alone, {both:.2f} s with a second copy "
        f"running: two processes give {gain:.2f}x the throughput of one here (2 on ideal "
        f"cores), so two workers cannot beat {one_thread / gain / bare:.2f}x the bare loop"
    )
    return pool / bare


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeats", type=int, default=2)
    ap.add_argument("--heavy-epochs", type=int, default=5)
    args = ap.parse_args()
    ratio = compare(1, args.repeats)
    report("process-pool executor / bare loop (20 devices)", ratio, TARGET, "x")
    if args.heavy_epochs > 1:
        compare(args.heavy_epochs, args.repeats)


if __name__ == "__main__":
    main()
