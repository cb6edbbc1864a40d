"""Over-the-air study (b): broadband analog aggregation (BAA) against digital OFDMA
uploads — the round's upload latency as the number of devices grows, and the accuracy
against the truncation threshold and the receive SNR it allows (public API).

Zhu, Wang & Huang, "Broadband Analog Aggregation for Low-Latency Federated Edge
Learning", IEEE TWC 2020: all devices transmit at once on the same sub-channels, so
the latency reduction over OFDMA grows almost linearly with the number of devices; a
higher truncation threshold raises the receive SNR and truncates more (their
reliability-truncation trade-off). Runs ``scenarios/over_the_air/latency.sweep.yaml``
(timing mode) and ``threshold.sweep.yaml`` (learning) with ``netfl.sweep``:

- per K and mode the upload latency — from the last client's training end to the last
  update's arrival — and the round time, mean ± std over seeds, and digital over BAA
  on the same seed (``latency.csv``, ``latency_vs_devices.png``);
- per threshold the receive SNR ρ0, the share of symbols truncated, the accuracy over
  the last five rounds and its difference to the digital uploads on the same seed
  (``threshold.csv``, ``accuracy_vs_threshold.png``);
- on a 21-cell network (``network.sweep.yaml``: one slot per cell at once, each BS
  hearing the other cells' clients), digital and analog uploads with and without
  inter-cell interference: the upload latency, the receive SINR of the analog slots
  (median and the share of clients' cells below 0 dB) and the accuracy over the last
  five rounds (``network.csv``).

    .venv/bin/python analysis/over_the_air_study.py [--workers 1]
"""

from __future__ import annotations

import argparse
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
from study_bands import band_by_round  # noqa: E402
from study_output import run_sweep_file  # noqa: E402

from netfl import read_run  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "analysis" / "over_the_air"
THRESHOLDS = ["g0.01", "g0.1", "g0.5", "g1.5"]


def sweep(name: str, workers: int, out: Path) -> tuple[pd.DataFrame, Path]:
    index, where = run_sweep_file(f"over_the_air/{name}.sweep.yaml", workers, out)
    return index[index["status"] == "complete"], where


def upload_latency(run) -> float:
    """Mean over rounds of the time from the last client's training end to the last
    update's arrival [s]."""
    t, c = run.transfers, run.computes
    out = []
    for r, ups in t[t["kind"] == "model_up"].groupby("round"):
        trained = c[(c["round"] == r) & (c["kind"] == "train")]["end_s"].max()
        out.append(float(ups["end_s"].max() - trained))
    return float(np.mean(out))


def latency_table(index: pd.DataFrame, where: Path) -> pd.DataFrame:
    rows = []
    for _, row in index.iterrows():
        run = read_run(where / row["run"])
        rows.append(
            {
                "mode": row["variant"],
                "devices": int(run.scenario.devices.count),
                "seed": row["seed"],
                "upload_latency_s": upload_latency(run),
                "round_time_s": float(run.rounds["round_time_s"].mean()),
            }
        )
    runs = pd.DataFrame(rows)
    per = runs.pivot_table(index=["devices", "seed"], columns="mode", values="upload_latency_s")
    ratio = (per["digital"] / per["analog"]).rename("digital_over_analog").reset_index()
    runs = runs.merge(ratio, on=["devices", "seed"])
    agg = runs.groupby(["devices", "mode"]).agg(["mean", "std"]).drop(columns="seed")
    agg.columns = [f"{a}_{b}" for a, b in agg.columns]
    return agg.reset_index()


def threshold_table(index: pd.DataFrame, where: Path) -> pd.DataFrame:
    rows = []
    for _, row in index.iterrows():
        run = read_run(where / row["run"])
        up = run.transfers[run.transfers["kind"] == "model_up"]
        analog = row["variant"] != "digital"
        rows.append(
            {
                "variant": row["variant"],
                "seed": row["seed"],
                "rho0_db": float(up["mean_snr_db"].mean()) if analog else np.nan,
                "truncated": float(1 - (up["delivered_bits"] / up["size_bits"]).mean())
                if analog
                else 0.0,
                "last5_accuracy": float(run.rounds["accuracy"].tail(5).mean()),
                "sim_time_s": float(run.rounds["sim_time_s"].iloc[-1]),
            }
        )
    runs = pd.DataFrame(rows)
    base = runs[runs["variant"] == "digital"].set_index("seed")["last5_accuracy"]
    runs["minus_digital"] = runs["last5_accuracy"] - runs["seed"].map(base)
    agg = runs.drop(columns="seed").groupby("variant").agg(["mean", "std"])
    agg.columns = [f"{a}_{b}" for a, b in agg.columns]
    return agg.reindex(["digital", *THRESHOLDS]).reset_index()


