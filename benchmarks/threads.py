"""Threads: a run alone against a bare torch loop (issue 53), and two runs at once, as a
researcher starts them from two terminals (issue 32).

Alone: the peer job (FedAvg, MNIST-5k, 10 IID devices, the 2NN, batch 16, ``--rounds``
rounds) through netfl with its defaults — the thread count it chooses from the
scenario, ``netfl.core.threads`` — against the same SGD steps as a bare torch loop
(``overhead.bare_loop``, torch imported first: its default threads and spinning
OpenMP), each in a fresh process, the median of ``--repeats`` (the training alone,
without the interpreter's start and torch's import). Target: netfl ≤ 1.0× the bare loop.

Pair: the peer job (the model ``--model``) is started twice at the same instant, first
with netfl's defaults (the thread count it chooses; OpenMP's idle threads sleep,
``netfl.core.threads``), then with ``learning.num_threads: 1`` each, then once more with
the defaults but the spinning OpenMP threads torch has without netfl (libgomp's default
spin count, ``GOMP_SPINCOUNT=300000``), for reference.
Target: the default pair takes at most 1.5x the one-thread pair.

    .venv/bin/python benchmarks/threads.py [--model 2nn] [--rounds 5] [--repeats 3]
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
from _result import report

ROOT = Path(__file__).resolve().parent.parent
TARGET = 1.5
ALONE_TARGET = 1.0
PEER = [
    "model.name=2nn",
    "training.batch_size=16",
    "data.partition={scheme: iid}",
    "outputs.figures=false",
    "outputs.progress=false",
]
TIMED = """
import sys, time{pre}
sys.path.insert(0, {bench!r})
from netfl.loading.scenarios import load_scenario
s = load_scenario({scenario!r}, {overrides!r})
{load}
t = time.perf_counter()
{call}
print(time.perf_counter() - t)
"""


def alone(kind: str, rounds: int, env: dict[str, str]) -> float:
    """Seconds of the peer job's training in a fresh process: ``netfl`` (its run) or
    ``bare`` (the bare loop, torch imported before netfl)."""
    code = TIMED.format(
        pre="; import torch" if kind == "bare" else "; import netfl, torch",
        bench=str(Path(__file__).parent),
        scenario=str(ROOT / "scenarios" / "quickstart.yaml"),
        overrides=[*PEER, f"training.rounds={rounds}"],
        load="from overhead import bare_loop" if kind == "bare" else "from netfl import run",
        call="bare_loop(s)" if kind == "bare" else "run(s)",
    )
    out = subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True
    )
    return float(out.stdout.strip().splitlines()[-1])


def pair(out: Path, model: str, rounds: int, extra: list[str], env: dict[str, str]) -> float:
    """Wall seconds until both of two simultaneous runs have finished."""
    netfl = Path(sys.executable).with_name("netfl")
    args = [
        str(netfl),
        "run",
        str(ROOT / "scenarios" / "quickstart.yaml"),
        "--no-progress",
        *(a for o in PEER for a in ("--set", o)),
        "--set",
        f"model.name={model}",
        "--set",
        f"training.rounds={rounds}",
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
    ap.add_argument("--repeats", type=int, default=3)
    args = ap.parse_args()
    env = {k: v for k, v in os.environ.items() if k not in ("OMP_WAIT_POLICY", "GOMP_SPINCOUNT")}
    alone("netfl", 1, env)  # (the data set's cache, page cache)
    times: dict[str, list[float]] = {"netfl": [], "bare": []}
    for _ in range(args.repeats):
        for kind in times:
            times[kind].append(alone(kind, args.rounds, env))
    med = {k: float(np.median(v)) for k, v in times.items()}
    print(
        f"the peer job alone ({args.rounds} rounds, median of {args.repeats}): netfl with its "
        f"defaults {med['netfl']:.2f} s, bare loop {med['bare']:.2f} s "
        f"(ratio {med['netfl'] / med['bare']:.2f}, target <= {ALONE_TARGET})"
    )
    report(
        "peer job alone, netfl defaults vs bare loop", med["netfl"] / med["bare"], ALONE_TARGET, "x"
    )
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
