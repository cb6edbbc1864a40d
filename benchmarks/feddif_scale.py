"""Scale of FedDif's diffusion: timing-only FedDif with 10, 50 and 100 PUEs.

Target (issue 6): a 100-PUE diffusion round's winner selection (link states,
valuations, edge weights, Kuhn–Munkres matching, (16f)) takes at most 50 ms
of wall time. Prints, per PUE count, the wall time per diffusion round (the
whole simulated diffusion round: control messages, scheduling, D2D transfers
and training steps on the SimPy clock), per winner selection and per
matching call, from the run's ``diffusion`` table.

    .venv/bin/python benchmarks/feddif_scale.py [--rounds 3] [--pues 10 50 100]
"""

from __future__ import annotations

import argparse
import time

from _result import report  # (benchmarks/ is on sys.path when run as a script)

from netfl.loading.scenarios import parse_scenario
from netfl.sim.runner import run

TARGET_SCHEDULE_S = 0.050


def scenario(num_pues: int, rounds: int, profile: str, seed: int = 1) -> dict:
    return {
        "name": f"feddif_scale_{num_pues}",
        "seed": seed,
        "cell": {
            "radius_m": 250.0,
            "redrop_every_round": True,
            "link": {"mode": "ofdma", "channel_profile": profile},
            "cues": {"density_per_km2": 500.0, "session_rate_per_s": 0.05, "demand_rbs": 2},
        },
        "devices": {"count": num_pues, "compute_profile": "smartphone"},
        "data": {"dataset": "mnist5k", "partition": {"scheme": "dirichlet", "alpha": 0.5}},
        "model": {"name": "logreg"},
        "training": {"rounds": rounds},
        "algorithm": {"name": "feddif", "epsilon": 0.02, "redrop_each_diffusion_round": True},
        "learning": {"mode": "timing"},
        "outputs": {"figures": False, "progress": False},
    }


def measure(num_pues: int, rounds: int, profile: str) -> dict:
    s = parse_scenario(scenario(num_pues, rounds, profile))
    t0 = time.perf_counter()
    result = run(s)
    wall = time.perf_counter() - t0
    sim_wall = wall - result.info["setup_wall_s"]
    d = result.tables["diffusion"]
    per_dr = d.drop_duplicates(["round", "diffusion_round"]).dropna(subset=["schedule_wall_s"])
    n_dr = int(result.rounds["diffusion_rounds"].sum())
    return {
        "pues": num_pues,
        "profile": profile,
        "diffusion_rounds": n_dr,
        "d2d_models": int(result.rounds["models_d2d"].sum()),
        "wall_per_diffusion_round_ms": 1e3 * sim_wall / n_dr if n_dr else float("nan"),
        "schedule_ms_mean": 1e3 * per_dr["schedule_wall_s"].mean(),
        "schedule_ms_max": 1e3 * per_dr["schedule_wall_s"].max(),
        "matching_ms_mean": 1e3 * per_dr["matching_wall_s"].mean(),
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--pues", type=int, nargs="+", default=[10, 50, 100])
    ap.add_argument("--profiles", nargs="+", default=["feddif", "nr_fr1_uma"])
    args = ap.parse_args()
    print(
        f"{'PUEs':>5} {'profile':>11} {'diff.rounds':>11} {'D2D models':>10} "
        f"{'ms/diff.round':>13} {'schedule ms (mean/max)':>22} {'matching ms':>11}"
    )
    worst = 0.0
    for profile in args.profiles:
        for n in args.pues:
            m = measure(n, args.rounds, profile)
            print(
                f"{m['pues']:>5} {profile:>11} {m['diffusion_rounds']:>11} {m['d2d_models']:>10} "
                f"{m['wall_per_diffusion_round_ms']:>13.1f} "
                f"{m['schedule_ms_mean']:>12.2f} / {m['schedule_ms_max']:<8.2f} "
                f"{m['matching_ms_mean']:>11.2f}"
            )
            if n == max(args.pues):
                worst = max(worst, m["schedule_ms_mean"] / 1e3)
    report(f"{max(args.pues)}-PUE winner selection", 1e3 * worst, 1e3 * TARGET_SCHEDULE_S, "ms")
    print(
        f"{max(args.pues)}-PUE winner selection: {1e3 * worst:.1f} ms mean "
        f"(target ≤ {1e3 * TARGET_SCHEDULE_S:.0f} ms: ratio {worst / TARGET_SCHEDULE_S:.2f})"
    )


if __name__ == "__main__":
    main()
