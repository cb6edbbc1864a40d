"""netfl against the ns-3 LTE uplink fixture: each UE's upload duration, netfl / ns-3.

    .venv/bin/python validation/ns3/compare.py [--set KEY=VALUE ...] [--runs rr]

For every run of ``tests/reference/ns3_lte_uplink.json`` (scheduler ``--runs``, the
796,840-byte payload), netfl's ``transfer_test`` uploads the same payload from the
same positions (``devices.layout: positions``) on an OFDMA cell with the same path
loss, powers and noise figures, and the ratio of each UE's duration to ns-3's is
printed with its median, spread and the UEs starved on each side. ``--set`` applies
scenario overrides (e.g. ``cell.link.snr_gap_db=7.43``) to try a link model.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from netfl import World, parse_scenario, run  # noqa: E402
from netfl.scenario.files import apply_overrides  # noqa: E402


def servable(scenario) -> list[bool]:
    """Whether netfl's link adaptation gives each device's upload a rate (CQI > 0)."""
    world = World(scenario)
    carrier = world.radio.carrier_for("uplink")
    return [
        bool(carrier.efficiency(np.array([world.radio.mean_snr(d, world.bs)]))[0] > 0)
        for d in world.devices
    ]


def scenario_for(run_spec: dict, cell: dict, overrides: list[str]) -> dict:
    ues = run_spec["ues"]
    data = {
        "name": "ns3-compare",
        "seed": 1,
        "devices": {
            "count": len(ues),
            "layout": {"kind": "positions", "positions_m": [[u["x_m"], u["y_m"]] for u in ues]},
        },
        "cell": {
            "radius_m": 1000.0,
            "link": {
                "mode": "ofdma",
                "channel_profile": "lte_20mhz",
                "pathloss": {
                    "model": "log_distance",
                    "beta0_db": -cell["pathloss"]["reference_loss_db"],
                    "kappa": cell["pathloss"]["exponent"],
                    "d0_m": cell["pathloss"]["reference_distance_m"],
                    "height_tx_m": cell["bs_height_m"],
                    "height_rx_m": cell["ue_height_m"],
                },
                "num_rbs": cell["bandwidth_rbs"],
                "fading": "none",
                "ue_tx_power_dbm": cell["ue_tx_power_dbm"],
                "bs_tx_power_dbm": cell["bs_tx_power_dbm"],
                "noise_figure_ue_db": cell["ue_noise_figure_db"],
                "noise_figure_bs_db": cell["bs_noise_figure_db"],
                "scheduler": "round_robin",
            },
        },
        "data": {"dataset": "digits"},
        "model": {"name": "logreg"},
        "training": {"rounds": 1},
        "learning": {"mode": "timing"},
        "algorithm": {
            "name": "transfer_test",
            "upload_bytes": run_spec["payload_bytes"],
            "datagram_bytes": run_spec["datagram_bytes"],
        },
        "outputs": {"figures": False, "progress": False},
    }
    return apply_overrides(data, overrides)


def compare(
    fixture: dict,
    scheduler: str = "rr",
    overrides: list[str] | None = None,
    payload_bytes: int = 796_840,
    datagram_bytes: int = 1000,
) -> list[dict]:
    """One row per UE of the fixture's runs of ``scheduler`` and payload: geometry,
    distance, ns-3's and netfl's upload durations [s] (None: starved on that side),
    and the wall time of each side's run."""
    rows = []
    for spec in fixture["runs"]:
        if spec["scheduler"] != scheduler or spec["payload_bytes"] != payload_bytes:
            continue
        if spec["datagram_bytes"] != datagram_bytes:
            continue
        t0 = time.perf_counter()
        ok = servable(parse_scenario(scenario_for(spec, fixture["cell"], overrides or [])))
        served = {**spec, "ues": [u for u, s in zip(spec["ues"], ok, strict=True) if s]}
        up = None
        if served["ues"]:
            result = run(parse_scenario(scenario_for(served, fixture["cell"], overrides or [])))
            up = result.transfers[result.transfers["kind"] == "test_up"].set_index("src")
        wall = time.perf_counter() - t0
        j = 0
        for i, ue in enumerate(spec["ues"]):
            ours = None
            if ok[i]:
                ours = float(up.loc[f"ue{j}", "end_s"] - up.loc[f"ue{j}", "start_s"])
                j += 1
            rows.append(
                {
                    "geometry": spec["geometry"],
                    "distance_m": ue["distance_m"],
                    "ns3_s": ue["duration_s"],
                    "netfl_s": ours,
                    "ns3_wall_s": spec["simulator_run_wall_s"],
                    "netfl_wall_s": wall,
                }
            )
    return rows