NETWORK = ["digital", "analog", "digital_no_interference", "analog_no_interference"]


def network_table(index: pd.DataFrame, where: Path) -> pd.DataFrame:
    rows = []
    for _, row in index.iterrows():
        run = read_run(where / row["run"])
        t = run.transfers
        air = t[(t["kind"] == "model_up") & (t["direction"] == "uplink")]
        analog = row["variant"].startswith("analog")
        rows.append(
            {
                "variant": row["variant"],
                "seed": row["seed"],
                "upload_latency_s": upload_latency(run),
                "sinr_db_median": float(air["mean_snr_db"].median()) if analog else np.nan,
                "below_0db": float((air["mean_snr_db"] < 0).mean()) if analog else np.nan,
                "last5_accuracy": float(run.rounds["accuracy"].tail(5).mean()),
            }
        )
    agg = pd.DataFrame(rows).drop(columns="seed").groupby("variant").agg(["mean", "std"])
    agg.columns = [f"{a}_{b}" for a, b in agg.columns]
    return agg.reindex(NETWORK).reset_index()


def figures(latency: pd.DataFrame, index: pd.DataFrame, where: Path) -> None:
    OUT.mkdir(parents=True, exist_ok=True)
    fig, (ax, bx) = plt.subplots(1, 2, figsize=(10, 3.8))
    for c, mode in enumerate(("digital", "analog")):
        g = latency[latency["mode"] == mode]
        ax.errorbar(
            g["devices"],
            g["upload_latency_s_mean"],
            g["upload_latency_s_std"],
            color=f"C{c}",
            marker="o",
            label=mode,
        )
    ax.set_yscale("log")
    ax.set_xlabel("devices K")
    ax.set_ylabel("upload latency per round [s]")
    g = latency[latency["mode"] == "digital"]
    bx.errorbar(
        g["devices"], g["digital_over_analog_mean"], g["digital_over_analog_std"], marker="o"
    )
    bx.set_xlabel("devices K")
    bx.set_ylabel("digital / analog upload latency")
    for a in (ax, bx):
        a.grid(alpha=0.3)
    ax.legend()
    fig.tight_layout()
    fig.savefig(OUT / "latency_vs_devices.png", dpi=120)
    plt.close(fig)
    fig, ax = plt.subplots(figsize=(6.5, 4))
    for c, variant in enumerate(["digital", *THRESHOLDS]):
        runs = index.loc[index["variant"] == variant, "run"]
        if runs.empty:
            continue
        curves = [read_run(where / n).rounds for n in runs]
        band_by_round(ax, curves, f"C{c}", f"{variant} ({len(runs)} seeds)")
    ax.set_xlabel("round")
    ax.set_ylabel("test accuracy")
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(OUT / "accuracy_vs_threshold.png", dpi=120)
    plt.close(fig)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--workers", type=int, default=1)
    ap.add_argument("--out", default=str(ROOT / "runs" / "over_the_air_study"))
    args = ap.parse_args()
    out = Path(args.out)
    lat_index, lat_where = sweep("latency", args.workers, out)
    thr_index, thr_where = sweep("threshold", args.workers, out)
    net_index, net_where = sweep("network", args.workers, out)
    latency = latency_table(lat_index, lat_where)
    threshold = threshold_table(thr_index, thr_where)
    figures(latency, thr_index, thr_where)
    latency.to_csv(OUT / "latency.csv", index=False)
    threshold.to_csv(OUT / "threshold.csv", index=False)
    network = network_table(net_index, net_where)
    network.to_csv(OUT / "network.csv", index=False)
    pd.set_option("display.width", 250)
    print(latency.to_string(index=False, float_format=lambda v: f"{v:.4g}"))
    print(threshold.to_string(index=False, float_format=lambda v: f"{v:.4g}"))
    print(network.to_string(index=False, float_format=lambda v: f"{v:.4g}"))
    print(f"figures: {OUT}")


if __name__ == "__main__":
    main()
