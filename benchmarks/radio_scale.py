"""Scale of the event-driven radio: timing-only FedAvg on a faded 5G carrier with CUEs.

Target (issue): 100 PUEs and about 1,000 concurrent CUE sessions on a faded
5G NR carrier, 100 rounds, in at most 10 s of wall time; and >= 100k SimPy
events per second of simulation. Also prints the event rate of the same FL
processes with less radio work (OFDMA without CUEs; a fixed-rate shared link,
where only the FL processes and SimPy remain), and the wall time per round at
10, 100 and 1,000 PUEs (growth should be close to linear in the number of PUEs).

    .venv/bin/python benchmarks/radio_scale.py [--rounds 100] [--scale-rounds 5] [--ref-rounds 30]
"""

from __future__ import annotations

import argparse
import copy
import time

import simpy
from _result import report  # (benchmarks/ is on sys.path when run as a script)

import netfl.sim.world
from netfl.loading.scenarios import parse_scenario
from netfl.sim.runner import run


class CountingEnvironment(simpy.Environment):
    """A SimPy environment that counts processed events."""

    events = 0

    def step(self) -> None:
        CountingEnvironment.events += 1
        super().step()


def scenario(num_pues: int, rounds: int, seed: int = 1) -> dict:
    return {
        "name": f"radio_scale_{num_pues}",
        "seed": seed,
        "cell": {
            "radius_m": 150.0,
            "link": {"mode": "ofdma", "channel_profile": "nr_fr1_uma", "scheduler": "round_robin"},
            # 14000 /km² × 0.0707 km² ≈ 990 CUEs, each 0.02 sessions/s of 50 s: ≈ 990 concurrent
            "cues": {
                "density_per_km2": 14000.0,
                "session_rate_per_s": 0.02,
                "mean_session_s": 50.0,
                "demand_rbs": 0.2,
            },
        },
        "devices": {"count": num_pues, "compute_profile": "smartphone"},
        "data": {"dataset": "mnist5k"},
        "model": {"name": "lenet"},
        "training": {"rounds": rounds},
        "learning": {"mode": "timing"},
        "outputs": {"figures": False, "progress": False},
    }


def without_carrier(data: dict, link: dict | None) -> dict:
    """The same cell without CUEs, on ``link`` (None: the OFDMA carriers kept)."""
    data = copy.deepcopy(data)
    data["cell"].pop("cues")
    if link is not None:
        data["cell"]["link"] = link
    return data


def measure(num_pues: int, rounds: int, seed: int = 1, variant=None) -> dict:
    CountingEnvironment.events = 0
    data = scenario(num_pues, rounds, seed)
    s = parse_scenario(variant(data) if variant else data)
    t0 = time.perf_counter()
    result = run(s)
    wall = time.perf_counter() - t0
    occ = result.tables.get("occupancy")
    sessions_ul = occ[occ.carrier == "uplink"] if occ is not None else None
    return {
        "pues": num_pues,
        "rounds": len(result.rounds),
        "wall_s": wall,
        "setup_s": result.info["setup_wall_s"],
        "sim_wall_s": wall - result.info["setup_wall_s"],
        "events": CountingEnvironment.events,
        "transfers": len(result.transfers),
        "sim_time_s": float(result.rounds["sim_time_s"].iloc[-1]),
        "mean_session_rbs_ul": (
            float(sessions_ul["session_rbs"].mean()) if sessions_ul is not None else 0.0
        ),
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=100)
    ap.add_argument("--scale-rounds", type=int, default=5)
    ap.add_argument("--ref-rounds", type=int, default=30, help="rounds of the reference runs")
    ap.add_argument("--seed", type=int, default=1)
    args = ap.parse_args()
    netfl.sim.world.simpy.Environment = CountingEnvironment  # count events of every run below

    m = measure(100, args.rounds, args.seed)
    print(
        f"target run: {m['pues']} PUEs, {m['rounds']} rounds, ~1000 CUE sessions: "
        f"wall {m['wall_s']:.2f} s (target <= 10 s; setup {m['setup_s']:.2f} s, "
        f"simulation {m['sim_wall_s']:.2f} s), {m['events']} events, "
        f"{m['events'] / m['sim_wall_s']:.0f} events/s, simulated {m['sim_time_s']:.0f} s"
    )
    report("100 PUEs, 100 rounds, wall", m["wall_s"], 10.0, "s")
    report("timing events per second", m["events"] / m["sim_wall_s"], 1e5, "/s", True)
    # where the ceiling is: the same FL processes with cheaper (or no) radio work
    for label, link in (
        ("OFDMA carriers, no CUEs", None),
        (
            "fixed-rate shared BS link, no CUEs (FL processes + SimPy only)",
            {"mode": "fixed_rate", "shared": True},
        ),
    ):
        r = measure(100, args.ref_rounds, args.seed, lambda d, link=link: without_carrier(d, link))
        print(
            f"  reference, {label}: {r['events']} events in {r['sim_wall_s']:.2f} s, "
            f"{r['events'] / r['sim_wall_s']:.0f} events/s"
        )
    # the link model's price (issue 22, item 6): nr_fr1_uma's nr_bler (TS 38.214 MCS/TBS,
    # Sionna BLER curves, OLLA, HARQ tail) against the CQI-table model it replaced
    # (link_abstraction: gap), same cell, CUEs and seed; best of 3 each
    # — with the CUEs (whose events grow with simulated time: nr_bler's lower rates make
    # rounds longer) and without them (the FL transfers' own cost)
    print("\nlink model cost per FL transfer (best of 3, simulation wall / transfers):")
    for cues in (True, False):
        per, events = {}, {}
        for label, abstraction in (("CQI table (before)", "gap"), ("nr_bler (now)", "bler")):

            def variant(d, a=abstraction, cues=cues):
                d = copy.deepcopy(d) if cues else without_carrier(d, None)
                d["cell"]["link"]["link_abstraction"] = a
                return d

            runs = [measure(100, args.ref_rounds, args.seed, variant) for _ in range(3)]
            best = min(runs, key=lambda r: r["sim_wall_s"])
            per[label] = best["sim_wall_s"] / best["transfers"]
            events[label] = best["events"] / best["sim_wall_s"]
            print(
                f"  {'with' if cues else 'without'} CUEs, {label}: {per[label] * 1e3:.3f} ms "
                f"({best['transfers']} transfers, {best['events']} events, "
                f"{events[label]:.0f} events/s, simulated {best['sim_time_s']:.0f} s)"
            )
        report(
            f"nr_bler / CQI-table wall per transfer, {'with' if cues else 'without'} CUEs",
            per["nr_bler (now)"] / per["CQI table (before)"],
            1.3,
            "x",
        )
    print(f"\nscaling ({args.scale_rounds} rounds each; wall of the simulation, setup excluded):")
    print(
        f"{'PUEs':>6} {'sim wall s':>10} {'wall s/round':>13} {'events':>9} {'events/s':>9} "
        f"{'sim s/round':>12}"
    )
    base = None
    for n in (10, 100, 1000):
        m = measure(n, args.scale_rounds)
        per_round = m["sim_wall_s"] / m["rounds"]
        base = base or per_round
        print(
            f"{n:>6} {m['sim_wall_s']:>10.2f} {per_round:>13.3f} {m['events']:>9} "
            f"{m['events'] / m['sim_wall_s']:>9.0f} {m['sim_time_s'] / m['rounds']:>12.1f}"
            f"   (x{per_round / base:.1f} of 10 PUEs)"
        )


if __name__ == "__main__":
    main()
