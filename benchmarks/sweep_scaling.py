"""Sweep scaling: 8 timing-only runs with 2 workers against 1, on both backends.

Issue 10's bar: 2 workers ≥ 1.7× faster than 1 worker, for the local process
pool and for Ray (a local instance started once for both measurements; its
start, with two untimed runs that import netfl in its worker processes, is not
counted; a local pool's start is), after one untimed warm-up run in this process. The runs are the radio-scale cell
(5G NR carrier, ~1,000 concurrent CUE sessions, Rayleigh fading) with
``--pues`` PUEs and ``--rounds`` rounds, one per seed. Each measurement is a
whole ``run_sweep`` into a fresh directory (figures off), so it includes
writing the run directories and the index.

    .venv/bin/python benchmarks/sweep_scaling.py [--runs 8] [--pues 60] [--rounds 40]
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

import yaml
from _result import report  # (benchmarks/ is on sys.path when run as a script)
from radio_scale import scenario

from netfl.sweep.run import expand, load_sweep, run_sweep

TARGET = 1.7


def sweep_file(tmp: Path, runs: int, pues: int, rounds: int) -> Path:
    (tmp / "base.yaml").write_text(yaml.safe_dump(scenario(pues, rounds)))
    spec = {"name": "scaling", "base": "base.yaml", "seeds": list(range(1, runs + 1))}
    path = tmp / "scaling.sweep.yaml"
    path.write_text(yaml.safe_dump(spec))
    return path


def timed(runs, out: Path, workers: int, backend: str) -> float:
    t0 = time.perf_counter()
    index = run_sweep(runs, out, workers=workers, backend=backend)
    wall = time.perf_counter() - t0
    print(f"  {backend} x{workers}: run walls {index['wall_time_s'].round(2).tolist()}")
    if set(index["status"]) != {"complete"}:
        raise SystemExit(f"{backend}/{workers}: {index[['run', 'status', 'error']]}")
    return wall


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=8)
    ap.add_argument("--pues", type=int, default=60)
    ap.add_argument("--rounds", type=int, default=40)
    ap.add_argument("--backends", default="local,ray")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        runs = expand(*load_sweep(sweep_file(tmp, args.runs, args.pues, args.rounds)))
        # one untimed run first: lazy imports and the data set are built once in this
        # process (forked workers would inherit them, so neither measurement pays for them)
        timed(runs[:1], tmp / "warm-up", 1, "local")
        for backend in args.backends.split(","):
            if backend == "ray":
                import ray

                ray.init(include_dashboard=False, log_to_driver=False, logging_level="ERROR")
                # part of starting the instance: its worker processes import netfl once
                timed(runs[:2], tmp / "ray-warm-up", 2, "ray")
            # 2 workers first: Ray retires a worker that idles (as one does while runs go
            # one at a time), and a new one would pay netfl's imports inside the measurement
            two = timed(runs, tmp / f"{backend}-2", 2, backend)
            one = timed(runs, tmp / f"{backend}-1", 1, backend)
            if backend == "ray":
                ray.shutdown()
            print(
                f"{backend}: {len(runs)} runs, 1 worker {one:.1f} s, 2 workers {two:.1f} s, "
                f"speed-up {one / two:.2f}x (target >= {TARGET})"
            )
            report(f"sweep scaling 2 vs 1 worker ({backend})", one / two, TARGET, "x", True)


if __name__ == "__main__":
    main()
