"""Per-transfer cost of the LTE link abstractions against the plain Shannon rate on the
same cell (issue 22, item 6).

The same timing-only FedAvg (100 PUEs on a 150 m cell, Rayleigh fading, round robin) on
``lte_20mhz`` three ways: the link model netfl had before issue 22 (Shannon rate per
fading block, no grant cycles: a user profile equal to ``lte_20mhz`` but for those two
keys), the ``gap`` abstraction (ns-3 LENA's link adaptation, TS 36.213 TBS and the
uplink's buffer-status grant cycles: a few more events per upload) and the ``bler``
abstraction (ns-3's BLER curves, OLLA, HARQ tail). Target: at most 1.3× the Shannon
model's wall time per transfer.

    .venv/bin/python benchmarks/link_models.py [--rounds 20] [--devices 100]
"""

from __future__ import annotations

import argparse
import dataclasses
import tempfile
import time
from pathlib import Path

import yaml
from _result import report  # (benchmarks/ is on sys.path when run as a script)

from channel_models.profile_catalog import get_channel_profile
from netfl.loading.scenarios import parse_scenario
from netfl.sim.runner import run


def shannon_profile_file(directory: Path) -> Path:
    """``lte_20mhz`` with the pre-issue-22 link model: Shannon efficiency, no grant cycle."""
    p = get_channel_profile("lte_20mhz")
    spec = {
        f.name: getattr(p, f.name)
        for f in dataclasses.fields(p)
        if f.name not in ("name", "source", "description")
    }
    spec.update(
        efficiency={"model": "shannon", "gap_db": 0.0, "max_bps_per_hz": None},
        uplink_grant=None,
        overheads={},
        special_slot_symbols=list(p.special_slot_symbols),
    )
    path = directory / "profiles.yaml"
    path.write_text(yaml.safe_dump({"profiles": {"lte_20mhz_shannon": spec}}))
    return path


def scenario(link: dict, devices: int, rounds: int) -> dict:
    return {
        "name": "link_models",
        "seed": 1,
        "cell": {"radius_m": 150.0, "link": {"mode": "ofdma", **link}},
        "devices": {"count": devices, "compute_profile": "smartphone"},
        "data": {"dataset": "mnist5k"},
        "model": {"name": "lenet"},
        "training": {"rounds": rounds},
        "learning": {"mode": "timing"},
        "outputs": {"figures": False, "progress": False},
    }


def per_transfer_s(link: dict, devices: int, rounds: int, repeats: int = 3) -> float:
    best = float("inf")
    for _ in range(repeats):
        s = parse_scenario(scenario(link, devices, rounds))
        t0 = time.perf_counter()
        result = run(s)
        wall = time.perf_counter() - t0 - result.info["setup_wall_s"]
        best = min(best, wall / len(result.transfers))
    return best


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=20)
    ap.add_argument("--devices", type=int, default=100)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        shannon = {
            "channel_profile": "lte_20mhz_shannon",
            "channel_profile_file": str(shannon_profile_file(Path(tmp))),
        }
        variants = {
            "shannon (before)": shannon,
            "gap (default)": {"channel_profile": "lte_20mhz"},
            "bler": {"channel_profile": "lte_20mhz", "link_abstraction": "bler"},
        }
        per_transfer_s(variants["gap (default)"], 5, 1, 1)  # warm imports and caches
        cost = {k: per_transfer_s(v, args.devices, args.rounds) for k, v in variants.items()}
    for k, v in cost.items():
        print(f"per transfer (simulation wall), lte_20mhz {k}: {v * 1e3:.3f} ms")
    base = cost["shannon (before)"]
    report("lte_20mhz gap / shannon wall per transfer", cost["gap (default)"] / base, 1.3, "x")
    report("lte_20mhz bler / shannon wall per transfer", cost["bler"] / base, 1.3, "x")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
