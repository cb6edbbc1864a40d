"""Modem energy study (issue 54): what a FedAvg round costs a phone's modem on LTE,
5G low band and 5G mmWave — the Galaxy S20 Ultra that Narayanan et al. (SIGCOMM 2021)
measured on each, against Huang et al.'s 2012 LTE model — per round and per bit, for
McMahan's 2NN and CNN (public API).

Runs ``scenarios/modem_energy/modem_energy.sweep.yaml`` (three radios × two modems ×
two models × seeds 1–3; timing mode) with ``netfl.sweep``: each radio's rates come from
its link model (``lte_20mhz``, ``nr_lowband``, ``nr_fr2_umi``), the modem is the one the
radio names (``devices.modem_profile: link``) or ``huang2012_lte`` on the same
transfers. Draws from the run directories:

- per run and per radio/model/modem (mean ± std over seeds): the update's size, the
  uplink and downlink rates on air, the modem's energy per round by state (transmit,
  receive, wait, tail, promotion) and per bit (the transfers' transmit or receive
  energy, queueing included, over their bits) (``runs.csv``, ``summary.csv``);
- per radio and model, the 2012 model over the measured phone on the same seed
  (``paired.csv``), and ``energy_per_bit.png`` — in ``analysis/modem_energy/``
  whatever ``--out`` (the run directories) says.

    .venv/bin/python analysis/modem_energy_study.py [--workers 1]
"""

from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import pandas as pd  # noqa: E402
from study_output import (  # noqa: E402
    run_sweep_file,
    save_figure,
    show_tables,
    study_parser,
    write_tables,
)

from netfl import read_run  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "analysis" / "modem_energy"
RADIOS = ["lte_20mhz", "nr_lowband", "nr_fr2_umi"]
STATES = ["tx", "rx", "wait", "tail", "promotion"]


def run_study(workers: int, out: Path) -> tuple[pd.DataFrame, Path]:
    return run_sweep_file("modem_energy/modem_energy.sweep.yaml", workers, out)


def per_run(index: pd.DataFrame, where: Path) -> pd.DataFrame:
    rows = []
    for _, row in index[index["status"] == "complete"].iterrows():
        run = read_run(where / row["run"])
        r, t = run.rounds, run.transfers
        up, down = t[t["kind"] == "model_up"], t[t["kind"] == "model_down"]
        modem = run.devices.loc[run.devices["kind"] == "pue", "modem_profile"].unique()
        energy = {s: float(r[f"device_{s}_energy_j"].mean()) for s in STATES}
        rows.append(
            {
                "radio": run.scenario.cell.link.channel_profile,
                "model": run.scenario.model.name,
                "variant": row["variant"],
                "modem": ",".join(modem),
                "seed": row["seed"],
                "update_mbit": float(up["size_bits"].mean()) / 1e6,
                "uplink_mbps": float(up["delivered_bits"].sum() / up["airtime_s"].sum()) / 1e6,
                "downlink_mbps": float(down["delivered_bits"].sum() / down["airtime_s"].sum())
                / 1e6,
                "round_time_s": float(r["round_time_s"].mean()),
                **{f"{s}_per_round_j": e for s, e in energy.items()},
                "modem_per_round_j": sum(energy.values()),
                "on_air_per_round_j": energy["tx"] + energy["rx"],
                "uplink_nj_per_bit": 1e9
                * float(up["tx_energy_j"].sum() / up["delivered_bits"].sum()),
                "downlink_nj_per_bit": 1e9
                * float(down["rx_energy_j"].sum() / down["delivered_bits"].sum()),
            }
        )
    return pd.DataFrame(rows)


def summary(runs: pd.DataFrame) -> pd.DataFrame:
    keys = ["radio", "model", "variant", "modem"]
    agg = runs.drop(columns="seed").groupby(keys, sort=False).agg(["mean", "std"])
    agg.columns = [f"{a}_{b}" for a, b in agg.columns]
    return agg.reset_index()


def paired(runs: pd.DataFrame) -> pd.DataFrame:
    """The 2012 model over the measured phone on the same radio, model and seed (the
    same transfers): per-round modem energy, on-air energy and energy per bit."""
    k = ["radio", "model", "seed"]
    cols = ["modem_per_round_j", "on_air_per_round_j", "uplink_nj_per_bit", "downlink_nj_per_bit"]
    huang = runs[runs["variant"] == "huang2012"].set_index(k)[cols]
    measured = runs[runs["variant"] == "measured"].set_index(k)[cols]
    ratio = (huang / measured).reset_index()
    out = ratio.drop(columns="seed").groupby(["radio", "model"], sort=False).agg(["mean", "std"])
    out.columns = [f"huang_over_measured_{a}_{b}" for a, b in out.columns]
    return out.reset_index()


def figure(table: pd.DataFrame) -> None:
    fig, axes = plt.subplots(1, 2, figsize=(10, 3.8))
    for ax, direction in zip(axes, ["uplink", "downlink"], strict=True):
        col = f"{direction}_nj_per_bit"
        g = table[table["model"] == "cnn"]
        width = 0.38
        for i, (variant, label) in enumerate(
            [("measured", "measured phone (S20 Ultra)"), ("huang2012", "huang2012_lte")]
        ):
            v = g[g["variant"] == variant].set_index("radio").loc[RADIOS]
            ax.bar(
                [x + (i - 0.5) * width for x in range(len(RADIOS))],
                v[f"{col}_mean"],
                width,
                yerr=v[f"{col}_std"],
                capsize=3,
                label=label,
                color=f"C{i}",
            )
        ax.set_xticks(range(len(RADIOS)), RADIOS)
        ax.set_yscale("log")
        ax.set_ylabel(f"{direction} modem energy per bit [nJ]")
        ax.set_title(f"CNN {direction}s, 10 phones, 200 m cell")
        ax.grid(alpha=0.3, axis="y")
        ax.legend(fontsize=8)
    save_figure(fig, OUT, "energy_per_bit.png")


def main() -> None:
    args = study_parser(__doc__, "modem_energy_study").parse_args()
    index, where = run_study(args.workers, Path(args.out))
    failed = index[index["status"] != "complete"]
    if len(failed):  # (a missing seed would skew the means and the pairs silently)
        raise SystemExit(f"{len(failed)} runs did not complete: {', '.join(failed['run'])}")
    runs = per_run(index, where)
    table = summary(runs)
    ratios = paired(runs)
    figure(table)
    write_tables(OUT, runs=runs, summary=table, paired=ratios)
    pd.set_option("display.max_columns", 40)
    show_tables(table, ratios, OUT, 250)


if __name__ == "__main__":
    main()
