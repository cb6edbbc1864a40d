"""Whole-process start-up of the light verbs and of a one-round timing run (issue 21).

    .venv/bin/python benchmarks/startup.py [--repeats 5] [--before REV]

Each command runs as a fresh ``python -m netfl …`` process, ``--repeats`` times; the
median wall time is reported against its target:

- ``netfl list`` and ``netfl schema`` ≤ 1.0 s, ``netfl validate`` of
  ``scenarios/quickstart.yaml`` (data and partition built) ≤ 1.5 s;
- a one-round timing run of ``scenarios/quickstart.yaml`` ≤ 2.5 s without figures and
  ≤ 4 s with them (the model's size and FLOPs come from netfl's disk cache after the
  first run: the first, cold, run is printed too, as is ``import torch`` alone).

``--before REV`` (default: the commit before the regrouping, when this is a git
checkout that has it) times the same commands on that revision, checked out in a
temporary worktree, so before and after are measured in one run on one machine.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _result import report  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
BEFORE = "de46d2d"  # main before issue 21 (the flat top level, eager imports)
QUICK = "scenarios/quickstart.yaml"
TIMING = ["--set", "learning.mode=timing", "--set", "training.rounds=1", "--no-progress"]

COMMANDS = {
    "list": (["list"], 1.0),
    "schema": (["schema"], 1.0),
    "validate": (["validate", QUICK], 1.5),
    "timing run, no figures": (["run", QUICK, *TIMING, "--set", "outputs.figures=false"], 2.5),
    "timing run, figures": (["run", QUICK, *TIMING], 4.0),
}


def wall(args: list[str], code_root: Path, env: dict[str, str], out: Path | None) -> float:
    if out is not None:
        shutil.rmtree(out, ignore_errors=True)
        args = [*args, "--out", str(out)]
    t0 = time.perf_counter()
    proc = subprocess.run(
        [sys.executable, "-m", "netfl", *args],
        cwd=code_root,
        env={**env, "PYTHONPATH": str(code_root)},
        capture_output=True,
        text=True,
    )
    elapsed = time.perf_counter() - t0
    if proc.returncode != 0:
        raise SystemExit(f"netfl {' '.join(args)} failed in {code_root}:\n{proc.stderr[-2000:]}")
    return elapsed


def measure(code_root: Path, repeats: int, cache: Path, scratch: Path) -> dict[str, float]:
    env = {**os.environ, "NETFL_CACHE_DIR": str(cache)}
    times = {}
    for name, (args, _) in COMMANDS.items():
        out = scratch / "run" if args[0] == "run" else None
        wall(args, code_root, env, out)  # warm the file cache (and netfl's disk cache)
        times[name] = statistics.median(wall(args, code_root, env, out) for _ in range(repeats))
    return times


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--before", default=BEFORE, help="revision to compare with ('' for none)")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        tmp_path = Path(tmp)
        torch_s = statistics.median(wall_import_torch() for _ in range(max(1, args.repeats // 2)))
        cold_cache = tmp_path / "cold"
        cold = wall(
            COMMANDS["timing run, no figures"][0],
            ROOT,
            {**os.environ, "NETFL_CACHE_DIR": str(cold_cache)},
            tmp_path / "cold-run",
        )
        after = measure(ROOT, args.repeats, tmp_path / "cache", tmp_path)
        before = None
        if args.before:
            tree = tmp_path / "before"
            made = subprocess.run(
                ["git", "-C", str(ROOT), "worktree", "add", "--detach", str(tree), args.before],
                capture_output=True,
                text=True,
            )
            if made.returncode == 0:
                try:
                    before = measure(tree, args.repeats, tmp_path / "cache-before", tmp_path)
                finally:
                    subprocess.run(
                        ["git", "-C", str(ROOT), "worktree", "remove", "--force", str(tree)],
                        capture_output=True,
                    )
            else:
                print(f"(no 'before' column: {made.stderr.strip()})")
    print(f"import torch alone: {torch_s:.2f} s; a timing run with a cold cache: {cold:.2f} s")
    print(f"{'command':<26} {'before':>8} {'after':>8} {'target':>8}")
    for name, (_, target) in COMMANDS.items():
        b = f"{before[name]:.2f} s" if before else "-"
        print(f"{name:<26} {b:>8} {after[name]:>6.2f} s {target:>6.1f} s")
    for name, (_, target) in COMMANDS.items():
        report(f"netfl {name}, whole process", after[name], target, "s")
    return 0


def wall_import_torch() -> float:
    t0 = time.perf_counter()
    subprocess.run([sys.executable, "-c", "import torch"], check=True)
    return time.perf_counter() - t0


if __name__ == "__main__":
    sys.exit(main())
