"""Two runs at once, as a researcher starts them from two terminals (issue 32).

The 10-device FedAvg job (quickstart, ``--model``, ``--rounds`` rounds, figures off) is
started twice at the same instant, first with netfl's defaults (torch's thread count:
the cores; OpenMP's idle threads sleep, ``netfl.core.threads``), then with
``learning.num_threads: 1`` each, then once more with the defaults but the spinning
OpenMP threads torch has without netfl (libgomp's default spin count,
``GOMP_SPINCOUNT=300000``), for reference.
Target: the default pair takes at most 1.5x the one-thread pair.

    .venv/bin/python benchmarks/threads.py [--model 2nn] [--rounds 5]
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from _result import report

ROOT = Path(__file__).resolve().parent.parent
TARGET = 1.5


def pair(out: Path, model: str, rounds: int, extra: list[str], env: dict[str, str]) -> float:
    """Wall seconds until both of two simultaneous runs have finished."""
    netfl = Path(sys.executable).with_name("netfl")
    args = [
        str(netfl),
        "run",
        str(ROOT / "scenarios" / "quickstart.yaml"),
        "--no-progress",
        "--set",
        f"model.name={model}",
        "--set",
        f"training.rounds={rounds}",
        "--set",
        "outputs.figures=false",
        *extra,
    ]
    t0 = time.perf_counter()
    procs = [
        subprocess.Popen([*args, "--out", str(out / str(i))], env=env, stdout=subprocess.DEVNULL)
        for i in range(2)
    ]
    if any(p.wait() != 0 for p in procs):
        raise SystemExit(f"a run failed: {args}")
    return time.perf_counter() - t0


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", default="2nn")
    ap.add_argument("--rounds", type=int, default=5)
    args = ap.parse_args()
    env = {k: v for k, v in os.environ.items() if k not in ("OMP_WAIT_POLICY", "GOMP_SPINCOUNT")}
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        pair(tmp / "warm", args.model, 1, [], env)  # (the data set's cache, page cache)
        default = pair(tmp / "default", args.model, args.rounds, [], env)
        one = pair(tmp / "one", args.model, args.rounds, ["--set", "learning.num_threads=1"], env)
        spinning = pair(
            tmp / "spin", args.model, args.rounds, [], {**env, "GOMP_SPINCOUNT": "300000"}
        )
    print(
        f"two {args.model} runs of {args.rounds} rounds at once on {os.cpu_count()} cores: "
        f"defaults {default:.1f} s, one thread each {one:.1f} s "
        f"(ratio {default / one:.2f}, target <= {TARGET}); spinning OpenMP threads "
        f"(torch without netfl's wait policy) {spinning:.1f} s (ratio {spinning / one:.2f})"
    )
    report(
        f"two runs at once, defaults vs 1 thread each ({args.model})", default / one, TARGET, "x"
    )


if __name__ == "__main__":
    main()
