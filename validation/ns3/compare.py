"""netfl against the ns-3 LTE fixtures: each UE's upload (download) duration, netfl / ns-3.

    .venv/bin/python validation/ns3/compare.py [--downlink] [--set KEY=VALUE ...] [--runs rr]

For every run of ``tests/reference/ns3_lte_uplink.json`` (``--downlink``:
``ns3_lte_downlink.json``; scheduler ``--runs``, the 796,840-byte payload), netfl's
``transfer_test`` moves the same payload from (to) the same positions
(``devices.layout: positions``) on an OFDMA cell with the same path loss, powers and
noise figures, and the ratio of each UE's duration to ns-3's is printed with its
median, spread and the UEs starved on each side. ``--set`` applies scenario
overrides (e.g. ``cell.link.snr_gap_db=7.43``) to try a link model.
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

from netfl import parse_scenario, run  # noqa: E402
from netfl.errors import UserError  # noqa: E402
from netfl.scenario.files import apply_overrides  # noqa: E402

#: the fixtures' generators → the direction they measured
DIRECTIONS = {
    "validation/ns3/lte_uplink.py": "uplink",
    "validation/ns3/lte_downlink.py": "downlink",
}
#: LENA's schedulers → netfl's, per direction
SCHEDULERS = {
    # LENA's PF splits the uplink RBs equally, as its RR does
    # (PfFfMacScheduler::DoSchedUlTriggerReq: rbPerFlow = bandwidth / nflows; its PF
    # metric acts on the downlink only): netfl's round robin matches both
    "uplink": {"rr": "round_robin", "pf": "round_robin"},
    "downlink": {"rr": "round_robin", "pf": "proportional_fair"},
}


def scenario_for(
    run_spec: dict, cell: dict, overrides: list[str], direction: str = "uplink"
) -> dict:
    ues = run_spec["ues"]
    payload = run_spec["payload_bytes"]
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
                "scheduler": SCHEDULERS[direction][run_spec["scheduler"]],
            },
        },
        "data": {"dataset": "digits"},
        "model": {"name": "logreg"},
        "training": {"rounds": 1},
        "learning": {"mode": "timing"},
        "algorithm": {
            "name": "transfer_test",
            "upload_bytes": payload if direction == "uplink" else 0,
            "download_bytes": payload if direction == "downlink" else 0,
            "datagram_bytes": run_spec["datagram_bytes"],
            # LENA's RR counts a CQI-0 UE with a buffer in its split (its RBs go unused)
            "starved": "hold_share",
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
    distance, ns-3's and netfl's durations [s] (None: starved on that side), and the
    wall time of each side's run (the direction is the fixture's)."""
    direction = DIRECTIONS[fixture["generator"]]
    kind, peer = ("test_up", "src") if direction == "uplink" else ("test_down", "dst")
    rows = []
    for spec in fixture["runs"]:
        if spec["scheduler"] != scheduler or spec["payload_bytes"] != payload_bytes:
            continue
        if spec["datagram_bytes"] != datagram_bytes:
            continue
        t0 = time.perf_counter()
        try:
            data = scenario_for(spec, fixture["cell"], overrides or [], direction)
            result = run(parse_scenario(data))
            moved = result.transfers[result.transfers["kind"] == kind].set_index(peer)
            starved = set(result.tables["coverage"].query(f"{direction}_starved")["device"])
        except UserError as err:  # every UE starved: nothing to run
            assert "no device is in coverage" in str(err), err
            starved = {f"ue{i}" for i in range(len(spec["ues"]))}
        wall = time.perf_counter() - t0
        for i, ue in enumerate(spec["ues"]):
            name = f"ue{i}"
            ours = None
            if name not in starved:
                ours = float(moved.loc[name, "end_s"] - moved.loc[name, "start_s"])
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


FIXTURES = {d: ROOT / f"tests/reference/ns3_lte_{d}.json" for d in ("uplink", "downlink")}


def draw(panels: dict[str, dict[str, list[dict]]], out: Path) -> None:
    """netfl's duration against ns-3's per UE (log-log), one panel per direction
    (``panels``: direction → series), one colour per netfl link abstraction (series:
    label → rows), with y = x and a ±25 % band; UEs starved on one side only are
    listed in the legend."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, len(panels), figsize=(6 * len(panels), 5.5), squeeze=False)
    for ax, (direction, series) in zip(axes[0], panels.items(), strict=True):
        everything = [r for rows in series.values() for r in rows if r["netfl_s"] and r["ns3_s"]]
        lo = min(min(r["ns3_s"], r["netfl_s"]) for r in everything) * 0.8
        hi = max(max(r["ns3_s"], r["netfl_s"]) for r in everything) * 1.2
        for (label, rows), marker in zip(series.items(), "os^", strict=False):
            pairs = [r for r in rows if r["netfl_s"] and r["ns3_s"]]
            dev = sorted(abs(r["netfl_s"] / r["ns3_s"] - 1) for r in pairs)
            one_side = sum((r["netfl_s"] is None) != (r["ns3_s"] is None) for r in rows)
            ax.scatter(
                [r["ns3_s"] for r in pairs],
                [r["netfl_s"] for r in pairs],
                s=20,
                marker=marker,
                alpha=0.75,
                zorder=3,
                label=f"{label}: median |Δ| {statistics.median(dev):.0%}, max {dev[-1]:.0%}"
                + (f", {one_side} UEs served by one side only" if one_side else ""),
            )
        x = np.array([lo, hi])
        ax.plot(x, x, "k-", lw=1, label="netfl = ns-3")
        ax.fill_between(x, 0.75 * x, 1.25 * x, color="0.88", label="±25 %", zorder=0)
        ax.set(xscale="log", yscale="log", xlim=(lo, hi), ylim=(lo, hi))
        verb = "upload" if direction == "uplink" else "download"
        ax.set_xlabel(f"ns-3 LENA {verb} duration [s]")
        ax.set_ylabel(f"netfl {verb} duration [s]")
        ax.set_title(
            f"LTE {direction}, lte_20mhz on ns-3's cell: 796,840 B per UE, RR,\n"
            f"1–20 UEs at 30–300 m ({FIXTURES[direction].relative_to(ROOT)})",
            fontsize=9,
        )
        ax.legend(fontsize=7.5, loc="lower right")
    fig.tight_layout()
    fig.savefig(out, dpi=120)
    plt.close(fig)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--downlink", action="store_true", help="the downlink fixture")
    ap.add_argument("--set", action="append", default=[], metavar="KEY=VALUE")
    ap.add_argument("--runs", default="rr", choices=["rr", "pf"])
    ap.add_argument("--figure", metavar="PNG", help="draw netfl against ns-3 per UE, both ways")
    args = ap.parse_args()
    fixtures = {d: json.loads(path.read_text()) for d, path in FIXTURES.items()}
    rows = compare(fixtures["downlink" if args.downlink else "uplink"], args.runs, args.set)
    if args.figure:  # the defaults (gap) and the bler abstraction side by side
        bler = [*args.set, "cell.link.link_abstraction=bler"]
        panels = {
            d: {
                "default (LENA's CQI rules)": compare(fixture, args.runs, args.set),
                "bler (OLLA 10 %, HARQ)": compare(fixture, args.runs, bler),
            }
            for d, fixture in fixtures.items()
        }
        draw(panels, Path(args.figure))
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