def draw(rows: list[dict], out: Path, label: str) -> None:
    """netfl's duration against ns-3's per UE (log-log), with y = x and a ±25 % band."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(5.5, 5))
    pairs = [r for r in rows if r["netfl_s"] and r["ns3_s"]]
    for geo in dict.fromkeys(r["geometry"] for r in pairs):
        pts = [(r["ns3_s"], r["netfl_s"]) for r in pairs if r["geometry"] == geo]
        ax.scatter(*zip(*pts, strict=True), label=geo, s=22, zorder=3)
    lo = min(min(r["ns3_s"], r["netfl_s"]) for r in pairs) * 0.8
    hi = max(max(r["ns3_s"], r["netfl_s"]) for r in pairs) * 1.2
    x = np.array([lo, hi])
    ax.plot(x, x, "k-", lw=1, label="netfl = ns-3")
    ax.fill_between(x, 0.75 * x, 1.25 * x, color="0.88", label="±25 %", zorder=0)
    ax.set(xscale="log", yscale="log", xlim=(lo, hi), ylim=(lo, hi))
    ax.set_xlabel("ns-3 LENA upload duration [s]")
    ax.set_ylabel("netfl upload duration [s]")
    ax.set_title(f"LTE uplink, 796,840 B per UE, RR\n({label})", fontsize=9)
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(out, dpi=120)
    plt.close(fig)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--fixture", default=str(ROOT / "tests/reference/ns3_lte_uplink.json"))
    ap.add_argument("--set", action="append", default=[], metavar="KEY=VALUE")
    ap.add_argument("--runs", default="rr", choices=["rr", "pf"])
    ap.add_argument("--figure", metavar="PNG", help="draw netfl against ns-3 per UE")
    args = ap.parse_args()
    rows = compare(json.loads(Path(args.fixture).read_text()), args.runs, args.set)
    if args.figure:
        draw(rows, Path(args.figure), " ".join(args.set) or "lte_20mhz defaults")
    ratios, by_geo = [], {}
    for r in rows:
        ours, theirs = r["netfl_s"], r["ns3_s"]
        if ours is None or theirs is None:
            cell = (
                "starved"
                if ours is None and theirs is None
                else ("netfl-starved" if ours is None else "ns3-starved")
            )
        else:
            ratios.append(ours / theirs)
            cell = f"{ours / theirs:.2f}"
        by_geo.setdefault(r["geometry"], []).append(cell)
    for geo, cells in by_geo.items():
        print(f"{geo:<12} netfl/ns-3: {' '.join(cells)}")
    dev = sorted(abs(x - 1) for x in ratios)
    mismatch = sum((r["netfl_s"] is None) != (r["ns3_s"] is None) for r in rows)
    walls = {r["geometry"]: (r["netfl_wall_s"], r["ns3_wall_s"]) for r in rows}
    print(
        f"\n{len(ratios)} UEs: median |netfl/ns-3 - 1| = {statistics.median(dev):.1%}, "
        f"max {dev[-1]:.1%}; ratio range {min(ratios):.2f}-{max(ratios):.2f}; "
        f"starved on one side only: {mismatch}"
    )
    print(
        f"wall: netfl {sum(w[0] for w in walls.values()):.2f} s (whole runs), "
        f"ns-3 Simulator::Run {sum(w[1] for w in walls.values()):.1f} s"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
