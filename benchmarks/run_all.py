"""Run every benchmark (each in its own process) and print one table of targets.

    .venv/bin/python benchmarks/run_all.py [--only overhead radio_scale ...]

Each benchmark prints ``BENCH {...}`` lines (``benchmarks/_result.py``); this
collects them: measured value, target, ratio and whether the target is met.
Benchmarks run one after another so that they do not compete for the cores.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
BENCHMARKS = [
    "overhead",
    "radio_scale",
    "feddif_scale",
    "split_scale",
    "memory_1000",
    "sweep_scaling",
    "client_executor",
    "startup",
    "link_models",
    "multicell_scale",
    "carrier_scale",
    "threads",
    "flower_bridge",
    "batched_executor",
]

#: benchmarks run more than once, with these arguments
VARIANTS = {
    "memory_1000": [[], ["--executor", "process"]],
    "threads": [["--model", "2nn"], ["--model", "cnn"]],
    "flower_bridge": [["--compute", "model"], ["--compute", "counted"]],
}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--only", nargs="+", choices=BENCHMARKS, default=BENCHMARKS)
    args = ap.parse_args()
    rows, failed = [], []
    runs = [(name, extra) for name in args.only for extra in VARIANTS.get(name, [[]])]
    for name, extra in runs:
        t0 = time.perf_counter()
        proc = subprocess.run(
            [sys.executable, str(HERE / f"{name}.py"), *extra], capture_output=True, text=True
        )
        wall = time.perf_counter() - t0
        found = [
            json.loads(line[len("BENCH ") :])
            for line in proc.stdout.splitlines()
            if line.startswith("BENCH ")
        ]
        if proc.returncode != 0 or not found:
            failed.append(name)
            print(
                f"{name}: failed (exit {proc.returncode})\n{proc.stderr[-2000:]}", file=sys.stderr
            )
        for r in found:
            rows.append({**r, "benchmark": name, "wall_s": wall})
    print(f"\n{'benchmark':<16} {'target':<48} {'measured':>12} {'target':>10} {'ratio':>7}  met")
    for r in rows:
        op = "≥" if r["higher_is_better"] else "≤"
        print(
            f"{r['benchmark']:<16} {r['name']:<48} {r['measured']:>10.4g} {r['unit']:<2}"
            f" {op}{r['target']:>8.4g} {r['ratio']:>7.2f}  {'yes' if r['met'] else 'NO'}"
        )
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
